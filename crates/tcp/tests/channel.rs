//! The level-2 channel between two endpoints on a lossless in-memory wire: events and calls,
//! cookies, `sendv` trimming to the peer's window and the `sent` that lets the rest go,
//! `recv_done` flow control, knocks answered or not, refused calls, and every buffer back in
//! its pool at the end.

use std::collections::HashMap;

use tcp::channel::{Buffers, CallError, Calls, Channel, Event, Events, Extent, Server, Views};
use tcp::endpoint::{Handle, Limits, Output};
use tcp::tcb::End;
use tcp::{Config, Duration, Instant};
use wire::tcp::{TcpPacket, TcpRepr};
use wire::{IpAddr, Ipv4Addr};

const A: IpAddr = IpAddr::V4(Ipv4Addr([198, 18, 0, 1]));
const B: IpAddr = IpAddr::V4(Ipv4Addr([198, 18, 0, 2]));
const PORT: u16 = 7;

fn byte(off: u64) -> u8 {
    (off % 251) as u8
}

/// Segments in flight, and the ones delivered this round (kept alive as the views).
#[derive(Default)]
struct Wire {
    out: Vec<(IpAddr, IpAddr, Vec<u8>)>,
}

impl Output for Wire {
    fn room(&self) -> usize {
        64
    }
    fn send(&mut self, local: IpAddr, remote: IpAddr, len: usize, write: &mut dyn FnMut(&mut [u8])) {
        let mut b = vec![0; len];
        write(&mut b);
        self.out.push((local, remote, b));
    }
}

/// Delivered segments and where their payload starts.
struct Held(Vec<(Vec<u8>, usize)>);

impl Views for Held {
    fn view(&self, id: u32) -> &[u8] {
        let (b, at) = &self.0[id as usize];
        &b[*at..]
    }
}

struct Host<S: Server> {
    ch: Channel,
    srv: S,
    held: Held,
}

impl<S: Server> Host<S> {
    fn new(srv: S, listen: Option<Config>, bufs: usize) -> Self {
        // Short TIME-WAIT, so a run ends with both tables empty.
        let connect = Config { time_wait: Duration::from_millis(100), ..Config::default() };
        let mut ch = Channel::new(Limits::default(), Buffers::new(bufs, 2048), connect, Instant::ZERO);
        if let Some(cfg) = listen {
            ch.listen(PORT, cfg);
        }
        Host { ch, srv, held: Held(Vec::new()) }
    }

    fn input(&mut self, now: Instant, src: IpAddr, dst: IpAddr, seg: Vec<u8>) {
        let p = TcpPacket::new_checked(&seg[..]).expect("well-formed");
        let repr = TcpRepr::parse(&p, src, dst).expect("valid");
        let at = seg.len() - repr.payload_len;
        let id = self.held.0.len() as u32;
        self.ch.input(now, src, dst, &repr, &seg[at..], id);
        self.held.0.push((seg, at));
    }

    fn round(&mut self, now: Instant, wire: &mut Wire) {
        self.ch.advance(now);
        self.ch.dispatch(&mut self.srv, now, &self.held);
        self.held.0.clear();
        self.ch.output(now, wire);
    }
}

/// Runs both hosts until `done` or the round limit; 1 ms per round.
fn run<C: Server, S: Server>(c: &mut Host<C>, s: &mut Host<S>, rounds: u64, done: impl Fn(&C) -> bool) -> Instant {
    run_with(c, s, rounds, false, done)
}

/// As [`run`]; with `reorder`, each round's segments to the server arrive in reverse.
fn run_with<C: Server, S: Server>(
    c: &mut Host<C>,
    s: &mut Host<S>,
    rounds: u64,
    reorder: bool,
    done: impl Fn(&C) -> bool,
) -> Instant {
    let mut now = Instant::ZERO;
    for _ in 0..rounds {
        now += Duration::from_millis(1);
        let mut wc = Wire::default();
        let mut ws = Wire::default();
        c.round(now, &mut wc);
        s.round(now, &mut ws);
        if reorder {
            wc.out.reverse();
        }
        for (src, dst, seg) in wc.out {
            s.input(now, src, dst, seg);
        }
        for (src, dst, seg) in ws.out {
            c.input(now, src, dst, seg);
        }
        if done(&c.srv) && c.ch.endpoint().is_empty() && s.ch.endpoint().is_empty() {
            // Hand over the events the last segments raised (a Dead, say) before the checks:
            // with TIME-WAIT outside the table, the endpoints are empty as soon as they close.
            c.round(now, &mut Wire::default());
            s.round(now, &mut Wire::default());
            return now;
        }
    }
    panic!("not done after {rounds} rounds");
}

/// Writes `total` pattern bytes through `sendv` as the window allows; checks what comes back.
#[derive(Default)]
struct Client {
    total: u64,
    h: Option<Handle>,
    written: u64,
    /// Bytes of the current buffer not yet taken by sendv: (extent, stream offset).
    pending: Option<(Extent, u64)>,
    echoed: u64,
    closed: bool,
    dead: Option<End>,
    connected: Option<Result<(), End>>,
    sendv_calls: u64,
    trimmed: u64,
    max_taken: u32,
    cookies_ok: bool,
    errors: Vec<CallError>,
}

impl Client {
    fn new(total: u64) -> Self {
        Client { total, cookies_ok: true, ..Client::default() }
    }

    fn push(&mut self, calls: &mut Calls<'_>, h: Handle) {
        loop {
            if self.pending.is_none() {
                if self.written >= self.total {
                    return;
                }
                let bufs = calls.buffers();
                let id = bufs.alloc().expect("client buffers");
                let n = (bufs.size() as u64).min(self.total - self.written) as usize;
                let data: Vec<u8> = (0..n as u64).map(|i| byte(self.written + i)).collect();
                bufs.write(id, 0, &data).unwrap();
                self.pending = Some((Extent { buf: id, off: 0, len: n as u32 }, self.written));
                self.written += n as u64;
            }
            let (e, _) = self.pending.expect("set above");
            let took = calls.sendv(h, &[e]).unwrap();
            self.sendv_calls += 1;
            self.max_taken = self.max_taken.max(took);
            if took < e.len {
                self.trimmed += 1;
                let rest = Extent { off: e.off + took, len: e.len - took, ..e };
                self.pending = Some((rest, 0));
                return;
            }
            calls.buffers().release(e.buf);
            self.pending = None;
        }
    }
}

impl Server for Client {
    fn handle(&mut self, events: &Events<'_>, calls: &mut Calls<'_>) {
        if self.h.is_none() && self.connected.is_none() {
            self.h = Some(calls.connect(42, A, B, PORT).unwrap());
        }
        for ev in events.iter() {
            match ev {
                Event::Connected { h, cookie, outcome } => {
                    self.cookies_ok &= cookie == 42;
                    self.connected = Some(outcome);
                    if outcome.is_ok() {
                        self.push(calls, h);
                    }
                }
                Event::Recv { h, cookie, data } => {
                    self.cookies_ok &= cookie == 42;
                    for (i, &b) in data.iter().enumerate() {
                        assert_eq!(b, byte(self.echoed + i as u64), "echoed byte {}", self.echoed + i as u64);
                    }
                    self.echoed += data.len() as u64;
                    calls.recv_done(h, data.len() as u32).unwrap();
                    if self.echoed == self.total && !self.closed {
                        self.closed = true;
                        calls.close(h).unwrap();
                        // Once closed, nothing more may be sent.
                        if let Some(id) = calls.buffers().alloc() {
                            let e = Extent { buf: id, off: 0, len: 1 };
                            self.errors.push(calls.sendv(h, &[e]).unwrap_err());
                            calls.buffers().release(id);
                        }
                    }
                }
                Event::Sent { h, cookie, .. } => {
                    self.cookies_ok &= cookie == 42;
                    self.push(calls, h);
                }
                Event::PeerClosed { .. } => {}
                Event::Dead { h, end, .. } => {
                    self.dead = Some(end);
                    // A dead handle refuses every call.
                    self.errors.push(calls.recv_done(h, 1).unwrap_err());
                    if let Some(id) = calls.buffers().alloc() {
                        self.errors.push(calls.sendv(h, &[Extent { buf: id, off: 0, len: 1 }]).unwrap_err());
                        calls.buffers().release(id);
                    }
                }
                Event::Knock { .. } => panic!("the client listens on nothing"),
            }
        }
    }
}

/// Echo on the channel: each connection's received bytes are copied into buffers and sent back;
/// the window reopens as the echo is acknowledged.
#[derive(Default)]
struct Echo {
    next_cookie: u64,
    conns: HashMap<u64, EchoConn>,
    refuse: bool,
    ignore: bool,
    knocks: u64,
    dead: u64,
    early_sendv: Option<CallError>,
}

#[derive(Default)]
struct EchoConn {
    unsent: Vec<Extent>,
    fin: bool,
}

impl Echo {
    fn flush(calls: &mut Calls<'_>, h: Handle, c: &mut EchoConn) {
        while let Some(&e) = c.unsent.first() {
            let took = calls.sendv(h, &[e]).unwrap();
            if took < e.len {
                c.unsent[0] = Extent { off: e.off + took, len: e.len - took, ..e };
                return;
            }
            calls.buffers().release(e.buf);
            c.unsent.remove(0);
        }
        if c.fin {
            calls.close(h).unwrap();
        }
    }
}

impl Server for Echo {
    fn handle(&mut self, events: &Events<'_>, calls: &mut Calls<'_>) {
        for ev in events.iter() {
            match ev {
                Event::Knock { h, port, .. } => {
                    assert_eq!(port, PORT);
                    self.knocks += 1;
                    if self.refuse {
                        calls.reject(h).unwrap();
                        assert_eq!(calls.accept(h, 1), Err(CallError::BadHandle));
                    } else if !self.ignore {
                        let b = calls.buffers().alloc().unwrap();
                        self.early_sendv = calls.sendv(h, &[Extent { buf: b, off: 0, len: 1 }]).err();
                        calls.buffers().release(b);
                        self.next_cookie += 1;
                        calls.accept(h, self.next_cookie).unwrap();
                        assert_eq!(calls.accept(h, 9), Err(CallError::AlreadyAnswered));
                        self.conns.insert(self.next_cookie, EchoConn::default());
                    }
                }
                Event::Recv { h, cookie, data } => {
                    let c = self.conns.get_mut(&cookie).expect("cookie of an accepted connection");
                    for chunk in data.chunks(calls.buffers().size()) {
                        let b = calls.buffers().alloc().expect("echo buffers");
                        calls.buffers().write(b, 0, chunk).unwrap();
                        c.unsent.push(Extent { buf: b, off: 0, len: chunk.len() as u32 });
                    }
                    Self::flush(calls, h, c);
                }
                Event::Sent { h, cookie, acked, .. } => {
                    calls.recv_done(h, acked as u32).unwrap();
                    let c = self.conns.get_mut(&cookie).expect("cookie");
                    Self::flush(calls, h, c);
                }
                Event::PeerClosed { h, cookie } => {
                    let c = self.conns.get_mut(&cookie).expect("cookie");
                    c.fin = true;
                    Self::flush(calls, h, c);
                }
                Event::Dead { cookie, .. } => {
                    self.dead += 1;
                    if let Some(c) = self.conns.remove(&cookie) {
                        for e in c.unsent {
                            calls.buffers().release(e.buf);
                        }
                    }
                }
                Event::Connected { .. } => panic!("the echo opens nothing"),
            }
        }
    }
}

#[test]
fn bytes_go_through_the_channel_and_come_back() {
    let mut c = Host::new(Client::new(300_000), None, 64);
    let mut s = Host::new(Echo::default(), Some(Config::default()), 1024);
    run(&mut c, &mut s, 10_000, |cl| cl.dead.is_some());
    assert_eq!(c.srv.echoed, 300_000);
    assert_eq!(c.srv.connected, Some(Ok(())));
    assert_eq!(c.srv.dead, Some(End::Closed));
    assert!(c.srv.cookies_ok, "every event carried the cookie given at connect");
    assert_eq!(s.srv.knocks, 1);
    assert_eq!(s.srv.dead, 1);
    assert_eq!(s.srv.early_sendv, Some(CallError::NotAccepted));
    assert_eq!(c.srv.errors, vec![CallError::Closing, CallError::BadHandle, CallError::BadHandle]);
    // Views of the frames, nothing copied (no reordering on this wire).
    assert_eq!(s.ch.stats().recv_copied, 0);
    assert!(s.ch.stats().sendv_bytes >= 300_000);
    for h in [&c.ch, &s.ch] {
        assert_eq!(h.buffers().available(), h.buffers().total(), "every buffer back in its pool");
    }
}

#[test]
fn sendv_takes_only_the_window_and_sent_lets_the_rest_go() {
    // The echo's receive window is 4 KB and it does not reopen it before the echo is
    // acknowledged, so the client's sendv keeps being trimmed to what the window holds.
    let cfg = Config { rcv_buf: 4096, ..Config::default() };
    let mut c = Host::new(Client::new(100_000), None, 64);
    let mut s = Host::new(Echo::default(), Some(cfg), 1024);
    run(&mut c, &mut s, 20_000, |cl| cl.dead.is_some());
    assert_eq!(c.srv.echoed, 100_000);
    assert!(c.srv.trimmed > 10, "trimmed {} times", c.srv.trimmed);
    assert!(c.srv.max_taken <= 4096, "took {} > the 4 KB window", c.srv.max_taken);
    assert!(c.ch.stats().sendv_trimmed > 10);
    for h in [&c.ch, &s.ch] {
        assert_eq!(h.buffers().available(), h.buffers().total());
    }
}

#[test]
fn a_rejected_or_unanswered_knock_resets_the_connection() {
    for (refuse, ignore) in [(true, false), (false, true)] {
        let mut c = Host::new(Client::new(1000), None, 8);
        let mut s = Host::new(Echo { refuse, ignore, ..Echo::default() }, Some(Config::default()), 8);
        // The client's handshake completes, then the server's RST ends it.
        run(&mut c, &mut s, 1000, |cl| cl.dead.is_some() || matches!(cl.connected, Some(Err(_))));
        assert_eq!(s.srv.knocks, 1);
        assert_eq!(s.srv.dead, 0, "no dead event for a connection the server never took");
        assert_eq!(s.ch.stats().unanswered, u64::from(ignore));
        assert_eq!(c.srv.dead, Some(End::Reset));
        for h in [&c.ch, &s.ch] {
            assert_eq!(h.buffers().available(), h.buffers().total());
        }
    }
}

#[test]
fn connect_to_a_closed_port_reports_the_refusal() {
    let mut c = Host::new(Client::new(10), None, 8);
    let mut s = Host::new(Echo::default(), None, 8);
    run(&mut c, &mut s, 1000, |cl| cl.connected.is_some());
    assert_eq!(c.srv.connected, Some(Err(End::Refused)));
    assert_eq!(c.srv.dead, None, "a failed connect ends with its connected event");
}

#[test]
fn reordered_data_is_delivered_from_the_reassembly_buffer_intact() {
    let mut c = Host::new(Client::new(200_000), None, 64);
    let mut s = Host::new(Echo::default(), Some(Config::default()), 1024);
    run_with(&mut c, &mut s, 20_000, true, |cl| cl.dead.is_some());
    assert_eq!(c.srv.echoed, 200_000);
    let st = s.ch.stats();
    assert!(st.recv_copied > 0, "some data came out of the reassembly buffer");
    assert!(st.recv_copied < 200_000, "the rest were frame views: {st:?}");
    for h in [&c.ch, &s.ch] {
        assert_eq!(h.buffers().available(), h.buffers().total());
    }
}

/// Opens `n` connections at the first batch and keeps their handles.
struct Opener {
    n: u32,
    handles: Vec<Handle>,
}

impl Server for Opener {
    fn handle(&mut self, _events: &Events<'_>, calls: &mut Calls<'_>) {
        while self.handles.len() < self.n as usize {
            self.handles.push(calls.connect(self.handles.len() as u64, A, B, PORT).unwrap());
        }
    }
}

#[test]
fn connect_picks_source_ports_whose_replies_reach_its_own_queue() {
    use tcp::rss::Rss;
    let key: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
    let table: Vec<u16> = (0..128).map(|i| i % 4).collect();
    let rss = Rss::new(&key, &table).unwrap();
    let mut c = Host::new(Opener { n: 50, handles: Vec::new() }, None, 8);
    c.ch.set_rss(rss.clone(), 2);
    c.round(Instant::from_millis(1), &mut Wire::default());
    assert_eq!(c.srv.handles.len(), 50);
    let mut ports = std::collections::HashSet::new();
    for &h in &c.srv.handles {
        let t = *c.ch.endpoint().tcb(h).unwrap().tuple();
        assert_eq!(rss.queue(t.remote, t.local, t.remote_port, t.local_port), 2, "port {}", t.local_port);
        ports.insert(t.local_port);
    }
    assert_eq!(ports.len(), 50);
}

/// Connects again as soon as the last connection is gone, always from the same port.
#[derive(Default)]
struct Redialer {
    h: Option<Handle>,
    established: u32,
    tw_seen: Vec<usize>,
    next_at: Instant,
    dialed_at: Instant,
    handshakes: Vec<Duration>,
}

impl Server for Redialer {
    fn handle(&mut self, events: &Events<'_>, calls: &mut Calls<'_>) {
        if self.h.is_none() && self.established < 40 && calls.now() >= self.next_at {
            self.h = Some(calls.connect(0, A, B, PORT).unwrap());
            self.dialed_at = calls.now();
        }
        for ev in events.iter() {
            match ev {
                Event::Connected { outcome, .. } => {
                    assert!(outcome.is_ok(), "connect failed: {outcome:?}");
                    self.established += 1;
                    self.handshakes.push(calls.now() - self.dialed_at);
                }
                Event::PeerClosed { h, .. } => calls.close(h).unwrap(),
                Event::Dead { .. } => {
                    self.h = None;
                    // Gaps of 0.3-4 s: the ISN's clock moves on by up to a million.
                    self.next_at = calls.now() + Duration::from_millis(300 + 97 * u64::from(self.established));
                }
                _ => {}
            }
        }
    }
}

/// Accepts and closes at once: the server closes first, so TIME-WAIT stays on its side.
struct Closer;

impl Server for Closer {
    fn handle(&mut self, events: &Events<'_>, calls: &mut Calls<'_>) {
        for ev in events.iter() {
            if let Event::Knock { h, .. } = ev {
                calls.accept(h, 1).unwrap();
                calls.close(h).unwrap();
            }
        }
    }
}

#[test]
fn a_new_syn_reopens_the_tuple_the_server_holds_in_time_wait() {
    // One ephemeral port: every connection reuses the tuple the server still holds in
    // TIME-WAIT (60 s). The reopening SYN must carry a newer TSval (RFC 6191), so the
    // timestamp clock has to run on across incarnations of the tuple; were it drawn afresh
    // per connection, about half the SYNs would be refused and wait out the 1 s SYN timeout.
    let one_port = Limits { ephemeral: (40_000, 40_000), ..Limits::default() };
    let mut c = Host {
        ch: Channel::new(one_port, Buffers::new(8, 2048), Config::default(), Instant::ZERO),
        srv: Redialer::default(),
        held: Held(Vec::new()),
    };
    let mut s = Host::new(Closer, Some(Config { time_wait: Duration::from_secs(60), ..Config::default() }), 8);
    let mut now = Instant::ZERO;
    for _ in 0..200_000 {
        now += Duration::from_millis(1);
        if c.srv.h.is_none() && c.srv.established < 40 && now >= c.srv.next_at {
            c.srv.tw_seen.push(s.ch.endpoint().time_wait());
        }
        let mut wc = Wire::default();
        let mut ws = Wire::default();
        c.round(now, &mut wc);
        s.round(now, &mut ws);
        for (src, dst, seg) in wc.out {
            s.input(now, src, dst, seg);
        }
        for (src, dst, seg) in ws.out {
            c.input(now, src, dst, seg);
        }
        if c.srv.established == 40 && c.srv.h.is_none() {
            break;
        }
    }
    assert_eq!(c.srv.established, 40);
    assert!(c.srv.tw_seen[1..].iter().all(|&n| n == 1), "the tuple was in TIME-WAIT: {:?}", c.srv.tw_seen);
    assert_eq!(s.ch.endpoint().stats().established, 40);
    // A round trip is 1-2 ms here; a refused SYN is sent again after a second.
    assert!(c.srv.handshakes.iter().all(|&d| d < Duration::from_millis(10)), "handshakes: {:?}", c.srv.handshakes);
}
