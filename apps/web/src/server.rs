//! The HTTP server as a level-1 TCP application: requests are parsed from the receive views
//! (copied only when one spans segments), each answered by queueing a response on the
//! connection's stream. A `200` is a reference to a packetised object, sent segment by
//! segment from its masters with a few fields rewritten ([`App::write_ready`]); other
//! responses (errors, 304, HEAD, ranges) are formatted per request and sent the ordinary way.

use crate::conn::{Body, Conn, Resp, MAX_QUEUED};
use crate::fetch::Span;
use crate::replicas::Replicas;
use crate::segment;
use crate::site::Lookup;
use crate::store::Store;
use crate::streamer::Streamer;
use http::range::Ranged;
use http::response::{self, ContentRange, Head};
use http::{Method, Parsed, Request};
use std::cell::Cell;
use std::collections::VecDeque;
use tcp::{Ctl, Duration, End, Handle, Instant, PinnedFrames, SegOut};
use wire::IpAddr;

/// Per-connection limits and timeouts.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// A request head must be complete this long after its first byte (slowloris).
    pub header_timeout: Duration,
    /// An idle keep-alive connection, or one whose peer stops taking data, is closed after
    /// this long.
    pub idle_timeout: Duration,
    /// Requests served on one connection before it is closed.
    pub max_requests: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_requests: 10_000,
        }
    }
}

/// Counters. Those bumped while segments are written are cells: the TCP stack fills
/// segments through `&self`.
#[derive(Debug, Default)]
pub struct WebStats {
    /// Requests parsed (including refused ones).
    pub requests: u64,
    /// Responses by status.
    pub status: std::collections::BTreeMap<u16, u64>,
    /// `200`s sent from packetised objects.
    pub prepared_responses: u64,
    /// Responses formatted per request (errors, 304, HEAD, 206, 301).
    pub formatted_responses: u64,
    /// Segments copied from a master with only the per-client fields rewritten.
    pub ready_segments: Cell<u64>,
    /// Segments built the ordinary way (payload copied and summed): formatted responses,
    /// peers with a smaller MSS or no timestamps, SACK blocks in the header.
    pub built_segments: Cell<u64>,
    /// Payload bytes of those.
    pub built_bytes: Cell<u64>,
    /// Connections closed for a request head that took too long (408).
    pub header_timeouts: u64,
    /// Idle connections closed.
    pub idle_timeouts: u64,
    /// Connections reset because the peer stopped taking data.
    pub send_timeouts: u64,
    /// Connections accepted.
    pub accepted: u64,
}

/// The web server's TCP application.
pub struct WebApp {
    /// Packetised objects.
    pub store: Store,
    /// Limits.
    pub settings: Settings,
    /// Counters.
    pub stats: WebStats,
    /// The engine's clock (set by the service before each call into TCP).
    pub now: Instant,
    replicas: Option<Replicas>,
    /// Stream mode (Atlas): bodies read from disk as the window opens.
    pub stream: Option<Streamer>,
    path: Vec<u8>,
    look: Vec<u8>,
    /// Response queues and scratch buffers of connections gone idle, lent to the next that
    /// asks: an idle keep-alive connection holds neither (issue 44: 1.3 KB each), and a busy
    /// one recycles them without allocating.
    spare: Spare,
}

/// See [`WebApp::equip`].
#[derive(Default)]
struct Spare {
    queues: Vec<VecDeque<Resp>>,
    scratch: Vec<Vec<u8>>,
}

/// Spare queues and buffers kept at most (more are freed): enough for the connections busy
/// at once in one engine's batch, bounded so a burst's do not stay.
const SPARE: usize = 1024;

/// Most request bytes held for a connection while a head is incomplete or waits its turn.
const MAX_PARTIAL: usize = http::request::MAX_HEAD + 4096;

/// Copies the part of a formatted head (at `at` in the scratch, `head` bytes) that falls in a
/// segment starting `pos` bytes into the response; returns how many bytes that was.
fn copy_head(c: &Conn, at: u32, head: u32, pos: u64, out: &mut [u8]) -> usize {
    let h = u64::from(head);
    if pos >= h {
        return 0;
    }
    let k = ((h - pos) as usize).min(out.len());
    let s = at as usize + pos as usize;
    out[..k].copy_from_slice(&c.scratch[s..s + k]);
    k
}

/// What a request's conditionals and range make of a file with `etag`, `mtime` and `len`:
/// None for 304 Not Modified (RFC 9110 §13.2.2: If-None-Match, else If-Modified-Since), else
/// the part to send (a range only for GET, and only if If-Range still holds).
fn choose(req: &Request<'_>, etag: &str, mtime: u64, len: u64) -> Option<Ranged> {
    let not_modified = match (req.if_none_match, req.if_modified_since) {
        (Some(v), _) => response::none_match(v, etag),
        (None, Some(v)) => http::date::parse(v).is_some_and(|t| mtime <= t),
        _ => false,
    };
    if not_modified {
        return None;
    }
    let if_range_ok = match req.if_range {
        None => true,
        Some(v) if v.first() == Some(&b'"') => v == etag.as_bytes(),
        Some(v) => http::date::parse(v) == Some(mtime),
    };
    Some(match req.range {
        Some(r) if req.method == Method::Get && if_range_ok => http::range::evaluate(r, len),
        _ => Ranged::Full,
    })
}

impl WebApp {
    /// A server for `store`.
    pub fn new(store: Store, settings: Settings) -> WebApp {
        WebApp {
            store,
            settings,
            stats: WebStats::default(),
            now: Instant::ZERO,
            replicas: None,
            stream: None,
            path: Vec::new(),
            look: Vec::new(),
            spare: Spare::default(),
        }
    }

    /// Stream mode: response bodies come from disk through `s`, not from packetised objects.
    pub fn streaming(mut self, s: Streamer) -> WebApp {
        self.stream = Some(s);
        self
    }

    /// Serves prepared segments from replicas in at most `frames` pinned frames of the TX
    /// arena (pre-copy mode) instead of copying each from its master (memcpy mode).
    pub fn precopy(mut self, frames: usize) -> WebApp {
        self.replicas = Some(Replicas::new(frames));
        self
    }

    /// Lends `c` a response queue and a scratch buffer if it holds none.
    fn equip(&mut self, c: &mut Conn) {
        if c.resps.capacity() == 0 {
            c.resps = self.spare.queues.pop().unwrap_or_else(|| VecDeque::with_capacity(MAX_QUEUED));
        }
        if c.scratch.capacity() == 0 {
            c.scratch = self.spare.scratch.pop().unwrap_or_default();
        }
    }

    /// Takes back what [`WebApp::equip`] lent once `c` has nothing queued.
    fn unequip(&mut self, c: &mut Conn) {
        if !c.resps.is_empty() {
            return;
        }
        if c.resps.capacity() > 0 {
            let q = std::mem::take(&mut c.resps);
            if self.spare.queues.len() < SPARE {
                self.spare.queues.push(q);
            }
        }
        if c.scratch.capacity() > 0 {
            let mut b = std::mem::take(&mut c.scratch);
            // A buffer grown by a burst of pipelined errors is not kept.
            if self.spare.scratch.len() < SPARE && b.capacity() <= 4096 {
                b.clear();
                self.spare.scratch.push(b);
            }
        }
        if c.partial.is_empty() {
            c.partial = Vec::new();
        }
    }

    fn count(&mut self, status: u16) {
        *self.stats.status.entry(status).or_insert(0) += 1;
    }

    /// Queues a formatted response: `head` then, unless `head_only`, the error page.
    fn formatted(&mut self, c: &mut Conn, mut head: Head<'_>, body: bool, head_only: bool) {
        self.equip(c);
        let at = c.scratch.len();
        let mut page = Vec::new();
        if body {
            response::error_body(head.status, &mut page);
            head.content_type = Some("text/html");
            head.content_length = page.len() as u64;
        }
        head.write(&mut c.scratch);
        if !head_only {
            c.scratch.extend_from_slice(&page);
        }
        let len = (c.scratch.len() - at) as u64;
        c.push(len, Body::Bytes { at: at as u32 });
        self.stats.formatted_responses += 1;
        self.count(head.status);
    }

    fn error(&mut self, c: &mut Conn, status: u16, keep: bool, head_only: bool) {
        let mut h = Head::new(status, self.store.date(), keep);
        h.allow = status == 405;
        self.formatted(c, h, true, head_only);
    }

    /// Answers one parsed request; the connection closes after it unless both sides keep it.
    fn respond(&mut self, c: &mut Conn, req: &Request<'_>) {
        c.requests += 1;
        let keep = req.keep_alive && c.requests < self.settings.max_requests;
        self.answer(c, req, keep);
        if !keep {
            c.closing = true;
        }
    }

    fn answer(&mut self, c: &mut Conn, req: &Request<'_>, keep: bool) {
        let head_only = req.method == Method::Head;
        if req.method == Method::Other {
            return self.error(c, 405, keep, false);
        }
        let dir = match http::path::decode(req.target, &mut self.path) {
            Ok(d) => d,
            Err(_) => return self.error(c, 400, false, head_only),
        };
        // Borrow the fields apart: no Arc clone or String copy per request.
        let WebApp { store, path, look, .. } = self;
        let file = match store.site().lookup(path, dir, look) {
            Lookup::File(f) => f,
            Lookup::NotFound => return self.error(c, 404, keep, head_only),
            Lookup::Forbidden => return self.error(c, 403, keep, head_only),
            Lookup::Redirect => {
                let mut loc = http::path::path_part(req.target).unwrap_or(b"/").to_vec();
                loc.push(b'/');
                let mut h = Head::new(301, self.store.date(), keep);
                h.location = Some(&loc);
                return self.formatted(c, h, true, head_only);
            }
        };
        if self.stream.is_some() {
            return self.answer_from_disk(c, req, keep, file);
        }
        let Some(slot) = self.store.get(file) else {
            return self.error(c, 404, keep, head_only);
        };
        let o = self.store.obj(slot);
        let (mtime, len) = (o.mtime, o.body_len);
        let date = self.store.date();
        let Some(ranged) = choose(req, &o.etag, mtime, len) else {
            let etag = o.etag.clone();
            self.store.put(slot);
            let mut h = Head::new(304, date, keep);
            h.last_modified = Some(mtime);
            h.etag = Some(&etag);
            return self.formatted(c, h, false, true);
        };
        match ranged {
            Ranged::Unsatisfiable => {
                self.store.put(slot);
                let mut h = Head::new(416, date, keep);
                h.content_range = Some(ContentRange::Unsatisfied(len));
                self.formatted(c, h, true, false);
            }
            Ranged::Part { first, last } => {
                let etag = self.store.obj(slot).etag.clone();
                let mut h = Head::new(206, date, keep);
                h.content_type = Some(self.store.obj(slot).content_type);
                h.content_length = last - first + 1;
                h.last_modified = Some(mtime);
                h.etag = Some(&etag);
                h.content_range = Some(ContentRange::Part { first, last, total: len });
                let at = c.scratch.len();
                h.write(&mut c.scratch);
                let head = (c.scratch.len() - at) as u32;
                c.push(u64::from(head) + last - first + 1, Body::Range { obj: slot, at: at as u32, head, from: first });
                self.stats.formatted_responses += 1;
                self.count(206);
            }
            Ranged::Full if head_only => {
                let at = c.scratch.len();
                self.store.obj(slot).head(date, !keep, &mut c.scratch);
                self.store.put(slot);
                c.push((c.scratch.len() - at) as u64, Body::Bytes { at: at as u32 });
                self.stats.formatted_responses += 1;
                self.count(200);
            }
            Ranged::Full => {
                let total = self.store.obj(slot).total();
                c.push(total, Body::Ready { obj: slot, close: !keep, date });
                self.stats.prepared_responses += 1;
                self.count(200);
            }
        }
    }

    /// Stream mode: the connection has file bytes to read; the service looks at it.
    fn want_read(&mut self, h: Handle, c: &Conn) {
        if let Some(st) = self.stream.as_mut() {
            if c.wants_read() {
                st.wanted.push(h);
            }
        }
    }

    /// Stream mode's answer for a file: the same conditionals, ranges and heads as from
    /// packetised objects, with the body read from disk as the window opens.
    fn answer_from_disk(&mut self, c: &mut Conn, req: &Request<'_>, keep: bool, file: u32) {
        let head_only = req.method == Method::Head;
        let site = self.store.site().clone();
        let f = &site.files[file as usize];
        let (mtime, len, date) = (f.mtime, f.size, self.store.date());
        let Some(ranged) = choose(req, &f.etag, mtime, len) else {
            let mut h = Head::new(304, date, keep);
            h.last_modified = Some(mtime);
            h.etag = Some(&f.etag);
            return self.formatted(c, h, false, true);
        };
        let (status, first, n) = match ranged {
            Ranged::Unsatisfiable => {
                let mut h = Head::new(416, date, keep);
                h.content_range = Some(ContentRange::Unsatisfied(len));
                return self.formatted(c, h, true, false);
            }
            Ranged::Part { first, last } => (206, first, last - first + 1),
            Ranged::Full => (200, 0, len),
        };
        let mut h = Head::new(status, date, keep);
        h.content_type = Some(f.content_type);
        h.content_length = n;
        h.last_modified = Some(mtime);
        h.etag = Some(&f.etag);
        h.accept_ranges = status == 200;
        if status == 206 {
            h.content_range = Some(ContentRange::Part { first, last: first + n - 1, total: len });
        }
        let at = c.scratch.len();
        h.write(&mut c.scratch);
        let head = (c.scratch.len() - at) as u32;
        self.stats.formatted_responses += 1;
        self.count(status);
        if head_only || n == 0 {
            c.push(u64::from(head), Body::Bytes { at: at as u32 });
            return;
        }
        let st = self.stream.as_mut().expect("stream mode");
        let opened = match &f.source {
            Some(path) => st.open(path).map_err(|e| e.to_string()),
            None => Err("built-in content has no file".to_string()),
        };
        let Ok(fid) = opened else {
            // Gone or unreadable since the tree was loaded: the head is not sent yet.
            c.scratch.truncate(at);
            self.stats.formatted_responses -= 1;
            *self.stats.status.get_mut(&status).expect("just counted") -= 1;
            return self.error(c, 404, keep, false);
        };
        let start = c.end + u64::from(head);
        c.push(u64::from(head) + n, Body::Disk { at: at as u32, head, file: fid });
        c.streaming().fetch.push(Span { start, len: n, file: fid, file_off: first });
    }

    /// Answers the complete requests at the start of `buf`; returns the bytes used.
    fn serve(&mut self, c: &mut Conn, buf: &[u8]) -> usize {
        self.equip(c);
        let mut used = 0;
        while !c.closing && c.resps.len() < MAX_QUEUED {
            let rest = &buf[used..];
            if c.skip > 0 {
                let n = c.skip.min(rest.len() as u64);
                c.skip -= n;
                used += n as usize;
                if c.skip > 0 {
                    break;
                }
                continue;
            }
            if rest.is_empty() {
                break;
            }
            match http::parse(rest) {
                Ok(Parsed::Partial) => break,
                Ok(Parsed::Complete(req)) => {
                    self.stats.requests += 1;
                    used += req.head_len;
                    c.skip = req.body_len;
                    self.respond(c, &req);
                }
                Err(rej) => {
                    self.stats.requests += 1;
                    self.error(c, rej.status(), false, false);
                    c.closing = true;
                    used = buf.len();
                }
            }
        }
        used
    }

    /// Takes request bytes; answers what is complete and keeps the rest.
    pub fn take(&mut self, c: &mut Conn, data: &[u8]) {
        if c.closing {
            return; // after a final response nothing more is read
        }
        let was_partial = !c.partial.is_empty();
        if c.partial.is_empty() {
            let used = self.serve(c, data);
            if !c.closing {
                c.partial.extend_from_slice(&data[used..]);
            }
        } else {
            c.partial.extend_from_slice(data);
            self.serve_partial(c);
        }
        if c.partial.len() > MAX_PARTIAL && !c.closing {
            // Only reachable when responses are not being taken while requests keep coming.
            c.partial.clear();
            self.error(c, 431, false, false);
            c.closing = true;
        }
        if c.closing {
            c.partial = Vec::new();
        }
        if !c.partial.is_empty() && !was_partial && c.resps.is_empty() {
            c.deadline = self.now + self.settings.header_timeout;
        } else if c.partial.is_empty() {
            c.deadline = self.now + self.settings.idle_timeout;
        }
    }

    fn serve_partial(&mut self, c: &mut Conn) {
        let p = std::mem::take(&mut c.partial);
        let used = self.serve(c, &p);
        c.partial = p;
        c.partial.drain(..used.min(c.partial.len()));
    }

    /// A connection past its deadline: 408 and close if a head is incomplete, close if idle,
    /// reset if the peer stopped taking data. Returns true to reset.
    pub fn expire(&mut self, c: &mut Conn) -> Option<bool> {
        if self.now < c.deadline {
            return None;
        }
        if c.resps.is_empty() && !c.closing {
            if c.partial.is_empty() {
                self.stats.idle_timeouts += 1;
            } else {
                self.stats.header_timeouts += 1;
                c.partial = Vec::new();
                self.error(c, 408, false, false);
            }
            c.closing = true;
            c.deadline = self.now + self.settings.idle_timeout;
            return Some(false);
        }
        self.stats.send_timeouts += 1;
        Some(true)
    }

    /// Ends a connection outside TCP (the fuzz target): its responses' objects are given back.
    pub fn closed_for_fuzz(&mut self, mut c: Conn) {
        self.release_all(&mut c);
    }

    fn release_all(&mut self, c: &mut Conn) {
        for r in c.resps.drain(..) {
            self.release(r.body);
        }
        self.unequip(c);
        if let (Some(st), Some(s)) = (self.stream.as_mut(), c.streaming.as_mut()) {
            s.fetch.release(&mut |b| st.retire(b));
        }
    }

    /// What a response held (a store object, an open file) goes back.
    fn release(&mut self, body: Body) {
        match body {
            Body::Ready { obj, .. } | Body::Range { obj, .. } => self.store.put(obj),
            Body::Disk { file, .. } => {
                if let Some(st) = self.stream.as_mut() {
                    st.release(file);
                }
            }
            Body::Bytes { .. } => {}
        }
    }
}

impl WebApp {
    /// The prepared segment `seg` is exactly, if any: (object slot, segment index, head
    /// variant). None for formatted responses, other header layouts (SACK blocks, no
    /// timestamps), a cut that does not match (a smaller MSS), or a head for another date.
    #[inline]
    fn ready(&self, c: &Conn, seg: &SegOut) -> Option<(u32, u64, bool)> {
        if !segment::fits(&seg.repr) {
            return None;
        }
        let r = c.find(seg.data_off)?;
        let Body::Ready { obj, close, date } = r.body else {
            return None;
        };
        let o = self.store.obj(obj);
        let pos = seg.data_off - r.start;
        let p = u64::from(self.store.payload());
        let k = pos / p;
        if !pos.is_multiple_of(p) || o.seg_len(k) as usize != seg.repr.payload_len || (k == 0 && date != o.head_date())
        {
            return None;
        }
        Some((obj, k, close))
    }

    /// Pre-copy mode's replicas, if on.
    pub fn replicas(&self) -> Option<&Replicas> {
        self.replicas.as_ref()
    }

    /// Takes pinned frames back from the engine and gives up those no longer needed.
    pub fn tend_replicas(&mut self, out: &mut dyn engine::Originate) {
        let Some(reps) = self.replicas.as_mut() else {
            return;
        };
        let store = &mut self.store;
        out.returned(&mut |f| reps.back(store, f));
        store.drain_dropped(&mut |slot| reps.forget(slot));
        reps.drain_unpins(&mut |f| out.unpin(f));
    }
}

impl tcp::App for WebApp {
    type Conn = Conn;

    fn accept(&mut self, _h: Handle, _port: u16, _remote: (IpAddr, u16)) -> Option<Conn> {
        self.stats.accepted += 1;
        Some(Conn::new(self.now + self.settings.header_timeout))
    }

    fn opened(&mut self, _h: Handle, c: &mut Conn, ctl: &mut Ctl) {
        ctl.wake_at(c.deadline);
    }

    fn recv(&mut self, h: Handle, c: &mut Conn, data: &[u8], ctl: &mut Ctl) {
        ctl.recv_done(data.len() as u32);
        let closing = c.closing;
        self.take(c, data);
        self.want_read(h, c);
        if c.closing && !closing {
            ctl.close();
        }
        // A request begun moves the deadline earlier (the header timeout); a later one is
        // met lazily: the wake-up finds it not due and asks again.
        ctl.wake_at(c.deadline);
    }

    /// A connection's deadline may have come (each asks to be woken at its own: nothing
    /// sweeps the connections, which cost a scan of every one twice a second).
    fn woken(&mut self, _h: Handle, c: &mut Conn, ctl: &mut Ctl) {
        match self.expire(c) {
            None => {}
            // A 408 may have been queued: under TLS it is sealed, then close_notify.
            Some(false) => ctl.close(),
            Some(true) => return ctl.abort(),
        }
        ctl.wake_at(c.deadline);
    }

    fn sent(&mut self, h: Handle, c: &mut Conn, acked: u64, ctl: &mut Ctl) {
        if let (Some(st), Some(s)) = (self.stream.as_mut(), c.streaming.as_mut()) {
            s.fetch.acked(acked, &mut |b| st.retire(b));
        }
        // The window moved: more may be read.
        self.want_read(h, c);
        if !c.resps.is_empty() {
            // The peer is taking data: a long response (a video, a disk image) is not a
            // stalled one, however long it takes.
            c.deadline = self.now + self.settings.idle_timeout;
        }
        let mut released = false;
        while let Some(r) = c.resps.front() {
            if r.start + r.len > acked {
                break;
            }
            let body = r.body;
            self.release(body);
            c.resps.pop_front();
            released = true;
        }
        if !released {
            return;
        }
        c.compact_scratch();
        self.unequip(c);
        if c.partial.is_empty() {
            c.deadline = self.now + self.settings.idle_timeout;
        } else if !c.closing {
            // Requests that waited for room in the queue.
            let closing = c.closing;
            self.serve_partial(c);
            if c.closing && !closing {
                ctl.close();
            }
        }
    }

    fn peer_closed(&mut self, _h: Handle, c: &mut Conn, ctl: &mut Ctl) {
        // Answer what was asked, then finish (a client may half-close after its requests).
        c.closing = true;
        c.partial = Vec::new();
        ctl.close();
    }

    fn closed(&mut self, _h: Handle, mut c: Conn, _end: End) {
        self.release_all(&mut c);
    }

    fn fill(&self, c: &Conn, off: u64, dst: &mut [u8]) {
        self.stats.built_segments.set(self.stats.built_segments.get() + 1);
        self.stats.built_bytes.set(self.stats.built_bytes.get() + dst.len() as u64);
        let mut done = 0;
        for r in c.at(off) {
            if done == dst.len() {
                break;
            }
            let pos = off + done as u64 - r.start;
            let n = ((r.len - pos) as usize).min(dst.len() - done);
            let out = &mut dst[done..done + n];
            match r.body {
                Body::Ready { obj, close, date } => self.store.obj(obj).fill(pos, out, close, date),
                Body::Bytes { at } => {
                    let s = at as usize + pos as usize;
                    out.copy_from_slice(&c.scratch[s..s + n]);
                }
                Body::Disk { at, head, .. } => {
                    let i = copy_head(c, at, head, pos, out);
                    if let (true, Some(s)) = (i < n, c.streaming.as_ref()) {
                        let pool = self.stream.as_ref().expect("stream mode").port.pool_ref();
                        s.fetch.copy(pool, off + (done + i) as u64, &mut out[i..]);
                    }
                }
                Body::Range { obj, at, head, from } => {
                    let i = copy_head(c, at, head, pos, out);
                    if i < n {
                        let b = pos + i as u64 - u64::from(head);
                        self.store.obj(obj).fill_body(from + b, &mut out[i..]);
                    }
                }
            }
            done += n;
        }
    }

    fn starved(&mut self, h: Handle, c: &mut Conn, off: u64) {
        if let Some(st) = self.stream.as_mut() {
            if c.streaming.as_mut().is_some_and(|s| s.fetch.starved(off)) {
                st.wanted.push(h);
            }
        }
    }

    fn placed(&self, c: &Conn, off: u64, max: u32) -> tcp::Placed {
        use tcp::Placed;
        let (Some(st), Some(r)) = (self.stream.as_ref(), c.find(off)) else {
            return Placed::Copy { len: max };
        };
        let pos = off - r.start;
        let left = (r.len - pos).min(u64::from(max)) as u32;
        match r.body {
            Body::Disk { head, .. } if pos >= u64::from(head) => {
                match c.streaming.as_ref().and_then(|s| s.fetch.placed(st.port.pool_ref(), off)) {
                    Some((addr, n)) => Placed::Arena { addr, len: n.min(left) },
                    None => Placed::Copy { len: left },
                }
            }
            Body::Disk { head, .. } => Placed::Copy { len: (u64::from(head) - pos).min(u64::from(left)) as u32 },
            _ => Placed::Copy { len: left },
        }
    }

    fn seg_limit(&self, c: &Conn, off: u64) -> u32 {
        let Some(r) = c.find(off) else {
            return u32::MAX;
        };
        let pos = off - r.start;
        let left = r.len - pos;
        let lim = match r.body {
            Body::Ready { .. } => {
                let p = u64::from(self.store.payload());
                p - pos % p
            }
            // The head, then what has been read from disk (0 while a read is under way).
            Body::Disk { head, .. } if pos < u64::from(head) => {
                u64::from(head) - pos + c.held_at(r.start + u64::from(head))
            }
            Body::Disk { .. } => c.held_at(off),
            _ => left,
        };
        lim.min(left).min(u64::from(u32::MAX)) as u32
    }

    fn write_ready(&self, c: &Conn, seg: &SegOut, local: IpAddr, remote: IpAddr, buf: &mut [u8]) -> bool {
        let Some((obj, k, close)) = self.ready(c, seg) else {
            return false;
        };
        segment::write(self.store.obj(obj).master(k, close), &seg.repr, local, remote, buf);
        self.stats.ready_segments.set(self.stats.ready_segments.get() + 1);
        true
    }

    fn send_replica(
        &mut self,
        c: &Conn,
        seg: &SegOut,
        local: IpAddr,
        remote: IpAddr,
        arena: &mut dyn PinnedFrames,
    ) -> bool {
        if self.replicas.is_none() {
            return false;
        }
        let Some((obj, k, close)) = self.ready(c, seg) else {
            return false;
        };
        let reps = self.replicas.as_mut().expect("checked");
        let Some(frame) = reps.take(&self.store, (obj, k, close), remote.is_ipv6(), arena) else {
            return false;
        };
        let repr = &seg.repr;
        arena
            .send(remote, frame, segment::HEADER + repr.payload_len, &mut |s| segment::rewrite(s, repr, local, remote));
        self.stats.ready_segments.set(self.stats.ready_segments.get() + 1);
        true
    }
}
