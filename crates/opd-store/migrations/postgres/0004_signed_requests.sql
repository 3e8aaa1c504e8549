-- State-changing signed requests seen within the signature freshness
-- window, with the response each got, so a replay is answered with it on
-- every node.
CREATE TABLE signed_requests (
    fingerprint TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL,
    finished BOOLEAN NOT NULL DEFAULT FALSE,
    -- NULL status on a finished request: the response was not kept.
    status INTEGER,
    headers TEXT,
    body TEXT
);
CREATE INDEX signed_requests_expiry ON signed_requests (expires_at);
