//! The whole `/metrics` exposition: the request counters ([`super::Metrics`]) followed by
//! what the service keeps: the store's health as `/healthz` decides it, the clock, seals
//! and the chain's head, union work and the memory budget. Each figure is read from the
//! one place that keeps it; this module only writes them as Prometheus text (every
//! family with `# HELP` and `# TYPE`, its unit in its name), documented in
//! docs/PROTOCOL.md ("Metrics").

use crate::http::AppState;
use crate::service::HealthStatus;
use std::fmt::Write as _;

/// Writes a family's `# HELP` and `# TYPE` lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Writes a family of one unlabelled sample.
fn single(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    family(out, name, kind, help);
    let _ = writeln!(out, "{name} {value}");
}

const STORE_UP: &str = "bloomcast_store_up";
const STORE_UP_HELP: &str = "1 while the store takes writes, 0 while /healthz says unavailable (a write failed and none begun 5 s after it has succeeded since).";

/// The `/metrics` text of a node in standby (started before PostgreSQL could be reached):
/// the store down and nothing else, so that an alert on the store fires for it rather than
/// one on a failing scrape.
pub fn standby_exposition() -> String {
    let mut out = String::new();
    single(&mut out, STORE_UP, "gauge", STORE_UP_HELP, 0);
    out
}

/// The `/metrics` text. Runs the `/healthz` check (its heartbeat at most once a second),
/// so `bloomcast_store_up` is what `/healthz` would answer now.
pub async fn exposition(state: &AppState) -> String {
    let service = &state.service;
    let mut out = state.metrics.render(service.ingest().current_count());
    state.metrics.render_errors(&mut out);
    single(
        &mut out,
        "bloomcast_http_open_connections",
        "gauge",
        "HTTP connections open now (at most max_connections).",
        state.metrics.connections_open(),
    );
    let health = service.health().report().await;
    single(
        &mut out,
        STORE_UP,
        "gauge",
        STORE_UP_HELP,
        u8::from(health.status != HealthStatus::Unavailable),
    );
    single(
        &mut out,
        "bloomcast_corrupt_listed",
        "gauge",
        "Hours refused as corrupt now (listed in /healthz corrupt_hours until a restart).",
        health.corrupt_hours.len(),
    );
    // Kept by the service (it finds them); a sealed filter rebuilt from intact keys counts too.
    single(
        &mut out,
        "bloomcast_corrupt_found_total",
        "counter",
        "Stored rows that failed verification on read.",
        service.health().corrupt_found(),
    );
    if let Some(reads) = service.health().replica_reads() {
        let name = "bloomcast_replica_reads_total";
        family(
            &mut out,
            name,
            "counter",
            "Reads of sealed hours (and their keys, chain links, signatures, form records) meant for database_read_url, by outcome: served by a replica; sent to the primary because the replica did not have it yet; sent to the primary because the replica failed.",
        );
        for (outcome, n) in [
            ("served", reads.served),
            ("behind", reads.behind),
            ("failed", reads.failed),
        ] {
            let _ = writeln!(out, "{name}{{outcome=\"{outcome}\"}} {n}");
        }
    }
    single(
        &mut out,
        "bloomcast_store_lost_ids_total",
        "counter",
        "IDs this node held for an hour, each acknowledged by the store, that the hour's seal lacks: lost by the store (a failover to a standby that had not received them).",
        service.health().lost_ids(),
    );
    single(
        &mut out,
        "bloomcast_clock_behind_seconds",
        "gauge",
        "How far the clock is behind the newest hour the store has opened (a clock stepped back).",
        health.clock_behind_seconds,
    );
    single(
        &mut out,
        "bloomcast_clock_ahead_seconds",
        "gauge",
        "How far the wall clock is ahead of the time the service runs on (a forward jump, while running or at start, not yet corrected or confirmed).",
        health.clock_ahead_seconds,
    );
    single(
        &mut out,
        "bloomcast_clock_jumps_total",
        "counter",
        "Forward wall-clock jumps seen (beyond clock_jump_tolerance_seconds), a start far past the last heartbeat's record included.",
        service.health().clock_jump().jumps,
    );
    if let Some(offset) = health.node_clock_offset_seconds {
        single(
            &mut out,
            "bloomcast_node_clock_offset_seconds",
            "gauge",
            "Cluster mode: how far this node's wall clock is ahead of the cluster's, PostgreSQL's (negative: behind); past clock_jump_tolerance_seconds /healthz says degraded.",
            offset,
        );
    }
    single(
        &mut out,
        "bloomcast_max_hour_ids",
        "gauge",
        "Distinct IDs one hour may hold (setting max_hour_ids); past it ingest answers 507 hour_full.",
        service.tuning().max_hour_ids,
    );
    single(
        &mut out,
        "bloomcast_seal_failures_total",
        "counter",
        "Attempts to seal a closed hour that failed; each is retried after a backoff of 1 s doubling to 60 s.",
        service.stats().seal_failures(),
    );
    if let Some((hour, header)) = service.signing().chain_head() {
        single(
            &mut out,
            "bloomcast_chain_head_timestamp_seconds",
            "gauge",
            "Start of the newest hour with a chain link, in Unix seconds, as housekeeping last read it.",
            hour.start().timestamp(),
        );
        family(
            &mut out,
            "bloomcast_chain_head_info",
            "gauge",
            "The newest chain link's header (hex), as housekeeping last read it; always 1. Nodes on one store report the same.",
        );
        let header = crate::chain::hex(&header);
        let _ = writeln!(out, "bloomcast_chain_head_info{{header=\"{header}\"}} 1");
    }
    scrub(&mut out, &health.scrub);
    union_work(&mut out, state);
    memory(&mut out, state);
    out
}

/// What the background scrub has verified and found (as `/healthz` has it).
fn scrub(out: &mut String, report: &crate::service::ScrubReport) {
    single(
        out,
        "bloomcast_scrub_pass_seconds",
        "gauge",
        "Seconds one scrub pass over the served hours takes (setting scrub_pass_seconds; 0: off).",
        report.pass_seconds,
    );
    single(
        out,
        "bloomcast_scrub_passes_total",
        "counter",
        "Scrub passes completed since start.",
        report.passes,
    );
    if let Some(last) = report.last_pass {
        single(
            out,
            "bloomcast_scrub_last_pass_timestamp_seconds",
            "gauge",
            "When the last scrub pass ended, Unix seconds. Absent before the first.",
            last.timestamp(),
        );
    }
    single(
        out,
        "bloomcast_scrub_verified_total",
        "counter",
        "Hours the scrub verified (read back with every check serving makes).",
        report.hours,
    );
    single(
        out,
        "bloomcast_scrub_bytes_total",
        "counter",
        "Bytes of stored data the scrub read back and verified (filters, keys, exact bodies, universes).",
        report.bytes,
    );
    single(
        out,
        "bloomcast_scrub_damage_found_total",
        "counter",
        "Hours the scrub found damaged (each also listed in /healthz corrupt_hours and counted in bloomcast_corrupt_found_total).",
        report.damage_found,
    );
}

/// What union work has cost, by step (as `/stats` has it): two counter families.
fn union_work(out: &mut String, state: &AppState) {
    let work = state.service.stats().union_work();
    let steps = [
        ("build", work.builds),
        ("advance", work.advances),
        ("render", work.renders),
        ("hour_ribbon", work.hour_ribbons),
        ("hour_exact", work.hour_exacts),
    ];
    let families = [
        (
            "bloomcast_union_work_seconds_total",
            "CPU time of union work by step: built from the store, carried forward to the open hour's new keys, rendered; and of closed hours' compact work (hour_ribbon: a ribbon built or rendered as JSON; hour_exact: an exact body built).",
            steps.map(|(_, s)| s.cpu_seconds.to_string()),
        ),
        (
            "bloomcast_union_work_runs_total",
            "Runs of union work by step.",
            steps.map(|(_, s)| s.runs.to_string()),
        ),
    ];
    for (name, help, values) in families {
        family(out, name, "counter", help);
        for ((step, _), value) in steps.iter().zip(values) {
            let _ = writeln!(out, "{name}{{step=\"{step}\"}} {value}");
        }
    }
}

/// The one memory budget: each part's bytes held now, and its share.
fn memory(out: &mut String, state: &AppState) {
    let (total, parts) = crate::http::stats::memory_parts(state);
    family(
        out,
        "bloomcast_memory_bytes",
        "gauge",
        "Bytes held now by each part of the memory budget (cache_bytes), by each piece of its cache part (cache_*), and outside the budget by the open hours (open_hour), the store's client (store), freed memory the C library's allocator keeps for reuse (allocator_free) and the open connections (connections).",
    );
    for p in &parts {
        let _ = writeln!(
            out,
            "bloomcast_memory_bytes{{part=\"{}\"}} {}",
            p.name, p.bytes
        );
    }
    family(
        out,
        "bloomcast_memory_budget_bytes",
        "gauge",
        "Each part's share of the memory budget, and the budget itself (total).",
    );
    let _ = writeln!(
        out,
        "bloomcast_memory_budget_bytes{{part=\"total\"}} {total}"
    );
    for p in &parts {
        if let crate::http::stats::Share::Budget(budget) = p.share {
            let _ = writeln!(
                out,
                "bloomcast_memory_budget_bytes{{part=\"{}\"}} {budget}",
                p.name
            );
        }
    }
    if let Some(resident) = crate::memory::resident() {
        family(
            out,
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes (VmRSS).",
        );
        let _ = writeln!(out, "process_resident_memory_bytes {}", resident.bytes);
    }
}
