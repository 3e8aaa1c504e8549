-- How each peer was created: `operator` (admin API, CLI, dashboard) or
-- `auto-peering` (an unauthenticated peering request). The auto-peering
-- listener renews only peers it created itself, and counts them against
-- its quota. Peers that existed before are the operator's.
ALTER TABLE peers ADD COLUMN created_by TEXT NOT NULL DEFAULT 'operator';
CREATE INDEX peers_by_origin ON peers (created_by);

-- The auto-peering budget shared by every node: one row, locked by each
-- peer the listener creates, so the quota count and the liquidity granted
-- so far cannot be overrun by concurrent requests.
CREATE TABLE auto_peering (
    id SMALLINT PRIMARY KEY NOT NULL CHECK (id = 1),
    -- Liquidity deposited into auto-peered peers, ever (never given back:
    -- the total the operator allowed bounds what was granted, not what is
    -- left).
    liquidity_granted NUMERIC(20, 0) NOT NULL
);
INSERT INTO auto_peering (id, liquidity_granted) VALUES (1, 0);
