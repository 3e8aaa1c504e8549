-- Ledger, outgoing payments, grant spending, webhook outbox.
-- Balances are signed decimal TEXT: liability accounts (wallet addresses,
-- payments, fees) never go below zero; each asset's settlement account is
-- the outside world and goes negative by what was deposited.

CREATE TABLE ledger_accounts (
    id TEXT PRIMARY KEY NOT NULL,
    kind TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    asset_code TEXT NOT NULL,
    asset_scale INTEGER NOT NULL,
    balance TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (kind, owner_id, asset_code, asset_scale)
);

CREATE TABLE ledger_transfers (
    id TEXT PRIMARY KEY NOT NULL,
    debit_account TEXT NOT NULL REFERENCES ledger_accounts (id),
    credit_account TEXT NOT NULL REFERENCES ledger_accounts (id),
    amount TEXT NOT NULL,
    kind TEXT NOT NULL,
    reference TEXT,
    idempotency_key TEXT UNIQUE,
    request_digest TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX ledger_transfers_by_debit ON ledger_transfers (debit_account, id);
CREATE INDEX ledger_transfers_by_credit ON ledger_transfers (credit_account, id);

CREATE TABLE outgoing_payments (
    id TEXT PRIMARY KEY NOT NULL,
    wallet_address_id TEXT NOT NULL REFERENCES wallet_addresses (id),
    quote_id TEXT NOT NULL UNIQUE REFERENCES quotes (id),
    receiver TEXT NOT NULL,
    debit_value TEXT NOT NULL,
    debit_asset_code TEXT NOT NULL,
    debit_asset_scale INTEGER NOT NULL,
    receive_value TEXT NOT NULL,
    receive_asset_code TEXT NOT NULL,
    receive_asset_scale INTEGER NOT NULL,
    sent_value TEXT NOT NULL,
    state TEXT NOT NULL,
    error TEXT,
    metadata TEXT,
    client TEXT,
    grant_id TEXT,
    grant_interval_start INTEGER,
    attempts INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX outgoing_payments_by_wallet ON outgoing_payments (wallet_address_id, id);
CREATE INDEX outgoing_payments_due ON outgoing_payments (state, next_attempt_at);

CREATE TABLE grant_spending (
    grant_id TEXT NOT NULL,
    interval_start INTEGER NOT NULL,
    interval_end INTEGER,
    debit_asset_code TEXT,
    debit_asset_scale INTEGER,
    debit_spent TEXT NOT NULL,
    receive_asset_code TEXT,
    receive_asset_scale INTEGER,
    receive_spent TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (grant_id, interval_start)
);

CREATE TABLE webhook_events (
    id TEXT PRIMARY KEY NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    delivered_at INTEGER,
    last_error TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX webhook_events_due ON webhook_events (delivered_at, next_attempt_at);

ALTER TABLE incoming_payments ADD COLUMN expiry_notified INTEGER NOT NULL DEFAULT 0;
