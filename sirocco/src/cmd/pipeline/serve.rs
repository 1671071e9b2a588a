//! Running a script: its workers' pipelines on the interfaces it names, each worker on its
//! thread and CPU, until a signal or `--duration`.

use super::xdp_port::XdpPort;
use super::{control, report, PipelineArgs};
use io::whole::WholePort;
use pipeline::driver;
use pipeline::modules::Registry;
use pipeline::pipeline::{Clock, Pipeline};
use pipeline::script::{self, Script, Value};
use pipeline::workers;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Each worker's CPU: `--cpus` (one per worker, in declaration order), else the script's
/// `worker NAME(cpu=N)`; a script without workers has one, not pinned unless `--cpus`.
fn worker_cpus(a: &PipelineArgs, s: &Script) -> Result<Vec<Option<usize>>, String> {
    let n = s.workers.len().max(1);
    let mut cpus = Vec::new();
    for w in &s.workers {
        match w.args.as_slice() {
            [arg] if arg.key.as_deref() == Some("cpu") => match arg.value {
                Value::Int(c) if c >= 0 => cpus.push(Some(c as usize)),
                _ => return Err(format!("line {}: cpu must be a CPU number", w.line)),
            },
            _ => return Err(format!("line {}: a worker takes cpu=N", w.line)),
        }
    }
    if cpus.is_empty() {
        cpus.push(None);
    }
    if let Some(c) = &a.cpus {
        if c.len() != n {
            return Err(format!("--cpus: this pipeline runs {n} worker(s); give one CPU each"));
        }
        cpus = c.iter().map(|&c| Some(c)).collect();
    }
    let wanted: Vec<usize> = cpus.iter().flatten().copied().collect();
    io::iface::check_cpus(&wanted)?;
    Ok(cpus)
}

pub(super) fn serve(a: PipelineArgs) -> Result<(), String> {
    let path = a.script.clone().ok_or("--script FILE is required (or a command: show, stats, add, remove)")?;
    let file = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{file}: {e}"))?;
    let s = script::parse(&text).map_err(|e| format!("{file}: {e}"))?;
    let cpus = worker_cpus(&a, &s).map_err(|e| format!("{file}: {e}"))?;
    io::iface::require_root().map_err(|e| e.to_string())?;

    // The whole script is checked, with stand-in ports, before any interface is touched.
    let reg = Registry::default();
    let built = workers::build(&s, &reg, a.buffers as usize).map_err(|e| format!("{file}: {e}"))?;
    let names: Vec<&String> = built.iter().flat_map(|b| &b.ports).collect();
    if names.is_empty() {
        return Err(format!("{file}: no PortInc or PortOut: the pipeline would touch no interface"));
    }
    if built.len() > 1 && a.control.is_some() {
        return Err(
            "--control serves pipelines of one worker for now; declare one worker or leave --control out".into()
        );
    }
    let ports = names.len();
    let mut workers: Vec<(String, Pipeline, Vec<String>)> =
        built.into_iter().map(|b| (b.name, b.pipeline, b.ports)).collect();
    let ctl = a.control.as_deref().map(control::Control::bind).transpose()?;
    let mut fds: Vec<Vec<RawFd>> = Vec::new();
    let mut opened = Vec::new();
    for (_, p, names) in &mut workers {
        let mut f: Vec<RawFd> = ctl.iter().map(|c| c.fd()).collect();
        for n in names.iter() {
            let (port, what) = WholePort::open(n, a.copy)?;
            f.extend(port.fds());
            opened.push(what);
            p.set_port(n, Box::new(XdpPort(port)));
        }
        if f.len() > 16 {
            return Err("more than 16 receive queues over one worker's ports".into());
        }
        fds.push(f);
    }
    for what in opened {
        tracing::info!("pipeline port {what}");
    }
    for (w, p, _) in &workers {
        for warning in &p.warnings {
            tracing::warn!("{file}: {w}: {warning}");
        }
    }
    let placed: Vec<String> = workers
        .iter()
        .zip(&cpus)
        .map(|((w, _, _), c)| format!("{w} on {}", c.map_or("any CPU".to_string(), |c| format!("CPU {c}"))))
        .collect();
    tracing::info!(
        "pipeline {file} running: {} modules, {} port(s), {} buffers per worker, {} B of metadata, {}{}",
        workers.iter().map(|(_, p, _)| p.stats().count()).sum::<usize>(),
        ports,
        a.buffers,
        workers.iter().map(|(_, p, _)| p.meta_used).max().unwrap_or(0),
        placed.join(", "),
        a.control.as_ref().map(|c| format!(", control on {}", c.display())).unwrap_or_default()
    );
    let until = a.duration.map(|d| Instant::now() + Duration::from_secs_f64(d.max(0.0)));
    let looping = Looping { until, idle_spins: a.idle_spins };
    if let [(_, p, _)] = workers.as_mut_slice() {
        if let Some(c) = cpus[0] {
            io::iface::pin_thread(c).map_err(|e| format!("pinning the worker to CPU {c}: {e}"))?;
        }
        run_worker(p, &fds[0], ctl.as_ref(), &reg, &looping);
    } else {
        let reg = &reg;
        let looping = &looping;
        let failed: Vec<String> = std::thread::scope(|sc| {
            let handles: Vec<_> = workers
                .iter_mut()
                .zip(&fds)
                .zip(&cpus)
                .map(|(((w, p, _), fds), &cpu)| {
                    sc.spawn(move || {
                        if let Some(c) = cpu {
                            io::iface::pin_thread(c).map_err(|e| format!("pinning worker {w} to CPU {c}: {e}"))?;
                        }
                        run_worker(p, fds, None, reg, looping);
                        Ok::<(), String>(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().unwrap_or_else(|_| Err("a worker panicked".into())).err())
                .collect()
        });
        if let Some(e) = failed.into_iter().next() {
            return Err(e);
        }
    }
    report::report(&workers, a.counters.as_deref())
}

/// When a worker stops and when it sleeps.
struct Looping {
    until: Option<Instant>,
    idle_spins: u32,
}

/// Where a worker runs: its ports' sockets to sleep on, the control socket, the deadline.
struct Worker<'a> {
    fds: &'a [RawFd],
    ctl: Option<&'a control::Control>,
    reg: &'a Registry,
    until: Option<Instant>,
}

impl driver::Host for Worker<'_> {
    fn stop(&self) -> bool {
        crate::signals::stop_requested() || self.until.is_some_and(|u| Instant::now() >= u)
    }

    fn wait(&mut self, us: u32, ports: bool) {
        io::sched::wait_readable(if ports { self.fds } else { &[] }, us);
    }

    fn serve(&mut self, p: &mut Pipeline) {
        if let Some(c) = self.ctl {
            c.serve(p, self.reg);
        }
    }
}

fn run_worker(p: &mut Pipeline, fds: &[RawFd], ctl: Option<&control::Control>, reg: &Registry, l: &Looping) {
    p.set_clock(Box::new(CpuClock(Instant::now())));
    driver::drive(p, l.idle_spins, &mut Worker { fds, ctl, reg, until: l.until });
}

/// Nanoseconds from the monotonic clock, cycles from the CPU's counter.
struct CpuClock(Instant);

impl Clock for CpuClock {
    fn now(&self) -> pipeline::Instant {
        pipeline::Instant::from_nanos(self.0.elapsed().as_nanos() as u64)
    }

    fn cycles(&self) -> u64 {
        io::sched::cycles()
    }
}
