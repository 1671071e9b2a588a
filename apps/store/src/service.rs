//! A store engine as the engine runs it: the store's server on the level-2 channel, on its
//! own log, with its counters on the metrics endpoint.

use crate::log::writer::LogWriter;
use crate::server::{Shared, Store};
use engine::ChannelService;
use std::sync::Arc;
use tcp::channel::streams::Streams;
use tcp::channel::Buffers;

/// Send buffers per engine (2 KB each), as the KV server.
const SEND_BUFFERS: usize = 65_536;

/// What an idle connection holds in an engine (the channel's endpoint and the stream
/// layer's slot with its session), to size the connection limit from memory.
pub fn bytes_per_connection() -> usize {
    tcp::channel::Channel::bytes_per_connection() + Streams::<Store>::bytes_per_connection()
}

/// Engine `q`'s service on `port`, writing to `log`: at most `conns` connections, TCP as
/// `cfg` and `limits`.
pub fn service(
    shared: Arc<Shared>,
    q: usize,
    log: LogWriter,
    port: u16,
    conns: usize,
    cfg: tcp::Config,
    limits: tcp::Limits,
) -> ChannelService<Streams<Store>> {
    let bufs = Buffers::new(SEND_BUFFERS, 2048);
    let app = Streams::new(Store::new(shared, q, log), conns);
    ChannelService::new(app, &[port], cfg, limits, bufs).with_metrics(metrics)
}

/// The store's counters for the metrics endpoint: requests, connections, durable commits.
fn metrics(s: &Streams<Store>, out: &mut engine::Samples) {
    use std::sync::atomic::Ordering::Relaxed;
    let c = s.app.counters();
    out.counter("sirocco_store_commands_total", "Requests handled.", c.commands.load(Relaxed));
    out.counter("sirocco_store_connections_accepted_total", "Connections accepted.", c.connections.load(Relaxed));
    out.counter(
        "sirocco_store_connections_rejected_total",
        "Connections refused at the limit.",
        c.rejected.load(Relaxed),
    );
    out.gauge("sirocco_store_connections", "Connections open.", c.open.load(Relaxed).max(0) as u64);
    out.counter(
        "sirocco_store_log_commits_total",
        "Log commits made durable (group commits).",
        c.commits.load(Relaxed),
    );
    out.counter("sirocco_store_log_records_total", "Log records in them.", c.records.load(Relaxed));
    out.counter("sirocco_store_log_bytes_total", "Log bytes written.", c.log_bytes.load(Relaxed));
    let l = &s.app.log.stats;
    out.counter("sirocco_store_log_device_writes_total", "Writes to the log device.", l.writes);
    out.counter("sirocco_store_log_segments_total", "Log segments started.", l.segments);
    out.counter(
        "sirocco_store_log_commit_microseconds_total",
        "Time from a commit's first record to its durability, summed over commits.",
        l.commit_ns / 1000,
    );
    engine::channel_service::streams_metrics(s, out);
}

/// The line engine `q`'s service prints when it stops, read from the samples its metrics
/// endpoint publishes.
pub fn exit_line(q: usize, svc: &ChannelService<Streams<Store>>) -> String {
    use engine::Service;
    let mut s = engine::Samples::default();
    svc.metrics(&mut s);
    line(q, &s)
}

fn line(q: usize, s: &engine::Samples) -> String {
    let conns = |e| s.value("sirocco_streams_connections_total", Some(e));
    let v = |n| s.value(n, None);
    format!(
        "engine {q} store: connections {} (refused {}, reset for want of buffers {}) commits {} records {} \
         log bytes {} device writes {} segments {} mean commit {:.0} us; tcp retransmits {}",
        conns("opened"),
        conns("refused"),
        conns("reset_no_buffer"),
        v("sirocco_store_log_commits_total"),
        v("sirocco_store_log_records_total"),
        v("sirocco_store_log_bytes_total"),
        v("sirocco_store_log_device_writes_total"),
        v("sirocco_store_log_segments_total"),
        v("sirocco_store_log_commit_microseconds_total") as f64 / v("sirocco_store_log_commits_total").max(1) as f64,
        v("sirocco_tcp_retransmits_total"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_the_metrics_families() {
        let mut s = engine::Samples::default();
        s.counter("sirocco_store_log_commits_total", "", 4);
        s.counter("sirocco_store_log_commit_microseconds_total", "", 200);
        s.counter_with("sirocco_streams_connections_total", "", ("event", "refused"), 2);
        let l = line(1, &s);
        assert!(
            l.starts_with("engine 1 store: connections 0 (refused 2, reset for want of buffers 0) commits 4 "),
            "{l}"
        );
        assert!(l.contains("mean commit 50 us"), "{l}");
    }
}
