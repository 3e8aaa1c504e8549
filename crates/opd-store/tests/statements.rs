//! Every SQL statement the store sends compiles on both backends: each is
//! declared once, and a statement that one dialect rejects fails here
//! instead of on the first request that reaches it.

#[tokio::test]
async fn every_statement_prepares_on_both_backends() {
    let (lite, _dir) = opd_testkit::stores::sqlite().await;
    let pg = opd_testkit::stores::postgres().await;
    let on_sqlite = lite.prepare_all_statements().await.unwrap();
    let on_postgres = pg.prepare_all_statements().await.unwrap();
    assert!(
        on_postgres > on_sqlite,
        "PostgreSQL runs a few statements of its own"
    );
    assert!(on_sqlite > 60, "only {on_sqlite} statements checked");
}

/// Tables that grow with use: a statement that reads one of them whole
/// gets slower with every payment (a refund once looked up its payment's
/// funding by `reference`, which has no index, and read every transfer
/// ever made).
const GROWING: &[&str] = &[
    "ledger_transfers",
    "ledger_accounts",
    "outgoing_payments",
    "incoming_payments",
    "quotes",
    "grants",
    "access_tokens",
    "webhook_events",
    "signed_requests",
    "ilp_holds",
    "spsp_received",
    "spsp_receipt_totals",
];

/// Statements that may read a growing table whole, and why.
const WHOLE_TABLE_ON_PURPOSE: &[&str] = &[
    // The ledger's audit (`opd check`): every account and transfer.
    "FROM ledger_accounts ORDER BY id",
    "FROM ledger_transfers ORDER BY id",
    // The dashboard's lists of everything: newest first, so the scan stops
    // at a page's size; only a state that rarely matches reads further.
    // (A wallet address's lists read its index.)
    "FROM outgoing_payments WHERE TRUE",
    "FROM incoming_payments WHERE TRUE",
    "FROM grants WHERE (? IS NULL OR state",
    "FROM webhook_events WHERE (? = 0 OR delivered_at IS NULL)",
];

#[tokio::test]
async fn no_statement_reads_a_growing_table_whole_on_sqlite() {
    let (lite, _dir) = opd_testkit::stores::sqlite().await;
    let mut offenders = Vec::new();
    for (sql, scans) in lite.sqlite_scans().unwrap() {
        if WHOLE_TABLE_ON_PURPOSE.iter().any(|s| sql.contains(s)) {
            continue;
        }
        for scan in scans {
            let table = scan.split_whitespace().nth(1).unwrap_or_default();
            if GROWING.contains(&table) {
                offenders.push(format!("{scan}\n    {sql}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "{} statements read a growing table whole:\n{}",
        offenders.len(),
        offenders.join("\n")
    );
}
