//! docs/DEPLOY.md's AWS CLI script, run as written but for the mirror's directory and the
//! upload list's place, over a real mirror, with an `aws` on `PATH` that records its
//! arguments: every form of every hour, each sidecar and chain page is uploaded once under
//! its URL's name, with the Content-Type the origin serves it with and `gzip` exactly for
//! `.gz` bytes; a second run uploads no hour again.

use crate::origin::{hour, mirror, Origin};
use std::collections::BTreeMap;
use std::path::Path;

/// One `aws s3 cp` the script ran: the file, and the object's headers.
#[derive(Debug)]
struct Upload {
    file: String,
    content_type: String,
    content_encoding: Option<String>,
    cache_control: String,
}

/// The script's `aws s3 cp` calls, by object name, from the log the fake `aws` wrote.
fn uploads(log: &Path) -> Vec<(String, Upload)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|line| {
            let args: Vec<&str> = line.trim_end_matches('\t').split('\t').collect();
            assert_eq!(&args[..2], ["s3", "cp"], "{line}");
            let flag = |name: &str| {
                args.iter()
                    .position(|a| *a == name)
                    .map(|i| args[i + 1].to_owned())
            };
            let object = args[3].strip_prefix("s3://BUCKET/").expect(line).to_owned();
            let upload = Upload {
                file: args[2].to_owned(),
                content_type: flag("--content-type").expect(line),
                content_encoding: flag("--content-encoding"),
                cache_control: flag("--cache-control").expect(line),
            };
            (object, upload)
        })
        .collect()
}

pub async fn the_deploy_s3_script_uploads_every_form_with_the_origins_content_type() {
    let origin = Origin::start(2, 10).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mirror");
    mirror(&dir, &origin).await;

    let deploy =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/DEPLOY.md")).unwrap();
    let script = deploy
        .split("```sh no-run\n")
        .find(|b| b.starts_with("cd /srv/bloomcast-mirror\n"))
        .expect("docs/DEPLOY.md's upload script, starting `cd /srv/bloomcast-mirror`")
        .split("```")
        .next()
        .unwrap();
    let list = tmp.path().join("uploaded.list");
    let script = script
        .replacen("/srv/bloomcast-mirror", &dir.display().to_string(), 1)
        .replace(
            "/var/lib/bloomcast-upload.list",
            &list.display().to_string(),
        );
    assert!(script.contains(&list.display().to_string()), "{script}");
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let log = tmp.path().join("aws.log");
    std::fs::write(
        bin.join("aws"),
        format!(
            "#!/bin/sh\nprintf '%s\\t' \"$@\" >> '{}'\necho >> '{}'\n",
            log.display(),
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("aws"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = || {
        let (script, path) = (script.clone(), path.clone());
        tokio::task::spawn_blocking(move || {
            let out = std::process::Command::new("bash")
                .args(["--noprofile", "--norc", "-c", &script])
                .env("PATH", &path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "the script failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        })
    };

    run().await.unwrap();
    let first = uploads(&log);
    let by_object: BTreeMap<&str, &Upload> = first.iter().map(|(o, u)| (o.as_str(), u)).collect();
    assert_eq!(by_object.len(), first.len(), "an object uploaded twice");
    let http = reqwest::Client::new();
    let immutable = "public, max-age=31536000, immutable";
    for n in 0..2 {
        let stem = hour(n).path();
        let forms = [
            "",
            ".json",
            ".hex",
            ".bin",
            ".ribbon",
            ".ribbon.json",
            ".ribbon2",
        ];
        for suffix in forms {
            let object = format!("{}{suffix}", &stem[1..]);
            let upload = by_object
                .get(object.as_str())
                .unwrap_or_else(|| panic!("{object} is not uploaded: {first:?}"));
            let served = http
                .get(format!("{}{stem}{suffix}", origin.base()))
                .send()
                .await
                .unwrap();
            assert_eq!(served.status(), 200, "{object}");
            assert_eq!(
                upload.content_type,
                served.headers()["content-type"].to_str().unwrap(),
                "{object}"
            );
            let gz = upload.file.ends_with(".gz");
            assert_eq!(
                upload.content_encoding.is_some(),
                gz,
                "{object}: {upload:?}"
            );
            assert_eq!(upload.file.trim_end_matches(".gz"), object, "{object}");
            assert_eq!(upload.cache_control, immutable, "{object}");
            let raw = suffix == ".ribbon" || suffix == ".ribbon2";
            assert_eq!(gz, !raw, "{object}: the gzip bytes, but of the ribbons");
        }
        for signed in [".ribbon", ".ribbon.json", ".ribbon2"] {
            let object = format!("{}{signed}.sig", &stem[1..]);
            let upload = by_object
                .get(object.as_str())
                .unwrap_or_else(|| panic!("{object} is not uploaded"));
            assert_eq!(upload.content_type, "text/plain; charset=utf-8");
            assert_eq!(upload.content_encoding, None);
        }
        let chain = format!("chain{stem}");
        let upload = by_object
            .get(chain.as_str())
            .unwrap_or_else(|| panic!("{chain} is not uploaded"));
        let served = http
            .get(format!("{}/chain{stem}", origin.base()))
            .send()
            .await
            .unwrap();
        assert_eq!(
            upload.content_type,
            served.headers()["content-type"].to_str().unwrap()
        );
    }
    for object in ["index.json", ".well-known/bloomcast.json"] {
        assert!(by_object.contains_key(object), "{object} is not uploaded");
    }
    // (The test publisher signs no checkpoint: uploaded where the mirror holds one.)
    let checkpoint = dir.join("checkpoint.json").is_file();
    assert_eq!(by_object.contains_key("checkpoint.json"), checkpoint);

    // The list makes a second run upload only what a pass rewrites.
    std::fs::remove_file(&log).unwrap();
    run().await.unwrap();
    let again: Vec<String> = uploads(&log).into_iter().map(|(o, _)| o).collect();
    let rewritten = [
        "checkpoint.json",
        "index.json",
        ".well-known/bloomcast.json",
    ];
    let skip = usize::from(!checkpoint);
    assert_eq!(again, rewritten[skip..], "a second run");
}
