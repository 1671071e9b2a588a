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

/// What an idle connection holds in an engine (the channel's endpoint and the stream
/// layer's slot with its session), to size the connection limit from memory.
pub fn bytes_per_connection() -> usize {
    tcp::channel::Channel::bytes_per_connection() + Streams::<Kv>::bytes_per_connection()
}

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
    engine::channel_service::streams_metrics(s, out);
    if s.app.engine() == 0 {
        // The cache is shared: its size is told once, by the first engine.
        let (c, st) = (&s.app.shared().cache, s.app.shared().cache.stats());
        out.gauge("sirocco_kv_items", "Items in the cache.", st.curr_items);
        out.gauge("sirocco_kv_item_bytes", "Bytes of the items in the cache.", st.bytes);
        out.counter("sirocco_kv_evictions_total", "Items evicted for room.", st.evictions);
        out.counter("sirocco_kv_reclaimed_total", "Expired items whose room was taken back.", st.reclaimed);
        out.gauge("sirocco_kv_pages_used", "Slab pages holding items.", (c.pages() - c.pages_free()) as u64);
        out.gauge("sirocco_kv_pages", "Slab pages in all.", c.pages() as u64);
        out.gauge("sirocco_kv_page_bytes", "Bytes of a slab page.", c.page_size() as u64);
        out.gauge("sirocco_kv_index_bytes", "Bytes of the key index's buckets.", c.index_size().0 as u64);
    }
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

/// The lines the KV server prints when it stops, one per engine and one for the cache, read
/// from the samples its metrics endpoint publishes.
pub fn exit_lines<'a>(services: impl Iterator<Item = &'a ChannelService<Streams<Kv>>>) -> Vec<String> {
    use engine::Service;
    let mut out = Vec::new();
    let mut first = engine::Samples::default();
    for (q, svc) in services.enumerate() {
        let mut s = engine::Samples::default();
        svc.metrics(&mut s);
        out.push(engine_line(q, &s));
        if q == 0 {
            first = s;
        }
    }
    out.push(cache_line(&first));
    out
}

fn engine_line(q: usize, s: &engine::Samples) -> String {
    let conns = |e| s.value("sirocco_streams_connections_total", Some(e));
    let kv = |e| s.value("sirocco_kv_events_total", Some(e));
    let tcp = |n| s.value(n, None);
    format!(
        "engine {q} kv: connections {} (refused {}, reset for want of buffers {}) gets {} hits {} sets {} \
         bytes in/out {}/{}; tcp retransmits {} resets in/out {}/{}",
        conns("opened"),
        conns("refused"),
        conns("reset_no_buffer"),
        kv("cmd_get"),
        kv("get_hits"),
        kv("cmd_set"),
        kv("bytes_read"),
        kv("bytes_written"),
        tcp("sirocco_tcp_retransmits_total"),
        tcp("sirocco_tcp_resets_in_total"),
        tcp("sirocco_tcp_resets_out_total"),
    )
}

fn cache_line(s: &engine::Samples) -> String {
    let v = |n| s.value(n, None);
    format!(
        "cache: items {} bytes {} evictions {} reclaimed {} pages {}/{} of {} KB",
        v("sirocco_kv_items"),
        v("sirocco_kv_item_bytes"),
        v("sirocco_kv_evictions_total"),
        v("sirocco_kv_reclaimed_total"),
        v("sirocco_kv_pages_used"),
        v("sirocco_kv_pages"),
        v("sirocco_kv_page_bytes") >> 10
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_reads_the_metrics_families() {
        let mut s = engine::Samples::default();
        s.counter_with("sirocco_streams_connections_total", "", ("event", "opened"), 3);
        s.counter_with("sirocco_kv_events_total", "", ("event", "get_hits"), 9);
        s.gauge("sirocco_kv_page_bytes", "", 1 << 20);
        s.gauge("sirocco_kv_items", "", 12);
        assert!(engine_line(1, &s)
            .starts_with("engine 1 kv: connections 3 (refused 0, reset for want of buffers 0) gets 0 hits 9 "));
        assert_eq!(cache_line(&s), "cache: items 12 bytes 0 evictions 0 reclaimed 0 pages 0/0 of 1024 KB");
    }
}
