-- The incoming payments the expiry worker looks for (open, not yet
-- announced as expired), by expiry. Without it, each of the worker's
-- passes read every incoming payment ever made.
CREATE INDEX incoming_payments_expiring ON incoming_payments (expires_at)
    WHERE NOT completed AND NOT expiry_notified;
