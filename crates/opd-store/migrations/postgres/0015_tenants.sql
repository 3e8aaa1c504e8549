-- Tenants: the wallet providers one opd serves. Each has its own public
-- base URL (its own host, or a path prefix on the server's), public name,
-- webhook URL and secret, consent app, and an admin token (its SHA-256
-- digest). The operator's own tenant, `default`, takes its URLs from the
-- server's configuration (NULL here) and owns every wallet address made
-- before tenants existed.
CREATE TABLE tenants (
    id TEXT PRIMARY KEY NOT NULL,
    public_name TEXT NOT NULL,
    public_url TEXT UNIQUE,
    webhook_url TEXT,
    -- Its own authorization server, at the root of a host of its own
    -- (NULL: the server's, shared).
    auth_server_url TEXT UNIQUE,
    token_digest TEXT UNIQUE,
    -- Sealed under the server's secrets key, like peers' tokens.
    webhook_secret TEXT,
    -- Its own consent app (NULL: the built-in consent page), and the
    -- secret that app calls the identity-provider API with (sealed).
    idp_consent_url TEXT,
    idp_secret TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
INSERT INTO tenants (id, public_name, created_at, updated_at) VALUES ('default', 'default', 0, 0);

-- Each tenant sets its own fees (the operator's apply where it has none).
ALTER TABLE fees
    ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default' REFERENCES tenants (id) ON DELETE CASCADE;
ALTER TABLE fees DROP CONSTRAINT fees_pkey;
ALTER TABLE fees ADD PRIMARY KEY (tenant_id, asset_code, asset_scale);

-- A dashboard session signed in with a tenant's token sees that tenant
-- only (NULL: the operator's token, every tenant).
ALTER TABLE dashboard_sessions ADD COLUMN tenant_id TEXT;

-- Each grant is its tenant's authorization server's.
ALTER TABLE grants ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default';

-- Each webhook event goes to its tenant's webhook URL.
ALTER TABLE webhook_events ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default';

-- Wallet address paths are unique per tenant, not per server.
ALTER TABLE wallet_addresses
    ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default' REFERENCES tenants (id);
ALTER TABLE wallet_addresses DROP CONSTRAINT wallet_addresses_path_key;
ALTER TABLE wallet_addresses ADD CONSTRAINT wallet_addresses_tenant_path_key UNIQUE (tenant_id, path);
