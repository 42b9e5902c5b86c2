//! `database_url` parsing: libpq's SSL parameters out, everything else left to tokio-postgres.

use super::*;
use std::path::PathBuf;

fn params(url: &str) -> SslParams {
    take_ssl_params("database_url", url).unwrap()
}

#[test]
fn url_parameters_are_taken_out_and_the_rest_is_kept_in_order() {
    let p = params(
        "postgres://app:s%3Fcret@db.example:5433/bloom?application_name=bc&sslmode=verify-full\
         &sslrootcert=%2Fetc%2Fca%20dir%2Froot.pem&connect_timeout=5",
    );
    assert_eq!(p.sslmode.as_deref(), Some("verify-full"));
    assert_eq!(p.sslrootcert.as_deref(), Some("/etc/ca dir/root.pem"));
    assert_eq!(
        p.rest,
        "postgres://app:s%3Fcret@db.example:5433/bloom?application_name=bc&connect_timeout=5"
    );
}

#[test]
fn a_url_left_with_no_parameters_loses_its_question_mark() {
    let p = params("postgresql://db/bloom?sslmode=require");
    assert_eq!(p.sslmode.as_deref(), Some("require"));
    assert_eq!(p.rest, "postgresql://db/bloom");
    assert_eq!(params("postgres://db/bloom").rest, "postgres://db/bloom");
}

#[test]
fn a_question_mark_in_the_password_is_not_the_query() {
    let p = params("postgres://app:a?b@db/bloom?sslmode=disable");
    assert_eq!(p.sslmode.as_deref(), Some("disable"));
    assert_eq!(p.rest, "postgres://app:a?b@db/bloom");
}

#[test]
fn key_value_strings_are_understood_with_quotes_and_escapes() {
    let p = params(
        "host=db port = 5433 sslmode=verify-ca sslrootcert='/etc/my ca/root\\'s.pem' \
         password='a b' dbname=bloom",
    );
    assert_eq!(p.sslmode.as_deref(), Some("verify-ca"));
    assert_eq!(p.sslrootcert.as_deref(), Some("/etc/my ca/root's.pem"));
    assert_eq!(p.rest, "host=db port = 5433 password='a b' dbname=bloom");
    let config: tokio_postgres::Config = p.rest.parse().unwrap();
    assert_eq!(config.get_password(), Some(&b"a b"[..]));
    assert_eq!(config.get_ports(), &[5433]);
}

#[test]
fn malformed_key_value_text_is_left_for_tokio_postgres_to_report() {
    let p = params("host=db sslmode");
    assert_eq!(p.rest, "host=db sslmode");
    assert!(PgLink::new("host=db sslmode", Path::new("")).is_err());
}

#[test]
fn sslmode_defaults_to_prefer_and_maps_onto_tokio_postgres() {
    use tokio_postgres::config::SslMode as Wire;
    let cases = [
        ("", SslMode::Prefer, Wire::Prefer),
        ("?sslmode=disable", SslMode::Disable, Wire::Disable),
        ("?sslmode=prefer", SslMode::Prefer, Wire::Prefer),
        ("?sslmode=require", SslMode::Require, Wire::Require),
        ("?sslmode=verify-ca", SslMode::VerifyCa, Wire::Require),
        ("?sslmode=verify-full", SslMode::VerifyFull, Wire::Require),
    ];
    for (query, mode, wire) in cases {
        let link = PgLink::new(&format!("postgres://db/bloom{query}"), Path::new("")).unwrap();
        assert_eq!(link.mode(), mode, "{query}");
        assert_eq!(link.config.get_ssl_mode(), wire, "{query}");
        assert_eq!(link.config.get_dbname(), Some("bloom"));
    }
}

#[test]
fn an_unknown_sslmode_is_an_error_naming_the_setting_and_the_choices() {
    let err = PgLink::new(
        "postgres://db/bloom?sslmode=verify-everything",
        Path::new(""),
    )
    .err()
    .unwrap();
    let text = err.to_string();
    assert!(text.contains("database_url"), "{text}");
    assert!(text.contains("verify-everything"), "{text}");
    assert!(text.contains("verify-full"), "{text}");
}

#[test]
fn sslrootcert_system_means_public_roots_and_verify_full() {
    let link = PgLink::new("postgres://db/bloom?sslrootcert=system", Path::new("")).unwrap();
    assert_eq!(link.mode(), SslMode::VerifyFull);
    assert_eq!(link.ca_file(), None);
    let err = PgLink::new(
        "postgres://db/bloom?sslrootcert=system&sslmode=require",
        Path::new(""),
    )
    .err()
    .unwrap();
    assert!(
        matches!(err, LinkError::SystemRootsNeedVerifyFull(..)),
        "{err}"
    );
}

#[test]
fn a_missing_ca_file_fails_whatever_the_mode_and_names_the_setting() {
    for query in ["", "?sslmode=disable", "?sslmode=verify-full"] {
        let url = format!("postgres://db/bloom{query}");
        let err = PgLink::new(&url, Path::new("/nonexistent/ca.pem"))
            .err()
            .unwrap();
        let text = crate::store::full_message(&err);
        assert!(
            text.contains("database_ca_file") && text.contains("/nonexistent/ca.pem"),
            "{text}"
        );
        assert!(std::error::Error::source(&err).is_some(), "cause kept");
        assert_eq!(text.matches("/nonexistent/ca.pem").count(), 1, "{text}");
        assert_eq!(
            text.matches("(os error 2)").count(),
            1,
            "the cause once: {text}"
        );
    }
    let err = PgLink::new(
        "postgres://db/bloom?sslmode=verify-ca&sslrootcert=/nonexistent/root.crt",
        Path::new(""),
    )
    .err()
    .unwrap();
    let text = crate::store::full_message(&err);
    assert!(
        text.contains("sslrootcert") && text.contains("/nonexistent/root.crt"),
        "{text}"
    );
}

#[test]
fn sslrootcert_in_the_url_wins_over_the_ca_file_setting() {
    let dir = tempfile::tempdir().unwrap();
    let ca = rcgen::generate_simple_self_signed(vec!["ca.test".into()]).unwrap();
    let path = dir.path().join("root.pem");
    std::fs::write(&path, ca.cert.pem()).unwrap();
    let url = format!(
        "postgres://db/bloom?sslmode=verify-full&sslrootcert={}",
        path.display()
    );
    let link = PgLink::new(&url, Path::new("/nonexistent/ignored.pem")).unwrap();
    assert_eq!(link.ca_file(), Some(path.as_path()));
    let link = PgLink::new("postgres://db/bloom?sslmode=verify-ca", &path).unwrap();
    assert_eq!(link.ca_file(), Some(PathBuf::from(&path).as_path()));
}

#[test]
fn a_bad_percent_encoding_is_a_syntax_error() {
    for bad in ["%zz", "%+f", "%-1", "%f"] {
        let url = format!("postgres://db/bloom?sslrootcert={bad}");
        let err = PgLink::new(&url, Path::new("")).err().unwrap();
        assert!(matches!(err, LinkError::Syntax(..)), "{bad}: {err}");
    }
}

#[test]
fn what_tokio_postgres_rejects_is_named_in_the_message() {
    let err = PgLink::new("postgres://db/bloom?sslcert=/etc/client.pem", Path::new(""))
        .err()
        .unwrap();
    let text = crate::store::full_message(&err);
    assert!(
        text.contains("database_url") && text.contains("sslcert"),
        "{text}"
    );
    assert_eq!(text.matches("sslcert").count(), 1, "the cause once: {text}");
}

#[test]
fn a_misspelt_scheme_is_named_with_the_right_one_and_never_the_password() {
    let err = PgLink::new("postgress://app:hunter2@db/bloom", Path::new(""))
        .err()
        .expect("refused");
    let said = err.to_string();
    assert!(matches!(err, LinkError::Scheme(..)), "{said}");
    assert!(
        said.contains("\"postgress://\""),
        "names the scheme: {said}"
    );
    assert!(said.contains("postgres://"), "names the right one: {said}");
    assert!(!said.contains("hunter2"), "{said}");
    // Both of libpq's schemes, and its key=value form (which may hold `://`), pass.
    assert!(check_scheme("database_url", "postgresql://db/bloom").is_ok());
    assert!(check_scheme("database_url", "host=db application_name=http://x").is_ok());
}
