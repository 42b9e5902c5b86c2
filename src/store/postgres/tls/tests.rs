//! CA files and the connector per mode; the verifiers themselves are tried against a
//! real TLS PostgreSQL in `tests/cluster_tls.rs`.

use super::*;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn every_certificate_of_a_pem_bundle_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let a = rcgen::generate_simple_self_signed(vec!["a.test".into()]).unwrap();
    let b = rcgen::generate_simple_self_signed(vec!["b.test".into()]).unwrap();
    let path = write(
        &dir,
        "bundle.pem",
        &format!("# comment\n{}{}", a.cert.pem(), b.cert.pem()),
    );
    assert_eq!(load_ca_file(&path).unwrap().len(), 2);
}

#[test]
fn unusable_ca_files_are_refused_with_their_path() {
    let dir = tempfile::tempdir().unwrap();
    let key_only = rcgen::KeyPair::generate().unwrap().serialize_pem();
    let cases = [
        ("empty.pem", String::new()),
        ("key.pem", key_only),
        (
            "garbage.pem",
            "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n".into(),
        ),
        ("broken.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n".into()),
    ];
    for (name, text) in cases {
        let path = write(&dir, name, &text);
        let err = load_ca_file(&path)
            .err()
            .unwrap_or_else(|| panic!("{name} accepted"));
        assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    }
    let missing = dir.path().join("missing.pem");
    assert!(matches!(
        load_ca_file(&missing),
        Err(TlsSetupError::Read { .. })
    ));
}

#[test]
fn a_connector_is_built_for_every_mode_with_and_without_a_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let ca = rcgen::generate_simple_self_signed(vec!["ca.test".into()]).unwrap();
    let path = write(&dir, "ca.pem", &ca.cert.pem());
    for mode in [
        SslMode::Disable,
        SslMode::Prefer,
        SslMode::Require,
        SslMode::VerifyCa,
        SslMode::VerifyFull,
    ] {
        connector(mode, &Roots::Public).unwrap();
        connector(mode, &Roots::File(path.clone())).unwrap();
    }
}

#[test]
fn every_documented_sslmode_parses_and_nothing_else_does() {
    for name in SslMode::NAMES.split(", ") {
        assert!(SslMode::parse(name).is_some(), "{name}");
    }
    for name in ["allow", "VERIFY-FULL", "verify_full", "", "true"] {
        assert_eq!(SslMode::parse(name), None, "{name}");
    }
}
