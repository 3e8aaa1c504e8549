-- ILP packets forwarded from one peer to another, two-phase: the amount
-- is held (moved from the incoming peer's liquidity to a hold account)
-- before the packet goes on, then posted to the outgoing peer when it is
-- fulfilled, or voided back when it is rejected or expires.
CREATE TABLE ilp_holds (
    id TEXT PRIMARY KEY NOT NULL,
    incoming_peer TEXT NOT NULL,
    outgoing_peer TEXT NOT NULL,
    in_asset_code TEXT NOT NULL,
    in_asset_scale SMALLINT NOT NULL,
    out_asset_code TEXT NOT NULL,
    out_asset_scale SMALLINT NOT NULL,
    amount_in NUMERIC(20, 0) NOT NULL,
    amount_out NUMERIC(20, 0) NOT NULL,
    expires_at BIGINT NOT NULL,
    -- pending, posted or voided
    state TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX ilp_holds_pending ON ilp_holds (state, expires_at);
