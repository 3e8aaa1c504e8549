-- Ledger transfers no longer carry foreign keys to their accounts. On
-- PostgreSQL each key is a trigger that runs a query of its own after every
-- insert (four per local payment, on the busiest rows of the ledger). The
-- statement that posts a transfer creates or moves both its accounts
-- (`ledger/posting.rs`), so a transfer cannot name an account that does not
-- exist, and `opd check` reports one that does. Every other key stays.
-- SQLite keeps these too: its checks are in-process index lookups under its
-- single writer, and dropping one would mean rebuilding the table.
ALTER TABLE ledger_transfers DROP CONSTRAINT ledger_transfers_debit_account_fkey;
ALTER TABLE ledger_transfers DROP CONSTRAINT ledger_transfers_credit_account_fkey;
