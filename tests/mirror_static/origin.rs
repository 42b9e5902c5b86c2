//! The publisher a mirror is taken from (in process, its clock moved by the test), and
//! running `bloomcast mirror` against it.

use crate::common::inproc::{self, InProcess};
use bloomcast::hour::{hour_of, Hour};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

const TOKEN: &str = "mirror-static-token";

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

pub fn first_hour() -> Hour {
    hour_of(2008, 9, 3, 5).unwrap()
}

pub fn hour(n: i64) -> Hour {
    Hour::from_index(first_hour().index() + n)
}

/// The IDs ingested into hour `n`.
pub fn ids(n: i64, per_hour: usize) -> Vec<String> {
    (0..per_hour).map(|i| format!("h{n}:{i}")).collect()
}

/// A publisher whose clock the test moves, with `sealed` hours sealed.
pub struct Origin {
    server: InProcess,
    http: reqwest::Client,
    pub pubkey: String,
    sealed: i64,
    per_hour: usize,
}

impl Origin {
    pub async fn start(sealed: i64, per_hour: usize) -> Origin {
        let server =
            inproc::serve("127.0.0.1:0".parse().unwrap(), TOKEN, first_hour(), |_| {}).await;
        let http = reqwest::Client::new();
        let well_known: serde_json::Value = http
            .get(format!("{}/.well-known/bloomcast.json", server.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut origin = Origin {
            server,
            http,
            pubkey: well_known["public_key"].as_str().unwrap().to_owned(),
            sealed: 0,
            per_hour,
        };
        for _ in 0..sealed {
            origin.seal_one_more().await;
        }
        origin
    }

    /// Ingests into the open hour, moves the clock past it and has it sealed.
    pub async fn seal_one_more(&mut self) {
        let n = self.sealed;
        for batch in ids(n, self.per_hour).chunks(1000) {
            let reply = self
                .http
                .post(format!("{}/updates", self.server.base))
                .bearer_auth(TOKEN)
                .json(&serde_json::json!({ "ids": batch }))
                .send()
                .await
                .unwrap();
            assert!(reply.status().is_success());
        }
        self.server.clock.advance(chrono::Duration::hours(1));
        // Sealing happens in order, on first read of a closed hour.
        let sealed = self
            .http
            .get(format!("{}{}.bin", self.server.base, hour(n).path()))
            .send()
            .await
            .unwrap();
        assert_eq!(sealed.headers()["bloom-complete"], "true");
        self.sealed += 1;
    }

    pub fn base(&self) -> String {
        self.server.base.clone()
    }
}

/// Runs `bloomcast ARGS` off the runtime (the origin runs on it).
pub async fn bloomcast(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_bloomcast"))
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

pub fn mirror_args(dir: &Path, origin: &Origin) -> Vec<String> {
    vec![
        "mirror".into(),
        dir.display().to_string(),
        "--url".into(),
        origin.base(),
        "--pubkey".into(),
        origin.pubkey.clone(),
    ]
}

/// Runs a mirror pass, asserting success; returns its summary line.
pub async fn mirror(dir: &Path, origin: &Origin) -> String {
    let out = bloomcast(mirror_args(dir, origin)).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Every file under `dir` with its bytes and modification time.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if let (Ok(bytes), Ok(meta)) = (std::fs::read(&path), entry.metadata()) {
                // (A temporary file may be renamed away between listing and reading.)
                out.insert(path, (bytes, meta.modified().unwrap()));
            }
        }
    }
    out
}

/// The files of one mirrored hour (every form, its gzip siblings, each signed form's
/// `.sig` sidecar, its chain page).
pub fn hour_files(dir: &Path, h: Hour) -> Vec<PathBuf> {
    let stem = h.path();
    let mut names: Vec<String> = ["", ".json", ".hex", ".bin", ".ribbon.json"]
        .iter()
        .flat_map(|s| [format!("{stem}{s}"), format!("{stem}{s}.gz")])
        .collect();
    for signed in [".ribbon", ".ribbon.json", ".ribbon2"] {
        names.push(format!("{stem}{signed}.sig"));
    }
    names.push(format!("{stem}.ribbon"));
    names.push(format!("{stem}.ribbon2"));
    names.push(format!("/chain{stem}"));
    names
        .iter()
        .map(|n| dir.join(n.trim_start_matches('/')))
        .collect()
}
