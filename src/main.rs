//! The `bloomcast` binary: parses the command line and calls into the library.

use bloomcast::cli::{finish, CheckArgs, IngestArgs, InspectArgs};
use bloomcast::config::Settings;
use bloomcast::startup::{shutdown_signal, Application};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// mimalloc rather than the system allocator: a served request makes some 40 small
/// allocations (hyper, axum, tower), and glibc's malloc and free were a quarter of the
/// read path's instructions under callgrind (docs/BENCHMARKS.md, Serving vs nginx).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "bloomcast",
    version,
    about = "Hourly Bloom filters of what changed, over HTTP"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (configuration: config/*.toml and BLOOMCAST_* variables).
    Serve,
    /// Print which of the given IDs may have changed since an hour.
    Check(CheckArgs),
    /// Publish IDs into the server's current hour, in batches, with retries.
    Ingest(IngestArgs),
    /// Show a filter's parameters, count, fill and fpp (from a URL or a file).
    Inspect(InspectArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve => bloomcast::telemetry::init(),
        _ => bloomcast::telemetry::init_cli(),
    }
    match cli.command {
        Command::Serve => serve().await,
        Command::Check(args) => finish(args.run().await),
        Command::Ingest(args) => finish(args.run().await),
        Command::Inspect(args) => finish(args.run().await),
    }
}

async fn serve() -> ExitCode {
    let base = std::env::current_dir().unwrap_or_default();
    let settings = match Settings::load(&base) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bloomcast: {e}");
            return ExitCode::from(2);
        }
    };
    tracing::info!(?settings, "starting");
    let app = match Application::build(settings).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return ExitCode::FAILURE;
        }
    };
    app.run_until(shutdown_signal()).await;
    ExitCode::SUCCESS
}
