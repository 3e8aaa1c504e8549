-- ILP packets forwarded from one peer to another, two-phase: the amount
-- is held (moved from the incoming peer's liquidity to a hold account)
-- before the packet goes on, then posted to the outgoing peer when it is
-- fulfilled, or voided back when it is rejected or expires.
CREATE TABLE ilp_holds (
    id TEXT PRIMARY KEY NOT NULL,
    incoming_peer TEXT NOT NULL,
    outgoing_peer TEXT NOT NULL,
    in_asset_code TEXT NOT NULL,
    in_asset_scale INTEGER NOT NULL,
    out_asset_code TEXT NOT NULL,
    out_asset_scale INTEGER NOT NULL,
    amount_in TEXT NOT NULL,
    amount_out TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    -- pending, posted or voided
    state TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX ilp_holds_pending ON ilp_holds (state, expires_at);
