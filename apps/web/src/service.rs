//! The web server on an engine: TCP with the HTTP application, plus what runs beside the
//! packets — the date (read from the wall clock at most every 100 ms, so heads are refreshed
//! once a second), the switch to a reloaded site, and a sweep for connections past their
//! deadlines.

use crate::fetch::Wait;
use crate::server::{Settings, WebApp};
use crate::site::Site;
use crate::store::Store;
use crate::streamer;
use engine::published::Follower;
use engine::{Originate, Service, TcpService};
use std::time::{SystemTime, UNIX_EPOCH};
use tcp::{Config, Duration, Instant, Limits};
use tls::{Listener, Tls};
use wire::tcp::TcpRepr;
use wire::IpAddr;

fn wall_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// How often the wall clock is read.
const CLOCK: Duration = Duration::from_millis(100);

/// The web server of one engine.
pub struct WebService {
    /// TCP and the HTTP application, with TLS on the TLS port if configured.
    pub tcp: TcpService<Tls<WebApp>>,
    site: Follower<Site>,
    last_clock: Instant,
    /// Sites switched to after a reload.
    pub reloads: u64,
}

impl WebService {
    /// A server on `port` for the site `site` follows, packetised for segments of `cfg.mss` less the
    /// timestamp option, at most `cache_bytes` of packetised objects; with `precopy`, sent
    /// from replicas in at most that many pinned frames; HTTPS too with `tls` (its
    /// configuration, port and record size in segments).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        site: Follower<Site>,
        port: u16,
        cfg: Config,
        limits: Limits,
        settings: Settings,
        cache_bytes: u64,
        precopy: Option<usize>,
        tls: Option<Listener>,
    ) -> Self {
        let segment = u32::from(cfg.mss) - 12;
        let mut store = Store::new(site.get().clone(), segment, cache_bytes, wall_secs());
        store.preload();
        let mut app = WebApp::new(store, settings);
        if let Some(frames) = precopy {
            app = app.precopy(frames);
        }
        let mut ports = vec![port];
        ports.extend(tls.as_ref().map(|t| t.port));
        WebService {
            tcp: TcpService::new(Tls::new(app, tls, segment as usize), &ports, cfg, limits),
            site,
            last_clock: Instant::ZERO,
            reloads: 0,
        }
    }

    /// What an idle connection holds in an engine sized for it
    /// ([`tcp::Endpoint::bytes_per_connection`]), to size `max_conns` from memory.
    pub fn bytes_per_connection() -> usize {
        tcp::Endpoint::<Tls<WebApp>>::bytes_per_connection()
    }

    /// Stream mode (Atlas): response bodies are read from disk through `s` as each
    /// connection's window opens. Make the service with a cache of 0 bytes: nothing is
    /// packetised in this mode.
    pub fn streaming(mut self, s: crate::streamer::Streamer) -> Self {
        self.tcp.app.app.stream = Some(s);
        self
    }

    /// The HTTP application.
    pub fn app(&self) -> &WebApp {
        &self.tcp.app.app
    }

    /// Whether HTTPS is served.
    pub fn tls_on(&self) -> bool {
        self.tcp.app.enabled()
    }

    /// The lines engine `q` prints when it stops, from the samples its metrics publish.
    pub fn exit_lines(&self, q: usize) -> Vec<String> {
        let mut s = engine::Samples::default();
        engine::Service::metrics(self, &mut s);
        let failure = if self.tls_on() { self.tls_stats().last_failure.as_str() } else { "" };
        crate::report::exit_lines(q, &s, failure)
    }

    /// The TLS layer's counters.
    pub fn tls_stats(&self) -> &tls::TlsStats {
        &self.tcp.app.stats
    }

    fn housekeeping(&mut self, now: Instant) {
        if now >= self.last_clock + CLOCK {
            self.last_clock = now;
            let app = &mut self.tcp.app.app;
            app.store.set_date(wall_secs());
            if self.site.refresh() {
                app.store.replace_site(self.site.get().clone());
                app.store.preload();
                self.reloads += 1;
            }
        }
    }
}

impl WebService {
    /// Stream mode, once per loop iteration: completed reads go to their connections (which
    /// are kicked to send), connections whose window opened get their next read, and what was
    /// queued goes to the kernel in one call.
    fn stream(&mut self, out: &dyn Originate) {
        let (ep, tls) = (&mut self.tcp.ep, &mut self.tcp.app);
        let Some(st) = tls.app.stream.as_mut() else { return };
        st.tend(&|addr, len| out.region_busy(addr, len));
        let mut done = std::mem::take(&mut st.done);
        // Connections whose read failed are reset once the streamer is let go.
        let mut failed = Vec::new();
        st.port.reap(|c| done.push(c));
        for c in done.drain(..) {
            let h = streamer::handle(c.cookie);
            let live = ep.conn_mut(h).and_then(|conn| {
                let plan = conn.inner.streaming.as_mut().and_then(|s| s.reading.take());
                plan.map(|p| (conn, p))
            });
            let Some((tls::Conn { inner: conn, tls: session }, plan)) = live else {
                // The connection ended while its read was under way.
                if let Some(b) = c.buf {
                    st.port.pool().free(b);
                }
                continue;
            };
            let fetch = &mut conn.streaming().fetch;
            match fetch.complete(st.port.pool(), plan, c) {
                Ok(()) => {
                    // Under TLS, the records the read completed are sealed in its buffer now,
                    // while the bytes are warm (Atlas), and later sent from it as they are.
                    if let Some(s) = session.as_mut() {
                        if let Some((start, len, bytes)) = fetch.last_chunk_mut(st.port.pool()) {
                            tls.stats.records_in_place += u64::from(s.seal_within(start, len, bytes));
                        }
                    }
                    st.wanted.push(h);
                    ep.kick(h);
                }
                Err(_) => {
                    st.stats.read_errors += 1;
                    failed.push(h);
                }
            }
        }
        st.done = done;
        // Connections that waited for a buffer go first, fewest bytes left first
        // (Streamer::wait), one per free buffer. (Looking at every waiting connection each time
        // a buffer came back was a scan of all of them per buffer: a million plans a second,
        // each failing, with 1 000 streams of 1 MiB files on 256 MiB of buffers.)
        while st.port.pool_ref().free_count() > 0 {
            let live = |h, at| ep.conn(h).and_then(|c| c.inner.streaming.as_deref()).is_some_and(|s| s.queued == at);
            let Some(w) = st.next_waiting(&live) else { break };
            if let Err(Wait::NoBuffer | Wait::Busy) = read_next(ep, st, w.h) {
                st.wait_on(w);
                break;
            }
        }
        let mut wanted = std::mem::take(&mut st.wanted);
        for h in wanted.drain(..) {
            let Some(sent) = ep.tcb(h).map(|t| t.sent_offset()) else { continue };
            let Some(conn) = ep.conn_mut(h) else { continue };
            // Atlas: what was sent is let go of (its buffer freed once no packet carries it);
            // a retransmission reads it again.
            let sent = conn.plain_sent(sent);
            let tls::Conn { inner: conn, tls: session } = conn;
            let Some(conn) = conn.streaming.as_deref_mut() else { continue };
            conn.fetch.sent(sent, &mut |b| st.retire(b), &mut |a, b| {
                if let Some(s) = session.as_mut() {
                    s.forget_in_place(a, b);
                }
            });
            // One waiting for a buffer keeps its place in the queue.
            if conn.reading.is_some() || conn.queued != 0 {
                continue;
            }
            if let Err(Wait::NoBuffer | Wait::Busy) = read_next(ep, st, h) {
                if let Some(s) = ep.conn_mut(h).and_then(|c| c.inner.streaming.as_deref_mut()) {
                    s.queued = st.wait(h, s.fetch.left());
                }
            }
        }
        st.wanted = wanted;
        st.port.submit();
        for h in failed {
            ep.abort(tls, h);
        }
    }
}

/// Starts connection `h`'s next read, if its window allows one; the connection leaves the
/// queue of those waiting for a buffer unless it must wait on (no buffer, or the storage
/// port full).
fn read_next(ep: &mut tcp::Endpoint<Tls<WebApp>>, st: &mut streamer::Streamer, h: tcp::Handle) -> Result<(), Wait> {
    let Some(t) = ep.tcb(h) else { return Err(Wait::Nothing) };
    let (acked, window, mss) = (t.acked_offset(), u64::from(t.cwnd().min(t.snd_wnd())), t.smss());
    let Some(conn) = ep.conn_mut(h) else { return Err(Wait::Nothing) };
    // Under TLS the application's offsets are plaintext ones, and reads reach the end of the
    // last record the window allows.
    let (acked, window) = conn.plain_window(acked, window);
    let tls::Conn { inner: conn, tls: session } = conn;
    let Some(conn) = conn.streaming.as_deref_mut() else { return Err(Wait::Nothing) };
    let floor = |p| session.as_ref().map_or(p, |s| s.layout.record_floor(p));
    let r = match conn.reading {
        Some(_) => Err(Wait::Nothing),
        None => conn.fetch.start_within(&mut st.port, acked, window, 10 * mss, streamer::cookie(h), &floor),
    };
    match r {
        Ok(p) => {
            st.stats.reads += 1;
            st.stats.read_bytes += u64::from(p.len);
            if p.again {
                st.stats.rereads += 1;
                st.stats.reread_bytes += u64::from(p.len);
            }
            conn.reading = Some(p);
        }
        Err(Wait::NoBuffer) => st.stats.buffer_waits += 1,
        Err(Wait::Busy) => {}
        Err(Wait::Nothing) => {}
    }
    if !matches!(r, Err(Wait::NoBuffer | Wait::Busy)) {
        conn.queued = 0;
    }
    r.map(|_| ())
}

impl Service for WebService {
    fn tcp_ports(&self) -> Vec<u16> {
        self.tcp.tcp_ports()
    }

    #[inline]
    fn tcp(&mut self, now: Instant, src: IpAddr, dst: IpAddr, seg: &TcpRepr, payload: &[u8], view: u32) {
        self.tcp.app.app.now = now;
        self.tcp.tcp(now, src, dst, seg, payload, view);
    }

    engine::pass_to_tcp_service!(tcp);

    fn produce(&mut self, now: Instant, out: &mut dyn Originate) -> usize {
        self.tcp.app.app.now = now;
        self.housekeeping(now);
        self.tcp.app.app.tend_replicas(out);
        self.stream(out);
        self.tcp.produce(now, out)
    }

    fn lend(&mut self, region: io::ArenaRegion) {
        let Some(st) = self.tcp.app.app.stream.as_mut() else { return };
        match st.relocate(&region) {
            Ok(()) => self.tcp.lend(region),
            Err(e) => eprintln!("sirocco: stream buffers stay outside the NIC port's memory, and are copied: {e}"),
        }
    }

    fn busy(&self) -> bool {
        // Reads in flight complete without a packet to wake the engine: keep polling.
        self.tcp.busy() || self.tcp.app.app.stream.as_ref().is_some_and(|s| s.port.in_flight() > 0)
    }

    fn idle_wait(&self) -> Duration {
        self.tcp.idle_wait().min(CLOCK)
    }

    fn connections(&self, out: &mut Vec<engine::metrics::ConnInfo>) {
        self.tcp.connections(out);
    }

    fn metrics(&self, out: &mut engine::Samples) {
        let st = &self.tcp.app.app.stats;
        out.counter("sirocco_http_requests_total", "HTTP requests parsed (refused ones too).", st.requests);
        // Codes outside the list are summed under "other": a label set appears once.
        let mut other = 0;
        for (&code, &n) in &st.status {
            match status_label(code) {
                Some(l) => {
                    out.counter_with("sirocco_http_responses_total", "HTTP responses, by status.", ("status", l), n)
                }
                None => other += n,
            }
        }
        if other > 0 {
            out.counter_with("sirocco_http_responses_total", "HTTP responses, by status.", ("status", "other"), other);
        }
        let help = "HTTP connections closed by a timeout: request head too slow (408), idle, peer not reading.";
        for (what, v) in [("header", st.header_timeouts), ("idle", st.idle_timeouts), ("send", st.send_timeouts)] {
            out.counter_with("sirocco_http_timeouts_total", help, ("timeout", what), v);
        }
        out.counter("sirocco_http_connections_accepted_total", "HTTP connections accepted.", st.accepted);
        let tls = self.tls_on().then(|| self.tls_stats());
        crate::report::metrics(self.app(), self.reloads, tls, out);
        self.tcp.metrics(out);
    }
}

/// A status code as a label value (the codes the server sends).
fn status_label(code: u16) -> Option<&'static str> {
    Some(match code {
        200 => "200",
        206 => "206",
        301 => "301",
        304 => "304",
        400 => "400",
        403 => "403",
        404 => "404",
        405 => "405",
        408 => "408",
        412 => "412",
        413 => "413",
        414 => "414",
        416 => "416",
        431 => "431",
        500 => "500",
        501 => "501",
        503 => "503",
        505 => "505",
        _ => return None,
    })
}
