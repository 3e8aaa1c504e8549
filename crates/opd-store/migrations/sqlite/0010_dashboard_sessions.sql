-- Sessions of the operator dashboard (admin listener), shared by every
-- node of a deployment. Only the SHA-256 digest of the cookie value is
-- stored: a copy of the database does not log anyone in.
CREATE TABLE dashboard_sessions (
    digest TEXT PRIMARY KEY NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);
