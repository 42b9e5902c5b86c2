//! How every statement is sent: unnamed, with its parameters' types, in one round trip
//! (Parse, Bind, Execute, Sync), so that nothing outlives the statement on the server
//! connection. That is what a connection pooler in transaction mode (PgBouncer's
//! `pool_mode = transaction`) needs: between two transactions it may hand the client
//! another server connection, where a named prepared statement (tokio-postgres'
//! `prepare`, `query` with a string, deadpool's statement cache) "does not exist" or
//! "already exists". The cost is one parse and plan per statement on the server; the
//! one statement of every ingest, the append, is a PL/pgSQL function (`batches.rs`,
//! migration 13), whose plans each server session keeps.
//!
//! The one other piece of session state the store uses, `LISTEN`, has a connection of
//! its own (`listen.rs`, `database_listen_url`).

use async_trait::async_trait;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Error, GenericClient, Row, RowStream};

/// A statement parameter: a value and the PostgreSQL type its Rust type is sent as.
pub(super) trait Param: ToSql + Sync {
    fn pg_type(&self) -> Type;
}

/// The PostgreSQL type a Rust type is sent as.
pub(super) trait PgType {
    const TYPE: Type;
}

impl<T: PgType + ToSql + Sync> Param for T {
    fn pg_type(&self) -> Type {
        T::TYPE
    }
}

macro_rules! pg_types {
    ($($rust:ty => $pg:ident),* $(,)?) => {
        $(impl PgType for $rust {
            const TYPE: Type = Type::$pg;
        })*
    };
}

pg_types! {
    i32 => INT4,
    i64 => INT8,
    f64 => FLOAT8,
    str => TEXT,
    String => TEXT,
    [u8] => BYTEA,
    Vec<u8> => BYTEA,
    Vec<i64> => INT8_ARRAY,
    Vec<&str> => TEXT_ARRAY,
}

impl<T: PgType + ?Sized> PgType for &T {
    const TYPE: Type = T::TYPE;
}

impl<T: PgType> PgType for Option<T> {
    const TYPE: Type = T::TYPE;
}

fn typed<'a>(params: &'a [&'a dyn Param]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    params
        .iter()
        .map(|p| (*p as &(dyn ToSql + Sync), p.pg_type()))
        .collect()
}

/// The store's statements on a connection or in a transaction, each sent unnamed.
#[async_trait]
pub(super) trait Statements {
    async fn rows(&self, sql: &str, params: &[&dyn Param]) -> Result<Vec<Row>, Error>;
    async fn row(&self, sql: &str, params: &[&dyn Param]) -> Result<Row, Error>;
    async fn row_opt(&self, sql: &str, params: &[&dyn Param]) -> Result<Option<Row>, Error>;
    /// The rows as they arrive, not all at once.
    async fn row_stream(&self, sql: &str, params: &[&dyn Param]) -> Result<RowStream, Error>;
    /// The number of rows the statement changed.
    async fn run(&self, sql: &str, params: &[&dyn Param]) -> Result<u64, Error>;
}

#[async_trait]
impl<C: GenericClient + Sync> Statements for C {
    async fn rows(&self, sql: &str, params: &[&dyn Param]) -> Result<Vec<Row>, Error> {
        self.query_typed(sql, &typed(params)).await
    }

    async fn row(&self, sql: &str, params: &[&dyn Param]) -> Result<Row, Error> {
        self.query_typed_one(sql, &typed(params)).await
    }

    async fn row_opt(&self, sql: &str, params: &[&dyn Param]) -> Result<Option<Row>, Error> {
        self.query_typed_opt(sql, &typed(params)).await
    }

    async fn row_stream(&self, sql: &str, params: &[&dyn Param]) -> Result<RowStream, Error> {
        self.query_typed_raw(sql, typed(params)).await
    }

    async fn run(&self, sql: &str, params: &[&dyn Param]) -> Result<u64, Error> {
        self.execute_typed(sql, &typed(params)).await
    }
}
