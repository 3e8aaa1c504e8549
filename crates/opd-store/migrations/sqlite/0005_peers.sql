-- Interledger peers: the servers opd exchanges ILP packets with over
-- ILP-over-HTTP. Their liquidity lives in the ledger (account kind `peer`).
CREATE TABLE peers (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL UNIQUE,
    static_ilp_address TEXT NOT NULL UNIQUE,
    asset_code TEXT NOT NULL,
    asset_scale INTEGER NOT NULL,
    max_packet_amount TEXT,
    -- JSON array of ILP address prefixes reached through the peer.
    routes TEXT NOT NULL,
    outgoing_endpoint TEXT,
    outgoing_token TEXT,
    liquidity_low TEXT,
    liquidity_high TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- The bearer tokens a peer presents to us, as SHA-256 digests.
CREATE TABLE peer_tokens (
    digest TEXT PRIMARY KEY NOT NULL,
    peer_id TEXT NOT NULL REFERENCES peers (id) ON DELETE CASCADE
);
CREATE INDEX peer_tokens_by_peer ON peer_tokens (peer_id);
