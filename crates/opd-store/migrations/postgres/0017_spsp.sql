-- Money paid to wallet addresses by their payment pointer (SPSP), with no
-- incoming payment. Per wallet address: what arrived over SPSP in all, how
-- much of it the `wallet_address.web_monetization` events announced, and
-- when the next event is due (NULL while nothing waits to be announced).
CREATE TABLE spsp_received (
    wallet_address_id UUID PRIMARY KEY NOT NULL REFERENCES wallet_addresses (id),
    received NUMERIC(40, 0) NOT NULL CHECK (received >= 0),
    reported NUMERIC(40, 0) NOT NULL CHECK (reported >= 0 AND reported <= received),
    report_at BIGINT,
    updated_at BIGINT NOT NULL
);
CREATE INDEX spsp_received_due ON spsp_received (report_at);

-- What each SPSP connection made with a receipt nonce and secret received
-- in all (its STREAM receipts sign it), by the hex SHA-256 of its
-- connection token. Pruned after the retention period without credits.
CREATE TABLE spsp_receipt_totals (
    connection TEXT PRIMARY KEY NOT NULL,
    total NUMERIC(40, 0) NOT NULL CHECK (total >= 0),
    updated_at BIGINT NOT NULL
);
CREATE INDEX spsp_receipt_totals_by_update ON spsp_receipt_totals (updated_at);
