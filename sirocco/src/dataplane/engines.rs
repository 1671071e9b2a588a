//! The engine threads: spawned one per queue, pinned to their CPUs, watched until it is time
//! to stop, then joined and their counters and applications collected.

use super::control::{Control, Shared};
use super::metrics::{Endpoint, Sources};
use super::open::Opened;
use super::{Options, Outcome, Until};
use crate::signals;
use engine::metrics::ConnsRequest;
use engine::{Counters, DropReason, Engine, EngineConfig, Samples, Service, Strays};
use io::filter::Filter;
use io::iface;
use io::pcap::Capture;
use io::xsk::XskStats;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What an engine thread returns: its counters, its application, whether it was pinned, and
/// its socket's statistics.
type Finished<A> = (Counters, A, bool, XskStats);

/// The engines while they run.
pub(super) struct Running<A> {
    filter: Option<Filter>,
    /// Busy polling and the interface's knobs, put back when this drops.
    busy: Option<super::busy_poll::InForce>,
    held: Option<ctl::client::Held>,
    capture: Option<Capture>,
    stop: Arc<AtomicBool>,
    epoch: Instant,
    handles: Vec<JoinHandle<Finished<A>>>,
    snapshots: Vec<Arc<Mutex<Counters>>>,
    /// The applications' counters, published for the metrics endpoint.
    app_snapshots: Vec<Arc<Mutex<Samples>>>,
    /// Where each engine is asked for its connections.
    conns: Vec<Arc<ConnsRequest>>,
    metrics: Option<Endpoint>,
    control: Option<Control>,
}

/// Starts an engine thread per opened queue, each running `make_app(queue)`.
pub(super) fn spawn<A, F>(
    opened: Opened,
    opts: &Options,
    mut make_app: F,
    metrics: Option<Endpoint>,
    control: Option<Control>,
) -> Result<Running<A>, String>
where
    A: Service + Send + 'static,
    F: FnMut(u32) -> A,
{
    let Opened { ifc, owns_alone, owns_alone6, filter, ports, held, busy } = opened;
    let (capture, tap) = match &opts.pcap {
        Some(p) => {
            let (c, t) = Capture::create(p).map_err(|e| format!("cannot create capture file: {e}"))?;
            (Some(c), Some(t))
        }
        None => (None, None),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let epoch = Instant::now();
    // Engines go on the CPUs the process was given (taskset, a cpuset), queue i on the i-th.
    let allowed = iface::allowed_cpus();
    if let Some(a) = metrics.as_ref().and_then(Endpoint::local_addr) {
        if !opts.quiet {
            tracing::info!("metrics on http://{a}/metrics");
        }
    }
    if let Some(c) = control.as_ref().filter(|_| !opts.quiet) {
        tracing::info!("control socket {} (sirocco top, sirocco ss)", c.path().display());
    }
    let mut running = Running {
        filter,
        busy,
        held,
        capture,
        stop,
        epoch,
        handles: Vec::new(),
        snapshots: Vec::new(),
        app_snapshots: Vec::new(),
        conns: Vec::new(),
        metrics,
        control,
    };
    // Segments of a connection that reach another engine's queue go round the engines to the
    // one that holds it (engine::strays).
    let ring = Strays::new(ports.len());
    // So are the answers to one engine's ARP and neighbour solicitations.
    let neighbours = (ports.len() > 1).then(engine::neighbour_cache::SharedNeighbours::new);
    for (q, port) in ports.into_iter().enumerate() {
        let mut app = make_app(q as u32);
        let strays = ring.link(q);
        let neighbours = neighbours.clone();
        let mut ecfg =
            EngineConfig::new(opts.addr.unwrap_or(wire::Ipv4Addr::UNSPECIFIED), ifc.mac, owns_alone, &ifc.name);
        ecfg.addr = opts.addr;
        if let Some(a) = opts.addr6 {
            ecfg = ecfg.with_ipv6(a, owns_alone6);
        }
        ecfg.mtu = ifc.mtu;
        ecfg.batch = opts.batch;
        ecfg.idle_spins = opts.idle_spins;
        ecfg.loss_ppm = opts.loss_ppm;
        let cpu = opts.cpus.as_ref().and_then(|c| c.get(q).copied()).unwrap_or(allowed[q % allowed.len()]);
        let snap = Arc::new(Mutex::new(Counters::default()));
        running.snapshots.push(snap.clone());
        // The application's counters are copied out only if someone reads them.
        let readers = running.metrics.is_some() || running.control.is_some();
        let app_snap = readers.then(|| Arc::new(Mutex::new(Samples::default())));
        running.app_snapshots.extend(app_snap.clone());
        let conns = running.control.is_some().then(|| Arc::new(ConnsRequest::default()));
        running.conns.extend(conns.clone());
        let (stop, tap) = (running.stop.clone(), tap.clone());
        let h = std::thread::Builder::new().name(format!("sirocco-q{q}")).spawn(move || {
            let pinned = iface::pin_thread(cpu).is_ok();
            let mut engine = Engine::new(port, ecfg, &app);
            engine.set_strays(strays);
            if let Some(n) = neighbours {
                engine.set_shared_neighbours(n);
            }
            engine.set_epoch(epoch);
            engine.set_snapshot(snap);
            if let Some(a) = app_snap {
                engine.set_app_snapshot(a);
            }
            if let Some(c) = conns {
                engine.set_conns_request(c);
            }
            if let Some(t) = tap {
                engine.set_capture(t);
            }
            engine.run(&mut app, &stop);
            let xsk = engine.port().stats();
            (*engine.counters(), app, pinned, xsk)
        });
        match h {
            Ok(h) => running.handles.push(h),
            Err(e) => {
                // Stop the ones already started before the filter goes.
                running.stop.store(true, Ordering::SeqCst);
                let _ = running.collect(true);
                return Err(format!("cannot start engine thread: {e}"));
            }
        }
    }
    Ok(running)
}

/// How long the watching loop sleeps when nothing asks: the granularity of `--duration` and
/// of noticing an engine that ended.
const WATCH_US: u32 = 100_000;

impl<A> Running<A> {
    /// Waits until `until`, a stop signal, or an engine thread ending; prints per-engine
    /// rates every second with `--stats`.
    pub(super) fn watch(&self, opts: &Options, until: Until) {
        let (deadline, count) = match until {
            Until::Signal => (None, None),
            Until::Elapsed(d) => (Some(self.epoch + d), None),
            Until::CountedDown(c, d) => (Some(self.epoch + d), Some(c)),
        };
        let mut last_print = Instant::now();
        let mut last: Vec<Counters> = vec![Counters::default(); self.snapshots.len()];
        let mut hinted = false;
        // The loop sleeps on the metrics and control sockets, so a request is answered at
        // once, and wakes ten times a second otherwise (a signal ends the sleep early): an
        // idle server's watching thread wakes no more than that.
        let fds: Vec<_> = self.metrics.iter().map(|m| m.fd()).chain(self.control.iter().map(|c| c.fd())).collect();
        while !signals::stop_requested()
            && deadline.is_none_or(|d| Instant::now() < d)
            && !self.handles.iter().any(|h| h.is_finished())
            && count.as_ref().is_none_or(|c| c.load(Ordering::SeqCst) > 0)
            && self.held.as_ref().is_none_or(|h| h.ended().is_none())
        {
            let left =
                deadline.map_or(u128::from(WATCH_US), |d| d.saturating_duration_since(Instant::now()).as_micros());
            io::sched::wait_readable(&fds, left.clamp(1, u128::from(WATCH_US)) as u32);
            if let Some(m) = &self.metrics {
                m.poll(&mut || self.sources());
            }
            if let Some(c) = &self.control {
                let shared = Shared { counters: &self.snapshots, apps: &self.app_snapshots, conns: &self.conns };
                c.poll(&shared, &|| self.filter.as_ref().map(Filter::verdicts));
            }
            if !hinted {
                let unfinished = DropReason::ChecksumUnfinished as usize;
                hinted =
                    self.snapshots.iter().any(|s| s.lock().unwrap_or_else(|e| e.into_inner()).drops[unfinished] > 0);
                if hinted {
                    tracing::info!("{}", engine::counters::CHECKSUM_HINT);
                }
            }
            if opts.stats && last_print.elapsed() >= Duration::from_secs(1) {
                let dt = last_print.elapsed().as_secs_f64();
                last_print = Instant::now();
                for (q, s) in self.snapshots.iter().enumerate() {
                    let c = *s.lock().unwrap_or_else(|e| e.into_inner());
                    print_rates(q, &c, &last[q], dt);
                    last[q] = c;
                }
            }
        }
    }

    /// What the engines and the filter published last, for the metrics endpoint.
    fn sources(&self) -> Sources {
        let engines = self
            .snapshots
            .iter()
            .enumerate()
            .map(|(q, s)| {
                let c = *s.lock().unwrap_or_else(|e| e.into_inner());
                let a = self.app_snapshots.get(q).map(|a| a.lock().unwrap_or_else(|e| e.into_inner()).clone());
                (c, a.unwrap_or_default())
            })
            .collect();
        let busy_poll = self.busy.as_ref().is_some_and(|b| b.on);
        Sources { engines, filter: self.filter.as_ref().map(Filter::verdicts), busy_poll }
    }

    /// Stops the engines, joins them, detaches the filter and finishes the capture.
    pub(super) fn collect(self, quiet: bool) -> Result<Outcome<A>, String> {
        self.stop.store(true, Ordering::SeqCst);
        let mut engines = Vec::new();
        let mut xsk = Vec::new();
        let mut failed = false;
        for h in self.handles {
            match h.join() {
                Ok((c, app, pinned, x)) => {
                    xsk.push(x);
                    if !pinned && !quiet {
                        tracing::warn!("an engine could not be pinned to its CPU");
                    }
                    engines.push((c, app));
                }
                Err(_) => failed = true,
            }
        }
        let filter_verdicts = self.filter.as_ref().map_or((0, 0), Filter::verdicts);
        if let Some(f) = self.filter {
            f.detach();
        }
        if let Some(why) = self.held.as_ref().and_then(|h| h.ended()) {
            return Err(format!("sirocco ctl ended this server's grant ({why})"));
        }
        let captured = match self.capture {
            Some(c) => Some(c.finish().map_err(|e| format!("writing the capture: {e}"))?),
            None => None,
        };
        if failed {
            return Err("an engine thread failed".into());
        }
        Ok(Outcome { engines, xsk, filter_verdicts, captured })
    }
}

fn print_rates(q: usize, c: &Counters, last: &Counters, dt: f64) {
    let mean_batch = if c.batches > last.batches {
        (c.rx_packets - last.rx_packets) as f64 / (c.batches - last.batches) as f64
    } else {
        0.0
    };
    println!(
        "q{q}: rx {:.0} pps tx {:.0} pps, drops {}, mean batch {mean_batch:.1}",
        (c.rx_packets - last.rx_packets) as f64 / dt,
        (c.tx_packets - last.tx_packets) as f64 / dt,
        c.total_drops(),
    );
}
