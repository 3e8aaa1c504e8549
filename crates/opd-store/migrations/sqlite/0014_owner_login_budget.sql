-- The budget of password checks of each wallet address's owner login,
-- counted for every source and every node together (opd_core::owner_login):
-- checks taken since the last success or pause, pauses since the last
-- success, and the instant the current pause ends.
ALTER TABLE wallet_owner_logins ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE wallet_owner_logins ADD COLUMN pauses INTEGER NOT NULL DEFAULT 0;
ALTER TABLE wallet_owner_logins ADD COLUMN paused_until INTEGER NOT NULL DEFAULT 0;
