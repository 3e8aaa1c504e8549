-- Counting the incoming payments a client created on a wallet address
-- lately (a quota for clients identified by a key alone).
CREATE INDEX incoming_payments_by_client ON incoming_payments (wallet_address_id, client, created_at);
