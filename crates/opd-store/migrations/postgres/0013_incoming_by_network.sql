-- The client network (an IPv4 address, an IPv6 prefix such as
-- 2001:db8:1:2::/64, `loopback` or a private range) a client identified by
-- a key alone created an incoming payment from, so that such clients'
-- payments on a wallet address are counted per network as well as in
-- total, on every node: one source cannot spend everyone's share. Other
-- clients' payments keep none, and the retention pass forgets it
-- (incoming_payments_network_kept finds what to forget).
ALTER TABLE incoming_payments ADD COLUMN client_network TEXT;
CREATE INDEX incoming_payments_by_network
    ON incoming_payments (wallet_address_id, client_network, created_at)
    WHERE client_network IS NOT NULL;
CREATE INDEX incoming_payments_network_kept ON incoming_payments (created_at)
    WHERE client_network IS NOT NULL;
