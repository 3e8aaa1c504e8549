-- Outgoing payments to receivers on other servers go out as ILP packets
-- through a peer. Each packet is recorded before it is sent (pending) and
-- settled once: posted when fulfilled (its amount moves from the payment
-- to the peer, and the payment's sent and delivered totals grow), voided
-- when rejected. A packet a crash leaves pending is settled by the worker
-- from what the receiver reports it received.
ALTER TABLE outgoing_payments ADD COLUMN delivered_value TEXT NOT NULL DEFAULT '0';
-- What the receiver had received before the payment's first packet.
ALTER TABLE outgoing_payments ADD COLUMN receiver_baseline TEXT;
CREATE TABLE payment_packets (
    id TEXT PRIMARY KEY NOT NULL,
    payment_id TEXT NOT NULL,
    peer_id TEXT NOT NULL,
    source_asset_code TEXT NOT NULL,
    source_asset_scale INTEGER NOT NULL,
    peer_asset_code TEXT NOT NULL,
    peer_asset_scale INTEGER NOT NULL,
    source_amount TEXT NOT NULL,
    peer_amount TEXT NOT NULL,
    min_delivery TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    -- pending, posted or voided
    state TEXT NOT NULL,
    delivered TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX payment_packets_by_payment ON payment_packets (payment_id, state);
