-- Wallet owners' own pages (`/wallet/<path>` on the authorization
-- listener): their sessions, shared by every node, stored only as the
-- SHA-256 digest of the cookie value; and the grants each wallet address's
-- owner gave, found by wallet address.
CREATE TABLE owner_sessions (
    digest TEXT PRIMARY KEY NOT NULL,
    wallet_address_id UUID NOT NULL REFERENCES wallet_addresses (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX owner_sessions_expiry ON owner_sessions (expires_at);
CREATE INDEX grants_by_wallet ON grants (wallet_address_id, id);
