//! A tenant's secrets (its webhook signing key, its consent app's key to
//! the identity-provider API), sealed under the server's secrets key and
//! bound to their tenant and purpose, so a sealed value copied to another
//! row or column does not open.

use opd_core::TenantId;
use opd_store::TenantSecret;
use secrecy::{ExposeSecret, SecretString};

use crate::platform::secrets;
use crate::{ServiceError, Services};

/// What `which` of `tenant` is sealed under.
fn context(tenant: &TenantId, which: TenantSecret) -> String {
    let what = match which {
        TenantSecret::Webhook => "webhook",
        TenantSecret::Idp => "idp",
    };
    format!("tenant-{what}-secret:{tenant}")
}

/// Stores a secret of the tenant, sealed (`None` removes it).
pub(super) async fn set(
    services: &Services,
    tenant: &TenantId,
    which: TenantSecret,
    secret: Option<&SecretString>,
) -> Result<(), ServiceError> {
    let sealed = secret.map(|s| {
        let plain = s.expose_secret().as_bytes();
        let key = &services.config.secrets_key;
        secrets::seal_value(
            key,
            &context(tenant, which),
            plain,
            services.random.as_ref(),
        )
    });
    services
        .store
        .set_tenant_secret(tenant, which, sealed.as_deref())
        .await?;
    Ok(())
}

/// A secret of the tenant, opened; `None` when it has none.
pub async fn get(
    services: &Services,
    tenant: &TenantId,
    which: TenantSecret,
) -> Result<Option<SecretString>, ServiceError> {
    let Some(sealed) = services.store.tenant_secret(tenant, which).await? else {
        return Ok(None);
    };
    let key = &services.config.secrets_key;
    let (plain, _) =
        secrets::open_value(key, &context(tenant, which), &sealed).ok_or_else(|| {
            ServiceError::Internal(format!(
                "a secret of tenant {tenant} does not open with the secrets key"
            ))
        })?;
    let plain = String::from_utf8(plain)
        .map_err(|_| ServiceError::Internal("a tenant secret that is not text".into()))?;
    Ok(Some(SecretString::from(plain)))
}
