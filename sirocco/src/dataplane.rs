//! Sets up a dataplane on an interface and runs one engine per queue: the control-plane
//! steps every server shares (privilege, interface, filter, grants, sockets, threads, stats,
//! capture, clean exit).

use crate::signals;
use engine::{App, Counters, Engine, EngineConfig};
use io::filter::{AttachMode, Filter};
use io::iface::{self, Interface};
use io::pcap::Capture;
use io::xsk::{BindMode, XskConfig, XskPort};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wire::Ipv4Addr;

/// Options every dataplane command takes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Interface name.
    pub iface: String,
    /// Address served.
    pub addr: Ipv4Addr,
    /// Queues to serve (default: all of the interface's).
    pub queues: Option<u32>,
    /// Receive batch bound.
    pub batch: usize,
    /// Print counters every second.
    pub stats: bool,
    /// Write a pcap of what the dataplane receives and sends.
    pub pcap: Option<PathBuf>,
    /// CPUs to pin engines to, in queue order (default: queue i on CPU i mod #CPUs).
    pub cpus: Option<Vec<usize>>,
    /// Force AF_XDP copy mode.
    pub force_copy: bool,
    /// Print nothing but errors while running.
    pub quiet: bool,
    /// Empty receives an engine yields through before sleeping in poll().
    pub idle_spins: u32,
    /// Frames dropped on purpose, per million, each way (a testing aid).
    pub loss_ppm: u32,
    /// Frames added to each UMEM beyond what RX and TX need (pinned by the application).
    pub extra_frames: usize,
}

/// What the engines return when they stop.
pub struct Outcome<A> {
    /// Per-engine counters and application state, in queue order.
    pub engines: Vec<(Counters, A)>,
    /// Per-socket kernel statistics (drops for a full RX ring or an empty fill ring).
    pub xsk: Vec<io::xsk::XskStats>,
    /// Packets the XDP filter redirected to sirocco and passed to the kernel.
    pub filter_verdicts: (u64, u64),
    /// Frames written to the capture.
    pub captured: Option<u64>,
}

impl<A> Outcome<A> {
    /// Counters summed over engines.
    pub fn total(&self) -> Counters {
        let mut t = Counters::default();
        for (c, _) in &self.engines {
            t.add(c);
        }
        t
    }
}

/// When to stop (besides SIGINT/SIGTERM).
pub enum Until {
    /// Only on a signal.
    Signal,
    /// After this long, or earlier on a signal.
    Elapsed(Duration),
    /// When the counter reaches zero (the applications count themselves down when they are
    /// finished), after at most this long, or earlier on a signal.
    CountedDown(Arc<AtomicUsize>, Duration),
}

/// A protocol/port pair to grant on the served address (port 0: all ports).
pub type Grant = (u8, u16);

/// Sets up the interface and runs `make_app(queue)` on one engine per queue until `until`.
pub fn run<A, F>(
    opts: &Options,
    grants: &[Grant],
    mut make_app: F,
    until: Until,
    what: &str,
) -> Result<Outcome<A>, String>
where
    A: App + Send + 'static,
    F: FnMut(u32) -> A,
{
    iface::require_root().map_err(|e| e.to_string())?;
    let ifc = Interface::lookup(&opts.iface).map_err(|e| e.to_string())?;
    let queues = opts.queues.unwrap_or(ifc.rx_queues);
    if queues == 0 || queues > ifc.rx_queues {
        return Err(format!("{} has {} receive queue(s); cannot serve {queues}", ifc.name, ifc.rx_queues));
    }
    let owns_alone = !ifc.kernel_has(opts.addr).map_err(|e| format!("reading addresses of {}: {e}", ifc.name))?;

    let mut filter = Filter::attach(&ifc.name, ifc.index).map_err(|e| e.to_string())?;
    // From here on, returning drops `filter`, which detaches it: no error leaves it behind.
    if owns_alone {
        filter.own_alone(opts.addr).map_err(|e| e.to_string())?;
    }
    for &(proto, port) in grants {
        filter.grant(opts.addr, proto, port).map_err(|e| e.to_string())?;
    }
    let base = XskConfig::default();
    let xcfg = XskConfig { force_copy: opts.force_copy, frames: base.frames + opts.extra_frames, ..base };
    let mut ports = Vec::new();
    for q in 0..queues {
        // A socket the last process on this queue had is torn down by the kernel after that
        // process exits; until then binding says EBUSY. Wait for it a bounded time.
        let mut tries = 0;
        let port = loop {
            match XskPort::open(ifc.index, q, xcfg) {
                // The port adds context to the error, so EBUSY shows in its text only.
                Err(e) if e.to_string().ends_with(&format!("(os error {})", libc::EBUSY)) && tries < 30 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                r => break r.map_err(|e| format!("opening an AF_XDP socket on {} queue {q}: {e}", ifc.name))?,
            }
        };
        filter.bind_queue(q, port.raw_fd()).map_err(|e| e.to_string())?;
        ports.push(port);
    }
    let mode = ports.first().map(|p| p.mode()).unwrap_or(BindMode::Copy);
    if !opts.quiet {
        eprintln!(
            "sirocco: {what} on {} {} ({}), {queues} queue(s), AF_XDP {} mode, XDP filter in {} mode, UMEM on {}",
            ifc.name,
            opts.addr,
            if owns_alone {
                "address owned by sirocco: it answers ARP and ping"
            } else {
                "address shared with the kernel"
            },
            if mode == BindMode::ZeroCopy { "zero-copy" } else { "copy" },
            if filter.mode() == AttachMode::Driver { "driver" } else { "generic" },
            if ports.iter().all(|p| p.hugepages()) { "hugepages" } else { "ordinary pages" },
        );
    }

    let (capture, tap) = match &opts.pcap {
        Some(p) => {
            let (c, t) = Capture::create(p).map_err(|e| format!("cannot create capture file: {e}"))?;
            (Some(c), Some(t))
        }
        None => (None, None),
    };

    let stop = Arc::new(AtomicBool::new(false));
    let epoch = Instant::now();
    let ncpu = iface::cpus();
    let mut handles = Vec::new();
    let mut snapshots = Vec::new();
    for (q, port) in ports.into_iter().enumerate() {
        let mut app = make_app(q as u32);
        let mut ecfg = EngineConfig::new(opts.addr, ifc.mac, owns_alone, &ifc.name);
        ecfg.mtu = ifc.mtu;
        ecfg.batch = opts.batch;
        ecfg.idle_spins = opts.idle_spins;
        ecfg.loss_ppm = opts.loss_ppm;
        let cpu = opts.cpus.as_ref().and_then(|c| c.get(q).copied()).unwrap_or(q % ncpu);
        let snap = Arc::new(Mutex::new(Counters::default()));
        snapshots.push(snap.clone());
        let stop = stop.clone();
        let tap = tap.clone();
        let h = std::thread::Builder::new()
            .name(format!("sirocco-q{q}"))
            .spawn(move || {
                let pinned = iface::pin_thread(cpu).is_ok();
                let mut engine = Engine::new(port, ecfg, &app);
                engine.set_epoch(epoch);
                engine.set_snapshot(snap);
                if let Some(t) = tap {
                    engine.set_capture(t);
                }
                engine.run(&mut app, &stop);
                let xsk = engine.port().stats();
                (*engine.counters(), app, pinned, xsk)
            })
            .map_err(|e| format!("cannot start engine thread: {e}"))?;
        handles.push(h);
    }
    drop(tap);

    let (deadline, count) = match until {
        Until::Signal => (None, None),
        Until::Elapsed(d) => (Some(epoch + d), None),
        Until::CountedDown(c, d) => (Some(epoch + d), Some(c)),
    };
    let mut last_print = Instant::now();
    let mut last: Vec<Counters> = vec![Counters::default(); snapshots.len()];
    while !signals::stop_requested()
        && deadline.is_none_or(|d| Instant::now() < d)
        && !handles.iter().any(|h| h.is_finished())
        && count.as_ref().is_none_or(|c| c.load(Ordering::SeqCst) > 0)
    {
        std::thread::sleep(Duration::from_millis(20));
        if opts.stats && last_print.elapsed() >= Duration::from_secs(1) {
            let dt = last_print.elapsed().as_secs_f64();
            last_print = Instant::now();
            for (q, s) in snapshots.iter().enumerate() {
                let c = *s.lock().unwrap();
                println!(
                    "q{q}: rx {:.0} pps tx {:.0} pps, drops {}, mean batch {:.1}",
                    (c.rx_packets - last[q].rx_packets) as f64 / dt,
                    (c.tx_packets - last[q].tx_packets) as f64 / dt,
                    c.total_drops(),
                    if c.batches > last[q].batches {
                        (c.rx_packets - last[q].rx_packets) as f64 / (c.batches - last[q].batches) as f64
                    } else {
                        0.0
                    }
                );
                last[q] = c;
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    let mut engines = Vec::new();
    let mut xsk = Vec::new();
    let mut failed = false;
    for h in handles {
        match h.join() {
            Ok((c, app, pinned, x)) => {
                xsk.push(x);
                if !pinned && !opts.quiet {
                    eprintln!("sirocco: warning: an engine could not be pinned to its CPU");
                }
                engines.push((c, app));
            }
            Err(_) => failed = true,
        }
    }
    let filter_verdicts = filter.verdicts();
    filter.detach();
    let captured = match capture {
        Some(c) => Some(c.finish().map_err(|e| format!("writing the capture: {e}"))?),
        None => None,
    };
    if failed {
        return Err("an engine thread failed".into());
    }
    Ok(Outcome { engines, xsk, filter_verdicts, captured })
}

fn counters_json(c: &Counters) -> String {
    let fields: Vec<String> = c.pairs().iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!("{{{}}}", fields.join(","))
}

/// Writes the counters as JSON: `{"engines":[{..}],"total":{..},"filter":{..}}`.
pub fn write_counters_json<A>(out: &Outcome<A>, path: &std::path::Path) -> Result<(), String> {
    let engines: Vec<String> = out
        .engines
        .iter()
        .zip(&out.xsk)
        .map(|((c, _), x)| {
            let mut j = counters_json(c);
            j.pop();
            format!(
                "{j},\"xsk_rx_dropped\":{},\"xsk_rx_ring_full\":{},\"xsk_fill_ring_empty\":{},\"xsk_tx_invalid\":{},\"tx_kicks\":{}}}",
                x.kernel.rx_dropped, x.kernel.rx_ring_full, x.kernel.rx_fill_ring_empty_descs, x.kernel.tx_invalid_descs, x.port.tx_kicks
            )
        })
        .collect();
    let text = format!(
        "{{\"engines\":[{}],\"total\":{},\"filter\":{{\"redirected\":{},\"passed\":{}}}}}\n",
        engines.join(","),
        counters_json(&out.total()),
        out.filter_verdicts.0,
        out.filter_verdicts.1
    );
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Prints the per-engine and total counters.
pub fn print_counters<A>(out: &Outcome<A>) {
    for (q, (c, _)) in out.engines.iter().enumerate() {
        println!("engine q{q}:\n{c}");
        if let Some(x) = out.xsk.get(q) {
            println!("  {x}");
        }
    }
    if out.engines.len() > 1 {
        println!("total:\n{}", out.total());
    }
    println!(
        "xdp filter: {} redirected to sirocco, {} passed to the kernel",
        out.filter_verdicts.0, out.filter_verdicts.1
    );
    if let Some(n) = out.captured {
        println!("capture: {n} frames written");
    }
}
