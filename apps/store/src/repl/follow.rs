//! sirocco store as a replica of a Redis primary (`--replicaof HOST PORT`): the handshake a
//! Redis replica makes, a full sync (the primary's RDB file loaded in place of every key) or
//! a continuation (PSYNC), then the primary's command stream run against the keyspace —
//! every change logged and made durable on the replica's own log, as a client's would be.
//! Clients may read; writes are refused (`READONLY`), as on a Redis replica.
//!
//! The link is one kernel TCP connection on a thread of its own, with its own log writer:
//! the replication stream is one connection, and the engines' loops stay servers only.

use super::load;
use crate::command::{Ctx, Info, Journal};
use crate::keyspace::{Databases, Entry, Keyspace};
use crate::log::record::with_whole;
use crate::log::writer::LogWriter;
use crate::server::{unix_ms, Shared};
use crate::session::{Out, Session};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where the replica's link is, for INFO and ROLE.
#[derive(Debug, Clone, Default)]
pub struct LinkState {
    /// The primary's host.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// The link is up and the stream flowing.
    pub up: bool,
    /// A full sync is being received or loaded.
    pub syncing: bool,
    /// The primary's replication id (after the first sync).
    pub replid: String,
    /// The stream offset applied.
    pub offset: u64,
    /// When the primary last sent anything, Unix ms.
    pub last_io_ms: i64,
    /// Full syncs loaded.
    pub full_syncs: u64,
    /// Continuations after a broken link.
    pub partial_syncs: u64,
    /// Why the link last went down.
    pub last_error: String,
}

/// The replica's side, shared with the engines (INFO, ROLE, READONLY).
#[derive(Default)]
pub struct Upstream {
    state: Mutex<LinkState>,
}

impl Upstream {
    /// A replica of `host:port`.
    pub fn new(host: &str, port: u16) -> Upstream {
        Upstream { state: Mutex::new(LinkState { host: host.into(), port, ..LinkState::default() }) }
    }

    /// The link's state now.
    pub fn state(&self) -> LinkState {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn update(&self, f: impl FnOnce(&mut LinkState)) {
        f(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

/// Replies to the primary's commands go nowhere (a Redis replica answers its primary only
/// REPLCONF GETACK).
struct Nowhere;

impl Out for Nowhere {
    fn put(&mut self, _b: &[u8]) {}
    fn backlog(&self) -> usize {
        0
    }
}

/// The applier's view of the server: no password, writable, no replicas of its own, every
/// database (the primary's stream SELECTs them).
struct Applier<'a>(&'a Databases);

impl Info for Applier<'_> {
    fn info(&self, ks: &Keyspace, _sections: &[String]) -> String {
        format!("keys:{}", ks.len())
    }
    fn config(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    fn databases(&self) -> Option<&Databases> {
        Some(self.0)
    }
}

/// How often the replica tells the primary how far it got (Redis's replicas: every second).
const ACK_EVERY: Duration = Duration::from_secs(1);
/// A primary silent this long is taken as gone (Redis's `repl-timeout`).
const TIMEOUT: Duration = Duration::from_secs(60);

/// The replica's link: runs for the life of the process, reconnecting after a break.
pub struct Follower {
    shared: Arc<Shared>,
    up: Arc<Upstream>,
    log: LogWriter,
    /// The port this store serves on (REPLCONF listening-port).
    our_port: u16,
    auth: Option<Vec<u8>>,
    /// This link's share of active expiry (it counts as an engine: `me` of `engines`).
    me: usize,
    engines: usize,
    expired_at: Instant,
}

impl Follower {
    /// The link to the primary `up` names, logging through `log` (an engine slot of its own:
    /// number `me` of `engines`).
    pub fn new(
        shared: Arc<Shared>,
        up: Arc<Upstream>,
        log: LogWriter,
        our_port: u16,
        auth: Option<Vec<u8>>,
        me: usize,
    ) -> Follower {
        let engines = shared.engines.len();
        Follower { shared, up, log, our_port, auth, me, engines, expired_at: Instant::now() }
    }

    /// Follows the primary until the process ends.
    pub fn run(mut self) {
        let mut quiet_until = Instant::now();
        loop {
            let (host, port) = {
                let s = self.up.state();
                (s.host, s.port)
            };
            match self.link(&host, port) {
                Ok(()) => {}
                Err(e) => {
                    // One line per kind of failure a second at most: a primary that is down
                    // for an hour does not fill the log.
                    if Instant::now() >= quiet_until {
                        eprintln!("sirocco store: replica of {host}:{port}: {e}; trying again");
                        quiet_until = Instant::now() + Duration::from_secs(60);
                    }
                    self.up.update(|s| {
                        s.up = false;
                        s.syncing = false;
                        s.last_error = e;
                    });
                }
            }
            self.idle(Duration::from_secs(1));
        }
    }

    /// Keeps the log moving (and its share of expiry) for `d`.
    fn idle(&mut self, d: Duration) {
        let t = Instant::now();
        while t.elapsed() < d {
            self.housekeeping();
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn housekeeping(&mut self) {
        self.log.pump();
        if let Some(why) = self.log.failed() {
            eprintln!("sirocco store: {}: {why}; exiting", self.shared.dir.display());
            std::process::exit(1);
        }
        if self.expired_at.elapsed() >= Duration::from_millis(100) {
            self.expired_at = Instant::now();
            let (me, n) = (self.me, self.engines);
            let gone: usize =
                self.shared.dbs.iter().map(|ks| ks.expire_cycle(unix_ms(), |shard| shard % n == me, None)).sum();
            self.shared.engines[me].expired.fetch_add(gone as u64, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// One connection to the primary: handshake, sync, stream, until it breaks.
    fn link(&mut self, host: &str, port: u16) -> Result<(), String> {
        use std::net::ToSocketAddrs;
        let addr = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("{host}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host}: no address"))?;
        let mut c = Conn::new(TcpStream::connect_timeout(&addr, Duration::from_secs(3)).map_err(|e| e.to_string())?);
        if let Some(pass) = self.auth.clone() {
            c.expect(&[b"AUTH", &pass], "+OK", self)?;
        }
        c.expect(&[b"PING"], "+PONG", self)?;
        c.expect(&[b"REPLCONF", b"listening-port", self.our_port.to_string().as_bytes()], "+OK", self)?;
        c.expect(&[b"REPLCONF", b"capa", b"psync2"], "+OK", self)?;
        let st = self.up.state();
        let (id, from) = if st.replid.is_empty() {
            ("?".to_string(), "-1".to_string())
        } else {
            (st.replid, (st.offset + 1).to_string())
        };
        c.send(&[b"PSYNC", id.as_bytes(), from.as_bytes()])?;
        let line = c.line(self)?;
        if let Some(rest) = line.strip_prefix("+FULLRESYNC ") {
            let mut parts = rest.split(' ');
            let replid = parts.next().unwrap_or_default().to_string();
            let offset: u64 = parts.next().and_then(|o| o.parse().ok()).ok_or("a FULLRESYNC without an offset")?;
            self.up.update(|s| s.syncing = true);
            let file = c.file(self)?;
            self.load(&file)?;
            self.up.update(|s| {
                s.replid = replid;
                s.offset = offset;
                s.full_syncs += 1;
                s.syncing = false;
            });
        } else if let Some(rest) = line.strip_prefix("+CONTINUE") {
            let new_id = rest.trim();
            self.up.update(|s| {
                if !new_id.is_empty() {
                    s.replid = new_id.to_string();
                }
                s.partial_syncs += 1;
            });
        } else {
            return Err(format!("the primary refused PSYNC: {line}"));
        }
        self.stream(c)
    }

    /// Replaces every key with the file's, each logged (whole) as a client's write would be.
    fn load(&mut self, file: &[u8]) -> Result<(), String> {
        let dbs = &self.shared.dbs;
        let now = unix_ms();
        let journal = &mut self.log.stage;
        let _all = dbs.first().exclusive();
        let flushed = journal.flush();
        for ks in dbs.iter() {
            for i in 0..ks.shards() {
                ks.lock(i).clear(flushed);
            }
        }
        let mut beyond = 0u64;
        let sum = load::load(file, now, |k| {
            let Some(ks) = dbs.db(k.db) else {
                beyond += 1;
                return;
            };
            journal.select(k.db);
            let mut s = ks.lock_key(&k.key);
            let seq = with_whole(&k.key, &k.value, k.expire_ms, |c| journal.record(c));
            s.note_expiry(&k.key, k.expire_ms);
            s.map.insert(k.key.into_boxed_slice(), Entry { value: k.value, expire_ms: k.expire_ms, seq });
        })?;
        journal.select(0);
        if beyond > 0 {
            eprintln!(
                "sirocco store: the primary's file held {beyond} keys in databases beyond the {} configured \
                 (--databases): they are left out",
                dbs.len()
            );
        }
        eprintln!("sirocco store: full sync from the primary: {} keys loaded", sum.keys);
        Ok(())
    }

    /// Runs the primary's stream until the link breaks.
    fn stream(&mut self, mut c: Conn) -> Result<(), String> {
        self.up.update(|s| {
            s.up = true;
            s.last_io_ms = unix_ms();
        });
        let mut session = Session::new();
        let shared = self.shared.clone();
        let applier = Applier(&shared.dbs);
        let mut offset = self.up.state().offset;
        // Bytes handed to the session before this read came in (the ones read with the
        // handshake's last line first).
        let mut pending_in = std::mem::take(&mut c.buf);
        let mut last_ack = Instant::now() - ACK_EVERY;
        let mut last_io = Instant::now();
        let mut acked_ok = Some((offset, self.log.stage.last()));
        loop {
            if !pending_in.is_empty() {
                let before = session.pending();
                let mut ctx = Ctx {
                    ks: self.shared.dbs.first(),
                    journal: &mut self.log.stage,
                    now_ms: unix_ms(),
                    info: &applier,
                };
                session.input(&pending_in, &mut ctx, u64::MAX, &mut Nowhere);
                // Offsets count bytes the session has taken (a request cut by a read waits).
                offset += (before + pending_in.len() - session.pending()) as u64;
                let asks = pending_in.windows(6).any(|w| w.eq_ignore_ascii_case(b"GETACK"));
                pending_in.clear();
                let seq = self.log.stage.last();
                acked_ok = Some((offset, seq));
                self.up.update(|s| {
                    s.offset = offset;
                    s.last_io_ms = unix_ms();
                });
                if asks {
                    last_ack = Instant::now() - ACK_EVERY;
                }
            }
            self.housekeeping();
            // What the primary is told it has: the stream up to a durable change.
            if last_ack.elapsed() >= ACK_EVERY {
                if let Some((off, seq)) = acked_ok {
                    if self.shared.order.durable() >= seq {
                        c.send(&[b"REPLCONF", b"ACK", off.to_string().as_bytes()])?;
                        last_ack = Instant::now();
                    }
                }
            }
            let mut b = [0u8; 1 << 16];
            match c.s.read(&mut b) {
                Ok(0) => return Err("the primary closed the link".into()),
                Ok(n) => {
                    pending_in.extend_from_slice(&b[..n]);
                    last_io = Instant::now();
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    if last_io.elapsed() > TIMEOUT {
                        return Err("the primary was silent for 60 s".into());
                    }
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

/// The connection to the primary, with what was read past the last line.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn new(s: TcpStream) -> Conn {
        let _ = s.set_nodelay(true);
        let _ = s.set_read_timeout(Some(Duration::from_millis(10)));
        Conn { s, buf: Vec::new() }
    }

    fn send(&mut self, args: &[&[u8]]) -> Result<(), String> {
        let mut b = Vec::new();
        super::stream::command(&mut b, args);
        self.s.write_all(&b).map_err(|e| e.to_string())
    }

    /// Reads until `n` bytes are buffered (keeping the log moving meanwhile).
    fn fill(&mut self, n: usize, f: &mut Follower) -> Result<(), String> {
        let t = Instant::now();
        let mut b = vec![0u8; 1 << 16];
        let mut last = Instant::now();
        while self.buf.len() < n {
            f.housekeeping();
            match self.s.read(&mut b) {
                Ok(0) => return Err("the primary closed the link".into()),
                Ok(k) => {
                    self.buf.extend_from_slice(&b[..k]);
                    last = Instant::now();
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    if last.elapsed() > TIMEOUT || (n < 1 << 20 && t.elapsed() > TIMEOUT) {
                        return Err("the primary stopped sending".into());
                    }
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }

    /// One line (the primary's newlines that keep a link alive while it prepares a file
    /// are skipped).
    fn line(&mut self, f: &mut Follower) -> Result<String, String> {
        loop {
            while self.buf.first() == Some(&b'\n') {
                self.buf.remove(0);
            }
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return Ok(line);
            }
            if self.buf.len() > 1 << 16 {
                return Err("a line longer than 64 KB from the primary".into());
            }
            let want = self.buf.len() + 1;
            self.fill(want, f)?;
        }
    }

    fn expect(&mut self, args: &[&[u8]], want: &str, f: &mut Follower) -> Result<(), String> {
        self.send(args)?;
        let line = self.line(f)?;
        if line.starts_with(want) {
            Ok(())
        } else {
            Err(format!("{} answered {line}", String::from_utf8_lossy(args[0])))
        }
    }

    /// The RDB file of a full sync: `$<length>\r\n` and that many bytes.
    fn file(&mut self, f: &mut Follower) -> Result<Vec<u8>, String> {
        let line = self.line(f)?;
        let len: usize = line
            .strip_prefix('$')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("expected the file's length, got {line}"))?;
        self.fill(len, f)?;
        let rest = self.buf.split_off(len);
        Ok(std::mem::replace(&mut self.buf, rest))
    }
}
