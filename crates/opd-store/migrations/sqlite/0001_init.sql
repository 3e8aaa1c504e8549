-- opd schema, SQLite flavour. Amounts are decimal TEXT (u64 does not fit
-- SQLite's signed INTEGER); timestamps are Unix milliseconds.

CREATE TABLE settings (
    key TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);

CREATE TABLE wallet_addresses (
    id TEXT PRIMARY KEY NOT NULL,
    path TEXT NOT NULL UNIQUE,
    asset_code TEXT NOT NULL,
    asset_scale INTEGER NOT NULL CHECK (asset_scale BETWEEN 0 AND 255),
    public_name TEXT,
    created_at INTEGER NOT NULL,
    deactivated_at INTEGER
);

CREATE TABLE wallet_address_keys (
    wallet_address_id TEXT NOT NULL REFERENCES wallet_addresses (id),
    kid TEXT NOT NULL,
    x TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    PRIMARY KEY (wallet_address_id, kid)
);

CREATE TABLE incoming_payments (
    id TEXT PRIMARY KEY NOT NULL,
    wallet_address_id TEXT NOT NULL REFERENCES wallet_addresses (id),
    asset_code TEXT NOT NULL,
    asset_scale INTEGER NOT NULL,
    incoming_amount TEXT,
    received_amount TEXT NOT NULL,
    completed INTEGER NOT NULL DEFAULT 0,
    expires_at INTEGER NOT NULL,
    metadata TEXT,
    client TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX incoming_payments_by_wallet ON incoming_payments (wallet_address_id, id);

CREATE TABLE quotes (
    id TEXT PRIMARY KEY NOT NULL,
    wallet_address_id TEXT NOT NULL REFERENCES wallet_addresses (id),
    receiver TEXT NOT NULL,
    debit_value TEXT NOT NULL,
    debit_asset_code TEXT NOT NULL,
    debit_asset_scale INTEGER NOT NULL,
    receive_value TEXT NOT NULL,
    receive_asset_code TEXT NOT NULL,
    receive_asset_scale INTEGER NOT NULL,
    fee TEXT NOT NULL,
    debit_minus_fees TEXT NOT NULL,
    client TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX quotes_by_wallet ON quotes (wallet_address_id, id);

CREATE TABLE fees (
    asset_code TEXT NOT NULL,
    asset_scale INTEGER NOT NULL,
    fixed TEXT NOT NULL,
    basis_points INTEGER NOT NULL CHECK (basis_points BETWEEN 0 AND 10000),
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (asset_code, asset_scale)
);

CREATE TABLE exchange_rates (
    base TEXT NOT NULL,
    counter TEXT NOT NULL,
    rate TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (base, counter)
);
