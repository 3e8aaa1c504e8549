//! The driver against a real SQLite file: reads, writes, transactions,
//! group commits and their failures.

use super::*;

pub(super) const NONE: [&dyn ToSql; 0] = [];

/// A fresh database with one table made by `create`, its writer and
/// `readers` read connections.
pub(super) async fn database(
    create: &str,
    readers: usize,
) -> (tempfile::TempDir, WritePool, ReadPool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite");
    let writer = WritePool::open(&path, true).unwrap();
    writer.execute(create, &NONE).await.unwrap();
    let readers = ReadPool::open(&path, readers).unwrap();
    (dir, writer, readers)
}

pub(super) fn count(readers: &ReadPool) -> i64 {
    let rows = readers.query("SELECT COUNT(*) AS n FROM t", &NONE).unwrap();
    rows[0].try_get("n").unwrap()
}

/// Every connection keeps its sub-journals (a group member's undo) in
/// memory: a spill to a temporary file costs a file per large group.
#[tokio::test]
async fn every_connection_keeps_temporary_data_in_memory() {
    let (_dir, writer, readers) = database("CREATE TABLE t (id INTEGER PRIMARY KEY)", 1).await;
    let mut tx = writer.begin().await.unwrap();
    let on_writer = tx.query("PRAGMA temp_store", &NONE).unwrap();
    tx.commit().await.unwrap();
    let on_reader = readers.query("PRAGMA temp_store", &NONE).unwrap();
    for rows in [on_writer, on_reader] {
        // 2 is MEMORY.
        assert_eq!(rows[0].try_get::<i64>("temp_store").unwrap(), 2);
    }
}

#[tokio::test]
async fn statements_transactions_and_rollback_on_drop() {
    let (_dir, writer, readers) = database(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, flag INTEGER)",
        2,
    )
    .await;

    let mut tx = writer.begin().await.unwrap();
    let changed = tx
        .execute(
            "INSERT INTO t (id, name, flag) VALUES (?, ?, ?)",
            &[&1_i64 as &dyn ToSql, &"one", &true],
        )
        .unwrap();
    assert_eq!(changed, 1);
    tx.commit().await.unwrap();

    {
        let mut tx = writer.begin().await.unwrap();
        tx.execute(
            "INSERT INTO t (id, name, flag) VALUES (?, ?, ?)",
            &[&2_i64 as &dyn ToSql, &None::<String>, &false],
        )
        .unwrap();
        // Dropped without commit: rolled back, writer released.
    }

    let rows = readers
        .query("SELECT id, name, flag FROM t ORDER BY id", &NONE)
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].try_get::<i64>("id").unwrap(), 1);
    assert_eq!(rows[0].try_get::<String>("name").unwrap(), "one");
    assert!(rows[0].try_get::<bool>("flag").unwrap());
    assert!(rows[0].try_get::<String>("missing").is_err());
    assert!(rows[0].try_get::<String>("id").is_err());
    let none = readers
        .query("SELECT name FROM t WHERE id = ?", &[5_i64])
        .unwrap();
    assert!(none.is_empty());
    assert_eq!(count(&readers), 1);

    let dup = writer
        .execute("INSERT INTO t (id) VALUES (?)", &[1_i64])
        .await
        .unwrap_err();
    assert!(dup.is_unique_violation());
    // Writes return their rows too.
    let returned = writer
        .query("INSERT INTO t (id) VALUES (?) RETURNING id", &[7_i64])
        .await
        .unwrap();
    assert_eq!(returned[0].try_get::<i64>("id").unwrap(), 7);
    // Statements that return rows can be executed too.
    let mut tx = writer.begin().await.unwrap();
    tx.execute("SELECT 1", &NONE).unwrap();
    tx.rollback().unwrap();
}

#[tokio::test]
async fn read_only_connections_cannot_write() {
    let (_dir, _writer, readers) = database("CREATE TABLE t (id INTEGER)", 1).await;
    assert!(readers
        .query("INSERT INTO t (id) VALUES (1)", &NONE)
        .is_err());
}
