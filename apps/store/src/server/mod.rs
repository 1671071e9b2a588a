//! The store server of one engine: a [`StreamServer`] whose connections are [`Session`]s
//! over the shared [`Keyspace`], writing its changes to its own [`LogWriter`].

mod info;

use crate::command::Ctx;
use crate::keyspace::Databases;
use crate::log::compact::{compact, Gens};
use crate::log::order::Order;
use crate::log::writer::LogWriter;
use crate::session::{Flow, Out, Session};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tcp::channel::streams::{StreamServer, Verdict, Writer};
use tcp::{End, Instant};
use wire::IpAddr;

/// The Redis version the store answers as (the protocol and replies it follows).
pub const REDIS_VERSION: &str = "7.0.15";

/// One command's INFO commandstats counts on one engine (only that engine writes them).
#[derive(Default)]
pub struct CmdCounts {
    /// Calls that ran (failed ones too).
    pub calls: AtomicU64,
    /// Microseconds they took.
    pub usec: AtomicU64,
    /// Calls refused before running.
    pub rejected: AtomicU64,
    /// Calls that answered with an error.
    pub failed: AtomicU64,
}

/// One engine's counters, read by INFO on any engine. Each on cache lines of its own: every
/// engine writes its own at every batch, and neighbours in the Vec would share a line.
#[repr(align(128))]
pub struct EngineStats {
    /// Per command, in the order of [`crate::command::names`].
    pub cmds: Box<[CmdCounts]>,
    /// Requests handled.
    pub commands: AtomicU64,
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections open.
    pub open: AtomicI64,
    /// Connections refused at the limit.
    pub rejected: AtomicU64,
    /// Log commits made durable.
    pub commits: AtomicU64,
    /// Log records in them.
    pub records: AtomicU64,
    /// Log bytes written.
    pub log_bytes: AtomicU64,
    /// Keys removed by active expiry.
    pub expired: AtomicU64,
}

impl Default for EngineStats {
    fn default() -> Self {
        EngineStats {
            cmds: crate::command::names().map(|_| CmdCounts::default()).collect(),
            commands: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            open: AtomicI64::new(0),
            rejected: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            records: AtomicU64::new(0),
            log_bytes: AtomicU64::new(0),
            expired: AtomicU64::new(0),
        }
    }
}

/// Adds `n` to a counter only its engine writes (a load and a store, no locked instruction).
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// What every engine shares.
pub struct Shared {
    /// The keys, database by database.
    pub dbs: Databases,
    /// The order of changes.
    pub order: Arc<Order>,
    /// The log's generations (compaction).
    pub gens: Arc<Gens>,
    /// Log segment size.
    pub seg_size: u64,
    /// Per-engine counters.
    pub engines: Vec<EngineStats>,
    /// The port served.
    pub port: u16,
    /// The data directory.
    pub dir: PathBuf,
    /// The connection limit, all engines together.
    pub max_conns: usize,
    /// Unix time at start, seconds.
    pub started: i64,
    /// The default user's password (`requirepass`); None: none.
    pub requirepass: Option<Vec<u8>>,
    /// The replication feed.
    pub feed: Arc<crate::repl::feed::Feed>,
    /// The primary, where this store is a replica.
    pub upstream: Option<Arc<crate::repl::follow::Upstream>>,
    /// Every connection, for CLIENT LIST.
    pub clients: std::sync::Mutex<std::collections::BTreeMap<u64, Arc<crate::session::ClientView>>>,
    /// CLIENT KILLs so far: an engine that sees it change looks for its killed connections.
    pub kills: AtomicU64,
}

impl Shared {
    /// The line the store prints when it stops.
    pub fn summary(&self) -> String {
        format!(
            "store: {} keys, last durable change {}, {} compactions",
            self.dbs.keys(),
            self.order.durable(),
            self.gens.done.load(Ordering::Relaxed)
        )
    }
}

/// Unix time now, in milliseconds.
pub fn unix_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// One engine's server.
pub struct Store {
    shared: Arc<Shared>,
    engine: usize,
    /// Its log.
    pub log: LogWriter,
    durable: u64,
    now_ms: i64,
    /// Sessions holding replies: (sequence number awaited, connection id).
    waiters: Vec<(u64, u64)>,
    /// When this engine last ran its share of active expiry.
    expired_at_ms: i64,
    /// Replica connections on this engine, and the feed's length they were last woken at.
    followers: Vec<u64>,
    feed_seen: u64,
    /// Connections in a WAIT, looked at every batch until it answers.
    ack_waiters: Vec<u64>,
    /// Connections in a blocking command (and its deadline), looked at again when the store
    /// has changed since (the last change number) or the deadline has passed.
    block_waiters: Vec<(u64, i64)>,
    block_seen: u64,
    /// This engine's connections: CLIENT ID → (the channel's id, its view).
    mine: std::collections::HashMap<u64, (u64, Arc<crate::session::ClientView>)>,
    kills_seen: u64,
}

/// How often each engine removes the expired keys of its share of the shards (Redis's
/// active expiry runs ten times a second too).
const EXPIRE_EVERY_MS: i64 = 100;

struct WriterOut<'a, 'b, 'c>(&'a mut Writer<'b, 'c>);

impl Out for WriterOut<'_, '_, '_> {
    fn put(&mut self, b: &[u8]) {
        self.0.write(b);
    }
    fn backlog(&self) -> usize {
        self.0.backlog()
    }
}

impl Store {
    /// This engine's counters.
    pub fn counters(&self) -> &EngineStats {
        &self.shared.engines[self.engine]
    }

    /// Engine `engine`'s server, logging through `log`.
    pub fn new(shared: Arc<Shared>, engine: usize, log: LogWriter) -> Store {
        let durable = shared.order.durable();
        let mut log = log;
        log.feed = Some(shared.feed.clone());
        Store {
            shared,
            engine,
            log,
            durable,
            now_ms: unix_ms(),
            waiters: Vec::new(),
            expired_at_ms: 0,
            followers: Vec::new(),
            feed_seen: 0,
            ack_waiters: Vec::new(),
            block_waiters: Vec::new(),
            block_seen: 0,
            mine: std::collections::HashMap::new(),
            kills_seen: 0,
        }
    }

    /// The shared state.
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    fn run(&mut self, s: &mut Session, data: Option<&[u8]>, w: &mut Writer<'_, '_>) -> Verdict {
        if s.killed() {
            return Verdict::Close;
        }
        if let Some(v) = s.view() {
            self.mine.entry(s.id()).or_insert_with(|| (w.id(), v.clone()));
        }
        let before = s.commands;
        let info = info::InfoOf(&self.shared, self.engine);
        let mut ctx =
            Ctx { ks: self.shared.dbs.first(), journal: &mut self.log.stage, now_ms: self.now_ms, info: &info };
        let id = w.id();
        let mut out = WriterOut(w);
        let flow = match data {
            Some(d) => s.input(d, &mut ctx, self.durable, &mut out),
            None => s.resume(&mut ctx, self.durable, &mut out),
        };
        self.shared.engines[self.engine].commands.fetch_add(s.commands - before, Ordering::Relaxed);
        if flow == Flow::Close {
            return Verdict::Close;
        }
        if let Some(wait) = s.waiting() {
            if !s.queued {
                s.queued = true;
                self.waiters.push((wait, id));
            }
        }
        if s.waiting_for_replicas() && !self.ack_waiters.contains(&id) {
            self.ack_waiters.push(id);
        }
        if let Some(until) = s.blocked_until() {
            if !self.block_waiters.iter().any(|&(w, _)| w == id) {
                self.block_waiters.push((id, until));
            }
        }
        if s.is_follower() && s.follower_conn.is_none() {
            s.follower_conn = Some(id);
            self.followers.push(id);
        }
        if s.unsent() > 0 || s.is_follower() {
            // Replies wait for the client to read: more go as the network takes them.
            out.0.wait_for_drain();
        }
        Verdict::Continue
    }

    fn publish(&self) {
        let st = &self.shared.engines[self.engine];
        let l = &self.log.stats;
        st.commits.store(l.commits, Ordering::Relaxed);
        st.records.store(l.records, Ordering::Relaxed);
        st.log_bytes.store(l.bytes, Ordering::Relaxed);
    }
}

impl StreamServer for Store {
    type Conn = Session;

    fn batch(&mut self, _now: Instant) {
        self.now_ms = unix_ms();
        self.log.pump();
        if let Some(why) = self.log.failed() {
            // As Redis does with `appendfsync always`: nothing more can be made durable, and
            // a reply must never claim otherwise.
            eprintln!("sirocco store: {}: {why}; exiting", self.shared.dir.display());
            std::process::exit(1);
        }
        self.durable = self.shared.order.durable();
        self.publish();
        if self.now_ms - self.expired_at_ms >= EXPIRE_EVERY_MS {
            self.expired_at_ms = self.now_ms;
            if self.engine == 0 {
                self.shared.feed.tick(self.now_ms);
            }
            // Replicas waiting for their file's place in the stream look again.
            self.feed_seen = u64::MAX;
            let (me, engines) = (self.engine, self.shared.engines.len());
            let mut gone = 0;
            for ks in self.shared.dbs.iter() {
                let journal: Option<&mut dyn crate::command::Journal> =
                    if self.shared.feed.is_active() { Some(&mut self.log.stage) } else { None };
                gone += ks.expire_cycle(self.now_ms, |shard| shard % engines == me, journal);
            }
            self.shared.engines[me].expired.fetch_add(gone as u64, Ordering::Relaxed);
        }
        if self.shared.gens.should_start() {
            let sh = self.shared.clone();
            let spawned = std::thread::Builder::new().name("store-compact".into()).spawn(move || {
                match compact(&sh.dir, &sh.dbs, &sh.order, &sh.gens, sh.seg_size) {
                    Ok(r) => eprintln!(
                    "sirocco store: log compacted into a snapshot of {} keys at change {} in {} ms; {} old segments \
                     recycled",
                    r.keys,
                    r.base,
                    r.took.as_millis(),
                    r.removed
                ),
                    Err(e) => eprintln!("sirocco store: {e}; the log is kept as it was"),
                }
            });
            if spawned.is_err() {
                eprintln!("sirocco store: no thread for compaction; it is tried again later");
                self.shared.gens.abandon();
            }
        }
    }

    fn woken(&mut self, ids: &mut Vec<u64>) {
        // Each comes back through `run`, which lists it again while it still waits.
        ids.append(&mut self.ack_waiters);
        let kills = self.shared.kills.load(Ordering::Acquire);
        if kills != self.kills_seen {
            self.kills_seen = kills;
            ids.extend(self.mine.values().filter(|(_, v)| v.killed.load(Ordering::Relaxed)).map(|(chan, _)| *chan));
        }
        if !self.block_waiters.is_empty() {
            // A blocked command can only find something once something changed: an idle
            // store does not run its blocked clients' commands again, only their timeouts.
            let last = self.shared.order.last();
            let changed = last != self.block_seen;
            self.block_seen = last;
            let now = self.now_ms;
            self.block_waiters.retain(|&(id, until)| {
                let due = changed || (until != 0 && now >= until);
                if due {
                    ids.push(id);
                }
                !due
            });
        }
        if !self.followers.is_empty() {
            let total = self.shared.feed.total();
            if total != self.feed_seen {
                self.feed_seen = total;
                ids.extend_from_slice(&self.followers);
            }
        }
        let durable = self.durable;
        self.waiters.retain(|&(wait, id)| {
            if wait <= durable {
                ids.push(id);
                false
            } else {
                true
            }
        });
    }

    fn resume(&mut self, s: &mut Session, w: &mut Writer<'_, '_>) -> Verdict {
        s.queued = false;
        self.run(s, None, w)
    }

    fn batch_end(&mut self) {
        self.log.pump();
    }

    fn busy(&self) -> bool {
        // Replies wait for another engine's log (ours, when writing, wakes us by its ring).
        !self.waiters.is_empty() && !self.log.in_flight()
    }

    fn wake_fd(&self) -> Option<i32> {
        Some(self.log.ring_fd())
    }

    fn open(&mut self, remote: (IpAddr, u16), port: u16) -> Option<Session> {
        let st = &self.shared.engines[self.engine];
        st.connections.fetch_add(1, Ordering::Relaxed);
        st.open.fetch_add(1, Ordering::Relaxed);
        let s = Session::new().with_peer(remote.0.to_string());
        let peer = match remote.0 {
            IpAddr::V6(_) => format!("[{}]:{}", remote.0, remote.1),
            IpAddr::V4(_) => format!("{}:{}", remote.0, remote.1),
        };
        let laddr = format!(":{port}");
        let view = Arc::new(crate::session::ClientView::new(s.id(), peer, laddr, self.now_ms));
        if let Ok(mut c) = self.shared.clients.lock() {
            c.insert(s.id(), view.clone());
        }
        Some(s.with_view(view))
    }

    fn refused(&mut self) {
        self.shared.engines[self.engine].rejected.fetch_add(1, Ordering::Relaxed);
    }

    fn data(&mut self, s: &mut Session, data: &[u8], w: &mut Writer<'_, '_>) -> Verdict {
        self.run(s, Some(data), w)
    }

    fn drained(&mut self, s: &mut Session, w: &mut Writer<'_, '_>) -> Verdict {
        self.run(s, None, w)
    }

    fn closed(&mut self, s: Session, _end: End) {
        self.shared.engines[self.engine].open.fetch_sub(1, Ordering::Relaxed);
        if let Ok(mut c) = self.shared.clients.lock() {
            c.remove(&s.id());
        }
        self.mine.remove(&s.id());
        if let Some(id) = s.follower_conn {
            self.followers.retain(|&f| f != id);
        }
        if let Some(id) = s.replica_id() {
            self.shared.feed.detach(id);
        }
    }
}
