//! The `bloomcast` binary: parses the command line and calls into the library.

use bloomcast::cli::{
    finish, CheckArgs, ConfirmClockArgs, EstimateArgs, HistoryArgs, IngestArgs, InspectArgs,
    MirrorArgs, VerifyArgs, WatchArgs,
};
use bloomcast::config::{ListenAddr, Loaded, Overrides, Settings};
use bloomcast::startup::{shutdown_signal, Application};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// mimalloc rather than the system allocator for small blocks: a served request makes
/// some 40 small allocations (hyper, axum, tower), and glibc's malloc and free were a
/// quarter of the read path's instructions under callgrind (docs/BENCHMARKS.md, Serving
/// vs nginx; the before/after callgrind tables are in its git history). Blocks over
/// 8 KiB are mapped on their own, so that they go back when freed
/// (`bloomcast::memory::Allocator`).
#[global_allocator]
static ALLOCATOR: bloomcast::memory::Allocator = bloomcast::memory::Allocator;

#[derive(Parser)]
#[command(
    name = "bloomcast",
    // The commit is build.rs's: git's, SOURCE_COMMIT's, or "unknown" (a tarball).
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("BUILD_COMMIT"), ")"),
    about = "Hourly Bloom filters of what changed, over HTTP"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (configuration: config/*.toml, BLOOMCAST_* variables, then these
    /// flags).
    #[command(after_long_help = Settings::help(), after_help = "Run `bloomcast serve --help` for every setting, its variable and default (also docs/CONFIG.md).")]
    Serve(ServeArgs),
    /// Print which of the given IDs may have changed since an hour.
    Check(CheckArgs),
    /// Print, for each ID, the hours in which it may have changed.
    History(HistoryArgs),
    /// Publish IDs into the server's current hour, in batches, with retries.
    Ingest(IngestArgs),
    /// Show a filter's parameters, count, fill and fpp (from a URL or a file).
    Inspect(InspectArgs),
    /// Estimate |A ∩ B| and |A ∪ B| from two filters of the same shape.
    Estimate(EstimateArgs),
    /// Verify the hour chain and each hour's filter against the publisher's key, from
    /// any base URL (a mirror) or a static mirror's directory offline (--dir), and the
    /// publisher's checkpoint (exit 3 when the source is stale).
    Verify(VerifyArgs),
    /// Follow the open hour (and the next ones) and print each given ID the first time it
    /// may have changed, polling with deltas, until interrupted.
    Watch(WatchArgs),
    /// Write every sealed hour in every form (signed forms with .sig sidecars), the
    /// chain, the well-known document and the checkpoint into a directory laid out as
    /// the URLs, for any file server or CDN; with --pubkey every file verified before it
    /// is written (--follow keeps it current).
    Mirror(MirrorArgs),
    /// Put a new signing key in the server's key file (configuration as `serve`); the
    /// server signs the hours sealed after its next start with it. In cluster mode the
    /// key is also recorded in PostgreSQL as the cluster's current key.
    RotateKey,
    /// Tell the server its clock is right: a forward jump it holds (/healthz degraded
    /// with clock_ahead_seconds, e.g. a start far past its last heartbeat) is followed at
    /// once.
    ConfirmClock(ConfirmClockArgs),
    /// Show the cluster's hour-shaping settings (capacity, target_fpp) recorded in
    /// PostgreSQL, or change them for every node with `set SETTING=VALUE...`
    /// (configuration as `serve`; nodes build hours with them from their next start).
    ClusterSettings(ClusterSettingsArgs),
}

/// Flags of `serve`; each wins over its environment variable and the files.
#[derive(clap::Args)]
struct ServeArgs {
    /// A file of settings read after config/local.toml (instead of BLOOMCAST_CONFIG's).
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Address or host name and port to listen on, e.g. localhost:8080 (the listen
    /// setting).
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<ListenAddr>,
    /// Where the embedded store and the generated ingest token live (the data_dir
    /// setting).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<std::path::PathBuf>,
}

#[derive(clap::Args)]
struct ClusterSettingsArgs {
    #[command(subcommand)]
    action: Option<ClusterAction>,
}

#[derive(Subcommand)]
enum ClusterAction {
    /// Print the recorded settings (the default).
    Show,
    /// Record new values, e.g. `set target_fpp=0.005 capacity=5000`.
    Set {
        /// SETTING=VALUE pairs: capacity, target_fpp.
        #[arg(required = true, value_parser = setting_pair)]
        changes: Vec<(String, String)>,
    },
}

fn setting_pair(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .ok_or_else(|| format!("{text}: expected SETTING=VALUE"))
}

/// Threads of the blocking pool at most (store reads, renderings, builds; tokio's
/// default is 512).
const BLOCKING_THREADS: usize = 8;

fn main() -> ExitCode {
    // First, before the runtime's threads touch their heaps (src/memory.rs).
    let huge_pages_off = bloomcast::memory::forgo_huge_pages();
    bloomcast::memory::hold_no_freed_memory();
    let cli = Cli::try_parse().unwrap_or_else(|e| {
        bloomcast::cli::with_env_tips(e, <Cli as clap::CommandFactory>::command()).exit()
    });
    match cli.command {
        Command::Serve(_) => bloomcast::telemetry::init(),
        _ => bloomcast::telemetry::init_cli(),
    }
    if !huge_pages_off && cfg!(target_os = "linux") && matches!(cli.command, Command::Serve(_)) {
        tracing::warn!("cannot turn transparent huge pages off; memory the server frees may come back (src/memory.rs)");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Few blocking-pool threads, gone soon once idle: each holds the memory blocks
        // other threads free for it until it allocates again or exits (src/memory.rs).
        .max_blocking_threads(BLOCKING_THREADS)
        .thread_keep_alive(bloomcast::memory::IDLE_THREAD_KEEP_ALIVE)
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("bloomcast: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(cli))
}

async fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Serve(args) => {
            serve(Overrides {
                config: args.config,
                listen: args.listen,
                data_dir: args.data_dir,
            })
            .await
        }
        Command::Check(args) => args.run().await,
        Command::History(args) => finish(args.run().await),
        Command::Ingest(args) => finish(args.run().await),
        Command::Inspect(args) => finish(args.run().await),
        Command::Estimate(args) => finish(args.run().await),
        Command::Verify(args) => args.exit().await,
        Command::Watch(args) => finish(args.run().await),
        Command::Mirror(args) => finish(args.run().await),
        Command::ConfirmClock(args) => finish(args.run().await),
        Command::RotateKey => rotate_key().await,
        Command::ClusterSettings(args) => cluster_settings(args).await,
    }
}

/// The settings `serve` runs with (config/ in the working directory, then the
/// environment, then the command line's `overrides`), and the working directory; exit
/// code 2 with the reason on stderr when they do not load.
fn load_settings(overrides: &Overrides) -> Result<(std::path::PathBuf, Loaded), ExitCode> {
    let base = std::env::current_dir().unwrap_or_default();
    let loaded =
        bloomcast::config::process_env().and_then(|env| Settings::load_from(&base, overrides, env));
    match loaded {
        Ok(loaded) => Ok((base, loaded)),
        Err(e) => {
            eprintln!("bloomcast: {e}");
            Err(ExitCode::from(2))
        }
    }
}

async fn rotate_key() -> ExitCode {
    let settings = match load_settings(&Overrides::default()) {
        Ok((_, loaded)) => loaded.settings,
        Err(code) => return code,
    };
    let clock = bloomcast::clock::SystemClock;
    match bloomcast::startup::rotate_key_recorded(&settings, &clock).await {
        Ok((r, recorded)) => {
            let (listed, old) = (recorded.listed, r.old);
            println!("file {}", r.file.display());
            let old_id = old.map_or("none".into(), |k| k.id().to_string());
            println!("old key id {old_id}");
            println!("new key id {} public key {}", r.new.id(), r.new);
            let vouched = match recorded.previous {
                None => "no key before it".to_owned(),
                Some(_) if listed.succession.vouch.is_some() => {
                    format!("vouched for by key {old_id}")
                }
                Some(previous) => format!(
                    "NOT vouched for by the key it retires, {}, which the key file did not \
                     hold: clients given that key refuse the hours this one signs; give them \
                     this key",
                    previous.id()
                ),
            };
            let place = if secrecy::ExposeSecret::expose_secret(&settings.database_url).is_empty() {
                "recorded"
            } else {
                "recorded in PostgreSQL"
            };
            println!(
                "{place} as the current key from hour {} ({vouched})",
                listed.first_hour
            );
            if recorded.previous.is_some() && listed.succession.vouch.is_none() {
                eprintln!(
                    "bloomcast: warning: the new key is not vouched for by the key it retires"
                );
            }
            if secrecy::ExposeSecret::expose_secret(&settings.database_url).is_empty() {
                println!("restart the server to sign new hours with it");
            } else {
                println!("copy this file to every node of the cluster, then restart them to sign new hours with it");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bloomcast: {}", bloomcast::store::full_message(&e));
            ExitCode::FAILURE
        }
    }
}

async fn cluster_settings(args: ClusterSettingsArgs) -> ExitCode {
    let settings = match load_settings(&Overrides::default()) {
        Ok((_, loaded)) => loaded.settings,
        Err(code) => return code,
    };
    let changes = match args.action {
        Some(ClusterAction::Set { changes }) => changes,
        None | Some(ClusterAction::Show) => Vec::new(),
    };
    let asked = !changes.is_empty();
    let clock = bloomcast::clock::SystemClock;
    match bloomcast::startup::set_cluster(&settings, &clock, &changes).await {
        Ok(shape) => {
            // In effect now, then each change recorded for a later hour.
            println!("capacity {}", shape.before.capacity);
            println!("target_fpp {}", shape.before.target_fpp);
            for (from, pending) in &shape.pending {
                println!(
                    "pending from {}: capacity {} target_fpp {}",
                    from.rfc3339(),
                    pending.capacity,
                    pending.target_fpp
                );
            }
            if asked && shape.pending.is_empty() {
                println!("no change pending: the values in effect stay");
            } else if asked {
                println!(
                    "every node seals the hours from {} on with capacity {} target_fpp {}",
                    shape.from.rfc3339(),
                    shape.after.capacity,
                    shape.after.target_fpp
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bloomcast: {}", bloomcast::store::full_message(&e));
            ExitCode::FAILURE
        }
    }
}

async fn serve(overrides: Overrides) -> ExitCode {
    let (base, loaded) = match load_settings(&overrides) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let settings = loaded.settings;
    tracing::info!(
        working_dir = %base.display(),
        config_files = ?loaded.files,
        data_dir = %settings.data_dir.display(),
        "configuration loaded"
    );
    tracing::info!(?settings, "starting");
    let app = match Application::build(settings).await {
        Ok(app) => app,
        Err(e) => {
            // The whole cause chain, once, on stderr whatever the log filter says: this
            // is what an operator reads when the server refuses to start.
            let why = bloomcast::store::full_message(&e);
            eprintln!("bloomcast: cannot start: {why}");
            return ExitCode::FAILURE;
        }
    };
    app.run_until(shutdown_signal()).await;
    ExitCode::SUCCESS
}
