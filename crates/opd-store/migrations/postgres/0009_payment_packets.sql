-- Outgoing payments to receivers on other servers go out as ILP packets
-- through a peer. Each packet is recorded before it is sent (pending) and
-- settled once: posted when fulfilled (its amount moves from the payment
-- to the peer, and the payment's sent and delivered totals grow), voided
-- when rejected. A packet a crash leaves pending is settled by the worker
-- from what the receiver reports it received.
ALTER TABLE outgoing_payments ADD COLUMN delivered_value NUMERIC(20, 0) NOT NULL DEFAULT 0;
-- What the receiver had received before the payment's first packet.
ALTER TABLE outgoing_payments ADD COLUMN receiver_baseline NUMERIC(20, 0);
CREATE TABLE payment_packets (
    id TEXT PRIMARY KEY NOT NULL,
    payment_id TEXT NOT NULL,
    peer_id TEXT NOT NULL,
    source_asset_code TEXT NOT NULL,
    source_asset_scale INTEGER NOT NULL,
    peer_asset_code TEXT NOT NULL,
    peer_asset_scale INTEGER NOT NULL,
    source_amount NUMERIC(20, 0) NOT NULL,
    peer_amount NUMERIC(20, 0) NOT NULL,
    min_delivery NUMERIC(20, 0) NOT NULL,
    expires_at BIGINT NOT NULL,
    -- pending, posted or voided
    state TEXT NOT NULL,
    delivered NUMERIC(20, 0),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX payment_packets_by_payment ON payment_packets (payment_id, state);
