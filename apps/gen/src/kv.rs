//! `sirocco gen kv`: memcached load in the manner of mutilate, on sirocco's own TCP.
//!
//! The key space is stored first (one `set` per key, pipelined, not measured); then requests
//! are due at exponentially distributed intervals averaging `1/rate` (open loop), each a
//! `get` or a `set` of a key drawn uniformly from the key space (mutilate's default), and go
//! out on the next connection with fewer than `depth` requests outstanding. Latency runs
//! from when a request was due, so a server that falls behind shows as latency, not as a
//! lower offered load. Key and value sizes follow the workload: Facebook's ETC (keys 20–70
//! bytes, values 1 B–1 KB, 75 % gets) or USR (keys under 20 bytes, 2-byte values, 99 % gets),
//! as in the IX paper's memcached evaluation (mutilate's distributions for ETC).

use crate::timed::Timed;
use crate::Histogram;
use resp::num::format_i64;
use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use tcp::channel::{Calls, Event, Events, Outbox, Server};
use tcp::{Duration, Handle, Instant};
use wire::IpAddr;

/// A workload: key and value sizes and the share of gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Workload {
    /// Facebook's ETC: keys GEV(30.8, 8.2, 0.079) bytes within 20–70, values generalised
    /// Pareto(15, 214.5, 0.348) within 1–1024, 75 % gets.
    Etc,
    /// Facebook's USR: keys of 16–19 bytes, 2-byte values, 99 % gets.
    Usr,
    /// Only sets of 1 KB values on 16-byte keys (redis-benchmark's SET with -d 1024).
    Set1k,
    /// Only gets of them.
    Get1k,
    /// Redis only: transactions of five sets of 1 KB values (MULTI, 5 × SET, EXEC), each one
    /// request.
    Multi5,
}

/// The protocol spoken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// memcached's text protocol.
    Memcache,
    /// Redis's RESP2 (GET, SET).
    Resp,
}

impl Workload {
    /// The share of requests that are gets.
    pub fn get_ratio(self) -> f64 {
        match self {
            Workload::Etc => 0.75,
            Workload::Usr => 0.99,
            Workload::Set1k | Workload::Multi5 => 0.0,
            Workload::Get1k => 1.0,
        }
    }

    fn key_len(self, rng: &mut Rng) -> usize {
        match self {
            Workload::Etc => {
                let (mu, sigma, xi) = (30.7984, 8.20449, 0.078688);
                let u = rng.unit().max(1e-12);
                let x = mu + sigma * ((-u.ln()).powf(-xi) - 1.0) / xi;
                (x.round() as usize).clamp(20, 70)
            }
            Workload::Usr => 16 + rng.below(4),
            Workload::Set1k | Workload::Get1k | Workload::Multi5 => 16,
        }
    }

    fn value_len(self, rng: &mut Rng) -> usize {
        match self {
            Workload::Etc => {
                let (mu, sigma, xi) = (15.0, 214.476, 0.348238);
                let u = rng.unit().max(1e-12);
                let x = mu + sigma * (u.powf(-xi) - 1.0) / xi;
                (x.round() as usize).clamp(1, 1024)
            }
            Workload::Usr => 2,
            Workload::Set1k | Workload::Get1k | Workload::Multi5 => 1024,
        }
    }
}

/// A small seeded generator (xorshift64*): the same seed draws the same run.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The keys and their value sizes, drawn once per run.
pub struct KeySpace {
    keys: Vec<u8>,
    /// (offset in `keys`, key length, value length)
    at: Vec<(u32, u8, u16)>,
}

impl KeySpace {
    /// `n` keys of `w`'s sizes, from `seed`.
    pub fn new(w: Workload, n: usize, seed: u64) -> KeySpace {
        let mut rng = Rng::new(seed);
        let mut keys = Vec::new();
        let mut at = Vec::with_capacity(n);
        for i in 0..n {
            let len = w.key_len(&mut rng);
            let id = format!("{i:x}");
            let off = keys.len() as u32;
            keys.extend_from_slice(b"k:");
            keys.extend(std::iter::repeat_n(b'0', len.saturating_sub(id.len() + 2)));
            keys.extend_from_slice(id.as_bytes());
            let kl = keys.len() as u32 - off;
            at.push((off, kl as u8, w.value_len(&mut rng) as u16));
        }
        KeySpace { keys, at }
    }

    /// Keys in all.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// True without keys.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// Key `i` and its value length.
    pub fn key(&self, i: usize) -> (&[u8], usize) {
        let (off, kl, vl) = self.at[i];
        (&self.keys[off as usize..off as usize + kl as usize], vl as usize)
    }

    /// Mean key and value lengths.
    pub fn mean_sizes(&self) -> (f64, f64) {
        let n = self.at.len().max(1) as f64;
        let k: usize = self.at.iter().map(|a| a.1 as usize).sum();
        let v: usize = self.at.iter().map(|a| a.2 as usize).sum();
        (k as f64 / n, v as f64 / n)
    }
}

/// What to ask.
#[derive(Clone)]
pub struct KvGenConfig {
    /// Our address (the engine's).
    pub local: IpAddr,
    /// The server.
    pub dst: IpAddr,
    /// Its port.
    pub port: u16,
    /// The workload.
    pub workload: Workload,
    /// The protocol.
    pub proto: Proto,
    /// The keys (shared by every engine).
    pub keys: Arc<KeySpace>,
    /// Which keys this engine stores before the measured run (a share of them).
    pub preload: std::ops::Range<usize>,
    /// Connections.
    pub conns: usize,
    /// Most requests outstanding on one connection.
    pub depth: usize,
    /// Requests per second (this engine's share).
    pub rate: u64,
    /// How long to ask.
    pub duration: Duration,
    /// How long answers are waited for after that.
    pub drain: Duration,
    /// Seed of the request stream.
    pub seed: u64,
}

/// Counters and measurements.
#[derive(Default, Clone)]
pub struct KvGenStats {
    /// Requests sent in the measured run.
    pub sent: u64,
    /// Answers received in it.
    pub completed: u64,
    /// Gets answered with a value.
    pub hits: u64,
    /// Gets answered without one.
    pub misses: u64,
    /// Sets answered STORED.
    pub stored: u64,
    /// Answers that were errors or could not be read.
    pub errors: u64,
    /// Keys stored before the run.
    pub preloaded: u64,
    /// Due requests given up because too many were waiting for a connection.
    pub behind: u64,
    /// Connections that failed or broke.
    pub broken: u64,
    /// Latency from due time to answer (ns).
    pub latency: Histogram,
}

impl KvGenStats {
    /// Adds another engine's counts.
    pub fn merge(&mut self, o: &KvGenStats) {
        self.sent += o.sent;
        self.completed += o.completed;
        self.hits += o.hits;
        self.misses += o.misses;
        self.stored += o.stored;
        self.errors += o.errors;
        self.preloaded += o.preloaded;
        self.behind += o.behind;
        self.broken += o.broken;
        self.latency.merge(&o.latency);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Get,
    Set,
    Preload,
    /// MULTI, five SETs, EXEC: twelve answer lines.
    Tx,
}

/// The answer lines of a transaction of five sets, in order.
const TX_LINES: [&[u8]; 12] =
    [b"+OK", b"+QUEUED", b"+QUEUED", b"+QUEUED", b"+QUEUED", b"+QUEUED", b"*5", b"+OK", b"+OK", b"+OK", b"+OK", b"+OK"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Down,
    Opening,
    Up,
}

struct Conn {
    h: Option<Handle>,
    phase: Phase,
    out: Outbox,
    /// Requests outstanding: kind and when due.
    waiting: VecDeque<(Kind, Instant)>,
    /// A partial answer line.
    line: Vec<u8>,
    /// Value bytes (and CRLF) still to skip.
    skip: usize,
    /// A VALUE was read for the get being answered.
    hit: bool,
    /// Answer lines of the transaction being answered read so far.
    tx_line: usize,
}

/// Due requests beyond this many waiting for a connection are given up.
const MAX_BACKLOG: usize = 1 << 16;
/// Preload sets outstanding per connection.
const PRELOAD_DEPTH: usize = 64;

/// The generator of one engine.
pub struct KvGen {
    cfg: KvGenConfig,
    conns: Vec<Conn>,
    rng: Rng,
    value: Vec<u8>,
    next_preload: usize,
    preloading: bool,
    timed: Timed,
    next_due: Instant,
    backlog: VecDeque<Instant>,
    rr: usize,
    /// What was measured.
    pub stats: KvGenStats,
}

impl KvGen {
    /// A generator for `cfg`.
    pub fn new(cfg: KvGenConfig) -> KvGen {
        let conns = (0..cfg.conns.max(1))
            .map(|_| Conn {
                h: None,
                phase: Phase::Down,
                out: Outbox::new(),
                waiting: VecDeque::new(),
                line: Vec::new(),
                skip: 0,
                hit: false,
                tx_line: 0,
            })
            .collect();
        KvGen {
            rng: Rng::new(cfg.seed),
            next_preload: cfg.preload.start,
            conns,
            value: vec![b'x'; 1024],
            preloading: true,
            timed: Timed::new(cfg.duration, cfg.drain),
            next_due: Instant::ZERO,
            backlog: VecDeque::new(),
            rr: 0,
            stats: KvGenStats::default(),
            cfg,
        }
    }

    /// Counts `c` down by one once this generator has asked and drained.
    pub fn count_down_when_finished(mut self, c: Arc<AtomicUsize>) -> KvGen {
        self.timed.count_down_when_finished(c);
        self
    }

    fn send(&mut self, i: usize, kind: Kind, key_index: usize, due: Instant, calls: &mut Calls<'_>) {
        let (key, vlen) = self.cfg.keys.key(key_index);
        let c = &mut self.conns[i];
        let Some(h) = c.h else { return };
        let bufs = calls.buffers();
        let mut line = [0u8; 128];
        let ok = match (self.cfg.proto, kind) {
            (Proto::Memcache, Kind::Get) => {
                c.out.write(bufs, b"get ") && c.out.write(bufs, key) && c.out.write(bufs, b"\r\n")
            }
            (Proto::Memcache, _) => {
                let head = format_set(&mut line, key, vlen);
                c.out.write(bufs, head) && c.out.write(bufs, &self.value[..vlen]) && c.out.write(bufs, b"\r\n")
            }
            (Proto::Resp, Kind::Get) => {
                let head = resp_head(&mut line, b"*2\r\n$3\r\nGET\r\n", key.len());
                c.out.write(bufs, head) && c.out.write(bufs, key) && c.out.write(bufs, b"\r\n")
            }
            (Proto::Resp, Kind::Tx) => {
                let mut ok = c.out.write(bufs, b"*1\r\n$5\r\nMULTI\r\n");
                for k in 0..5 {
                    let (key, vlen) = self.cfg.keys.key((key_index + k * 7919) % self.cfg.keys.len());
                    let head = resp_head(&mut line, b"*3\r\n$3\r\nSET\r\n", key.len());
                    let mut vline = [0u8; 128];
                    let vhead = resp_head(&mut vline, b"\r\n", vlen);
                    ok = ok
                        && c.out.write(bufs, head)
                        && c.out.write(bufs, key)
                        && c.out.write(bufs, vhead)
                        && c.out.write(bufs, &self.value[..vlen])
                        && c.out.write(bufs, b"\r\n");
                }
                ok && c.out.write(bufs, b"*1\r\n$4\r\nEXEC\r\n")
            }
            (Proto::Resp, _) => {
                let head = resp_head(&mut line, b"*3\r\n$3\r\nSET\r\n", key.len());
                let mut vline = [0u8; 128];
                let vhead = resp_head(&mut vline, b"\r\n", vlen);
                c.out.write(bufs, head)
                    && c.out.write(bufs, key)
                    && c.out.write(bufs, vhead)
                    && c.out.write(bufs, &self.value[..vlen])
                    && c.out.write(bufs, b"\r\n")
            }
        };
        if !ok {
            self.stats.errors += 1;
            let _ = calls.abort(h);
            return;
        }
        c.waiting.push_back((kind, due));
        if kind != Kind::Preload {
            self.stats.sent += 1;
        }
        c.out.flush(calls, h);
    }

    /// Reads answers on connection `i`.
    fn read(&mut self, i: usize, mut data: &[u8], now: Instant) {
        while !data.is_empty() {
            let c = &mut self.conns[i];
            if c.skip > 0 {
                let n = c.skip.min(data.len());
                c.skip -= n;
                data = &data[n..];
                continue;
            }
            let Some(nl) = data.iter().position(|&b| b == b'\n') else {
                if c.line.len() + data.len() > 1024 {
                    self.stats.errors += 1;
                    c.line.clear();
                } else {
                    c.line.extend_from_slice(data);
                }
                return;
            };
            c.line.extend_from_slice(&data[..=nl]);
            data = &data[nl + 1..];
            let line = std::mem::take(&mut c.line);
            let l = line.strip_suffix(b"\r\n").unwrap_or(&line);
            if self.cfg.proto == Proto::Resp {
                self.resp_reply(i, l, now);
                self.conns[i].line = line;
                self.conns[i].line.clear();
                continue;
            }
            if let Some(rest) = l.strip_prefix(b"VALUE ") {
                // VALUE <key> <flags> <bytes>: skip the data and its CRLF.
                let n: Option<usize> =
                    rest.rsplit(|&b| b == b' ').next().and_then(|t| std::str::from_utf8(t).ok()?.parse().ok());
                match n {
                    Some(n) => {
                        c.skip = n + 2;
                        c.hit = true;
                    }
                    None => self.stats.errors += 1,
                }
            } else {
                let Some((kind, due)) = c.waiting.pop_front() else {
                    self.stats.errors += 1;
                    continue;
                };
                let hit = std::mem::take(&mut c.hit);
                match (kind, l) {
                    (Kind::Preload, b"STORED") => self.stats.preloaded += 1,
                    (Kind::Preload, _) => self.stats.errors += 1,
                    (Kind::Get, b"END") | (Kind::Set, b"STORED") => {
                        self.stats.completed += 1;
                        match kind {
                            Kind::Get if hit => self.stats.hits += 1,
                            Kind::Get => self.stats.misses += 1,
                            _ => self.stats.stored += 1,
                        }
                        self.stats.latency.record(now.since(due).as_nanos());
                    }
                    _ => {
                        self.stats.completed += 1;
                        self.stats.errors += 1;
                    }
                }
            }
            self.conns[i].line = line;
            self.conns[i].line.clear();
        }
    }

    /// One RESP reply line on connection `i`: `+OK`, `$-1`, or a bulk header (its bytes are
    /// skipped); anything else is an error.
    fn resp_reply(&mut self, i: usize, l: &[u8], now: Instant) {
        let c = &mut self.conns[i];
        if let Some(&(Kind::Tx, due)) = c.waiting.front() {
            if l != TX_LINES[c.tx_line] {
                self.stats.errors += 1;
            }
            c.tx_line += 1;
            if c.tx_line == TX_LINES.len() {
                c.tx_line = 0;
                c.waiting.pop_front();
                self.stats.stored += 1;
                self.stats.completed += 1;
                self.stats.latency.record(now.since(due).as_nanos());
            }
            return;
        }
        let Some((kind, due)) = c.waiting.pop_front() else {
            self.stats.errors += 1;
            return;
        };
        let bulk = l.strip_prefix(b"$").and_then(|n| std::str::from_utf8(n).ok()?.parse::<i64>().ok());
        match (kind, l, bulk) {
            (Kind::Preload, b"+OK", _) => self.stats.preloaded += 1,
            (Kind::Preload, ..) => self.stats.errors += 1,
            (Kind::Set, b"+OK", _) => self.stats.stored += 1,
            (Kind::Get, _, Some(-1)) => self.stats.misses += 1,
            (Kind::Get, _, Some(n)) if n >= 0 => {
                c.skip = n as usize + 2;
                self.stats.hits += 1;
            }
            _ => self.stats.errors += 1,
        }
        if kind != Kind::Preload {
            self.stats.completed += 1;
            self.stats.latency.record(now.since(due).as_nanos());
        }
    }

    fn preload(&mut self, calls: &mut Calls<'_>) {
        for i in 0..self.conns.len() {
            if self.conns[i].phase != Phase::Up {
                continue;
            }
            while self.conns[i].waiting.len() < PRELOAD_DEPTH && self.next_preload < self.cfg.preload.end {
                let k = self.next_preload;
                self.next_preload += 1;
                self.send(i, Kind::Preload, k, Instant::ZERO, calls);
            }
        }
    }

    fn exp_interval(&mut self) -> Duration {
        let u = self.rng.unit().max(1e-12);
        let mean = 1e9 / self.cfg.rate.max(1) as f64;
        Duration::from_nanos((-u.ln() * mean) as u64)
    }

    fn issue(&mut self, now: Instant, calls: &mut Calls<'_>) {
        while self.next_due <= now {
            if self.backlog.len() >= MAX_BACKLOG {
                self.stats.behind += 1;
            } else {
                self.backlog.push_back(self.next_due);
            }
            let d = self.exp_interval();
            self.next_due += d;
        }
        let n = self.conns.len();
        let mut tried = 0;
        while !self.backlog.is_empty() && tried < n {
            let i = self.rr;
            self.rr = (self.rr + 1) % n;
            let c = &self.conns[i];
            if c.phase != Phase::Up || c.waiting.len() >= self.cfg.depth {
                tried += 1;
                continue;
            }
            tried = 0;
            let due = self.backlog.pop_front().expect("not empty");
            let key = self.rng.below(self.cfg.keys.len());
            let kind = if self.cfg.workload == Workload::Multi5 {
                Kind::Tx
            } else if self.rng.unit() < self.cfg.workload.get_ratio() {
                Kind::Get
            } else {
                Kind::Set
            };
            self.send(i, kind, key, due, calls);
        }
    }
}

/// `parts` one after another in `buf`.
fn join<'a>(buf: &'a mut [u8; 128], parts: &[&[u8]]) -> &'a [u8] {
    let mut n = 0;
    for part in parts {
        buf[n..n + part.len()].copy_from_slice(part);
        n += part.len();
    }
    &buf[..n]
}

/// `prefix`, then `$<len>\r\n`: the start of a RESP request up to its key, or a bulk header.
fn resp_head<'a>(buf: &'a mut [u8; 128], prefix: &[u8], len: usize) -> &'a [u8] {
    let mut digits = [0u8; 20];
    join(buf, &[prefix, b"$", format_i64(len as i64, &mut digits), b"\r\n"])
}

fn format_set<'a>(buf: &'a mut [u8; 128], key: &[u8], vlen: usize) -> &'a [u8] {
    let mut digits = [0u8; 20];
    join(buf, &[b"set ", key, b" 0 0 ", format_i64(vlen as i64, &mut digits), b"\r\n"])
}

impl Server for KvGen {
    fn handle(&mut self, events: &Events<'_>, calls: &mut Calls<'_>) {
        let now = calls.now();
        for ev in events.iter() {
            match ev {
                Event::Connected { cookie, outcome, .. } => {
                    let c = &mut self.conns[cookie as usize];
                    if outcome.is_ok() {
                        c.phase = Phase::Up;
                    } else {
                        self.stats.broken += 1;
                        c.phase = Phase::Down;
                        c.h = None;
                    }
                }
                Event::Recv { h, cookie, data } => {
                    let _ = calls.recv_done(h, data.len() as u32);
                    self.read(cookie as usize, data, now);
                }
                Event::Sent { h, cookie, .. } => {
                    self.conns[cookie as usize].out.flush(calls, h);
                }
                Event::PeerClosed { h, .. } => {
                    let _ = calls.close(h);
                }
                Event::Dead { cookie, .. } => {
                    let c = &mut self.conns[cookie as usize];
                    if !self.timed.done {
                        self.stats.broken += 1;
                    }
                    c.out.clear(calls.buffers());
                    c.waiting.clear();
                    c.h = None;
                    c.phase = Phase::Down;
                }
                Event::Knock { h, .. } => {
                    let _ = calls.reject(h);
                }
            }
        }
        self.timed.drain(now);
        if self.timed.done {
            return;
        }
        // Open connections (the first alone until it is up: it resolves the server's MAC).
        let first_up = self.conns[0].phase == Phase::Up;
        for i in 0..self.conns.len() {
            if self.conns[i].phase == Phase::Down && (i == 0 || first_up) {
                if let Ok(h) = calls.connect(i as u64, self.cfg.local, self.cfg.dst, self.cfg.port) {
                    self.conns[i].h = Some(h);
                    self.conns[i].phase = Phase::Opening;
                }
            }
        }
        if self.preloading {
            self.preload(calls);
            let all_up = self.conns.iter().all(|c| c.phase == Phase::Up);
            let outstanding = self.conns.iter().any(|c| !c.waiting.is_empty());
            if all_up && self.next_preload >= self.cfg.preload.end && !outstanding {
                self.preloading = false;
                self.timed.start = Some(now);
                self.next_due = now;
            }
            return;
        }
        if self.timed.asking(now, self.conns.iter().filter_map(|c| c.h), calls).is_some() {
            self.issue(now, calls);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_have_their_sizes() {
        let etc = KeySpace::new(Workload::Etc, 20_000, 7);
        let (k, v) = etc.mean_sizes();
        assert!((25.0..45.0).contains(&k), "ETC mean key {k}");
        assert!((100.0..500.0).contains(&v), "ETC mean value {v}");
        for i in 0..etc.len() {
            let (key, vl) = etc.key(i);
            assert!((20..=70).contains(&key.len()) && (1..=1024).contains(&vl));
        }
        let usr = KeySpace::new(Workload::Usr, 1000, 7);
        for i in 0..usr.len() {
            let (key, vl) = usr.key(i);
            assert!(key.len() < 20 && vl == 2, "{:?}", String::from_utf8_lossy(key));
        }
        // Keys are distinct.
        let mut all: Vec<&[u8]> = (0..etc.len()).map(|i| etc.key(i).0).collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), etc.len());
    }

    #[test]
    fn set_lines() {
        let mut b = [0u8; 128];
        assert_eq!(format_set(&mut b, b"k:01", 17), b"set k:01 0 0 17\r\n");
    }
}
