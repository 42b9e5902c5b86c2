//! Tests of the settings: layering, errors naming files and lines, the environment
//! names (a contract), secrets, and the generated reference.

use super::*;
use std::collections::HashMap;
use std::path::Path;

/// An environment of `pairs`, as `Settings::load_from` takes it.
fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// An environment of `pairs`, as `Settings::apply_env` reads it.
fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = env(pairs).into_iter().collect();
    move |name| map.get(name).cloned()
}

/// These names are a contract: renaming a setting would silently drop a deployment's
/// override.
#[test]
fn every_documented_environment_variable_still_exists() {
    let names: Vec<String> = Settings::reference().into_iter().map(|s| s.env).collect();
    for name in [
        "BLOOMCAST_LISTEN",
        "BLOOMCAST_DATA_DIR",
        "BLOOMCAST_INGEST_TOKENS",
        "BLOOMCAST_CAPACITY",
        "BLOOMCAST_TARGET_FPP",
        "BLOOMCAST_RETENTION_HOURS",
        "BLOOMCAST_OPEN_MAX_AGE",
        "BLOOMCAST_BODY_LIMIT",
        "BLOOMCAST_CACHE_BYTES",
        "BLOOMCAST_SHUTDOWN_TIMEOUT",
        "BLOOMCAST_DATABASE_URL",
        "BLOOMCAST_DATABASE_SCHEMA",
        "BLOOMCAST_REFRESH_MS",
        "BLOOMCAST_REQUEST_TIMEOUT_SECONDS",
        "BLOOMCAST_HEADER_READ_TIMEOUT_SECONDS",
        "BLOOMCAST_WRITE_TIMEOUT_SECONDS",
        "BLOOMCAST_CLOCK_OFFSET_SECONDS",
        "BLOOMCAST_ACCESS_LOG",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} is gone");
    }
}

#[test]
fn every_setting_is_in_the_committed_default_file() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/default.toml"))
        .unwrap();
    let table: toml::Table = text.parse().unwrap();
    for s in Settings::reference() {
        assert!(
            table.contains_key(s.key),
            "config/default.toml lacks {}",
            s.key
        );
    }
}

#[test]
fn docs_config_md_is_generated_from_the_settings() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/CONFIG.md");
    let generated = Settings::reference_markdown();
    if std::env::var_os("BLOOMCAST_BLESS").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/CONFIG.md is out of date: run BLOOMCAST_BLESS=1 cargo test --lib config"
    );
}

#[test]
fn help_lists_every_setting_with_its_variable_and_default() {
    let help = Settings::help();
    for s in Settings::reference() {
        assert!(help.contains(&format!("{} / {} [default: {}]", s.key, s.env, s.default)));
    }
    assert!(help.contains("access_log / BLOOMCAST_ACCESS_LOG [default: false]"));
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_missing_bloomcast_config_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = Settings::load_from(
        dir.path(),
        &Overrides::default(),
        env(&[("BLOOMCAST_CONFIG", "nope.toml")]),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }), "{err}");
    assert!(err.to_string().contains("nope.toml"), "{err}");
}

#[test]
fn a_syntax_error_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let local = write(
        dir.path(),
        "config/local.toml",
        "capacity = 10\nlisten = [\n",
    );
    let err = Settings::load_from(dir.path(), &Overrides::default(), env(&[])).unwrap_err();
    let shown = err.to_string();
    assert!(shown.contains(&local.display().to_string()), "{shown}");
    assert!(shown.contains("line 2"), "{shown}");
}

#[test]
fn a_wrong_type_or_unknown_key_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let extra = write(dir.path(), "extra.toml", "capacity = 10\n\ncapacty = 5\n");
    let err = Settings::load_from(
        dir.path(),
        &Overrides::default(),
        env(&[("BLOOMCAST_CONFIG", "extra.toml")]),
    )
    .unwrap_err();
    let shown = err.to_string();
    assert!(shown.contains(&extra.display().to_string()), "{shown}");
    assert!(
        shown.contains("line 3") && shown.contains("capacty"),
        "{shown}"
    );
    assert!(
        shown.contains("`capacty` is no setting: the closest is `capacity`"),
        "{shown}"
    );
    write(dir.path(), "extra.toml", "capacity = \"many\"\n");
    let shown = Settings::load_from(
        dir.path(),
        &Overrides::default(),
        env(&[("BLOOMCAST_CONFIG", "extra.toml")]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        shown.contains("line 1") && shown.contains("capacity"),
        "{shown}"
    );
}

#[test]
fn files_layer_in_order_then_the_environment_and_paths_resolve_against_the_base() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "config/default.toml",
        "capacity = 10\nopen_max_age = 5\n",
    );
    write(dir.path(), "config/local.toml", "capacity = 20\n");
    write(
        dir.path(),
        "extra.toml",
        "capacity = 30\naccess_log = true\n",
    );
    let loaded = Settings::load_from(
        dir.path(),
        &Overrides::default(),
        env(&[
            ("BLOOMCAST_CONFIG", "extra.toml"),
            ("BLOOMCAST_OPEN_MAX_AGE", "7"),
            // A numeric-looking token stays a string.
            ("BLOOMCAST_INGEST_TOKENS", "12345678"),
        ]),
    )
    .unwrap();
    let s = loaded.settings;
    assert_eq!((s.capacity, s.open_max_age, s.access_log), (30, 7, true));
    assert_eq!(s.ingest_tokens[0].expose_secret(), "12345678");
    assert_eq!(loaded.files.len(), 3);
    assert!(s.data_dir.is_absolute() && s.data_dir.ends_with("data"));
    assert!(s.data_dir.starts_with(dir.path()));
}

#[test]
fn command_line_flags_win_over_the_environment_which_wins_over_files() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "config/local.toml",
        "listen = \"127.0.0.1:1\"\ndata_dir = \"from-file\"\ncapacity = 10\n",
    );
    write(dir.path(), "env.toml", "capacity = 20\n");
    write(dir.path(), "flag.toml", "capacity = 30\n");
    let environment = env(&[
        ("BLOOMCAST_CONFIG", "env.toml"),
        ("BLOOMCAST_LISTEN", "127.0.0.1:2"),
        ("BLOOMCAST_DATA_DIR", "from-env"),
    ]);

    let by_env = Settings::load_from(dir.path(), &Overrides::default(), environment.clone())
        .unwrap()
        .settings;
    let flags = Overrides {
        config: Some("flag.toml".into()),
        listen: Some("localhost:3".parse().unwrap()),
        data_dir: Some("from-flag".into()),
    };
    let by_flags = Settings::load_from(dir.path(), &flags, environment)
        .unwrap()
        .settings;

    assert_eq!(by_env.listen.as_str(), "127.0.0.1:2");
    assert!(by_env.data_dir.ends_with("from-env"));
    assert_eq!(by_env.capacity, 20);
    assert_eq!(by_flags.listen.as_str(), "localhost:3");
    assert_eq!(by_flags.data_dir, dir.path().join("from-flag"));
    assert_eq!(by_flags.capacity, 30);
}

#[test]
fn an_unknown_bloomcast_variable_stops_the_load_naming_the_closest_setting() {
    let dir = tempfile::tempdir().unwrap();
    let err = Settings::load_from(
        dir.path(),
        &Overrides::default(),
        env(&[("BLOOMCAST_LISTN", "127.0.0.1:1"), ("BLOOMCAST_TOKEN", "x")]),
    )
    .unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("BLOOMCAST_LISTN ") && shown.contains("BLOOMCAST_LISTEN"),
        "{shown}"
    );
}

#[test]
fn the_committed_default_file_parses_to_the_defaults() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/default.toml"))
        .unwrap();
    let from_file: Settings = toml::from_str(&text).unwrap();
    assert_eq!(
        format!("{from_file:?}"),
        format!("{:?}", Settings::default())
    );
}

#[test]
fn environment_overrides_the_documented_names() {
    let mut s = Settings::default();
    s.apply_env(lookup(&[
        ("BLOOMCAST_LISTEN", "0.0.0.0:9999"),
        ("BLOOMCAST_DATA_DIR", "/var/lib/bloomcast"),
        ("BLOOMCAST_INGEST_TOKENS", "token-one-x, token-two-y,"),
        ("BLOOMCAST_CAPACITY", "5000"),
        ("BLOOMCAST_REQUEST_TIMEOUT_SECONDS", "7"),
        ("BLOOMCAST_HEADER_READ_TIMEOUT_SECONDS", "2"),
        ("BLOOMCAST_WRITE_TIMEOUT_SECONDS", "9"),
        ("BLOOMCAST_CLOCK_OFFSET_SECONDS", "-3600"),
    ]))
    .unwrap();
    assert_eq!(s.request_timeout_seconds, 7);
    assert_eq!(s.header_read_timeout_seconds, 2);
    assert_eq!(s.write_timeout_seconds, 9);
    assert_eq!(s.clock_offset_seconds, -3600);
    assert_eq!(s.listen.as_str(), "0.0.0.0:9999");
    assert_eq!(s.data_dir, PathBuf::from("/var/lib/bloomcast"));
    let tokens: Vec<&str> = s.ingest_tokens.iter().map(|t| t.expose_secret()).collect();
    assert_eq!(tokens, vec!["token-one-x", "token-two-y"]);
    assert_eq!(s.capacity, 5000);
}

#[test]
fn a_bad_environment_value_names_the_variable() {
    let err = Settings::default()
        .apply_env(lookup(&[("BLOOMCAST_LISTEN", "nowhere")]))
        .unwrap_err();
    assert!(err.to_string().contains("BLOOMCAST_LISTEN"), "{err}");
}

#[test]
fn validation_rejects_out_of_range_settings() {
    let mut s = Settings {
        target_fpp: 1.5,
        ..Settings::default()
    };
    assert!(matches!(
        s.validate(),
        Err(ConfigError::Invalid {
            name: "target_fpp",
            ..
        })
    ));
    s = Settings {
        ingest_tokens: vec!["short".into()],
        ..Settings::default()
    };
    assert!(matches!(
        s.validate(),
        Err(ConfigError::Invalid {
            name: "ingest_tokens",
            ..
        })
    ));
    // Cluster mode without tokens is valid settings: the cluster commands need only the
    // database's. A server refuses them at its start (startup::cluster_tokens).
    s = Settings {
        database_url: "postgres://db/bloom".into(),
        ..Settings::default()
    };
    assert!(s.validate().is_ok());
}

#[test]
fn debug_output_never_shows_secrets() {
    let s = Settings {
        ingest_tokens: vec!["super-secret-token".into()],
        database_url: "postgres://app:hunter2@db/bloom".into(),
        ..Settings::default()
    };
    let shown = format!("{s:?}");
    assert!(
        !shown.contains("super-secret-token") && !shown.contains("hunter2"),
        "{shown}"
    );
    assert!(shown.contains("postgres://app:***@db/bloom"));
}

#[test]
fn settings_that_cannot_work_are_refused_with_their_name() {
    type Tweak = Box<dyn Fn(&mut Settings)>;
    let cases: Vec<(&str, Tweak)> = vec![
        ("capacity", Box::new(|s| s.capacity = 500_000_000)),
        ("max_hour_ids", Box::new(|s| s.max_hour_ids = u64::MAX / 4)),
        ("max_connections", Box::new(|s| s.max_connections = 0)),
        (
            "write_timeout_seconds",
            Box::new(|s| s.write_timeout_seconds = 0),
        ),
        ("write_queue_depth", Box::new(|s| s.write_queue_depth = 0)),
        ("union_builds", Box::new(|s| s.union_builds = 0)),
    ];
    for (name, tweak) in cases {
        let mut s = Settings::default();
        tweak(&mut s);
        let err = s.validate().unwrap_err();
        assert!(
            matches!(&err, ConfigError::Invalid { name: n, .. } if *n == name),
            "{name}: {err}"
        );
    }
    assert!(Settings::default().validate().is_ok());
}
