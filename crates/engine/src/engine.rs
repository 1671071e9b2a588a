//! The run-to-completion loop.

use crate::app::{App, Originate, SendError};
use crate::arp_cache::Lookup;
use crate::counters::{Counters, Drop};
use crate::stack::{Stack, TTL};
use io::pcap::CaptureTap;
use io::{Frame, Port};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use timer::TimerWheel;
use wire::arp::{ArpOp, ArpRepr};
use wire::build::UdpFrame;
use wire::ethernet::{EtherType, EthernetRepr, MacAddr};
use wire::ipv4::{Ipv4Addr, Ipv4Repr, Protocol};

/// What an engine serves and how.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The IPv4 address served.
    pub addr: Ipv4Addr,
    /// The interface's MAC address.
    pub mac: MacAddr,
    /// True when the kernel does not have `addr`: the engine then answers ARP and ICMP echo
    /// and resolves neighbours itself; otherwise it asks the kernel's neighbour table.
    pub owns_alone: bool,
    /// Interface name (for kernel neighbour lookups).
    pub iface: String,
    /// IP MTU.
    pub mtu: usize,
    /// Largest receive batch per iteration (IX's bound on batching).
    pub batch: usize,
    /// Empty iterations before sleeping in poll().
    pub idle_spins: u32,
    /// What an iteration that received nothing does before the next one.
    pub idle: IdlePolicy,
    /// Frames dropped on purpose, per million, on receive and on send: an impairment for
    /// testing loss recovery against real peers (0 in service).
    pub loss_ppm: u32,
}

/// What the engine does after an iteration that received nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdlePolicy {
    /// Poll again at once: best when the kernel's receive work for the queue runs on another
    /// core (or in hardware), so spinning steals from nobody.
    Spin,
    /// Yield the CPU first: when the kernel's receive work (the NAPI thread that copies frames
    /// into the RX ring in AF_XDP copy mode) shares this core, spinning would starve it.
    Yield,
}

impl EngineConfig {
    /// Defaults for `addr` on an interface with `mac`.
    pub fn new(addr: Ipv4Addr, mac: MacAddr, owns_alone: bool, iface: &str) -> Self {
        EngineConfig {
            addr,
            mac,
            owns_alone,
            iface: iface.to_string(),
            mtu: 1500,
            batch: 64,
            idle_spins: 2000,
            idle: IdlePolicy::Yield,
            loss_ppm: 0,
        }
    }
}

#[derive(Clone, Copy)]
enum Timer {
    PublishCounters,
}

const PUBLISH_MS: u64 = 200;
/// How long to wait for a full device queue before transmitting again.
const TX_RETRY_US: u32 = 50;

/// One engine: a port, the stack state, and the loop that drives them.
pub struct Engine<P: Port> {
    port: P,
    stack: Stack,
    rx: Vec<Frame>,
    tx: Vec<Frame>,
    timers: TimerWheel<Timer>,
    tap: Option<CaptureTap>,
    snapshot: Option<Arc<Mutex<Counters>>>,
    ip_ident: u16,
    started: Instant,
    last_rx: usize,
    rng: u64,
    /// Frames kept for the application until `produce` returns, with their TCP payload's
    /// place.
    held: Vec<(Frame, u16, u16)>,
}

impl<P: Port> Engine<P> {
    /// An engine on `port` serving the UDP ports `app` asks for.
    pub fn new<A: App + ?Sized>(port: P, cfg: EngineConfig, app: &A) -> Self {
        let batch = cfg.batch.max(1);
        let mut stack = Stack::new(cfg);
        for p in app.udp_ports() {
            stack.serve_udp(p);
        }
        for p in app.tcp_ports() {
            stack.serve_tcp(p);
        }
        let mut timers = TimerWheel::new(1024, 64, 0);
        timers.schedule(PUBLISH_MS, Timer::PublishCounters);
        Engine {
            port,
            stack,
            rx: vec![Frame { addr: 0, len: 0 }; batch],
            tx: Vec::with_capacity(batch * 2),
            timers,
            tap: None,
            snapshot: None,
            ip_ident: 0,
            started: Instant::now(),
            last_rx: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
            held: Vec::with_capacity(batch),
        }
    }

    /// Copies every frame received and sent to a capture.
    pub fn set_capture(&mut self, tap: CaptureTap) {
        self.tap = Some(tap);
    }

    /// Publishes the counters to `shared` a few times a second (for `--stats`).
    pub fn set_snapshot(&mut self, shared: Arc<Mutex<Counters>>) {
        self.snapshot = Some(shared);
    }

    /// Sets the clock origin, so several engines (and their applications) share one time base.
    pub fn set_epoch(&mut self, epoch: Instant) {
        self.started = epoch;
    }

    /// The counters so far.
    pub fn counters(&self) -> &Counters {
        &self.stack.counters
    }

    /// The port.
    pub fn port(&self) -> &P {
        &self.port
    }

    /// The port, mutable (tests and tools).
    pub fn port_mut(&mut self) -> &mut P {
        &mut self.port
    }

    /// One loop iteration at time `now_ns` (nanoseconds on any monotonic clock). Returns the
    /// frames received plus frames the application originated: 0 means idle.
    pub fn poll<A: App + ?Sized>(&mut self, now_ns: u64, app: &mut A) -> usize {
        let c = &mut self.stack.counters;
        c.loops += 1;
        let batch = self.rx.len();
        let n = self.port.recv(&mut self.rx[..batch]);
        self.last_rx = n;
        if n > 0 {
            c.batch(n);
        }
        for i in 0..n {
            let f = self.rx[i];
            if self.impaired() {
                self.port.free(f);
                self.stack.counters.drop(Drop::Impaired);
                continue;
            }
            self.stack.counters.rx_packets += 1;
            self.stack.counters.rx_bytes += u64::from(f.len);
            if let Some(tap) = &self.tap {
                if !tap.offer(self.port.data(f)) {
                    self.stack.counters.capture_dropped += 1;
                }
            }
            let buf = self.port.data_mut(f);
            self.stack.next_view = self.held.len() as u32;
            match self.stack.handle(buf, f.len as usize, now_ns, app) {
                Some(len) => self.tx.push(Frame { addr: f.addr, len: len as u32 }),
                None => match self.stack.hold.take() {
                    Some((at, len)) => self.held.push((f, at, len)),
                    None => self.port.free(f),
                },
            }
        }
        // Replies first, so what the application originates cannot starve them of TX slots.
        self.transmit();
        let produced = {
            // Bounded by the free frames too: a segment TCP counts as sent but that finds no
            // frame is lost and costs a retransmission.
            let room = self.port.tx_room().min(self.port.free_frames());
            let mut out = Out {
                port: &mut self.port,
                stack: &mut self.stack,
                tx: &mut self.tx,
                room,
                now_ms: now_ns / 1_000_000,
                ip_ident: &mut self.ip_ident,
                held: &self.held,
            };
            app.produce(now_ns, &mut out)
        };
        for (f, _, _) in self.held.drain(..) {
            self.port.free(f);
        }
        self.transmit();
        self.run_timers(now_ns / 1_000_000);
        self.port.flush();
        n + produced
    }

    /// True if the impairment drops this frame.
    #[inline]
    fn impaired(&mut self) -> bool {
        if self.stack.cfg.loss_ppm == 0 {
            return false;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % 1_000_000) < u64::from(self.stack.cfg.loss_ppm)
    }

    fn transmit(&mut self) {
        if self.tx.is_empty() {
            return;
        }
        if self.stack.cfg.loss_ppm > 0 {
            let mut i = 0;
            while i < self.tx.len() {
                if self.impaired() {
                    let f = self.tx.swap_remove(i);
                    self.port.free(f);
                    self.stack.counters.drop(Drop::Impaired);
                } else {
                    i += 1;
                }
            }
        }
        if let Some(tap) = &self.tap {
            for f in &self.tx {
                if !tap.offer(self.port.data(*f)) {
                    self.stack.counters.capture_dropped += 1;
                }
            }
        }
        let sent = self.port.send(&self.tx);
        let c = &mut self.stack.counters;
        for f in &self.tx[..sent] {
            c.tx_bytes += u64::from(f.len);
        }
        c.tx_packets += sent as u64;
        for i in sent..self.tx.len() {
            let f = self.tx[i];
            self.port.free(f);
            self.stack.counters.drop(Drop::TxRingFull);
        }
        self.tx.clear();
    }

    fn run_timers(&mut self, now_ms: u64) {
        let mut publish = false;
        self.timers.advance(now_ms, |t| match t {
            Timer::PublishCounters => publish = true,
        });
        if publish {
            if let Some(s) = &self.snapshot {
                if let Ok(mut g) = s.try_lock() {
                    *g = self.stack.counters;
                }
            }
            self.timers.schedule(now_ms + PUBLISH_MS, Timer::PublishCounters);
        }
    }

    /// Runs until `stop` is set: busy-polls while frames arrive; after an empty receive it
    /// yields (or spins) up to `idle_spins` times, then sleeps in poll() until a frame arrives.
    pub fn run<A: App + ?Sized>(&mut self, app: &mut A, stop: &AtomicBool) {
        let mut idle = 0u32;
        while !stop.load(Ordering::Relaxed) {
            let now = self.started.elapsed().as_nanos() as u64;
            let work = self.poll(now, app);
            if self.last_rx > 0 {
                idle = 0;
                continue;
            }
            if self.port.tx_blocked() {
                // The device's queue is full (veth: the peer has not drained it yet): wait a
                // moment, or for input, then transmit again.
                self.port.wait_tx(TX_RETRY_US);
                continue;
            }
            if work > 0 || app.busy() {
                // Originating (the generator): never sleep, but let the kernel's receive work
                // on this core run.
                if self.stack.cfg.idle == IdlePolicy::Yield {
                    self.stack.counters.yields += 1;
                    io::sched::yield_now();
                }
                continue;
            }
            if idle < self.stack.cfg.idle_spins {
                idle += 1;
                if self.stack.cfg.idle == IdlePolicy::Yield {
                    self.stack.counters.yields += 1;
                    io::sched::yield_now();
                }
                continue;
            }
            idle = 0;
            self.stack.counters.sleeps += 1;
            self.port.wait(app.idle_wait_ms().clamp(1, 100) as i32);
        }
        if let Some(s) = &self.snapshot {
            if let Ok(mut g) = s.lock() {
                *g = self.stack.counters;
            }
        }
    }
}

/// The engine's [`Originate`] for one iteration.
struct Out<'a, P: Port> {
    port: &'a mut P,
    stack: &'a mut Stack,
    tx: &'a mut Vec<Frame>,
    room: usize,
    now_ms: u64,
    ip_ident: &'a mut u16,
    held: &'a [(Frame, u16, u16)],
}

impl<P: Port> Out<'_, P> {
    fn resolve(&mut self, dst: Ipv4Addr) -> Result<MacAddr, SendError> {
        match self.stack.arp.lookup(dst, self.now_ms) {
            Lookup::Known(m) => return Ok(m),
            Lookup::Pending => return Err(SendError::Unresolved),
            Lookup::Unknown => {}
        }
        if !self.stack.cfg.owns_alone {
            if let Some(m) = io::iface::kernel_neighbour(&self.stack.cfg.iface, dst) {
                self.stack.arp.insert(dst, m, self.now_ms);
                return Ok(m);
            }
            self.stack.arp.mark_pending(dst, self.now_ms);
            return Err(SendError::Unresolved);
        }
        // Ask for it ourselves.
        if self.room <= self.tx.len() {
            return Err(SendError::Full);
        }
        let Some(f) = self.port.alloc() else {
            return Err(SendError::Full);
        };
        let buf = self.port.data_mut(f);
        let cfg = &self.stack.cfg;
        EthernetRepr { src: cfg.mac, dst: MacAddr::BROADCAST, vlan: None, ethertype: EtherType::ARP }.emit(buf);
        ArpRepr {
            op: ArpOp::Request,
            sender_mac: cfg.mac,
            sender_ip: cfg.addr,
            target_mac: MacAddr::ZERO,
            target_ip: dst,
        }
        .emit(&mut buf[14..]);
        buf[42..60].fill(0);
        self.tx.push(Frame { addr: f.addr, len: 60 });
        self.stack.counters.arp_requests += 1;
        self.stack.arp.mark_pending(dst, self.now_ms);
        Err(SendError::Unresolved)
    }
}

impl<P: Port> Originate for Out<'_, P> {
    fn view(&self, view: u32) -> &[u8] {
        match self.held.get(view as usize) {
            Some(&(f, at, len)) => &self.port.data(f)[usize::from(at)..usize::from(at) + usize::from(len)],
            None => &[],
        }
    }

    fn room(&mut self) -> usize {
        self.room.saturating_sub(self.tx.len())
    }

    fn udp(
        &mut self,
        dst: Ipv4Addr,
        dst_port: u16,
        src_port: u16,
        fill: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Result<(), SendError> {
        if self.room <= self.tx.len() {
            return Err(SendError::Full);
        }
        let mac = self.resolve(dst)?;
        let Some(f) = self.port.alloc() else {
            self.stack.counters.drop(Drop::NoBuffer);
            return Err(SendError::Full);
        };
        const HDR: usize = wire::build::UDP_HEADERS;
        let mtu = self.stack.cfg.mtu;
        let (src_mac, src) = (self.stack.cfg.mac, self.stack.cfg.addr);
        let buf = self.port.data_mut(f);
        let max = (14 + mtu).min(buf.len()) - HDR;
        let n = fill(&mut buf[HDR..HDR + max]);
        if n > max {
            self.port.free(f);
            return Err(SendError::TooLong);
        }
        *self.ip_ident = self.ip_ident.wrapping_add(1);
        UdpFrame { src_mac, dst_mac: mac, src, dst, src_port, dst_port }.emit(buf, n, *self.ip_ident, TTL);
        self.tx.push(Frame { addr: f.addr, len: (HDR + n) as u32 });
        Ok(())
    }

    fn tcp(&mut self, dst: Ipv4Addr, len: usize, write: &mut dyn FnMut(&mut [u8])) -> Result<(), SendError> {
        let mac = self.tcp_check(dst, len)?;
        let Some(f) = self.port.alloc() else {
            self.stack.counters.drop(Drop::NoBuffer);
            return Err(SendError::Full);
        };
        self.tcp_frame(f.addr, mac, dst, len, write)
    }

    fn pin(&mut self) -> Option<u64> {
        self.port.pin().map(|f| f.addr)
    }

    fn unpin(&mut self, frame: u64) {
        self.port.unpin(frame);
    }

    fn returned(&mut self, each: &mut dyn FnMut(u64)) {
        self.port.returned(each);
    }

    fn pinned_segment(&mut self, frame: u64) -> &mut [u8] {
        &mut self.port.data_mut(Frame { addr: frame, len: 0 })[TCP_AT..]
    }

    fn tcp_pinned(
        &mut self,
        dst: Ipv4Addr,
        frame: u64,
        len: usize,
        write: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(), SendError> {
        match self.tcp_check(dst, len) {
            Ok(mac) => self.tcp_frame(frame, mac, dst, len, write),
            Err(e) => {
                // Back to the application through `returned`, like a sent one.
                self.port.free(Frame { addr: frame, len: 0 });
                Err(e)
            }
        }
    }
}

/// Where a TCP segment starts in a frame: after Ethernet and a 20-byte IPv4 header.
const TCP_AT: usize = 14 + 20;

impl<P: Port> Out<'_, P> {
    /// Room, length and next hop for a TCP segment of `len` bytes to `dst`.
    fn tcp_check(&mut self, dst: Ipv4Addr, len: usize) -> Result<MacAddr, SendError> {
        if self.room <= self.tx.len() {
            return Err(SendError::Full);
        }
        if len > self.stack.cfg.mtu - 20 {
            return Err(SendError::TooLong);
        }
        self.resolve(dst).inspect_err(|_| self.stack.counters.drop(Drop::ArpUnresolved))
    }

    /// Has `write` fill the segment in the frame at `addr`, writes the link and IPv4 headers
    /// in front of it and queues it.
    fn tcp_frame(
        &mut self,
        addr: u64,
        mac: MacAddr,
        dst: Ipv4Addr,
        len: usize,
        write: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(), SendError> {
        let (src_mac, src) = (self.stack.cfg.mac, self.stack.cfg.addr);
        let buf = self.port.data_mut(Frame { addr, len: 0 });
        if buf.len() < TCP_AT + len {
            self.port.free(Frame { addr, len: 0 });
            return Err(SendError::TooLong);
        }
        write(&mut buf[TCP_AT..TCP_AT + len]);
        *self.ip_ident = self.ip_ident.wrapping_add(1);
        EthernetRepr { src: src_mac, dst: mac, vlan: None, ethertype: EtherType::IPV4 }.emit(buf);
        Ipv4Repr {
            src,
            dst,
            protocol: Protocol::TCP,
            payload_len: len,
            ttl: TTL,
            ident: *self.ip_ident,
            tos: 0,
            dont_frag: true,
        }
        .emit(&mut buf[14..]);
        self.tx.push(Frame { addr, len: (TCP_AT + len) as u32 });
        self.stack.counters.tcp_sent += 1;
        Ok(())
    }
}
