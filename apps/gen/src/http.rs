//! `sirocco gen http`: an HTTP/1.1 load generator on sirocco's own TCP (the channel
//! interface), because a kernel client cannot load a fast server from one core.
//!
//! Each of `conns` connections asks for one path at a time (no pipelining), from a fixed list
//! of request buffers written once and sent by reference. With keep-alive a connection asks
//! again as soon as a response is complete; without it every request has its own connection
//! (`Connection: close`; the server closes first, so TIME-WAIT stays on its side, as with ab
//! or wrk against a real server), and a new one is opened when the old one is gone.
//!
//! Closed loop (`rate` 0): a connection asks again at once, and latency runs from sending
//! the request (keep-alive) or opening the connection. Open loop: requests are due at
//! `rate` per second whatever the responses do; a due request waits for a free connection,
//! and its latency runs from when it was due, so a slow server shows as latency (no
//! coordinated omission).

use crate::timed::Timed;
use crate::Histogram;
use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use tcp::channel::{Calls, Event, Events, Extent, Server};
use tcp::{Duration, End, Handle, Instant};
use wire::IpAddr;

/// What to ask for.
#[derive(Debug, Clone)]
pub struct HttpGenConfig {
    /// Our address (the engine's).
    pub local: IpAddr,
    /// The server.
    pub dst: IpAddr,
    /// Its port.
    pub port: u16,
    /// Host header.
    pub host: String,
    /// Paths asked for, in turn.
    pub paths: Vec<String>,
    /// Connections kept (or, without keep-alive, open at once).
    pub conns: usize,
    /// Several requests per connection.
    pub keep_alive: bool,
    /// Requests per second (open loop); 0 for closed loop.
    pub rate: u64,
    /// How long to ask.
    pub duration: Duration,
    /// How long answers are waited for after that.
    pub drain: Duration,
}

/// Longest response head the generator reads.
const MAX_HEAD: usize = 16 * 1024;
/// Due requests beyond this many waiting for a connection are given up (counted `behind`).
const MAX_BACKLOG: u64 = 1 << 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No connection (waiting to open one).
    Down,
    /// SYN sent.
    Opening,
    /// Established, nothing asked.
    Idle,
    /// A request out, reading its response head.
    Head,
    /// Reading the body; this many bytes left.
    Body(u64),
    /// Response complete, waiting for the server's FIN (no keep-alive).
    Draining,
}

struct Conn {
    h: Option<Handle>,
    phase: Phase,
    /// When the latency of the current request started.
    since: Instant,
    /// Request bytes still to send.
    unsent: Option<Extent>,
    head: Vec<u8>,
    /// Responses on this connection.
    served: u32,
    /// The server said it closes after the current response.
    last: bool,
}

/// Counters and measurements.
#[derive(Default, Clone)]
pub struct HttpGenStats {
    /// Requests sent.
    pub sent: u64,
    /// Complete responses.
    pub completed: u64,
    /// Responses with a 2xx status.
    pub ok: u64,
    /// Responses with any other status.
    pub not_ok: u64,
    /// Response body bytes.
    pub body_bytes: u64,
    /// Response bytes, heads included.
    pub bytes: u64,
    /// Connections opened.
    pub opened: u64,
    /// Connections that failed to open.
    pub connect_failed: u64,
    /// Connections reset or timed out while a request was out.
    pub broken: u64,
    /// Responses that could not be read (no Content-Length, malformed or oversized head,
    /// bytes after the body, or the server closing a keep-alive connection mid-response).
    pub bad_responses: u64,
    /// Open loop: due requests given up because too many were waiting.
    pub behind: u64,
    /// Latency of complete responses (ns).
    pub latency: Histogram,
}

impl HttpGenStats {
    /// Adds another engine's counts and latencies.
    pub fn merge(&mut self, g: &HttpGenStats) {
        self.sent += g.sent;
        self.completed += g.completed;
        self.ok += g.ok;
        self.not_ok += g.not_ok;
        self.body_bytes += g.body_bytes;
        self.bytes += g.bytes;
        self.opened += g.opened;
        self.connect_failed += g.connect_failed;
        self.broken += g.broken;
        self.bad_responses += g.bad_responses;
        self.behind += g.behind;
        self.latency.merge(&g.latency);
    }
}

/// The generator of one engine.
pub struct HttpGen {
    cfg: HttpGenConfig,
    reqs: Vec<Extent>,
    conns: Vec<Conn>,
    /// Connections without a request, by index.
    idle: VecDeque<u32>,
    issued: u64,
    next_path: usize,
    /// Open loop: due times of requests waiting for a connection.
    backlog: VecDeque<Instant>,
    /// The first connection is opening alone (it resolves the server's address, so the
    /// others do not lose their SYNs to address resolution); the clock starts when it is up.
    probing: bool,
    timed: Timed,
    /// What was measured.
    pub stats: HttpGenStats,
}

impl HttpGen {
    /// A generator for `cfg`.
    pub fn new(cfg: HttpGenConfig) -> HttpGen {
        let conns = (0..cfg.conns.max(1))
            .map(|_| Conn {
                h: None,
                phase: Phase::Down,
                since: Instant::ZERO,
                unsent: None,
                head: Vec::new(),
                served: 0,
                last: false,
            })
            .collect();
        HttpGen {
            reqs: Vec::new(),
            conns,
            idle: VecDeque::new(),
            issued: 0,
            next_path: 0,
            backlog: VecDeque::new(),
            probing: false,
            timed: Timed::new(cfg.duration, cfg.drain),
            stats: HttpGenStats::default(),
            cfg,
        }
    }

    /// Counts `c` down by one once this generator has asked and drained.
    pub fn count_down_when_finished(mut self, c: Arc<AtomicUsize>) -> HttpGen {
        self.timed.count_down_when_finished(c);
        self
    }

    /// True once asking is over.
    pub fn finished(&self) -> bool {
        self.timed.done
    }

    /// The request bytes for `path`.
    pub fn request(&self, path: &str) -> Vec<u8> {
        let conn = if self.cfg.keep_alive { "keep-alive" } else { "close" };
        format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: sirocco-gen\r\nConnection: {conn}\r\n\r\n",
            self.cfg.host
        )
        .into_bytes()
    }

    fn prepare(&mut self, calls: &mut Calls<'_>) -> Result<(), String> {
        let paths = self.cfg.paths.clone();
        for p in &paths {
            let bytes = self.request(p);
            let bufs = calls.buffers();
            if bytes.len() > bufs.size() {
                return Err(format!("request for {p} is longer than a buffer"));
            }
            let id = bufs.alloc().ok_or("out of request buffers")?;
            bufs.write(id, 0, &bytes).map_err(|e| format!("{e:?}"))?;
            self.reqs.push(Extent { buf: id, off: 0, len: bytes.len() as u32 });
        }
        Ok(())
    }

    fn open(&mut self, i: u32, now: Instant, calls: &mut Calls<'_>) {
        let c = &mut self.conns[i as usize];
        match calls.connect(u64::from(i), self.cfg.local, self.cfg.dst, self.cfg.port) {
            Ok(h) => {
                c.h = Some(h);
                c.phase = Phase::Opening;
                c.since = now;
                c.served = 0;
                c.last = false;
                self.stats.opened += 1;
            }
            Err(_) => {
                self.stats.connect_failed += 1;
                c.phase = Phase::Down;
            }
        }
    }

    /// Sends the next request on connection `i`; latency runs from `since`.
    fn ask(&mut self, i: u32, since: Instant, calls: &mut Calls<'_>) {
        let e = self.reqs[self.next_path];
        self.next_path = (self.next_path + 1) % self.reqs.len();
        let c = &mut self.conns[i as usize];
        let Some(h) = c.h else { return };
        c.phase = Phase::Head;
        c.head.clear();
        c.since = since;
        c.unsent = Some(e);
        self.stats.sent += 1;
        Self::push(c, h, calls);
    }

    fn push(c: &mut Conn, h: Handle, calls: &mut Calls<'_>) {
        let Some(e) = c.unsent else { return };
        match calls.sendv(h, &[e]) {
            Ok(n) if n == e.len => c.unsent = None,
            Ok(n) => c.unsent = Some(Extent { off: e.off + n, len: e.len - n, ..e }),
            Err(_) => c.unsent = None,
        }
    }

    fn complete(&mut self, i: u32, now: Instant, calls: &mut Calls<'_>) {
        self.stats.completed += 1;
        self.stats.latency.record(now.since(self.conns[i as usize].since).as_nanos());
        let c = &mut self.conns[i as usize];
        c.served += 1;
        if self.cfg.keep_alive && !c.last {
            c.phase = Phase::Idle;
            self.idle.push_back(i);
        } else {
            c.phase = Phase::Draining;
        }
        let _ = calls;
    }

    /// Reads response bytes on connection `i`.
    fn read(&mut self, i: u32, mut data: &[u8], now: Instant, calls: &mut Calls<'_>) {
        self.stats.bytes += data.len() as u64;
        while !data.is_empty() {
            let c = &mut self.conns[i as usize];
            match c.phase {
                Phase::Head => {
                    let before = c.head.len();
                    c.head.extend_from_slice(&data[..data.len().min(MAX_HEAD - before)]);
                    let Some(end) = find_head_end(&c.head) else {
                        if c.head.len() >= MAX_HEAD {
                            self.bad(i, calls);
                            return;
                        }
                        return;
                    };
                    let Some((status, len, last)) = parse_head(&c.head[..end]) else {
                        self.bad(i, calls);
                        return;
                    };
                    c.last = last;
                    if (200..300).contains(&status) {
                        self.stats.ok += 1;
                    } else {
                        self.stats.not_ok += 1;
                    }
                    data = &data[end - before..];
                    self.conns[i as usize].phase = Phase::Body(len);
                    if len == 0 {
                        self.complete(i, now, calls);
                    }
                }
                Phase::Body(left) => {
                    let n = (data.len() as u64).min(left);
                    self.stats.body_bytes += n;
                    data = &data[n as usize..];
                    c.phase = Phase::Body(left - n);
                    if left == n {
                        self.complete(i, now, calls);
                    }
                }
                _ => {
                    // Bytes nobody asked for.
                    self.bad(i, calls);
                    return;
                }
            }
        }
    }

    fn bad(&mut self, i: u32, calls: &mut Calls<'_>) {
        self.stats.bad_responses += 1;
        if let Some(h) = self.conns[i as usize].h {
            let _ = calls.abort(h);
        }
    }

    fn due(&mut self, now: Instant) {
        let start = self.timed.start.unwrap_or(now);
        let elapsed = now.since(start).as_nanos();
        let due = (u128::from(elapsed) * u128::from(self.cfg.rate) / 1_000_000_000) as u64;
        while self.issued < due {
            if self.backlog.len() as u64 >= MAX_BACKLOG {
                self.stats.behind += due - self.issued;
                self.issued = due;
                break;
            }
            let at = start
                + Duration::from_nanos((u128::from(self.issued) * 1_000_000_000 / u128::from(self.cfg.rate)) as u64);
            self.backlog.push_back(at);
            self.issued += 1;
        }
    }
}

/// A response head at the start of `b`, if complete: (its length, status, Content-Length,
/// closes after it). `Err(())` for a head the generator cannot read.
#[allow(clippy::result_unit_err)]
pub fn response_head(b: &[u8]) -> Option<Result<(usize, u16, u64, bool), ()>> {
    let end = find_head_end(b)?;
    Some(parse_head(&b[..end]).map(|(s, l, c)| (end, s, l, c)).ok_or(()))
}

/// Where the head ends (after its blank line), if it has.
fn find_head_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

/// Status, Content-Length and whether the server closes after it (`Connection: close`).
fn parse_head(head: &[u8]) -> Option<(u16, u64, bool)> {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Response::new(&mut fields);
    match r.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return None,
    }
    let status = r.code?;
    let close = r.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("connection")
            && h.value.split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"))
    }) || r.version == Some(0);
    if status == 204 || status == 304 {
        return Some((status, 0, close));
    }
    let cl = r.headers.iter().find(|h| h.name.eq_ignore_ascii_case("content-length"))?;
    let len = std::str::from_utf8(cl.value).ok()?.trim().parse().ok()?;
    Some((status, len, close))
}

impl Server for HttpGen {
    fn handle(&mut self, events: &Events<'_>, calls: &mut Calls<'_>) {
        let now = calls.now();
        if self.timed.start.is_none() && !self.probing && !self.timed.done {
            if let Err(e) = self.prepare(calls) {
                eprintln!("gen http: {e}");
                self.timed.done = true;
                return;
            }
            self.probing = true;
            self.open(0, now, calls);
        }
        for ev in events.iter() {
            match ev {
                Event::Connected { cookie, outcome, .. } => {
                    let i = cookie as u32;
                    if self.probing && outcome.is_ok() {
                        self.probing = false;
                        self.timed.start = Some(now);
                        for j in 1..self.conns.len() as u32 {
                            self.open(j, now, calls);
                        }
                        self.conns[i as usize].since = now;
                    }
                    match outcome {
                        Ok(()) => {
                            self.conns[i as usize].phase = Phase::Idle;
                            if !self.cfg.keep_alive && self.cfg.rate == 0 {
                                // Latency of a request on its own connection includes the
                                // handshake.
                                let since = self.conns[i as usize].since;
                                if !self.timed.done {
                                    self.ask(i, since, calls);
                                }
                            } else {
                                self.idle.push_back(i);
                            }
                        }
                        Err(_) => {
                            // A handshake the generator itself cut short at the end of the
                            // run is not the server's failure.
                            if !self.timed.done {
                                self.stats.connect_failed += 1;
                            }
                            self.conns[i as usize].phase = Phase::Down;
                            self.conns[i as usize].h = None;
                        }
                    }
                }
                Event::Recv { h, cookie, data } => {
                    let _ = calls.recv_done(h, data.len() as u32);
                    self.read(cookie as u32, data, now, calls);
                }
                Event::Sent { h, cookie, .. } => {
                    let c = &mut self.conns[cookie as usize];
                    Self::push(c, h, calls);
                }
                Event::PeerClosed { h, cookie } => {
                    let c = &mut self.conns[cookie as usize];
                    if matches!(c.phase, Phase::Head | Phase::Body(_)) {
                        self.stats.bad_responses += 1;
                    }
                    c.phase = Phase::Draining;
                    self.idle.retain(|&x| x != cookie as u32);
                    let _ = calls.close(h);
                }
                Event::Dead { cookie, end, .. } => {
                    let c = &mut self.conns[cookie as usize];
                    if matches!(c.phase, Phase::Head | Phase::Body(_) | Phase::Opening) && end != End::Closed {
                        self.stats.broken += 1;
                    }
                    c.h = None;
                    c.phase = Phase::Down;
                    self.idle.retain(|&x| x != cookie as u32);
                }
                Event::Knock { h, .. } => {
                    let _ = calls.reject(h);
                }
            }
        }
        self.timed.drain(now);
        if self.timed.done || self.probing {
            if self.probing && self.conns[0].phase == Phase::Down {
                self.open(0, now, calls);
            }
            return;
        }
        if self.timed.asking(now, self.conns.iter().filter_map(|c| c.h), calls).is_none() {
            return;
        }
        if self.cfg.rate > 0 {
            self.due(now);
        }
        // Connections that went down are opened again.
        for i in 0..self.conns.len() as u32 {
            if self.conns[i as usize].phase == Phase::Down {
                self.open(i, now, calls);
            }
        }
        // Idle connections ask: at once (closed loop) or for due requests (open loop).
        while let Some(&i) = self.idle.front() {
            let since = if self.cfg.rate > 0 {
                match self.backlog.pop_front() {
                    Some(t) => t,
                    None => break,
                }
            } else {
                now
            };
            self.idle.pop_front();
            self.ask(i, since, calls);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_read_for_status_and_length() {
        let h = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\ncontent-length: 1234\r\n\r\n";
        assert_eq!(find_head_end(h), Some(h.len()));
        assert_eq!(parse_head(h), Some((200, 1234, false)));
        assert_eq!(parse_head(b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"), Some((304, 0, false)));
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 1\r\n\r\n"),
            Some((200, 1, true))
        );
        assert_eq!(parse_head(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n"), Some((200, 1, true)));
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), None);
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"), None);
        assert_eq!(find_head_end(b"HTTP/1.1 200 OK\r\n"), None);
    }
}
