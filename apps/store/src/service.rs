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
}
