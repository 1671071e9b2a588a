//! What a memcached/Redis load run measured: requests, answers, hits, latency; as text and
//! JSON.

use super::load::Percentiles;
use crate::dataplane::report;
use gen::kv::KvGenStats;
use serde::Serialize;

/// What the run was asked to do.
pub(super) struct Run<'a> {
    pub workload: &'static str,
    pub keys: usize,
    pub mean_sizes: (f64, f64),
    pub conns: usize,
    pub depth: usize,
    pub rate: u64,
    pub json: Option<&'a std::path::Path>,
}

/// Prints the run's report and writes it as JSON if `--json` asks.
pub(super) fn report(a: &Run<'_>, s: &KvGenStats, engines: usize, secs: f64) -> Result<(), String> {
    let (name, (mk, mv)) = (a.workload, a.mean_sizes);
    let latency = Percentiles::of(&s.latency);
    println!(
        "gen kv: {name}, {} keys (mean key {mk:.1} B, value {mv:.1} B) stored {}; {} engine(s), {} connection(s) each, depth {}, open loop at {} req/s\n  requests {} answers {} ({:.0} per s): get hits {} misses {} stored {} errors {}; behind schedule {}; broken connections {}\n  latency us: {}",
        a.keys,
        s.preloaded,
        engines,
        a.conns,
        a.depth,
        a.rate,
        s.sent,
        s.completed,
        s.completed as f64 / secs,
        s.hits,
        s.misses,
        s.stored,
        s.errors,
        s.behind,
        s.broken,
        latency.micros()
    );
    if let Some(path) = a.json {
        let j = ReportJson {
            workload: name,
            keys: a.keys,
            conns: a.conns,
            depth: a.depth,
            rate: a.rate,
            secs,
            sent: s.sent,
            completed: s.completed,
            per_s: s.completed as f64 / secs,
            hits: s.hits,
            misses: s.misses,
            stored: s.stored,
            errors: s.errors,
            preloaded: s.preloaded,
            behind: s.behind,
            broken: s.broken,
            latency_ns: latency,
        };
        report::write_json(path, &j)?;
    }
    Ok(())
}

/// The report as JSON.
#[derive(Serialize)]
struct ReportJson {
    workload: &'static str,
    keys: usize,
    conns: usize,
    depth: usize,
    rate: u64,
    secs: f64,
    sent: u64,
    completed: u64,
    per_s: f64,
    hits: u64,
    misses: u64,
    stored: u64,
    errors: u64,
    preloaded: u64,
    behind: u64,
    broken: u64,
    latency_ns: Percentiles,
}
