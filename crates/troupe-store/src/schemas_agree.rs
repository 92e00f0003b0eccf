//! The SQLite and PostgreSQL schemas are written twice (`lib.rs` and
//! `postgres.rs`, each with its migrations): this test migrates a fresh
//! store of each kind and compares them table by table, column by column
//! (name, type class, nullability), and index names, so that a migration
//! written for one database and forgotten for the other fails here.

use crate::Durability;
use crate::db::Dialect;
use std::collections::BTreeMap;

/// A column as both databases can say it: its type class and whether it
/// may be NULL.
type Columns = BTreeMap<String, (&'static str, bool)>;

/// SQLite's and PostgreSQL's spellings of one kind of value.
fn class(ty: &str) -> &'static str {
    match ty.to_ascii_lowercase().as_str() {
        "integer" | "bigint" | "int" | "int8" | "int4" => "integer",
        "text" | "character varying" | "varchar" => "text",
        "blob" | "bytea" => "bytes",
        "real" | "double precision" | "float8" => "real",
        other => panic!("a column type this test does not know: {other}"),
    }
}

fn schema(store: &crate::Store) -> (BTreeMap<String, Columns>, Vec<String>) {
    store
        .with("read the schema", |db| {
            let mut tables = BTreeMap::new();
            let mut indexes = Vec::new();
            match db.dialect() {
                Dialect::Sqlite => {
                    let names: Vec<String> = db
                        .query(
                            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
                            &[],
                        )?
                        .iter()
                        .map(|r| r.get(0))
                        .collect::<Result<_, _>>()?;
                    for t in names {
                        let mut cols = Columns::new();
                        for r in db.query(&format!("PRAGMA table_info({t})"), &[])? {
                            let name: String = r.get(1)?;
                            let ty: String = r.get(2)?;
                            let notnull: i64 = r.get(3)?;
                            let pk: i64 = r.get(5)?;
                            // A primary key is never NULL in PostgreSQL.
                            cols.insert(name, (class(&ty), notnull == 0 && pk == 0));
                        }
                        tables.insert(t, cols);
                    }
                    for r in db.query(
                        "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'",
                        &[],
                    )? {
                        indexes.push(r.get(0)?);
                    }
                }
                Dialect::Postgres => {
                    for r in db.query(
                        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
                         WHERE table_schema = current_schema()",
                        &[],
                    )? {
                        let table: String = r.get(0)?;
                        let name: String = r.get(1)?;
                        let ty: String = r.get(2)?;
                        let nullable: String = r.get(3)?;
                        tables
                            .entry(table)
                            .or_insert_with(Columns::new)
                            .insert(name, (class(&ty), nullable == "YES"));
                    }
                    for r in db.query(
                        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key'",
                        &[],
                    )? {
                        indexes.push(r.get(0)?);
                    }
                }
            }
            indexes.sort();
            Ok((tables, indexes))
        })
        .unwrap()
}

#[test]
fn the_migrated_sqlite_and_postgresql_schemas_agree() {
    let dir = tempfile::tempdir().unwrap();
    let stores = crate::testing::both(dir.path(), Durability::Normal);
    let (sqlite, sqlite_indexes) = schema(&stores[0].0);
    let (mut postgres, postgres_indexes) = schema(&stores[1].0);
    // PostgreSQL's own bookkeeping of the schema version.
    let meta = postgres.remove("troupe_meta");
    assert!(meta.is_some(), "{postgres:?}");
    let names = |m: &BTreeMap<String, Columns>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&sqlite), names(&postgres), "the same tables");
    for (table, columns) in &sqlite {
        assert_eq!(
            columns, &postgres[table],
            "table {table}: (column → type class, nullable) differ"
        );
    }
    assert_eq!(sqlite_indexes, postgres_indexes, "the same indexes");
}
