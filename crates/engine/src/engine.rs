//! The run-to-completion loop: receive a bounded batch, run each frame through the receive
//! path and the application, transmit the replies, let the application originate, run the
//! timers, kick TX; sleep only when there is nothing to do.

use crate::config::{EngineConfig, IdlePolicy};
use crate::counters::{Counters, DropReason};
use crate::metrics::{ConnsRequest, Samples};
use crate::node::Node;
use crate::rx::{PortSet, Received, Rx, Served};
use crate::service::Service;
use crate::strays::StrayLink;
use crate::tx::{Out, TxQueue};
use io::pcap::CaptureTap;
use io::{Frame, Port};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time;
use timer::{Duration, Instant, TimerWheel};

#[derive(Clone, Copy)]
enum Timer {
    PublishCounters,
}

const PUBLISH: Duration = Duration::from_millis(200);
/// Frames of a batch whose headers are being loaded ahead of the one being processed.
const PREFETCH: usize = 4;
/// Frames ahead whose application lookups are prefetched (headers by then in cache).
const HINT_AHEAD: usize = 2;
/// How long to wait for a full device queue before transmitting again.
const TX_RETRY_US: u32 = 50;

/// One engine: a port, the node state, and the loop that drives them.
pub struct Engine<P: Port> {
    port: P,
    node: Node,
    served: Served,
    rx: Vec<Frame>,
    tx: TxQueue,
    timers: TimerWheel<Timer>,
    tap: Option<CaptureTap>,
    snapshot: Option<Arc<Mutex<Counters>>>,
    /// Where the application's own counters are published, if anyone reads them.
    app_snapshot: Option<Arc<Mutex<Samples>>>,
    /// Where the application's connections are given when asked for.
    conns: Option<Arc<ConnsRequest>>,
    started: time::Instant,
    last_rx: usize,
    /// Frames kept for the application until `produce` returns, with their TCP payload's
    /// place.
    held: Vec<(Frame, u16, u16)>,
    /// The port's lent region (if any) was handed to the application.
    lent: bool,
    /// The ring of engines that segments of connections held elsewhere go round.
    strays: Option<StrayLink>,
    /// Frames taken from the inbox in one iteration (kept, so nothing is allocated then).
    stray_frames: Vec<(Frame, u8)>,
}

impl<P: Port> Engine<P> {
    /// An engine on `port` serving the UDP and TCP ports `app` asks for.
    pub fn new<A: Service + ?Sized>(port: P, cfg: EngineConfig, app: &A) -> Self {
        let batch = cfg.batch.max(1);
        let mut served = Served { udp: PortSet::new(), tcp: PortSet::new() };
        for p in app.udp_ports() {
            served.udp.insert(p);
        }
        for p in app.tcp_ports() {
            served.tcp.insert(p);
        }
        let mut timers = TimerWheel::new(1024, 64, 0);
        timers.schedule(PUBLISH.as_millis(), Timer::PublishCounters);
        Engine {
            port,
            node: Node::new(cfg),
            served,
            rx: vec![Frame::new(0, 0); batch],
            tx: TxQueue::with_capacity(batch * 2),
            timers,
            tap: None,
            snapshot: None,
            app_snapshot: None,
            conns: None,
            started: time::Instant::now(),
            last_rx: 0,
            held: Vec::with_capacity(batch),
            lent: false,
            strays: None,
            stray_frames: Vec::with_capacity(batch),
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

    /// Publishes the application's counters ([`Service::metrics`]) to `shared` with the
    /// engine's (for the metrics endpoint).
    pub fn set_app_snapshot(&mut self, shared: Arc<Mutex<Samples>>) {
        self.app_snapshot = Some(shared);
    }

    /// Answers requests for the application's connections through `r`.
    pub fn set_conns_request(&mut self, r: Arc<ConnsRequest>) {
        self.conns = Some(r);
    }

    /// Joins the ring of this server's engines ([`crate::strays`]): TCP segments of connections
    /// this engine does not hold go to the next engine instead of being answered with a
    /// reset, and the previous engine's are taken in.
    pub fn set_strays(&mut self, link: StrayLink) {
        if link.engines() > 1 {
            self.strays = Some(link);
        }
    }

    /// Shares what this engine learns of its neighbours with the server's other engines, and
    /// what they learn with it ([`crate::neighbour_cache::SharedNeighbours`]).
    pub fn set_shared_neighbours(&mut self, n: Arc<crate::neighbour_cache::SharedNeighbours>) {
        self.node.shared = Some(n);
    }

    /// Sets the clock origin, so several engines (and their applications) share one time base.
    pub fn set_epoch(&mut self, epoch: time::Instant) {
        self.started = epoch;
    }

    /// The counters so far.
    pub fn counters(&self) -> &Counters {
        &self.node.counters
    }

    /// The port.
    pub fn port(&self) -> &P {
        &self.port
    }

    /// The port, mutable (tests and tools).
    pub fn port_mut(&mut self) -> &mut P {
        &mut self.port
    }

    /// One loop iteration at `now` (on any monotonic clock). Returns the frames received
    /// plus frames the application originated: 0 means idle.
    pub fn poll<A: Service + ?Sized>(&mut self, now: Instant, app: &mut A) -> usize {
        if !self.lent {
            self.lent = true;
            if let Some(r) = self.port.region() {
                app.lend(r);
            }
            app.forward_strays(self.strays.is_some());
        }
        let n = self.take_strays(now, app) + self.receive(now, app);
        // Replies first, so what the application originates cannot starve them of TX slots.
        self.tx.flush(&mut self.port, &mut self.node, self.tap.as_ref());
        let produced = {
            // Bounded by the free frames too: a segment TCP counts as sent but that finds no
            // frame is lost and costs a retransmission.
            let room = self.port.tx_room().min(self.port.free_frames());
            let mut out =
                Out { port: &mut self.port, node: &mut self.node, tx: &mut self.tx, room, now, held: &self.held };
            app.produce(now, &mut out)
        };
        for (f, _, _) in self.held.drain(..) {
            self.port.free(f);
        }
        self.tx.flush(&mut self.port, &mut self.node, self.tap.as_ref());
        self.run_timers(now, app);
        self.port.flush();
        n + produced
    }

    /// Takes a batch from RX and runs each frame through the receive path; returns how many
    /// frames it took.
    fn receive<A: Service + ?Sized>(&mut self, now: Instant, app: &mut A) -> usize {
        self.node.counters.loops += 1;
        let n = self.port.recv(&mut self.rx);
        self.last_rx = n;
        if n > 0 {
            self.node.counters.batch(n);
        }
        for &f in &self.rx[..n.min(PREFETCH)] {
            self.port.prefetch(f);
        }
        for i in 0..n {
            let f = self.rx[i];
            if let Some(&next) = self.rx[..n].get(i + PREFETCH) {
                self.port.prefetch(next);
            }
            // The frame two ahead has had its headers on the way for two frames: where its
            // lookups will go (TCP's connection and TIME-WAIT tables) is known now.
            if let Some(&soon) = self.rx[..n].get(i + HINT_AHEAD) {
                app.hints(self.port.data(soon), &mut |p| io::umem::prefetch_hint(p));
            }
            if self.node.impaired() {
                self.port.free(f);
                self.node.counters.count_drop(DropReason::Impaired);
                continue;
            }
            let c = &mut self.node.counters;
            c.rx_packets += 1;
            c.rx_bytes += u64::from(f.len);
            if let Some(tap) = &self.tap {
                if !tap.offer(self.port.data(f)) {
                    c.capture_dropped += 1;
                }
            }
            let rx =
                Rx { node: &mut self.node, served: &self.served, app: &mut *app, now, view: self.held.len() as u32 };
            let r = rx.frame(self.port.data_mut(f), f.len as usize);
            self.settle(f, r, 0);
        }
        n
    }

    /// What becomes of a frame after the receive path: sent back, held for the application,
    /// handed to the next engine (after `hops` engines), or freed.
    fn settle(&mut self, f: Frame, r: Received, hops: u8) {
        match r {
            Received::Reply(len) => self.tx.push(Frame::new(f.addr, len as u32)),
            Received::Hold { at, len } => self.held.push((f, at, len)),
            Received::Done => self.port.free(f),
            Received::Stray => {
                let c = &mut self.node.counters;
                match &self.strays {
                    Some(s) if s.forward(&self.port.data(f)[..f.len as usize], hops) => c.tcp_strays_out += 1,
                    _ => c.tcp_strays_lost += 1,
                }
                self.port.free(f);
            }
        }
    }

    /// Takes the segments the previous engine handed over, each into a frame of this port's,
    /// through the receive path as if this queue had received it. The last engine round the
    /// ring answers as TCP answers a segment of no connection.
    fn take_strays<A: Service + ?Sized>(&mut self, now: Instant, app: &mut A) -> usize {
        // Only the check on every loop: the link is cloned (an atomic increment) when there
        // is something to take.
        if !self.strays.as_ref().is_some_and(StrayLink::pending) {
            return 0;
        }
        let Some(link) = self.strays.clone() else { return 0 };
        let last_hop = (link.engines() - 1) as u8;
        let mut taken = std::mem::take(&mut self.stray_frames);
        let mut lost = 0;
        link.take(self.rx.len(), &mut |data, hops| {
            let Some(f) = self.port.alloc() else {
                lost += 1;
                return;
            };
            let len = data.len().min(self.port.frame_capacity());
            self.port.data_mut(f)[..len].copy_from_slice(&data[..len]);
            taken.push((Frame::new(f.addr, len as u32), hops + 1));
        });
        self.node.counters.tcp_strays_lost += lost;
        let n = taken.len();
        for &(f, hops) in &taken {
            self.node.counters.tcp_strays_in += 1;
            let last = hops >= last_hop;
            if last {
                app.forward_strays(false);
            }
            let rx =
                Rx { node: &mut self.node, served: &self.served, app: &mut *app, now, view: self.held.len() as u32 };
            let r = rx.frame(self.port.data_mut(f), f.len as usize);
            if last {
                app.forward_strays(true);
            }
            self.settle(f, r, hops);
        }
        taken.clear();
        self.stray_frames = taken;
        n
    }

    fn run_timers<A: Service + ?Sized>(&mut self, now: Instant, app: &A) {
        // The wheel's ticks are milliseconds.
        let now_ms = now.as_millis();
        let mut publish = false;
        self.timers.advance(now_ms, |t| match t {
            Timer::PublishCounters => publish = true,
        });
        if publish {
            self.publish(app, false);
            self.timers.schedule(now_ms + PUBLISH.as_millis(), Timer::PublishCounters);
        }
    }

    /// Runs until `stop` is set: polls while frames arrive; after an empty receive it
    /// busy-polls, yields or spins up to `idle_spins` times, then sleeps in poll() until a
    /// frame arrives.
    pub fn run<A: Service + ?Sized>(&mut self, app: &mut A, stop: &AtomicBool) {
        let mut idle = 0u32;
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::ZERO + Duration::from(self.started.elapsed());
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
                self.pause();
                continue;
            }
            if idle < self.node.cfg.idle_spins {
                idle += 1;
                self.pause();
                continue;
            }
            idle = 0;
            self.node.counters.sleeps += 1;
            let mut ms = app.idle_wait().as_millis().clamp(1, 100) as i32;
            if let Some(due) = app.next_deadline() {
                let now = Instant::ZERO + Duration::from(self.started.elapsed());
                if due <= now {
                    continue; // a timer (a paced segment) is due: run it, do not sleep
                }
                ms = ms.min(due.since(now).as_micros().div_ceil(1000).max(1) as i32);
            }
            match app.wake_fd() {
                Some(fd) => self.port.wait_with(ms, fd),
                None => self.port.wait(ms),
            }
        }
        self.publish(app, true);
    }

    /// Copies the counters (and the application's) to whoever reads them; `wait`: take the
    /// locks even if a reader holds them (the last publication), else skip this time.
    fn publish<A: Service + ?Sized>(&self, app: &A, wait: bool) {
        if let Some(mut g) = self.snapshot.as_deref().and_then(|m| take(m, wait)) {
            *g = self.node.counters;
        }
        if let Some(mut g) = self.app_snapshot.as_deref().and_then(|m| take(m, wait)) {
            g.clear();
            app.metrics(&mut g);
            for (name, help, v) in self.port.metrics() {
                g.counter(name, help, v);
            }
        }
        if let Some(r) = self.conns.as_deref() {
            if r.wanted.swap(false, Ordering::AcqRel) {
                if let Some(mut g) = take(&r.answer, true) {
                    g.1.clear();
                    app.connections(&mut g.1);
                    g.0 += 1;
                }
            }
        }
    }

    /// Between two iterations that found no input: run the queue's receive work here if the
    /// port busy-polls, else yield the CPU if the policy says so (that work may need it).
    fn pause(&mut self) {
        if self.port.busy_poll() {
            return;
        }
        if self.node.cfg.idle == IdlePolicy::Yield {
            self.node.counters.yields += 1;
            io::sched::yield_now();
        }
    }
}

/// The lock of `m`: waited for if `wait`, else only if free.
fn take<T>(m: &Mutex<T>, wait: bool) -> Option<std::sync::MutexGuard<'_, T>> {
    if wait {
        m.lock().ok()
    } else {
        m.try_lock().ok()
    }
}
