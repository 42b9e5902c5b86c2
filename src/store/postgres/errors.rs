//! What a PostgreSQL or pool error means to a caller: retryable (`Unavailable`) or not,
//! decided by SQLSTATE class or by the connection's state, never by message text.

use crate::store::StoreError;
use deadpool_postgres::PoolError;

/// Classifies a PostgreSQL error by its SQLSTATE class or, without one, by whether the
/// connection failed, keeping it as the cause: connection trouble, shutdown, a full disk
/// or exhausted resources are retryable; SQL errors are not.
pub(super) fn pg_error(e: tokio_postgres::Error) -> StoreError {
    let retryable = match e.code() {
        // 08: connection exception; 57: operator intervention (shutdown, cancel);
        // 53: insufficient resources (disk full, out of memory, too many connections);
        // 58: system error (I/O); 40001/40P01: serialization failure, deadlock;
        // 25006: a write on a server that is (now) a standby, as after a failover to
        // another server (the connection is replaced, see `PgStore::timed`).
        Some(code) => {
            matches!(&code.code()[..2], "08" | "57" | "53" | "58")
                || matches!(code.code(), "40001" | "40P01" | "25006")
        }
        None => e.is_closed() || io_caused(&e),
    };
    let what = match e.as_db_error() {
        // The Display of a server error is only "db error"; the detail is in the DbError.
        Some(db) => format!("PostgreSQL {}: {}", db.code().code(), db.message()),
        None => "PostgreSQL".to_owned(),
    };
    if retryable {
        StoreError::unavailable(what, e)
    } else {
        StoreError::failed(what, e)
    }
}

/// Whether `e` is a write refused because the server is a standby (SQLSTATE 25006):
/// the connection reached the primary once and no longer does, so it is not used again.
pub(super) fn on_a_standby(e: &StoreError) -> bool {
    let StoreError::Unavailable {
        source: Some(cause),
        ..
    } = e
    else {
        return false;
    };
    cause
        .downcast_ref::<tokio_postgres::Error>()
        .and_then(tokio_postgres::Error::code)
        .is_some_and(|code| *code == tokio_postgres::error::SqlState::READ_ONLY_SQL_TRANSACTION)
}

/// Whether an I/O error (refused, reset, timed out) is among the causes.
fn io_caused(e: &tokio_postgres::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

pub(super) fn pool_error(e: PoolError) -> StoreError {
    match e {
        PoolError::Backend(e) => pg_error(e),
        other => StoreError::unavailable("no PostgreSQL connection available", other),
    }
}

/// Where `config` connects, for messages: `host:port`, each host tried (a host name that
/// does not resolve is named by the driver's error only as "failed to lookup address").
pub(super) fn server_of(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let ports = config.get_ports();
    let servers: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            // One port for all hosts, or one each; 5432 when none is given.
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) if name.contains(':') => format!("[{name}]:{port}"),
                Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                Host::Unix(dir) => format!("{}/.s.PGSQL.{port}", dir.display()),
            }
        })
        .collect();
    match servers.len() {
        0 => "the default host".to_owned(),
        _ => servers.join(", "),
    }
}

/// A failed first connection to `server`, with the driver's error (not the pool's
/// wrapper) as cause.
pub(super) fn connect_error(e: PoolError, server: &str) -> StoreError {
    let what = format!("cannot connect to the database at {server}");
    match e {
        PoolError::Backend(e) => StoreError::unavailable(what, e),
        other => StoreError::unavailable(what, other),
    }
}

/// Whether a failed connection may succeed later with no setting changed: nothing
/// listens yet, the server is starting, shutting down or out of connections, the link
/// timed out or was cut. Not a refused certificate (TLS errors are `InvalidData`), a
/// password or a `pg_hba.conf` rule (SQLSTATE 28), nor any SQL error.
pub(super) fn may_come_up(e: &StoreError) -> bool {
    let StoreError::Unavailable { .. } = e else {
        return false;
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(pg) = s.downcast_ref::<tokio_postgres::Error>() {
            if let Some(code) = pg.code() {
                return matches!(&code.code()[..2], "08" | "57" | "53");
            }
            if pg.is_closed() {
                return true;
            }
        }
        if let Some(PoolError::Timeout(_)) = s.downcast_ref::<PoolError>() {
            return true;
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::{InvalidData, InvalidInput, PermissionDenied, Unsupported};
            return !matches!(
                io.kind(),
                InvalidData | InvalidInput | PermissionDenied | Unsupported
            );
        }
        source = s.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::{PgLink, PgStore};
    use super::*;
    use crate::store::full_message;
    use std::path::Path;

    #[test]
    fn the_server_is_every_host_with_its_port() {
        let config = |url: &str| url.parse::<tokio_postgres::Config>().unwrap();
        assert_eq!(
            server_of(&config("postgres://db.example/x")),
            "db.example:5432"
        );
        assert_eq!(
            server_of(&config("host=a,b port=5433,5434 dbname=x")),
            "a:5433, b:5434"
        );
    }

    #[tokio::test]
    async fn a_host_that_does_not_resolve_is_named_in_the_connect_error() {
        // `.invalid` never resolves (RFC 2606).
        let link = PgLink::new(
            "postgres://bloomcast@db.bloomcast.invalid:5433/x",
            Path::new(""),
        )
        .unwrap();
        let now = crate::hour::hour_of(2008, 9, 3, 13).unwrap();

        let err = match PgStore::connect(link, "bloomcast", now).await {
            Ok(_) => panic!("connected to a host that does not exist"),
            Err(e) => full_message(&e),
        };

        assert!(
            err.contains("cannot connect to the database at db.bloomcast.invalid:5433"),
            "{err}"
        );
    }
}
