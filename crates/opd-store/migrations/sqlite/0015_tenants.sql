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
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
INSERT INTO tenants (id, public_name, created_at, updated_at) VALUES ('default', 'default', 0, 0);

-- Each tenant sets its own fees (the operator's apply where it has none).
CREATE TABLE fees_by_tenant (
    tenant_id TEXT NOT NULL DEFAULT 'default' REFERENCES tenants (id) ON DELETE CASCADE,
    asset_code TEXT NOT NULL,
    asset_scale INTEGER NOT NULL,
    fixed TEXT NOT NULL,
    basis_points INTEGER NOT NULL CHECK (basis_points BETWEEN 0 AND 10000),
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, asset_code, asset_scale)
);
INSERT INTO fees_by_tenant (asset_code, asset_scale, fixed, basis_points, updated_at)
    SELECT asset_code, asset_scale, fixed, basis_points, updated_at FROM fees;
DROP TABLE fees;
ALTER TABLE fees_by_tenant RENAME TO fees;

-- A dashboard session signed in with a tenant's token sees that tenant
-- only (NULL: the operator's token, every tenant).
ALTER TABLE dashboard_sessions ADD COLUMN tenant_id TEXT;

-- Each grant is its tenant's authorization server's.
ALTER TABLE grants ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default';

-- Each webhook event goes to its tenant's webhook URL.
ALTER TABLE webhook_events ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default';

-- Wallet address paths are unique per tenant, not per server. SQLite
-- cannot drop the old UNIQUE (path), so the table is rebuilt (the runner
-- checks the foreign keys before this commits).
CREATE TABLE wallet_addresses_by_tenant (
    id TEXT PRIMARY KEY NOT NULL,
    tenant_id TEXT NOT NULL DEFAULT 'default' REFERENCES tenants (id),
    path TEXT NOT NULL,
    asset_code TEXT NOT NULL,
    asset_scale INTEGER NOT NULL CHECK (asset_scale BETWEEN 0 AND 255),
    public_name TEXT,
    created_at INTEGER NOT NULL,
    deactivated_at INTEGER,
    UNIQUE (tenant_id, path)
);
INSERT INTO wallet_addresses_by_tenant
    (id, tenant_id, path, asset_code, asset_scale, public_name, created_at, deactivated_at)
    SELECT id, 'default', path, asset_code, asset_scale, public_name, created_at, deactivated_at
    FROM wallet_addresses;
DROP TABLE wallet_addresses;
ALTER TABLE wallet_addresses_by_tenant RENAME TO wallet_addresses;
