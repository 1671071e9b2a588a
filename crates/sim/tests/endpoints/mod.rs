//! Bare TCP endpoints on the simulator's links (the `sim` crate): each host runs a
//! [`tcp::Endpoint`] with the self-checking stream application, no engine around it, so
//! thousands of seeds run in seconds. ICMP "fragmentation needed" goes straight to the
//! endpoint. The same links carry whole engines in the `sim` crate's own tests.
#![allow(dead_code)]

use sim::stream::{Spec, StreamApp};
use sim::{Fate, Link, Net, NetStats, Rng};
use tcp::endpoint::{Endpoint, Limits, Output};
use tcp::{Config, Instant};
use wire::tcp::{TcpPacket, TcpRepr};
use wire::{IpAddr, Ipv4Addr};

pub struct Host {
    pub addr: IpAddr,
    pub ep: Endpoint<StreamApp>,
    pub app: StreamApp,
}

enum Event {
    Packet { to: usize, src: IpAddr, dst: IpAddr, bytes: Vec<u8> },
    Icmp { to: usize, local: IpAddr, remote: IpAddr, lport: u16, rport: u16, mtu: u16 },
}

pub struct Sim {
    pub now: Instant,
    pub hosts: Vec<Host>,
    net: Net<Event>,
    /// Most segments a host may send in one output round (a small TX ring).
    pub tx_room: usize,
    /// Keep a trace of every segment in `log`.
    pub trace: bool,
    /// The trace: one line per segment sent (and per one dropped or too big).
    pub log: Vec<String>,
}

/// TX ring stand-in: collects segments, with limited room.
struct Collect {
    room: usize,
    out: Vec<(IpAddr, IpAddr, Vec<u8>)>,
}

impl Output for Collect {
    fn room(&self) -> usize {
        self.room
    }
    fn send(&mut self, local: IpAddr, remote: IpAddr, len: usize, write: &mut dyn FnMut(&mut [u8])) {
        assert!(self.room > 0, "send without room");
        let mut b = vec![0u8; len];
        write(&mut b);
        self.room -= 1;
        self.out.push((local, remote, b));
    }
}

/// Host `i`'s address: 198.18.1.(i+1), or 2001:2::1:(i+1) over IPv6 (RFC 5180's range).
pub fn addr(i: usize, v6: bool) -> IpAddr {
    if v6 {
        let mut a = [0x20, 0x01, 0, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0];
        a[15] = i as u8 + 1;
        IpAddr::V6(wire::Ipv6Addr(a))
    } else {
        IpAddr::V4(Ipv4Addr([198, 18, 1, i as u8 + 1]))
    }
}

impl Sim {
    pub fn new(seed: u64, hosts: usize, limits: Limits, hold: f64) -> Sim {
        Sim::in_family(seed, hosts, limits, hold, false)
    }

    /// As [`Sim::new`], the hosts on IPv6 addresses when `v6`.
    pub fn in_family(seed: u64, hosts: usize, limits: Limits, hold: f64, v6: bool) -> Sim {
        let mut rng = Rng::new(seed);
        let hosts = (0..hosts)
            .map(|i| {
                let mut l = limits;
                l.secret = [rng.next_u64(), rng.next_u64()];
                Host {
                    addr: addr(i, v6),
                    ep: Endpoint::new(l, Instant::ZERO),
                    app: StreamApp::new(rng.next_u64(), hold),
                }
            })
            .collect::<Vec<_>>();
        let n = hosts.len();
        Sim { now: Instant::ZERO, hosts, net: Net::new(n, rng), tx_room: 64, trace: false, log: Vec::new() }
    }

    pub fn set_links(&mut self, l: Link) {
        self.net.set_links(l);
    }

    /// Changes every link.
    pub fn set_all(&mut self, f: impl FnMut(&mut Link)) {
        self.net.set_all(f);
    }

    /// What the links did.
    pub fn net(&self) -> NetStats {
        self.net.stats
    }

    fn host_of(&self, a: IpAddr) -> Option<usize> {
        self.hosts.iter().position(|h| h.addr == a)
    }

    /// Puts a segment from host `from` on the wire.
    pub fn transmit(&mut self, from: usize, src: IpAddr, dst: IpAddr, bytes: Vec<u8>) {
        let Some(to) = self.host_of(dst) else {
            return;
        };
        let p = TcpPacket::new_unchecked(&bytes[..]);
        let (lport, rport) = (p.src_port(), p.dst_port());
        if self.trace {
            self.log.push(format!(
                "{:>9} {}->{} {}:{} seq {} ack {} fl {:02x} win {} len {}",
                self.now,
                from,
                to,
                lport,
                rport,
                p.seq(),
                p.ack(),
                p.flags().0,
                p.window(),
                p.payload().len()
            ));
        }
        let ip_len = bytes.len() + 20;
        let fate = self.net.transmit(self.now, from, to, ip_len, bytes, |bytes| Event::Packet { to, src, dst, bytes });
        if fate == Fate::TooBig {
            let l = self.net.links[from][to];
            if self.trace {
                self.log.push(format!("          {lport}:{rport} too big for MTU {}", l.mtu));
            }
            let e = Event::Icmp { to: from, local: src, remote: dst, lport, rport, mtu: l.mtu };
            self.net.schedule(self.now + l.delay, e);
        }
    }

    fn deliver(&mut self, e: Event) {
        match e {
            Event::Packet { to, src, dst, bytes } => {
                let Ok(p) = TcpPacket::new_checked(&bytes[..]) else {
                    self.net.stats.bad_checksum += 1;
                    return;
                };
                let repr = match TcpRepr::parse(&p, src, dst) {
                    Ok(r) => r,
                    Err(e) => {
                        if self.trace {
                            let ports =
                                (u16::from_be_bytes([bytes[0], bytes[1]]), u16::from_be_bytes([bytes[2], bytes[3]]));
                            self.log.push(format!("{:>9} {}:{} dropped at {to}: {e:?}", self.now, ports.0, ports.1));
                        }
                        self.net.stats.bad_checksum += 1;
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
    pub fn inject(&mut self, to: usize, src: IpAddr, repr: &TcpRepr) {
        let dst = self.hosts[to].addr;
        let mut bytes = vec![0u8; repr.header_len()];
        repr.emit(&mut bytes, src, dst);
        self.net.schedule(self.now, Event::Packet { to, src, dst, bytes });
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
        let mut t = self.net.next_at();
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
            while let Some(e) = self.net.pop_due(self.now) {
                self.deliver(e);
            }
            self.service();
        }
    }
}
