-- Counting a client's interactive grants waiting for a decision (a limit
-- on how many it may have at once).
CREATE INDEX grants_pending_by_client ON grants (client_wallet_address, state, interaction_expires_at);
