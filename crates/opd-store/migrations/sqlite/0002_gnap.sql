-- GNAP authorization server: grants, access tokens, wallet owner logins.
-- Token values are never stored: only their SHA-256 digests.

CREATE TABLE grants (
    id TEXT PRIMARY KEY NOT NULL,
    state TEXT NOT NULL,
    finalization TEXT,
    client_wallet_address TEXT,
    client_jwk TEXT,
    access TEXT NOT NULL,
    continue_id TEXT NOT NULL UNIQUE,
    continue_token_digest TEXT NOT NULL,
    interact_id TEXT UNIQUE,
    interact_nonce TEXT,
    interact_ref TEXT,
    interaction_state TEXT,
    interaction_expires_at INTEGER,
    finish_uri TEXT,
    client_nonce TEXT,
    wallet_address_id TEXT REFERENCES wallet_addresses (id),
    last_continued_at INTEGER NOT NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE access_tokens (
    digest TEXT PRIMARY KEY NOT NULL,
    management_id TEXT NOT NULL UNIQUE,
    grant_id TEXT NOT NULL REFERENCES grants (id),
    access TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER,
    created_at INTEGER NOT NULL
);
CREATE INDEX access_tokens_by_grant ON access_tokens (grant_id);

CREATE TABLE wallet_owner_logins (
    wallet_address_id TEXT PRIMARY KEY NOT NULL REFERENCES wallet_addresses (id),
    password_hash TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
