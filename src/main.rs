//! The `bloomcast` binary: parses the command line and calls into the library.

use bloomcast::config::Settings;
use bloomcast::startup::{shutdown_signal, Application};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
}

#[tokio::main]
async fn main() -> ExitCode {
    bloomcast::telemetry::init();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve => serve().await,
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
    match app.run_until(shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "server failed");
            ExitCode::FAILURE
        }
    }
}
