-- opd schema, PostgreSQL flavour. Amounts are NUMERIC(20,0) (exact u64);
-- timestamps are Unix milliseconds, like the SQLite schema.

CREATE TABLE settings (
    key TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);

CREATE TABLE wallet_addresses (
    id UUID PRIMARY KEY NOT NULL,
    path TEXT NOT NULL UNIQUE,
    asset_code TEXT NOT NULL,
    asset_scale SMALLINT NOT NULL CHECK (asset_scale BETWEEN 0 AND 255),
    public_name TEXT,
    created_at BIGINT NOT NULL,
    deactivated_at BIGINT
);

CREATE TABLE wallet_address_keys (
    wallet_address_id UUID NOT NULL REFERENCES wallet_addresses (id),
    kid TEXT NOT NULL,
    x TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    PRIMARY KEY (wallet_address_id, kid)
);

CREATE TABLE incoming_payments (
    id UUID PRIMARY KEY NOT NULL,
    wallet_address_id UUID NOT NULL REFERENCES wallet_addresses (id),
    asset_code TEXT NOT NULL,
    asset_scale SMALLINT NOT NULL,
    incoming_amount NUMERIC(20, 0) CHECK (incoming_amount >= 0),
    received_amount NUMERIC(20, 0) NOT NULL CHECK (received_amount >= 0),
    completed BOOLEAN NOT NULL DEFAULT FALSE,
    expires_at BIGINT NOT NULL,
    metadata TEXT,
    client TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX incoming_payments_by_wallet ON incoming_payments (wallet_address_id, id);

CREATE TABLE quotes (
    id UUID PRIMARY KEY NOT NULL,
    wallet_address_id UUID NOT NULL REFERENCES wallet_addresses (id),
    receiver TEXT NOT NULL,
    debit_value NUMERIC(20, 0) NOT NULL,
    debit_asset_code TEXT NOT NULL,
    debit_asset_scale SMALLINT NOT NULL,
    receive_value NUMERIC(20, 0) NOT NULL,
    receive_asset_code TEXT NOT NULL,
    receive_asset_scale SMALLINT NOT NULL,
    fee NUMERIC(20, 0) NOT NULL,
    debit_minus_fees NUMERIC(20, 0) NOT NULL,
    client TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX quotes_by_wallet ON quotes (wallet_address_id, id);

CREATE TABLE fees (
    asset_code TEXT NOT NULL,
    asset_scale SMALLINT NOT NULL,
    fixed NUMERIC(20, 0) NOT NULL,
    basis_points INTEGER NOT NULL CHECK (basis_points BETWEEN 0 AND 10000),
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (asset_code, asset_scale)
);

CREATE TABLE exchange_rates (
    base TEXT NOT NULL,
    counter TEXT NOT NULL,
    rate TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (base, counter)
);
