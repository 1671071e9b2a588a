//! A KV engine as the engine runs it: the cache's server on the level-2 channel, with its
//! counters on the metrics endpoint.

use crate::server::{Kv, Shared};
use engine::ChannelService;
use std::sync::Arc;
use tcp::channel::streams::Streams;
use tcp::channel::Buffers;

/// Send buffers per engine: 2 KB each; 64 Ki of them (128 MiB of address space, touched
/// only as used) hold the answers waiting for thousands of connections' windows.
const SEND_BUFFERS: usize = 65_536;

/// Engine `q`'s service on `port`: at most `conns` connections, TCP as `cfg` and `limits`.
pub fn service(
    shared: Arc<Shared>,
    q: usize,
    port: u16,
    conns: usize,
    cfg: tcp::Config,
    limits: tcp::Limits,
) -> ChannelService<Streams<Kv>> {
    let bufs = Buffers::new(SEND_BUFFERS, 2048);
    let app = Streams::new(Kv::new(shared, q), conns);
    ChannelService::new(app, &[port], cfg, limits, bufs).with_metrics(metrics)
}

/// The KV server's counters for the metrics endpoint: memcached's `stats` counters of the
/// engine (hits and misses per command, bytes, errors) and its open connections.
fn metrics(s: &Streams<Kv>, out: &mut engine::Samples) {
    for (name, v) in s.app.counters().each() {
        if name == "curr_connections" {
            out.gauge("sirocco_kv_connections", "Connections open.", v);
        } else {
            out.counter_with(
                "sirocco_kv_events_total",
                "memcached's stats counters, by name (get_hits, get_misses, ...).",
                ("event", name),
                v,
            );
        }
    }
}
