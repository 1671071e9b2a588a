//! TLS as a layer between TCP and any level-1 application: [`Tls`] wraps an application,
//! accepts TLS on one port and passes the others through untouched. The application sees
//! plaintext offsets and never knows; its `seg_limit` still says which of its bytes it holds
//! (a record is sent only once all of its plaintext is there), and `sent` reports only
//! plaintext whose records were acknowledged whole, since a record is resent whole.

use crate::config::TlsConfig;
use crate::record::OVERHEAD;
use crate::session::{Failure, Poll, Session};
use std::cell::Cell;
use tcp::{App, Ctl, End, Handle, PinnedFrames, SegOut, Source};

/// A connection: the application's state, and the TLS session if it came in on the TLS port.
pub struct Conn<C> {
    /// The application's connection state.
    pub inner: C,
    /// The TLS session (None for a plain connection).
    pub tls: Option<Box<Session>>,
}

impl<C: Source> Conn<C> {
    /// What the windows allow, in the application's offsets: from the acknowledged `acked`
    /// to `acked + window` of the stream becomes (plaintext acknowledged, plaintext to hold
    /// from there) — under TLS rounded up to whole records, since a record is sent only
    /// once all of its plaintext is at hand.
    pub fn plain_window(&self, acked: u64, window: u64) -> (u64, u64) {
        match &self.tls {
            Some(s) => {
                let from = s.layout.plain_acked(acked);
                (from, s.layout.plain_reach(acked + window).saturating_sub(from))
            }
            None => (acked, window),
        }
    }

    /// The application-stream offset below which every byte was sent in a whole record,
    /// given the stream offset `sent` TCP has sent up to.
    pub fn plain_sent(&self, sent: u64) -> u64 {
        match &self.tls {
            Some(s) => s.layout.plain_acked(sent),
            None => sent,
        }
    }

    /// The application closes outside a TCP callback (a timeout answer): lays what it queued,
    /// then close_notify.
    /// Call before [`tcp::Endpoint::close`].
    pub fn close(&mut self) {
        let Conn { inner, tls } = self;
        if let Some(s) = tls.as_mut() {
            s.close(inner.end(), &|p| inner.boundary(p));
        }
    }
}

impl<C: Source> Source for Conn<C> {
    fn end(&self) -> u64 {
        match &self.tls {
            Some(s) => s.layout.end(),
            None => self.inner.end(),
        }
    }
    fn fill(&self, off: u64, dst: &mut [u8]) {
        match &self.tls {
            None => self.inner.fill(off, dst),
            // The wrapper's `App::fill` does this with the application's own fill.
            Some(_) => dst.fill(0),
        }
    }
    fn release(&mut self, off: u64) {
        match self.tls.as_mut() {
            None => self.inner.release(off),
            Some(s) => {
                let p = s.layout.plain_acked(off);
                self.inner.release(p);
            }
        }
    }
}

/// Counters.
#[derive(Debug, Default)]
pub struct TlsStats {
    /// Connections accepted on the TLS port.
    pub accepted: u64,
    /// Handshakes completed.
    pub handshakes: u64,
    /// Handshakes that failed (garbage, plain HTTP, no shared suite or protocol …).
    pub handshake_failures: u64,
    /// Connections ended for a record that did not open or broke the protocol.
    pub record_errors: u64,
    /// Fatal alerts received from peers.
    pub peer_alerts: u64,
    /// close_notify received.
    pub close_notify_in: u64,
    /// KeyUpdates received.
    pub key_updates: u64,
    /// Records sealed as they were sent (in the segment when one holds a record, else into
    /// the connection's record buffer; a retransmission may seal a record again).
    pub records_sealed: Cell<u64>,
    /// Records sealed in place in the application's buffer when its read completed (stream
    /// mode), sent from there as they are, retransmissions included.
    pub records_in_place: u64,
    /// The last handshake failure's reason (for logs).
    pub last_failure: String,
}

/// Where and how a server takes TLS.
#[derive(Debug, Clone)]
pub struct Listener {
    /// Certificate, key and handshake settings.
    pub config: TlsConfig,
    /// The port whose connections are TLS.
    pub port: u16,
    /// Full segments one record fills (1 to 11; see [`Tls::new`]).
    pub record_segments: usize,
}

/// The TLS layer around application `A`.
pub struct Tls<A: App> {
    /// The application.
    pub app: A,
    config: Option<(TlsConfig, u16)>,
    record: usize,
    /// Counters.
    pub stats: TlsStats,
}

impl<A: App> Tls<A> {
    /// Whether connections on a TLS port are TLS (a listener was given).
    pub fn enabled(&self) -> bool {
        self.config.is_some()
    }

    /// `app` with TLS as `listener` says (None: every connection is plain), in records
    /// that fill `record_segments` full segments of `segment` payload bytes each (at most 16 KiB of
    /// content). One segment per record seals each record in place in its TX frame but costs
    /// the client a record (and, with OpenSSL, two reads) per 1.4 KB; 11 segments make records
    /// of about 16 KB, as nginx sends, each sealed once and copied into its segments.
    pub fn new(app: A, listener: Option<Listener>, segment: usize) -> Tls<A> {
        let segments = listener.as_ref().map_or(1, |l| l.record_segments.max(1));
        let record = (segment * segments).saturating_sub(OVERHEAD).clamp(64, crate::record::MAX_PLAIN);
        let config = listener.map(|l| (l.config, l.port));
        Tls { app, config, record, stats: TlsStats::default() }
    }

    /// Applies what the application asked in `inner` to the TLS connection: a close lays
    /// close_notify after its bytes.
    fn forward(c: &mut Conn<A::Conn>, inner: Ctl, ctl: &mut Ctl) {
        if let Some(w) = inner.wants_wake() {
            ctl.wake_at(w);
        }
        if inner.wants_abort() {
            ctl.abort();
            return;
        }
        let Conn { inner: app, tls } = c;
        let boundary = |p| app.boundary(p);
        match tls.as_mut() {
            Some(s) if inner.wants_close() => {
                s.close(app.end(), &boundary);
                ctl.close();
            }
            Some(s) => s.sync(app.end(), &boundary),
            None if inner.wants_close() => ctl.close(),
            None => {}
        }
    }

    /// Runs the session over what the peer sent, handing application data to the app.
    fn pump(&mut self, h: Handle, c: &mut Conn<A::Conn>, ctl: &mut Ctl) {
        // Bounded: each Data or Established consumes input; the rest return.
        for _ in 0..100_000 {
            let Conn { inner: app, tls } = &mut *c;
            let s = tls.as_mut().expect("TLS connection");
            let boundary = |p| app.boundary(p);
            match s.poll(app.end(), &boundary) {
                Poll::Idle => return,
                Poll::Established => {
                    self.stats.handshakes += 1;
                    s.sync(app.end(), &boundary);
                }
                Poll::Data(range) => {
                    let mut inner = Ctl::default();
                    {
                        let s = c.tls.as_ref().expect("TLS connection");
                        self.app.recv(h, &mut c.inner, &s.input()[range], &mut inner);
                    }
                    c.tls.as_mut().expect("TLS connection").consumed();
                    Self::forward(c, inner, ctl);
                    if inner.wants_abort() {
                        return;
                    }
                }
                Poll::PeerClosed => {
                    self.stats.close_notify_in += 1;
                    let mut inner = Ctl::default();
                    self.app.peer_closed(h, &mut c.inner, &mut inner);
                    Self::forward(c, inner, ctl);
                    return;
                }
                Poll::Failed(f) => {
                    match f {
                        Failure::Handshake(why) => {
                            self.stats.handshake_failures += 1;
                            self.stats.last_failure = why;
                        }
                        Failure::Record(_) => self.stats.record_errors += 1,
                        Failure::PeerAlert(_) => self.stats.peer_alerts += 1,
                    }
                    ctl.close();
                    return;
                }
            }
        }
    }
}

impl<A: App> App for Tls<A> {
    type Conn = Conn<A::Conn>;

    fn accept(&mut self, h: Handle, local_port: u16, remote: (wire::IpAddr, u16)) -> Option<Self::Conn> {
        let tls = match &self.config {
            Some((cfg, port)) if *port == local_port => {
                self.stats.accepted += 1;
                Some(Box::new(Session::new(cfg, self.record).ok()?))
            }
            _ => None,
        };
        let inner = self.app.accept(h, local_port, remote)?;
        Some(Conn { inner, tls })
    }

    fn opened(&mut self, h: Handle, c: &mut Self::Conn, ctl: &mut Ctl) {
        let mut inner = Ctl::default();
        self.app.opened(h, &mut c.inner, &mut inner);
        if c.tls.is_none() {
            *ctl = inner;
            return;
        }
        Self::forward(c, inner, ctl);
    }

    fn connected(&mut self, h: Handle, c: &mut Self::Conn, ctl: &mut Ctl) {
        self.app.connected(h, &mut c.inner, ctl);
    }

    fn recv(&mut self, h: Handle, c: &mut Self::Conn, data: &[u8], ctl: &mut Ctl) {
        let Some(s) = c.tls.as_mut() else {
            return self.app.recv(h, &mut c.inner, data, ctl);
        };
        // The session copies what it is given: the window reopens at once.
        ctl.recv_done(data.len() as u32);
        if s.closed() {
            return;
        }
        s.push(data);
        self.pump(h, c, ctl);
        // Counted as they come, so a connection still open at the report shows its updates.
        if let Some(s) = c.tls.as_mut() {
            self.stats.key_updates += std::mem::take(&mut s.events.key_updates_in);
        }
    }

    fn sent(&mut self, h: Handle, c: &mut Self::Conn, acked: u64, ctl: &mut Ctl) {
        let Some(s) = c.tls.as_mut() else {
            return self.app.sent(h, &mut c.inner, acked, ctl);
        };
        let plain = s.acked(acked);
        let mut inner = Ctl::default();
        self.app.sent(h, &mut c.inner, plain, &mut inner);
        Self::forward(c, inner, ctl);
    }

    fn woken(&mut self, h: Handle, c: &mut Self::Conn, ctl: &mut Ctl) {
        if c.tls.is_none() {
            return self.app.woken(h, &mut c.inner, ctl);
        }
        let mut inner = Ctl::default();
        self.app.woken(h, &mut c.inner, &mut inner);
        Self::forward(c, inner, ctl);
    }

    fn peer_closed(&mut self, h: Handle, c: &mut Self::Conn, ctl: &mut Ctl) {
        if c.tls.is_none() {
            return self.app.peer_closed(h, &mut c.inner, ctl);
        }
        let mut inner = Ctl::default();
        self.app.peer_closed(h, &mut c.inner, &mut inner);
        Self::forward(c, inner, ctl);
    }

    fn closed(&mut self, h: Handle, c: Self::Conn, end: End) {
        self.app.closed(h, c.inner, end);
    }

    fn fill(&self, c: &Self::Conn, off: u64, dst: &mut [u8]) {
        match &c.tls {
            None => self.app.fill(&c.inner, off, dst),
            Some(s) => {
                let n = s.fill(off, dst, &|p, d| self.app.fill(&c.inner, p, d));
                let r = &self.stats.records_sealed;
                r.set(r.get() + u64::from(n));
            }
        }
    }

    fn starved(&mut self, h: Handle, c: &mut Self::Conn, off: u64) {
        match &c.tls {
            None => self.app.starved(h, &mut c.inner, off),
            Some(s) => {
                if let Some(p) = s.plain_at(off) {
                    self.app.starved(h, &mut c.inner, p);
                }
            }
        }
    }

    fn placed(&self, c: &Self::Conn, off: u64, max: u32) -> tcp::Placed {
        match &c.tls {
            None => self.app.placed(&c.inner, off, max),
            Some(s) => s.placed(off, max, &|p, n| self.app.placed(&c.inner, p, n)),
        }
    }

    fn seg_limit(&self, c: &Self::Conn, off: u64) -> u32 {
        match &c.tls {
            None => self.app.seg_limit(&c.inner, off),
            Some(s) => s.seg_limit(off, &|p| self.app.seg_limit(&c.inner, p)),
        }
    }

    fn write_ready(
        &self,
        c: &Self::Conn,
        seg: &SegOut,
        local: wire::IpAddr,
        remote: wire::IpAddr,
        buf: &mut [u8],
    ) -> bool {
        // Prepared segments are plaintext: TLS connections always seal their own.
        c.tls.is_none() && self.app.write_ready(&c.inner, seg, local, remote, buf)
    }

    fn send_replica(
        &mut self,
        c: &Self::Conn,
        seg: &SegOut,
        local: wire::IpAddr,
        remote: wire::IpAddr,
        r: &mut dyn PinnedFrames,
    ) -> bool {
        c.tls.is_none() && self.app.send_replica(&c.inner, seg, local, remote, r)
    }
}
