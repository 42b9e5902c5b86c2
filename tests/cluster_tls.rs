//! Cluster mode over TLS: `sslmode` and the CA file against a private PostgreSQL with
//! `ssl=on` and a certificate made at test time (a test CA signing a certificate for
//! `localhost` only).
//!
//! Each test starts its own cluster (`common::pg`); without PostgreSQL's server
//! binaries they are reported ignored with the reason (`tests/common/needs.rs`), and fail
//! when `CI` is set.

#![cfg(unix)]

mod common;

use bloomcast::config::Settings;
use bloomcast::hour::hour_of;
use bloomcast::startup::Application;
use bloomcast::store::{PgLink, PgStore, SslMode, StoreError};
use common::needs::{self, Need};
use common::pg::PrivateCluster;
use common::{fetch, path_of, post_ids, TOKEN};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The role that pg_hba.conf lets in over TLS only.
const TLS_ONLY_ROLE: &str = "tls_only";

fn main() {
    needs::run(vec![
        needs::trial(
            "sslmode_disable_connects_in_plain_text_to_a_tls_server",
            &[Need::PostgresServer],
            || needs::block_on(sslmode_disable_connects_in_plain_text_to_a_tls_server()),
        ),
        needs::trial(
            "sslmode_require_and_the_default_prefer_encrypt_without_a_ca",
            &[Need::PostgresServer],
            || needs::block_on(sslmode_require_and_the_default_prefer_encrypt_without_a_ca()),
        ),
        needs::trial(
            "verify_ca_accepts_the_right_ca_whatever_the_host_name",
            &[Need::PostgresServer],
            || needs::block_on(verify_ca_accepts_the_right_ca_whatever_the_host_name()),
        ),
        needs::trial(
            "verify_full_connects_to_the_name_in_the_certificate",
            &[Need::PostgresServer],
            || needs::block_on(verify_full_connects_to_the_name_in_the_certificate()),
        ),
        needs::trial(
            "verify_full_refuses_a_host_name_the_certificate_does_not_name",
            &[Need::PostgresServer],
            || needs::block_on(verify_full_refuses_a_host_name_the_certificate_does_not_name()),
        ),
        needs::trial(
            "a_certificate_from_another_ca_is_refused_by_verify_ca_and_by_require_with_a_ca",
            &[Need::PostgresServer],
            || {
                needs::block_on(
                    a_certificate_from_another_ca_is_refused_by_verify_ca_and_by_require_with_a_ca(
                    ),
                )
            },
        ),
        needs::trial(
            "a_tls_only_rule_in_pg_hba_refuses_sslmode_disable",
            &[Need::PostgresServer],
            || needs::block_on(a_tls_only_rule_in_pg_hba_refuses_sslmode_disable()),
        ),
        needs::trial(
            "a_node_on_verify_full_ingests_and_serves_over_tls_only",
            &[Need::PostgresServer],
            || needs::block_on(a_node_on_verify_full_ingests_and_serves_over_tls_only()),
        ),
        needs::trial(
            "a_bad_sslmode_or_ca_file_stops_start_naming_the_setting",
            &[Need::PostgresServer],
            || needs::block_on(a_bad_sslmode_or_ca_file_stops_start_naming_the_setting()),
        ),
    ]);
}

/// A running TLS server and the CA files a client may be given.
struct TlsServer {
    cluster: PrivateCluster,
    /// The CA that signed the server's certificate.
    ca_file: PathBuf,
    /// A CA that has nothing to do with the server.
    other_ca_file: PathBuf,
}

impl TlsServer {
    fn url(&self, user: &str, host: &str, query: &str) -> String {
        let port = self.cluster.port();
        format!("postgres://{user}@{host}:{port}/postgres?{query}")
    }
}

/// A new CA: its issuer (to sign with) and its certificate in PEM.
fn new_ca(name: &str) -> (Issuer<'static, KeyPair>, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let pem = params.self_signed(&key).unwrap().pem();
    (Issuer::new(params, key), pem)
}

/// A server certificate for `names`, signed by `ca`: (certificate PEM, key PEM).
fn server_cert(ca: &Issuer<'static, KeyPair>, names: &[&str]) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "bloomcast test server");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, ca).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn write(path: &Path, text: &str, mode: u32) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|e| e.to_string())
}

/// A private cluster with `ssl=on`, its certificate naming only `localhost`; plain
/// connections allowed except for [`TLS_ONLY_ROLE`], which must use TLS.
async fn try_tls_server() -> Result<TlsServer, String> {
    let cluster = PrivateCluster::init()?;
    let dir = cluster.dir().to_owned();
    let (ca, ca_pem) = new_ca("bloomcast test CA");
    let (_, other_pem) = new_ca("unrelated test CA");
    let (cert, key) = server_cert(&ca, &["localhost"]);
    let server = TlsServer {
        ca_file: dir.join("ca.pem"),
        other_ca_file: dir.join("other-ca.pem"),
        cluster,
    };
    write(&server.ca_file, &ca_pem, 0o644)?;
    write(&server.other_ca_file, &other_pem, 0o644)?;
    write(&dir.join("server.crt"), &cert, 0o644)?;
    write(&dir.join("server.key"), &key, 0o600)?;
    let data = server.cluster.data();
    let mut conf =
        std::fs::read_to_string(data.join("postgresql.conf")).map_err(|e| e.to_string())?;
    conf.push_str(&format!(
        "\nssl = on\nssl_cert_file = '{0}/server.crt'\nssl_key_file = '{0}/server.key'\n",
        dir.display()
    ));
    write(&data.join("postgresql.conf"), &conf, 0o600)?;
    let hba = format!(
        "local all all trust\n\
         hostssl all {TLS_ONLY_ROLE} 127.0.0.1/32 trust\n\
         hostnossl all {TLS_ONLY_ROLE} 127.0.0.1/32 reject\n\
         host all all 127.0.0.1/32 trust\n"
    );
    write(&data.join("pg_hba.conf"), &hba, 0o600)?;
    server.cluster.hand_over()?;
    server.cluster.start()?;
    let admin = link(
        &server.url("postgres", "127.0.0.1", "sslmode=disable"),
        Path::new(""),
    )
    .connect()
    .await
    .map_err(|e| e.to_string())?;
    admin
        .batch_execute(&format!("CREATE ROLE {TLS_ONLY_ROLE} LOGIN"))
        .await
        .map_err(|e| e.to_string())?;
    Ok(server)
}

/// The TLS server, or `None` when the test is skipped.
async fn tls_server() -> Option<TlsServer> {
    match try_tls_server().await {
        Ok(server) => Some(server),
        Err(reason) => panic!("could not start a private PostgreSQL cluster with TLS: {reason}"),
    }
}

fn link(url: &str, ca_file: &Path) -> PgLink {
    PgLink::new(url, ca_file).unwrap_or_else(|e| panic!("{url}: {e}"))
}

/// Whether the server sees this very connection as encrypted.
async fn encrypted(client: &tokio_postgres::Client) -> bool {
    client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

/// Connects a store the way a node starts, expecting a refusal: its message, after
/// checking it is a connect error with its cause kept.
async fn refusal(url: &str, ca_file: &Path) -> String {
    let now = hour_of(2008, 9, 3, 13).unwrap();
    match PgStore::connect(link(url, ca_file), "bloomcast", now).await {
        Ok(_) => panic!("{url} connected but should have been refused"),
        Err(e @ StoreError::Unavailable { .. }) => {
            assert!(std::error::Error::source(&e).is_some(), "cause kept: {e}");
            // A refused certificate is not waited out in standby: the start stops.
            assert!(
                !PgStore::may_come_up(&e),
                "{url}: not worth waiting for: {e}"
            );
            bloomcast::store::full_message(&e)
        }
        Err(other) => panic!("{url}: expected a connect error, got {other}"),
    }
}

async fn sslmode_disable_connects_in_plain_text_to_a_tls_server() {
    let Some(server) = tls_server().await else {
        return;
    };
    let url = server.url("postgres", "127.0.0.1", "sslmode=disable");
    let client = link(&url, Path::new("")).connect().await.unwrap();
    assert!(!encrypted(&client).await);
}

async fn sslmode_require_and_the_default_prefer_encrypt_without_a_ca() {
    let Some(server) = tls_server().await else {
        return;
    };
    for query in ["sslmode=require", ""] {
        let url = server.url("postgres", "127.0.0.1", query);
        let client = link(&url, Path::new("")).connect().await.unwrap();
        assert!(encrypted(&client).await, "{query}");
    }
}

async fn verify_ca_accepts_the_right_ca_whatever_the_host_name() {
    let Some(server) = tls_server().await else {
        return;
    };
    // 127.0.0.1 is not in the certificate: verify-ca does not look at names.
    let url = server.url("postgres", "127.0.0.1", "sslmode=verify-ca");
    let client = link(&url, &server.ca_file).connect().await.unwrap();
    assert!(encrypted(&client).await);
}

async fn verify_full_connects_to_the_name_in_the_certificate() {
    let Some(server) = tls_server().await else {
        return;
    };
    let url = server.url("postgres", "localhost", "sslmode=verify-full");
    let l = link(&url, &server.ca_file);
    assert_eq!(l.mode(), SslMode::VerifyFull);
    let client = l.connect().await.unwrap();
    assert!(encrypted(&client).await);
}

async fn verify_full_refuses_a_host_name_the_certificate_does_not_name() {
    let Some(server) = tls_server().await else {
        return;
    };
    let url = server.url("postgres", "127.0.0.1", "sslmode=verify-full");
    let message = refusal(&url, &server.ca_file).await;
    assert!(
        message.contains("certificate not valid for name") && message.contains("127.0.0.1"),
        "{message}"
    );
}

async fn a_certificate_from_another_ca_is_refused_by_verify_ca_and_by_require_with_a_ca() {
    let Some(server) = tls_server().await else {
        return;
    };
    // libpq: require given a root certificate verifies the chain as verify-ca does.
    for query in ["sslmode=verify-ca", "sslmode=require"] {
        let url = server.url("postgres", "localhost", query);
        let message = refusal(&url, &server.other_ca_file).await;
        assert!(
            message.contains("invalid peer certificate") && message.contains("UnknownIssuer"),
            "{query}: {message}"
        );
    }
}

async fn a_tls_only_rule_in_pg_hba_refuses_sslmode_disable() {
    let Some(server) = tls_server().await else {
        return;
    };
    let plain = server.url(TLS_ONLY_ROLE, "127.0.0.1", "sslmode=disable");
    let err = link(&plain, Path::new(""))
        .connect()
        .await
        .expect_err("refused in plain text");
    let db = err.as_db_error().expect("the server's refusal");
    assert_eq!(db.code().code(), "28000", "{db}");
    assert!(db.message().contains("no encryption"), "{db}");
    let tls = server.url(TLS_ONLY_ROLE, "localhost", "sslmode=verify-full");
    let client = link(&tls, &server.ca_file).connect().await.unwrap();
    assert!(encrypted(&client).await);
}

async fn a_node_on_verify_full_ingests_and_serves_over_tls_only() {
    let Some(server) = tls_server().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_owned(),
        ingest_tokens: vec![TOKEN.into()],
        database_url: server
            .url(TLS_ONLY_ROLE, "localhost", "sslmode=verify-full")
            .into(),
        database_ca_file: server.ca_file.clone(),
        refresh_ms: 0,
        ..Settings::default()
    };
    let admin = link(&server.url("postgres", "127.0.0.1", ""), Path::new(""))
        .connect()
        .await
        .unwrap();
    admin
        .batch_execute(&format!(
            "GRANT CREATE ON DATABASE postgres TO {TLS_ONLY_ROLE}"
        ))
        .await
        .unwrap();
    let app = Application::build(settings).await.expect("node starts");
    let base = format!("http://{}", app.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(app.run_until(async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let ids: Vec<String> = (0..500).map(|i| format!("tls-{i}")).collect();
    let hour = post_ids(&http, &base, &ids).await.expect("ingest over TLS");
    let (meta, filter) = fetch(&http, &base, &path_of(&hour)).await;
    assert_eq!(meta.count, ids.len() as u64);
    assert!(ids.iter().all(|id| filter.contains(id)));
    // The role can only come in over TLS, and every connection it holds says so.
    let row = admin
        .query_one(
            "SELECT count(*), coalesce(bool_and(s.ssl), false) FROM pg_stat_activity a
             JOIN pg_stat_ssl s USING (pid) WHERE a.usename = $1",
            &[&TLS_ONLY_ROLE],
        )
        .await
        .unwrap();
    let (connections, all_tls): (i64, bool) = (row.get(0), row.get(1));
    assert!(
        connections >= 1 && all_tls,
        "{connections} connections, all TLS: {all_tls}"
    );
    drop(stop);
    running.await.unwrap();
}

async fn a_bad_sslmode_or_ca_file_stops_start_naming_the_setting() {
    // Fails before any connection is tried, so no server is needed.
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let cases = [
        ("sslmode=verify-always", PathBuf::new(), "database_url"),
        (
            "sslmode=verify-full",
            dir.path().join("missing.pem"),
            "database_ca_file",
        ),
        ("sslmode=verify-full", garbage, "database_ca_file"),
    ];
    for (query, ca_file, setting) in cases {
        let settings = Settings {
            listen: "127.0.0.1:0".parse().unwrap(),
            data_dir: dir.path().to_owned(),
            ingest_tokens: vec![TOKEN.into()],
            database_url: format!("postgres://postgres@127.0.0.1:9/none?{query}").into(),
            database_ca_file: ca_file,
            ..Settings::default()
        };
        let message = match Application::build(settings).await {
            Ok(_) => panic!("{query} started"),
            Err(e) => e.to_string(),
        };
        assert!(message.contains(setting), "{query}: {message}");
    }
}
