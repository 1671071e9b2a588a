//! Hosts that are whole engines: each runs [`engine::Engine`] on an in-memory port, with the
//! application it serves, and the frames it sends go over the simulated links to the station
//! whose MAC they are addressed to (broadcasts to every other). Everything the data path
//! does — ARP, IP and UDP checks, TCP, the application, the timer wheel — runs as in
//! production, on a virtual clock the simulation advances.
//!
//! The applications stay with the caller (so a test can read their state between steps) and
//! are handed to [`EngineNet::step`] in the order the stations were added.

use engine::{Engine, EngineConfig, Service};
use io::mem::{MemPort, Wire};
use timer::{Duration, Instant};
use wire::ethernet::EthernetFrame;
use wire::{Ipv4Addr, MacAddr};

use crate::link::{Fate, Link, Net, NetStats};
use crate::rng::Rng;

/// Frames each station's port has.
pub const FRAMES: usize = 1024;
const ETHERNET_HEADER: usize = 14;

/// One engine on the simulated network.
pub struct Station {
    /// The engine.
    pub engine: Engine<MemPort>,
    wire: Wire,
    /// Its link-layer address.
    pub mac: MacAddr,
    /// Its IP address.
    pub addr: Ipv4Addr,
}

/// A frame on its way to a station.
struct Arrival {
    to: usize,
    frame: Vec<u8>,
}

/// Engines joined by impaired links, on one virtual clock.
pub struct EngineNet {
    /// The virtual clock.
    pub now: Instant,
    /// The engines, in the order added.
    pub stations: Vec<Station>,
    net: Net<Arrival>,
    /// Longest step of the clock when nothing is in flight (timers need it to move).
    pub tick: Duration,
    /// This network's number in the thread's packet trace, if one is kept.
    traced: Option<u32>,
}

/// The MAC the simulation gives station `i`.
pub fn mac(i: usize) -> MacAddr {
    MacAddr([2, 0, 0x5e, 0, 0, i as u8 + 1])
}

impl EngineNet {
    /// An empty network whose impairments are drawn from `seed`.
    pub fn new(seed: u64) -> EngineNet {
        EngineNet {
            now: Instant::ZERO,
            stations: Vec::new(),
            net: Net::new(0, Rng::new(seed)),
            tick: Duration::from_micros(100),
            traced: crate::trace::new_net(),
        }
    }

    /// Adds an engine with address `addr` serving `app`'s ports (the app itself is passed
    /// to each step); returns its index.
    pub fn add(&mut self, addr: Ipv4Addr, app: &dyn Service) -> usize {
        self.add_lending(addr, app, 0)
    }

    /// As [`EngineNet::add`], with a port that lends `bytes` beyond its frames (as
    /// `sirocco web --mode stream` opens its AF_XDP port): packets may be gathered.
    pub fn add_lending(&mut self, addr: Ipv4Addr, app: &dyn Service, bytes: usize) -> usize {
        let i = self.net.add_host();
        let (port, wire) = MemPort::with_wire(FRAMES);
        let port = if bytes > 0 { port.lend(bytes).expect("memory for the lent region") } else { port };
        let cfg = EngineConfig::new(addr, mac(i), true, &format!("sim{i}"));
        let engine = Engine::new(port, cfg, app);
        self.stations.push(Station { engine, wire, mac: mac(i), addr });
        i
    }

    /// Makes every link `l`.
    pub fn set_links(&mut self, l: Link) {
        self.net.set_links(l);
    }

    /// Engine `i`'s counters.
    pub fn counters(&self, i: usize) -> &engine::Counters {
        self.stations[i].engine.counters()
    }

    /// What the links did.
    pub fn stats(&self) -> NetStats {
        self.net.stats
    }

    /// One step: the clock moves to the next arrival (at most a tick ahead), arrivals are
    /// handed to their ports, every engine runs one iteration with its application, and
    /// what they sent goes onto the links. `apps[i]` is station `i`'s application.
    pub fn step(&mut self, apps: &mut [&mut dyn Service]) {
        assert_eq!(apps.len(), self.stations.len(), "one application per station");
        let next = self.now + self.tick;
        self.now = self.net.next_at().map_or(next, |t| t.clamp(self.now, next));
        while let Some(a) = self.net.pop_due(self.now) {
            self.stations[a.to].wire.inject(&a.frame);
        }
        for (s, app) in self.stations.iter_mut().zip(apps.iter_mut()) {
            s.engine.poll(self.now, &mut **app);
        }
        for from in 0..self.stations.len() {
            for frame in self.stations[from].wire.take_sent() {
                self.put_on_links(from, frame);
            }
        }
    }

    /// Steps until the clock has moved on by `d`.
    pub fn run_for(&mut self, d: Duration, apps: &mut [&mut dyn Service]) {
        let until = self.now + d;
        while self.now < until {
            self.step(apps);
        }
    }

    fn put_on_links(&mut self, from: usize, frame: Vec<u8>) {
        let Ok(eth) = EthernetFrame::new_checked(&frame[..]) else { return };
        let dst = eth.dst_addr();
        let ip_len = frame.len().saturating_sub(ETHERNET_HEADER);
        for to in 0..self.stations.len() {
            if to != from && (dst == self.stations[to].mac || dst == MacAddr::BROADCAST) {
                let Some(net) = self.traced else {
                    self.net.transmit(self.now, from, to, ip_len, frame.clone(), |frame| Arrival { to, frame });
                    continue;
                };
                let before = self.net.stats;
                let fate = self.net.transmit(self.now, from, to, ip_len, frame.clone(), |frame| Arrival { to, frame });
                let after = self.net.stats;
                let what = match fate {
                    Fate::Lost => "lost",
                    Fate::TooBig => "too big",
                    Fate::QueueFull => "queue full",
                    Fate::Scheduled if after.corrupted > before.corrupted => "+corrupted",
                    Fate::Scheduled if after.dups > before.dups => "+duplicated",
                    Fate::Scheduled if after.reordered > before.reordered => "+held back",
                    Fate::Scheduled => "",
                };
                crate::trace::record(net, self.now, &frame, what);
            }
        }
    }
}
