-- State-changing signed requests seen within the signature freshness
-- window, with the response each got, so a replay is answered with it.
CREATE TABLE signed_requests (
    fingerprint TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL,
    finished INTEGER NOT NULL DEFAULT 0,
    -- NULL status on a finished request: the response was not kept.
    status INTEGER,
    headers TEXT,
    body TEXT
);
CREATE INDEX signed_requests_expiry ON signed_requests (expires_at);
