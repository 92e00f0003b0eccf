//! The one seam between the store and the database it lives in: SQLite (a
//! file, the default) or PostgreSQL (a server many processes share).
//!
//! Every statement of the store is written once, in the SQL both databases
//! accept, with `?N` parameters. The few expressions they spell differently
//! (the time, "now" in milliseconds, blobs) are written the SQLite way and
//! translated once per statement for PostgreSQL ([`translate`]); where a
//! statement must differ in substance (locking a row for a claim) the
//! caller asks [`Db::dialect`]. Values cross the seam as [`Val`] and rows as
//! [`Row`], so the store's logic — leases, first answer wins, retention,
//! checkpoints — exists once and is tested against both.

use std::collections::HashMap;
use std::sync::Arc;

/// Which database a connection talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// One SQL value, as both databases store it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::Int(v)
    }
}
impl From<&i64> for Val {
    fn from(v: &i64) -> Val {
        Val::Int(*v)
    }
}
impl From<&u32> for Val {
    fn from(v: &u32) -> Val {
        Val::Int(i64::from(*v))
    }
}
impl From<u32> for Val {
    fn from(v: u32) -> Val {
        Val::Int(i64::from(v))
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Val {
        Val::Real(v)
    }
}
impl From<&Option<&str>> for Val {
    fn from(v: &Option<&str>) -> Val {
        v.map_or(Val::Null, Val::from)
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Text(v.to_owned())
    }
}
impl From<&&str> for Val {
    fn from(v: &&str) -> Val {
        Val::Text((*v).to_owned())
    }
}
impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Text(v)
    }
}
impl From<&String> for Val {
    fn from(v: &String) -> Val {
        Val::Text(v.clone())
    }
}
impl From<Vec<u8>> for Val {
    fn from(v: Vec<u8>) -> Val {
        Val::Blob(v)
    }
}
impl From<&Vec<u8>> for Val {
    fn from(v: &Vec<u8>) -> Val {
        Val::Blob(v.clone())
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}
impl From<&Option<String>> for Val {
    fn from(v: &Option<String>) -> Val {
        v.as_deref().map_or(Val::Null, Val::from)
    }
}

/// The parameters of a statement: `args![a, b]`.
macro_rules! args {
    ($($v:expr),* $(,)?) => { &[$($crate::db::Val::from($v)),*] as &[$crate::db::Val] };
}
pub(crate) use args;

/// One row of a result.
#[derive(Debug)]
pub(crate) struct Row(Vec<Val>);

/// A column's value as a Rust type.
pub(crate) trait FromVal: Sized {
    fn from_val(v: &Val) -> Option<Self>;
    const WHAT: &'static str;
}

impl FromVal for i64 {
    fn from_val(v: &Val) -> Option<i64> {
        match v {
            Val::Int(n) => Some(*n),
            _ => None,
        }
    }
    const WHAT: &'static str = "an integer";
}
impl FromVal for u32 {
    fn from_val(v: &Val) -> Option<u32> {
        i64::from_val(v).and_then(|n| u32::try_from(n).ok())
    }
    const WHAT: &'static str = "a small integer";
}
impl FromVal for f64 {
    fn from_val(v: &Val) -> Option<f64> {
        match v {
            Val::Real(x) => Some(*x),
            Val::Int(n) => Some(*n as f64),
            _ => None,
        }
    }
    const WHAT: &'static str = "a number";
}
impl FromVal for String {
    fn from_val(v: &Val) -> Option<String> {
        match v {
            Val::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
    const WHAT: &'static str = "text";
}
impl FromVal for Vec<u8> {
    fn from_val(v: &Val) -> Option<Vec<u8>> {
        match v {
            Val::Blob(b) => Some(b.clone()),
            // SQLite keeps what it was given: a blob spliced with `||`
            // reads back as text.
            Val::Text(s) => Some(s.as_bytes().to_vec()),
            _ => None,
        }
    }
    const WHAT: &'static str = "bytes";
}
impl<T: FromVal> FromVal for Option<T> {
    fn from_val(v: &Val) -> Option<Option<T>> {
        match v {
            Val::Null => Some(None),
            v => T::from_val(v).map(Some),
        }
    }
    const WHAT: &'static str = T::WHAT;
}

impl Row {
    /// Column `i` as a `T`; a type mismatch is an error, never a panic.
    pub(crate) fn get<T: FromVal>(&self, i: usize) -> Result<T, DbError> {
        let v = self.0.get(i).unwrap_or(&Val::Null);
        T::from_val(v).ok_or_else(|| DbError {
            kind: DbErrorKind::Other,
            message: format!("column {i} holds {v:?}, not {}", T::WHAT),
        })
    }
}

/// What went wrong in the database, in the store's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DbErrorKind {
    /// The file is not a database, or is damaged.
    Corrupt,
    /// Another process holds a lock.
    Busy,
    DiskFull,
    /// The server cannot be reached or closed the connection.
    Unavailable,
    Other,
}

#[derive(Debug, Clone)]
pub(crate) struct DbError {
    pub kind: DbErrorKind,
    pub message: String,
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl DbError {
    pub(crate) fn other(message: impl Into<String>) -> DbError {
        DbError {
            kind: DbErrorKind::Other,
            message: message.into(),
        }
    }
}

/// A connection to the store's database.
pub(crate) trait Db: Send {
    fn dialect(&self) -> Dialect;
    /// Runs one statement; returns the rows it changed.
    fn execute(&mut self, sql: &str, params: &[Val]) -> Result<u64, DbError>;
    /// Runs one query; returns its rows.
    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>, DbError>;
    /// Runs statements without parameters (schemas, `BEGIN`, `COMMIT`).
    fn batch(&mut self, sql: &str) -> Result<(), DbError>;
}

impl dyn Db + '_ {
    /// The first row of a query, if any.
    pub(crate) fn query_opt(&mut self, sql: &str, params: &[Val]) -> Result<Option<Row>, DbError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// The one row a query must return.
    pub(crate) fn query_one(&mut self, sql: &str, params: &[Val]) -> Result<Row, DbError> {
        self.query_opt(sql, params)?
            .ok_or_else(|| DbError::other("the query returned no row"))
    }

    /// Runs `f` in one transaction: committed when it returns `Ok`, rolled
    /// back otherwise. SQLite takes the write lock at once (`IMMEDIATE`),
    /// so two writers never deadlock upgrading their locks.
    pub(crate) fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut dyn Db) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        self.batch(match self.dialect() {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres => "BEGIN",
        })?;
        match f(self) {
            Ok(v) => match self.batch("COMMIT") {
                Ok(()) => Ok(v),
                Err(e) => {
                    let _ = self.batch("ROLLBACK");
                    Err(e)
                }
            },
            Err(e) => {
                let _ = self.batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

// ---------------------------------------------------------------- SQLite

pub(crate) struct SqliteDb {
    pub conn: rusqlite::Connection,
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Val::Null => ValueRef::Null,
            Val::Int(n) => ValueRef::Integer(*n),
            Val::Real(x) => ValueRef::Real(*x),
            Val::Text(s) => ValueRef::Text(s.as_bytes()),
            Val::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

pub(crate) fn sqlite_error(e: rusqlite::Error) -> DbError {
    use rusqlite::ErrorCode as C;
    let kind = match e.sqlite_error_code() {
        Some(C::NotADatabase) | Some(C::DatabaseCorrupt) => DbErrorKind::Corrupt,
        Some(C::DatabaseBusy) | Some(C::DatabaseLocked) => DbErrorKind::Busy,
        Some(C::DiskFull) => DbErrorKind::DiskFull,
        _ => DbErrorKind::Other,
    };
    DbError {
        kind,
        message: e.to_string(),
    }
}

impl Db for SqliteDb {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&mut self, sql: &str, params: &[Val]) -> Result<u64, DbError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(sqlite_error)?;
        stmt.execute(rusqlite::params_from_iter(params))
            .map(|n| n as u64)
            .map_err(sqlite_error)
    }

    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>, DbError> {
        use rusqlite::types::ValueRef;
        let mut stmt = self.conn.prepare_cached(sql).map_err(sqlite_error)?;
        let columns = stmt.column_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params))
            .map_err(sqlite_error)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(sqlite_error)? {
            let mut row = Vec::with_capacity(columns);
            for i in 0..columns {
                row.push(match r.get_ref(i).map_err(sqlite_error)? {
                    ValueRef::Null => Val::Null,
                    ValueRef::Integer(n) => Val::Int(n),
                    ValueRef::Real(x) => Val::Real(x),
                    ValueRef::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => Val::Blob(b.to_vec()),
                });
            }
            out.push(Row(row));
        }
        Ok(out)
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.conn.execute_batch(sql).map_err(sqlite_error)
    }
}

// ------------------------------------------------------------ PostgreSQL

/// What SQLite spells one way and PostgreSQL another, in the store's SQL.
const TRANSLATIONS: &[(&str, &str)] = &[
    (
        "strftime('%Y-%m-%dT%H:%M:%fZ','now')",
        "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')",
    ),
    (
        crate::NOW_MS,
        "CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT)",
    ),
    (" AS BLOB)", " AS BYTEA)"),
];

/// The store's SQL for PostgreSQL: `?N` parameters become `$N` (outside
/// quoted text), and the expressions of [`TRANSLATIONS`] are respelled.
pub(crate) fn translate(sql: &str) -> String {
    let mut s = sql.to_owned();
    for (from, to) in TRANSLATIONS {
        s = s.replace(from, to);
    }
    let mut out = String::with_capacity(s.len());
    let mut quoted = None::<char>;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (None, '\'' | '"') => quoted = Some(c),
            (Some(q), c) if c == q => quoted = None,
            (None, '?') if chars.peek().is_some_and(char::is_ascii_digit) => {
                out.push('$');
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// The runtime the PostgreSQL client runs on: its own, on its own thread,
/// so that the store's synchronous calls work from any thread, inside a
/// tokio runtime or not.
pub(crate) struct PgRuntime {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for PgRuntime {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which is not allowed inside another
        // runtime: let its thread wind down on its own.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl PgRuntime {
    pub(crate) fn start() -> Result<Arc<PgRuntime>, DbError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("troupe-postgres")
            .enable_all()
            .build()
            .map_err(|e| DbError::other(format!("cannot start the PostgreSQL client: {e}")))?;
        Ok(Arc::new(PgRuntime {
            runtime: Some(runtime),
        }))
    }

    /// Runs `f` on the client's runtime without waiting for it.
    pub(crate) fn spawn(&self, f: impl std::future::Future<Output = ()> + Send + 'static) {
        if let Some(rt) = &self.runtime {
            rt.spawn(f);
        }
    }

    /// Runs `f` on the client's runtime and waits for it on this thread.
    pub(crate) fn block<T: Send + 'static>(
        &self,
        f: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Result<T, DbError> {
        let unavailable = || DbError {
            kind: DbErrorKind::Unavailable,
            message: "the PostgreSQL client stopped".into(),
        };
        let rt = self.runtime.as_ref().ok_or_else(unavailable)?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let _ = tx.send(f.await);
        });
        rx.recv().map_err(|_| unavailable())
    }

    /// A new connection to `url`.
    pub(crate) fn connect(self: &Arc<Self>, url: &str) -> Result<PgDb, DbError> {
        let url = url.to_owned();
        let client = self.block(async move {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .map_err(pg_error)?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::warn!(error = %e, "the PostgreSQL connection closed");
                }
            });
            Ok::<_, DbError>(client)
        })??;
        Ok(PgDb {
            client: Arc::new(client),
            runtime: self.clone(),
            statements: HashMap::new(),
        })
    }
}

pub(crate) struct PgDb {
    pub client: Arc<tokio_postgres::Client>,
    pub runtime: Arc<PgRuntime>,
    /// Prepared statements, by the store's SQL text.
    statements: HashMap<String, tokio_postgres::Statement>,
}

pub(crate) fn pg_error(e: tokio_postgres::Error) -> DbError {
    use tokio_postgres::error::SqlState;
    let kind = match e.code() {
        Some(c) if *c == SqlState::DISK_FULL => DbErrorKind::DiskFull,
        Some(c)
            if *c == SqlState::LOCK_NOT_AVAILABLE
                || *c == SqlState::T_R_DEADLOCK_DETECTED
                || *c == SqlState::T_R_SERIALIZATION_FAILURE =>
        {
            DbErrorKind::Busy
        }
        Some(c) if *c == SqlState::DATA_CORRUPTED || *c == SqlState::INDEX_CORRUPTED => {
            DbErrorKind::Corrupt
        }
        Some(_) => DbErrorKind::Other,
        None if e.is_closed() => DbErrorKind::Unavailable,
        None => DbErrorKind::Unavailable,
    };
    // The driver's Display says only "db error"; the server's message is
    // in the source.
    let message = match e.as_db_error() {
        Some(db) => db.message().to_owned(),
        None => match std::error::Error::source(&e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    };
    DbError { kind, message }
}

impl tokio_postgres::types::ToSql for Val {
    fn to_sql(
        &self,
        ty: &tokio_postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use tokio_postgres::types::Type;
        match self {
            Val::Null => Ok(tokio_postgres::types::IsNull::Yes),
            Val::Int(n) => match *ty {
                Type::INT8 => n.to_sql(ty, out),
                Type::INT4 => i32::try_from(*n)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*n)?.to_sql(ty, out),
                Type::FLOAT8 => (*n as f64).to_sql(ty, out),
                Type::BOOL => (*n != 0).to_sql(ty, out),
                _ => n.to_string().as_str().to_sql(ty, out),
            },
            Val::Real(x) => match *ty {
                Type::FLOAT4 => (*x as f32).to_sql(ty, out),
                _ => x.to_sql(ty, out),
            },
            Val::Text(s) => s.as_str().to_sql(ty, out),
            Val::Blob(b) => b.as_slice().to_sql(ty, out),
        }
    }

    fn accepts(_: &tokio_postgres::types::Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

fn pg_row(row: &tokio_postgres::Row) -> Result<Row, DbError> {
    use tokio_postgres::types::Type;
    let mut out = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let e = |e: tokio_postgres::Error| pg_error(e);
        let v = match *column.type_() {
            Type::INT8 => row.try_get::<_, Option<i64>>(i).map_err(e)?.map(Val::Int),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)
                .map_err(e)?
                .map(|n| Val::Int(n.into())),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)
                .map_err(e)?
                .map(|n| Val::Int(n.into())),
            Type::BOOL => row
                .try_get::<_, Option<bool>>(i)
                .map_err(e)?
                .map(|b| Val::Int(b.into())),
            Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).map_err(e)?.map(Val::Real),
            Type::FLOAT4 => row
                .try_get::<_, Option<f32>>(i)
                .map_err(e)?
                .map(|x| Val::Real(x.into())),
            Type::BYTEA => row
                .try_get::<_, Option<Vec<u8>>>(i)
                .map_err(e)?
                .map(Val::Blob),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => row
                .try_get::<_, Option<String>>(i)
                .map_err(e)?
                .map(Val::Text),
            ref other => {
                return Err(DbError::other(format!(
                    "column {} has the type {other}, which the store does not read",
                    column.name()
                )));
            }
        };
        out.push(v.unwrap_or(Val::Null));
    }
    Ok(Row(out))
}

impl PgDb {
    fn statement(&mut self, sql: &str) -> Result<tokio_postgres::Statement, DbError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let client = self.client.clone();
        let text = translate(sql);
        let stmt = self
            .runtime
            .block(async move { client.prepare(&text).await.map_err(pg_error) })??;
        self.statements.insert(sql.to_owned(), stmt.clone());
        Ok(stmt)
    }
}

impl Db for PgDb {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, params: &[Val]) -> Result<u64, DbError> {
        let stmt = self.statement(sql)?;
        let client = self.client.clone();
        let params = params.to_vec();
        self.runtime.block(async move {
            let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                params.iter().map(|p| p as _).collect();
            client.execute(&stmt, &refs).await.map_err(pg_error)
        })?
    }

    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>, DbError> {
        let stmt = self.statement(sql)?;
        let client = self.client.clone();
        let params = params.to_vec();
        let rows = self.runtime.block(async move {
            let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                params.iter().map(|p| p as _).collect();
            client.query(&stmt, &refs).await.map_err(pg_error)
        })??;
        rows.iter().map(pg_row).collect()
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        let client = self.client.clone();
        let text = translate(sql);
        self.runtime
            .block(async move { client.batch_execute(&text).await.map_err(pg_error) })?
    }
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn parameters_and_dialect_expressions_are_respelled_outside_quotes() {
        assert_eq!(
            translate("SELECT '?1', x FROM t WHERE a = ?1 AND b = ?12"),
            "SELECT '?1', x FROM t WHERE a = $1 AND b = $12"
        );
        assert_eq!(
            translate("SELECT CAST(data AS BLOB) FROM t"),
            "SELECT CAST(data AS BYTEA) FROM t"
        );
        assert!(
            translate("UPDATE t SET at = strftime('%Y-%m-%dT%H:%M:%fZ','now')")
                .contains("clock_timestamp()")
        );
    }
}
