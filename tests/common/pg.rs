//! A private PostgreSQL cluster for tests that need one of their own (to stop it, or
//! to give it TLS settings): initdb in a temporary directory, its own port on 127.0.0.1.
//!
//! The binaries come from `BLOOMCAST_TEST_PG_BIN`, else the newest
//! `/usr/lib/postgresql/*/bin` (Debian), else `initdb` on `PATH`. initdb refuses to run
//! as root, so as root every tool runs as the `postgres` user (`runuser`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A PostgreSQL server of the test's own; stopped (and its files removed) on drop.
pub struct PrivateCluster {
    dir: tempfile::TempDir,
    port: u16,
    bin: PathBuf,
}

impl PrivateCluster {
    /// A new cluster, initialised and started with trust authentication.
    ///
    /// # Errors
    /// Why not, for the skip message.
    pub fn create() -> Result<PrivateCluster, String> {
        let cluster = PrivateCluster::init()?;
        cluster.start()?;
        Ok(cluster)
    }

    /// A new cluster, initialised but not started, so a test can change its
    /// configuration first (then [`PrivateCluster::start`]).
    ///
    /// # Errors
    /// Why not, for the skip message.
    pub fn init() -> Result<PrivateCluster, String> {
        let bin = pg_bin().ok_or("PostgreSQL server binaries (initdb, pg_ctl) not found")?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let cluster = PrivateCluster {
            dir,
            port: free_port()?,
            bin,
        };
        cluster.hand_over()?;
        let data = cluster.data().display().to_string();
        cluster.pg(
            "initdb",
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        )?;
        Ok(cluster)
    }

    /// A hot standby of `primary` (started, streaming from it), made by pg_basebackup
    /// and named `name` to the primary (its `application_name`, as
    /// `synchronous_standby_names` lists standbys).
    ///
    /// # Errors
    /// Why not, for the skip message.
    pub fn standby_of(primary: &PrivateCluster, name: &str) -> Result<PrivateCluster, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let cluster = PrivateCluster {
            dir,
            port: free_port()?,
            bin: primary.bin.clone(),
        };
        cluster.hand_over()?;
        let data = cluster.data().display().to_string();
        let port = primary.port.to_string();
        cluster.pg(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-D",
                &data,
                "-R",
                "-X",
                "stream",
                "--no-sync",
            ],
        )?;
        cluster.configure(&format!(
            "primary_conninfo = 'host=127.0.0.1 port={port} user=postgres application_name={name}'"
        ))?;
        cluster.start()?;
        Ok(cluster)
    }

    /// Appends `lines` to the server's configuration (read at the next start or reload).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn configure(&self, lines: &str) -> Result<(), String> {
        use std::io::Write;
        let path = self.data().join("postgresql.auto.conf");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        writeln!(file, "{lines}").map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Makes the running server read its configuration again.
    ///
    /// # Errors
    /// pg_ctl's complaint.
    pub fn reload(&self) -> Result<(), String> {
        let data = self.data().display().to_string();
        self.pg("pg_ctl", &["-D", &data, "reload"])
    }

    /// Promotes this standby to a primary and waits until it takes writes.
    ///
    /// # Errors
    /// pg_ctl's complaint.
    pub fn promote(&self) -> Result<(), String> {
        let data = self.data().display().to_string();
        self.pg("pg_ctl", &["-D", &data, "-w", "promote"])
    }

    /// Kills the server with SIGKILL, the postmaster and every process it started, as a
    /// machine that dies would leave it (no shutdown checkpoint, no goodbye to clients).
    ///
    /// # Errors
    /// No postmaster.pid, or `kill` failed.
    pub fn kill9(&self) -> Result<(), String> {
        let pid_file = self.data().join("postmaster.pid");
        let text = std::fs::read_to_string(&pid_file)
            .map_err(|e| format!("{}: {e}", pid_file.display()))?;
        let pid = text.lines().next().unwrap_or_default().trim().to_owned();
        // Children first, so none is left waiting for a postmaster that is gone.
        let _ = Command::new("pkill").args(["-KILL", "-P", &pid]).status();
        let killed = Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .map_err(|e| format!("kill: {e}"))?;
        killed
            .success()
            .then_some(())
            .ok_or_else(|| format!("kill -9 {pid} failed"))
    }

    /// The directory the cluster lives in; files written here by the test are readable
    /// by the server after [`PrivateCluster::hand_over`].
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Gives the cluster's directory to the user the server runs as (when root).
    ///
    /// # Errors
    /// `chown` failed.
    pub fn hand_over(&self) -> Result<(), String> {
        if !is_root() {
            return Ok(());
        }
        let status = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(self.dir.path())
            .status()
            .map_err(|e| format!("chown: {e}"))?;
        status
            .success()
            .then_some(())
            .ok_or_else(|| "chown to the postgres user failed (no such user?)".into())
    }

    fn pg(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let exe = self.bin.join(tool).display().to_string();
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", &exe]);
            c
        } else {
            Command::new(&exe)
        };
        let out = cmd.args(args).output().map_err(|e| format!("{exe}: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "{tool} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }

    /// Starts the server and waits until it accepts connections.
    ///
    /// # Errors
    /// pg_ctl's complaint (the server log is in [`PrivateCluster::dir`]`/log`).
    pub fn start(&self) -> Result<(), String> {
        let data = self.data().display().to_string();
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {}",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("log").display().to_string();
        self.pg(
            "pg_ctl",
            &["-D", &data, "-o", &opts, "-l", &log, "-w", "start"],
        )
        .map_err(|e| {
            let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
            format!("{e}\nserver log:\n{log}")
        })
    }

    /// Stops the server at once (as a crash would).
    ///
    /// # Errors
    /// pg_ctl's complaint.
    pub fn stop(&self) -> Result<(), String> {
        self.stop_with("immediate")
    }

    /// Stops the server in pg_ctl's shutdown `mode`: `smart`, `fast` (sessions are
    /// disconnected, their transactions rolled back) or `immediate` (as a crash would:
    /// crash recovery at the next start).
    ///
    /// # Errors
    /// pg_ctl's complaint.
    pub fn stop_with(&self, mode: &str) -> Result<(), String> {
        let data = self.data().display().to_string();
        self.pg("pg_ctl", &["-D", &data, "-m", mode, "-w", "stop"])
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// A port no socket on 127.0.0.1 holds now.
pub fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// The directory holding initdb and pg_ctl, if any.
fn pg_bin() -> Option<PathBuf> {
    let has_initdb = |dir: &Path| dir.join("initdb").is_file();
    if let Some(dir) = std::env::var_os("BLOOMCAST_TEST_PG_BIN") {
        return Some(PathBuf::from(dir)).filter(|d| has_initdb(d));
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, bin)| has_initdb(bin))
        .collect();
    debian.sort();
    if let Some((_, newest)) = debian.pop() {
        return Some(newest);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).find(|d| has_initdb(d))
}

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false)
}
