//! The simulated network: hosts running a TCP endpoint each, joined by one-way links with
//! seeded impairments, driven by a virtual clock.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use tcp::endpoint::{Endpoint, Limits, Output};
use tcp::{Config, Duration, Instant};
use wire::tcp::{TcpPacket, TcpRepr};
use wire::Ipv4Addr;

use super::rng::Rng;
use super::stream::{Spec, StreamApp};

/// One direction of a path.
#[derive(Debug, Clone, Copy)]
pub struct Link {
    pub delay: Duration,
    pub loss: f64,
    pub dup: f64,
    /// Probability that a packet is held back by up to `jitter` (reordering).
    pub reorder: f64,
    pub jitter: Duration,
    pub corrupt: f64,
    /// Bits per second; 0 is unlimited.
    pub bandwidth: u64,
    /// Packets queued beyond this much time are tail-dropped.
    pub queue_limit: Duration,
    /// IP MTU: larger packets are dropped with an ICMP "fragmentation needed".
    pub mtu: u16,
    /// Everything is lost (a link that died).
    pub down: bool,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            delay: Duration::from_millis(5),
            loss: 0.0,
            dup: 0.0,
            reorder: 0.0,
            jitter: Duration::ZERO,
            corrupt: 0.0,
            bandwidth: 0,
            queue_limit: Duration::from_millis(200),
            mtu: 1500,
            down: false,
        }
    }
}

pub struct Host {
    pub addr: Ipv4Addr,
    pub ep: Endpoint<StreamApp>,
    pub app: StreamApp,
}

enum Event {
    Packet { to: usize, src: Ipv4Addr, dst: Ipv4Addr, bytes: Vec<u8> },
    Icmp { to: usize, local: Ipv4Addr, remote: Ipv4Addr, lport: u16, rport: u16, mtu: u16 },
}

/// Counts of what the network did.
#[derive(Debug, Default, Clone, Copy)]
pub struct NetStats {
    pub sent: u64,
    pub lost: u64,
    pub dups: u64,
    pub reordered: u64,
    pub corrupted: u64,
    pub bad_checksum: u64,
    pub too_big: u64,
    pub queue_drops: u64,
}

pub struct Sim {
    pub now: Instant,
    pub hosts: Vec<Host>,
    /// links[from][to]
    pub links: Vec<Vec<Link>>,
    busy: Vec<Vec<Instant>>,
    events: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    store: Vec<Option<Event>>,
    free: Vec<usize>,
    n: u64,
    pub rng: Rng,
    pub net: NetStats,
    /// Most segments a host may send in one output round (a small TX ring).
    pub tx_room: usize,
    pub trace: bool,
}

/// TX ring stand-in: collects segments, with limited room.
struct Collect {
    room: usize,
    out: Vec<(Ipv4Addr, Ipv4Addr, Vec<u8>)>,
}

impl Output for Collect {
    fn room(&self) -> usize {
        self.room
    }
    fn send(&mut self, local: Ipv4Addr, remote: Ipv4Addr, len: usize, write: &mut dyn FnMut(&mut [u8])) {
        assert!(self.room > 0, "send without room");
        let mut b = vec![0u8; len];
        write(&mut b);
        self.room -= 1;
        self.out.push((local, remote, b));
    }
}

pub fn addr(i: usize) -> Ipv4Addr {
    Ipv4Addr([198, 18, 1, i as u8 + 1])
}

impl Sim {
    pub fn new(seed: u64, hosts: usize, limits: Limits, hold: f64) -> Sim {
        let mut rng = Rng::new(seed);
        let hosts = (0..hosts)
            .map(|i| {
                let mut l = limits;
                l.secret = [rng.next(), rng.next()];
                Host { addr: addr(i), ep: Endpoint::new(l, Instant::ZERO), app: StreamApp::new(rng.next(), hold) }
            })
            .collect::<Vec<_>>();
        let n = hosts.len();
        Sim {
            now: Instant::ZERO,
            hosts,
            links: vec![vec![Link::default(); n]; n],
            busy: vec![vec![Instant::ZERO; n]; n],
            events: BinaryHeap::new(),
            store: Vec::new(),
            free: Vec::new(),
            n: 0,
            rng,
            net: NetStats::default(),
            tx_room: 64,
            trace: false,
        }
    }

    pub fn set_links(&mut self, l: Link) {
        for row in &mut self.links {
            for x in row.iter_mut() {
                *x = l;
            }
        }
    }

    fn host_of(&self, a: Ipv4Addr) -> Option<usize> {
        self.hosts.iter().position(|h| h.addr == a)
    }

    fn push(&mut self, at: Instant, e: Event) {
        let i = match self.free.pop() {
            Some(i) => {
                self.store[i] = Some(e);
                i
            }
            None => {
                self.store.push(Some(e));
                self.store.len() - 1
            }
        };
        self.n += 1;
        self.events.push(Reverse((at, self.n, i)));
    }

    /// Puts a packet from host `from` on the wire.
    pub fn transmit(&mut self, from: usize, src: Ipv4Addr, dst: Ipv4Addr, mut bytes: Vec<u8>) {
        self.net.sent += 1;
        let Some(to) = self.host_of(dst) else {
            return;
        };
        let l = self.links[from][to];
        if self.trace {
            let p = TcpPacket::new_unchecked(&bytes[..]);
            eprintln!(
                "{:>9} {}->{} {}:{} seq {} ack {} fl {:02x} win {} len {}",
                self.now,
                from,
                to,
                p.src_port(),
                p.dst_port(),
                p.seq(),
                p.ack(),
                p.flags().0,
                p.window(),
                p.payload().len()
            );
        }
        if l.down || self.rng.chance(l.loss) {
            self.net.lost += 1;
            return;
        }
        if bytes.len() + 20 > usize::from(l.mtu) {
            self.net.too_big += 1;
            if self.trace {
                eprintln!("          too big for MTU {}", l.mtu);
            }
            let p = TcpPacket::new_unchecked(&bytes[..]);
            let e =
                Event::Icmp { to: from, local: src, remote: dst, lport: p.src_port(), rport: p.dst_port(), mtu: l.mtu };
            let at = self.now + l.delay;
            self.push(at, e);
            return;
        }
        let mut at = self.now;
        if let Some(us) = ((bytes.len() as u64 + 20) * 8 * 1_000_000).checked_div(l.bandwidth) {
            let serialize = Duration::from_micros(us);
            let start = self.busy[from][to].max(self.now);
            if start - self.now > l.queue_limit {
                self.net.queue_drops += 1;
                return;
            }
            let done = start + serialize;
            self.busy[from][to] = done;
            at = done;
        }
        at += l.delay;
        if self.rng.chance(l.reorder) {
            self.net.reordered += 1;
            at += Duration::from_micros(self.rng.range(1, l.jitter.as_micros().max(1)));
        }
        if self.rng.chance(l.corrupt) {
            self.net.corrupted += 1;
            let bit = self.rng.range(0, bytes.len() as u64 * 8 - 1);
            bytes[(bit / 8) as usize] ^= 1 << (bit % 8);
        }
        if self.rng.chance(l.dup) {
            self.net.dups += 1;
            let extra = Duration::from_micros(self.rng.range(0, l.jitter.as_micros().max(1)));
            self.push(at + extra, Event::Packet { to, src, dst, bytes: bytes.clone() });
        }
        self.push(at, Event::Packet { to, src, dst, bytes });
    }

    fn deliver(&mut self, e: Event) {
        match e {
            Event::Packet { to, src, dst, bytes } => {
                let Ok(p) = TcpPacket::new_checked(&bytes[..]) else {
                    self.net.bad_checksum += 1;
                    return;
                };
                let repr = match TcpRepr::parse(&p, src, dst) {
                    Ok(r) => r,
                    Err(e) => {
                        if self.trace {
                            eprintln!("{:>9} dropped at {to}: {e:?}", self.now);
                        }
                        self.net.bad_checksum += 1;
                        return;
                    }
                };
                let h = &mut self.hosts[to];
                h.app.now = self.now;
                h.ep.input(&mut h.app, self.now, src, dst, &repr, p.payload());
            }
            Event::Icmp { to, local, remote, lport, rport, mtu } => {
                self.hosts[to].ep.path_mtu(local, remote, lport, rport, mtu);
            }
        }
    }

    /// Runs every host's timers and output at the current time.
    pub fn service(&mut self) {
        for i in 0..self.hosts.len() {
            let now = self.now;
            let h = &mut self.hosts[i];
            h.app.now = now;
            for (hd, n) in h.app.due(now) {
                h.ep.recv_done(hd, n);
            }
            h.ep.advance(&mut h.app, now);
            let mut c = Collect { room: self.tx_room, out: Vec::new() };
            h.ep.output(&mut h.app, now, &mut c);
            for (s, d, b) in c.out {
                self.transmit(i, s, d, b);
            }
        }
    }

    /// Delivers a hand-made segment to host `to` as if sent from `src` (which need not be a
    /// host: replies to it are lost).
    pub fn inject(&mut self, to: usize, src: Ipv4Addr, repr: &TcpRepr) {
        let dst = self.hosts[to].addr;
        let mut bytes = vec![0u8; repr.header_len()];
        repr.emit(&mut bytes, src, dst);
        let at = self.now;
        self.push(at, Event::Packet { to, src, dst, bytes });
    }

    /// Opens a connection from host `from` to host `to` on `port`.
    pub fn connect(&mut self, from: usize, to: usize, port: u16, cfg: Config, spec: Spec) -> tcp::Handle {
        let dst = self.hosts[to].addr;
        let h = &mut self.hosts[from];
        let conn = StreamApp::client_conn(spec);
        match h.ep.connect(self.now, h.addr, dst, port, cfg, conn, |_| true) {
            Ok(hd) => hd,
            Err((e, _)) => panic!("connect: {e}"),
        }
    }

    /// The next time something happens, if anything is pending.
    pub fn next_time(&self) -> Option<Instant> {
        let mut t = self.events.peek().map(|Reverse((at, _, _))| *at);
        for h in &self.hosts {
            if h.ep.has_output() {
                return Some(self.now);
            }
            for d in [h.ep.next_deadline(), h.app.next_release()].into_iter().flatten() {
                t = Some(t.map_or(d, |x: Instant| x.min(d)));
            }
        }
        t
    }

    /// Runs until `done` holds, nothing is pending, or the clock passes `until`. Returns
    /// false on a stall (the time ran out with `done` still false).
    pub fn run_until(&mut self, until: Instant, mut done: impl FnMut(&Sim) -> bool) -> bool {
        let mut steps = 0u64;
        loop {
            if done(self) {
                return true;
            }
            steps += 1;
            assert!(steps < 50_000_000, "simulation step bound");
            let Some(t) = self.next_time() else {
                return done(self);
            };
            if t > until {
                self.now = until;
                return done(self);
            }
            self.now = self.now.max(t);
            while let Some(Reverse((at, _, i))) = self.events.peek().copied() {
                if at > self.now {
                    break;
                }
                self.events.pop();
                let e = self.store[i].take().expect("stored event");
                self.free.push(i);
                self.deliver(e);
            }
            self.service();
        }
    }
}
