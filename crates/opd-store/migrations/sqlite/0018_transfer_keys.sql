-- On PostgreSQL this migration drops the foreign keys from ledger transfers
-- to their accounts (see its file there). SQLite keeps them: its checks are
-- in-process index lookups under its single writer, and dropping a key
-- would mean rebuilding the table. Kept so that both backends have the same
-- list of migrations.
SELECT 1;
