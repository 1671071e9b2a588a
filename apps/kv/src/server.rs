//! The KV server of one engine: a [`StreamServer`] whose connections are [`Session`]s over
//! the shared [`Cache`]. It uses only the channel's public API (through [`Streams`]).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::cache::Cache;
use crate::session::out::Out;
use crate::session::{Ctx, Flow, Info, Session};
use crate::stats::Board;
use tcp::channel::streams::{StreamServer, Verdict, Writer, HIGH_WATER};
use tcp::{End, Instant};
use wire::IpAddr;

/// The version `version` answers (memcached's protocol level, and ours).
pub const VERSION: &str = concat!("1.6.18-sirocco-", env!("CARGO_PKG_VERSION"));

/// What every engine shares.
pub struct Shared {
    /// The cache.
    pub cache: Cache,
    /// Every engine's counters.
    pub board: Board,
    /// The port served.
    pub port: u16,
    /// The connection limit (all engines together).
    pub max_conns: usize,
    /// Engines running.
    pub engines: usize,
    /// Unix time at start.
    pub started: i64,
    /// Per-prefix counts (`stats detail`).
    pub detail: crate::stats::Detail,
}

/// The Unix time now, in seconds.
pub fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// One engine's server.
pub struct Kv {
    shared: Arc<Shared>,
    engine: usize,
    now: u32,
}

impl Kv {
    /// Which engine this is.
    pub fn engine(&self) -> usize {
        self.engine
    }

    /// This engine's counters (memcached's `stats` names).
    pub fn counters(&self) -> &crate::stats::Counters {
        self.shared.board.engine(self.engine)
    }

    /// Engine `engine`'s server.
    pub fn new(shared: Arc<Shared>, engine: usize) -> Kv {
        let now = shared.cache.time_at(unix_now());
        Kv { shared, engine, now }
    }

    /// The shared state.
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    fn run(&mut self, s: &mut Session, data: Option<&[u8]>, w: &mut Writer<'_, '_>) -> Verdict {
        let counters = self.shared.board.engine(self.engine);
        let info = InfoOf(&self.shared);
        let mut ctx =
            Ctx { cache: &self.shared.cache, now: self.now, counters, info: &info, detail: &self.shared.detail };
        let mut out = WriterOut { w, written: 0 };
        let flow = match data {
            Some(d) => s.input(d, &mut ctx, &mut out),
            None => s.resume(&mut ctx, &mut out),
        };
        counters.bytes_written.add(out.written);
        if flow == Flow::Close {
            return Verdict::Close;
        }
        if s.pending() > 0 && out.w.backlog() > HIGH_WATER {
            out.w.wait_for_drain();
        }
        Verdict::Continue
    }
}

struct WriterOut<'a, 'b, 'c> {
    w: &'a mut Writer<'b, 'c>,
    written: u64,
}

impl Out for WriterOut<'_, '_, '_> {
    fn put(&mut self, b: &[u8]) {
        self.written += b.len() as u64;
        self.w.write(b);
    }
    fn backlog(&self) -> usize {
        self.w.backlog()
    }
}

impl StreamServer for Kv {
    type Conn = Session;

    fn batch(&mut self, _now: Instant) {
        // memcached's clock has one-second resolution too; one read per batch, not per command.
        self.now = self.shared.cache.time_at(unix_now());
    }

    fn open(&mut self, _remote: (IpAddr, u16), _port: u16) -> Option<Session> {
        let c = self.shared.board.engine(self.engine);
        c.curr_connections.inc();
        c.total_connections.inc();
        Some(Session::new())
    }

    fn refused(&mut self) {
        self.shared.board.engine(self.engine).rejected_connections.inc();
    }

    fn data(&mut self, s: &mut Session, data: &[u8], w: &mut Writer<'_, '_>) -> Verdict {
        self.run(s, Some(data), w)
    }

    fn drained(&mut self, s: &mut Session, w: &mut Writer<'_, '_>) -> Verdict {
        self.run(s, None, w)
    }

    fn closed(&mut self, _s: Session, _end: End) {
        self.shared.board.engine(self.engine).curr_connections.dec();
    }
}

/// CPU seconds (user, system) of this process, from /proc.
fn rusage() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return (0.0, 0.0) };
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (ticks(11), ticks(12))
}

struct InfoOf<'a>(&'a Shared);

impl Info for InfoOf<'_> {
    fn version(&self) -> &str {
        VERSION
    }

    fn reset(&self) {
        self.0.board.reset();
        self.0.cache.reset_stats();
        self.0.detail.reset();
    }

    fn stats(&self, group: &[u8], now: u32, each: &mut dyn FnMut(&str, &str)) -> bool {
        let s = self.0;
        let cache = &s.cache;
        let cfg = cache.config();
        match group {
            b"" => {
                let (user, sys) = rusage();
                let unix = cache.unix_at(now);
                each("pid", &std::process::id().to_string());
                each("uptime", &(unix - s.started).max(0).to_string());
                each("time", &unix.to_string());
                each("version", VERSION);
                each("pointer_size", "64");
                each("rusage_user", &format!("{user:.6}"));
                each("rusage_system", &format!("{sys:.6}"));
                each("max_connections", &s.max_conns.to_string());
                // sirocco never stops accepting (a connection past the limit is reset and
                // counted in rejected_connections) and never leaves an item locked at the
                // tail of its LRU: these are zero by construction, shown for tools that read them.
                each("listen_disabled_num", "0");
                each("time_in_listen_disabled_us", "0");
                each("lrutail_reflocked", "0");
                for (name, v) in s.board.totals() {
                    if name == "curr_connections" {
                        // Gauges of several engines: each may have counted down what another
                        // counted up.
                        each(name, &(v as i64).max(0).to_string());
                    } else {
                        each(name, &v.to_string());
                    }
                }
                let st = cache.stats();
                each("limit_maxbytes", &cfg.memory.to_string());
                each("accepting_conns", "1");
                each("threads", &s.engines.to_string());
                each("bytes", &st.bytes.to_string());
                each("curr_items", &st.curr_items.to_string());
                each("total_items", &st.total_items.to_string());
                each("expired_unfetched", &st.expired_unfetched.to_string());
                each("get_expired", &st.get_expired.to_string());
                each("get_flushed", &st.get_flushed.to_string());
                each("evicted_unfetched", &st.evicted_unfetched.to_string());
                each("evictions", &st.evictions.to_string());
                each("reclaimed", &st.reclaimed.to_string());
                each("slabs_moved", &st.slabs_moved.to_string());
                each("total_malloced", &((cache.pages() - cache.pages_free()) * cache.page_size()).to_string());
                let (index_bytes, growing) = cache.index_size();
                each("hash_bytes", &index_bytes.to_string());
                each("hash_is_expanding", if growing { "1" } else { "0" });
                true
            }
            b"settings" => {
                each("maxbytes", &cfg.memory.to_string());
                each("maxconns", &s.max_conns.to_string());
                each("tcpport", &s.port.to_string());
                each("udpport", "0");
                each("evictions", "on");
                each("growth_factor", &format!("{:.2}", cfg.factor));
                each("chunk_size", "48");
                each("num_threads", &s.engines.to_string());
                each("cas_enabled", "yes");
                each("flush_enabled", "yes");
                each("auth_enabled_sasl", "no");
                each("shutdown_command", "no");
                each("binding_protocol", "auto-negotiate");
                each("item_size_max", &cfg.max_item.to_string());
                each("slab_page_size", &cache.page_size().to_string());
                each("slab_reassign", "yes");
                each("slab_automove", "1");
                each("shards", &cfg.shards.to_string());
                true
            }
            b"slabs" => {
                let counts = cache.class_counts();
                let mut active = 0;
                for (i, (size, pages, items)) in cache.classes().into_iter().enumerate() {
                    if pages == 0 {
                        continue;
                    }
                    active += 1;
                    let id = i + 1;
                    each(&format!("{id}:chunk_size"), &size.to_string());
                    each(&format!("{id}:chunks_per_page"), &(cache.page_size() / size as usize).to_string());
                    each(&format!("{id}:total_pages"), &pages.to_string());
                    each(&format!("{id}:used_chunks"), &items.to_string());
                    let requested = counts.get(i).map_or(0, |c| c.2);
                    each(&format!("{id}:mem_requested"), &requested.to_string());
                }
                each("active_slabs", &active.to_string());
                each("total_malloced", &((cache.pages() - cache.pages_free()) * cache.page_size()).to_string());
                true
            }
            b"items" => {
                let counts = cache.class_counts();
                for (i, (_, _, items)) in cache.classes().into_iter().enumerate() {
                    let (evicted, reclaimed, requested) = counts.get(i).copied().unwrap_or_default();
                    if items > 0 || evicted > 0 || reclaimed > 0 {
                        let id = i + 1;
                        each(&format!("items:{id}:number"), &items.to_string());
                        each(&format!("items:{id}:evicted"), &evicted.to_string());
                        each(&format!("items:{id}:reclaimed"), &reclaimed.to_string());
                        each(&format!("items:{id}:mem_requested"), &requested.to_string());
                    }
                }
                true
            }
            _ => false,
        }
    }
}
