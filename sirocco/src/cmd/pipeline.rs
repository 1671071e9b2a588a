//! `sirocco pipeline`: a BESS pipeline between interfaces, from a script. The interfaces the
//! script's PortInc/PortOut modules name are taken whole (every frame to the pipeline); one
//! worker runs every task in turn, run to completion.

mod control;
mod xdp_port;

use crate::dataplane::report::write_json;
use clap::Args;
use pipeline::modules::Registry;
use pipeline::pipeline::{Clock, Pipeline, Step};
use pipeline::port::{MemPort, NamedPort};
use pipeline::script::{self, Script, Value};
use pipeline::workers;
use serde_json::{json, Map, Value as Json};
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use xdp_port::XdpPort;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct PipelineCmd {
    #[command(subcommand)]
    pub action: Option<Action>,
    #[command(flatten)]
    pub run: PipelineArgs,
}

/// Talking to a running pipeline through its `--control` socket.
#[derive(clap::Subcommand)]
pub enum Action {
    /// Print the running pipeline as a script (modules, links, classes, workers).
    Show(CtlArgs),
    /// Print every module's counters and cycles per packet, every port's and class's.
    Stats {
        #[command(flatten)]
        ctl: CtlArgs,
        /// The reply as JSON, as the socket gives it.
        #[arg(long)]
        json: bool,
    },
    /// Add statements to the running pipeline: modules, and links (a link from a connected
    /// output gate replaces the old one, which puts a module into a path). Nothing in
    /// flight is lost.
    Add {
        #[command(flatten)]
        ctl: CtlArgs,
        /// The statements, one per argument (or one per line of --file).
        #[arg(value_name = "STATEMENT")]
        statements: Vec<String>,
        /// Read the statements from this file.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
    },
    /// Remove a module from the running pipeline; where it sat in a path, its upstream is
    /// joined to its downstream. Refused while it holds packets.
    Remove {
        #[command(flatten)]
        ctl: CtlArgs,
        /// The module's name.
        module: String,
    },
}

#[derive(Args)]
pub struct CtlArgs {
    /// The running pipeline's control socket (its --control).
    #[arg(long, value_name = "PATH")]
    pub control: PathBuf,
}

#[derive(Args)]
pub struct PipelineArgs {
    /// The pipeline script: modules, links, traffic classes, workers (see
    /// docs/pipeline.md; scripts/pipeline/ has examples).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Listen for `sirocco pipeline show|stats|add|remove` on this Unix socket.
    #[arg(long, value_name = "PATH")]
    pub control: Option<PathBuf>,
    /// CPUs to pin the workers to, one per `worker` of the script in order [default: each
    /// worker's cpu=; a script without workers is not pinned].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub cpus: Option<Vec<usize>>,
    /// Packet buffers of the pipeline (2 KiB each): enough for what queues and delay lines
    /// hold at once.
    #[arg(long, default_value_t = 65_536, value_name = "N", value_parser = clap::value_parser!(u32).range(256..=4_194_304))]
    pub buffers: u32,
    /// Use AF_XDP copy mode even where the driver has zero-copy.
    #[arg(long)]
    pub copy: bool,
    /// Stop after this many seconds [default: run until SIGINT/SIGTERM].
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Empty runs of every task before the worker sleeps until a port has frames.
    #[arg(long, default_value_t = 2000, value_name = "N")]
    pub idle_spins: u32,
    /// On exit, also write every module's and port's counters as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub counters: Option<PathBuf>,
}

/// The interfaces the script's ports name, in order of first use.
fn port_names(s: &Script) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = Vec::new();
    for d in s.modules.iter().filter(|d| d.class == "PortInc" || d.class == "PortOut") {
        let v = d.args.iter().find(|a| a.key.as_deref() == Some("port")).map(|a| &a.value);
        let Some(Value::Str(n) | Value::Ident(n)) = v else {
            return Err(format!("line {}: {} :: {} needs port=\"INTERFACE\"", d.line, d.name, d.class));
        };
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    Ok(names)
}

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

pub fn run(c: PipelineCmd) -> Result<(), String> {
    match c.action {
        None => serve(c.run),
        Some(a) => client(a),
    }
}

fn client(a: Action) -> Result<(), String> {
    match a {
        Action::Show(ctl) => {
            let v = control::request(&ctl.control, &json!({ "cmd": "show" }))?;
            print!("{}", v["script"].as_str().unwrap_or(""));
            print_warnings(&v);
        }
        Action::Stats { ctl, json } => {
            let v = control::request(&ctl.control, &json!({ "cmd": "stats" }))?;
            if json {
                println!("{v}");
            } else {
                print_stats(&v);
            }
        }
        Action::Add { ctl, statements, file } => {
            let mut text = statements.join("\n");
            if let Some(f) = file {
                let t = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
                text = if text.is_empty() { t } else { format!("{text}\n{t}") };
            }
            if text.trim().is_empty() {
                return Err("add: give the statements as arguments or --file".into());
            }
            let v = control::request(&ctl.control, &json!({ "cmd": "add", "text": text }))?;
            println!("added");
            print_warnings(&v);
        }
        Action::Remove { ctl, module } => {
            control::request(&ctl.control, &json!({ "cmd": "remove", "module": module }))?;
            println!("removed {module}");
        }
    }
    Ok(())
}

fn print_warnings(v: &Json) {
    for w in v["warnings"].as_array().into_iter().flatten() {
        tracing::warn!("{}", w.as_str().unwrap_or(""));
    }
}

/// The stats reply as a table.
fn print_stats(v: &Json) {
    println!(
        "{:<20} {:<16} {:>12} {:>12} {:>10} {:>10}  other",
        "module", "class", "rx", "tx", "dropped", "cycles/pkt"
    );
    for (name, m) in v["modules"].as_object().into_iter().flatten() {
        let n = |k: &str| m[k].as_u64().unwrap_or(0);
        let other: Vec<String> = m
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !["class", "rx", "tx", "dropped", "batches", "cycles"].contains(&k.as_str()))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let cpp = if n("rx") > 0 { format!("{:.1}", n("cycles") as f64 / n("rx") as f64) } else { "-".into() };
        println!(
            "{name:<20} {:<16} {:>12} {:>12} {:>10} {cpp:>10}  {}",
            m["class"].as_str().unwrap_or(""),
            n("rx"),
            n("tx"),
            n("dropped"),
            other.join(" ")
        );
    }
    for (name, p) in v["ports"].as_object().into_iter().flatten() {
        println!("port {name}: {p}");
    }
    for (name, c) in v["classes"].as_object().into_iter().flatten() {
        println!("class {name}: {c}");
    }
}

fn serve(a: PipelineArgs) -> Result<(), String> {
    let path = a.script.clone().ok_or("--script FILE is required (or a command: show, stats, add, remove)")?;
    let file = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{file}: {e}"))?;
    let s = script::parse(&text).map_err(|e| format!("{file}: {e}"))?;
    let names = port_names(&s).map_err(|e| format!("{file}: {e}"))?;
    if names.is_empty() {
        return Err(format!("{file}: no PortInc or PortOut: the pipeline would touch no interface"));
    }
    let cpus = worker_cpus(&a, &s).map_err(|e| format!("{file}: {e}"))?;
    io::iface::require_root().map_err(|e| e.to_string())?;

    // The whole script is checked, with stand-in ports, before any interface is touched;
    // with several workers, each one's part is built from it.
    let reg = Registry::default();
    let stand_ins = |names: &[String]| -> Vec<NamedPort> {
        names.iter().map(|n| NamedPort { name: n.clone(), port: Box::new(MemPort::new()) }).collect()
    };
    let whole = Pipeline::build(&s, &reg, a.buffers as usize, stand_ins(&names)).map_err(|e| format!("{file}: {e}"))?;
    let mut workers: Vec<(String, Pipeline, Vec<String>)> = if s.workers.len() > 1 {
        if a.control.is_some() {
            return Err(
                "--control serves pipelines of one worker for now; declare one worker or leave --control out".into()
            );
        }
        let tasks = whole.task_names();
        let parts = workers::split(&s, &tasks).map_err(|e| format!("{file}: {e}"))?;
        drop(whole);
        let mut out = Vec::new();
        for part in parts {
            let names = port_names(&part.script).map_err(|e| format!("{file}: {e}"))?;
            let p = Pipeline::build(&part.script, &reg, a.buffers as usize, stand_ins(&names))
                .map_err(|e| format!("{file}: worker {}: {e}", part.worker.name))?;
            out.push((part.worker.name, p, names));
        }
        out
    } else {
        vec![(s.workers.first().map_or("w0".to_string(), |w| w.name.clone()), whole, names.clone())]
    };
    let ctl = a.control.as_deref().map(control::Control::bind).transpose()?;
    let mut fds: Vec<Vec<RawFd>> = Vec::new();
    let mut opened = Vec::new();
    for (_, p, names) in &mut workers {
        let mut f: Vec<RawFd> = ctl.iter().map(|c| c.fd()).collect();
        for n in names.iter() {
            let (port, what) = XdpPort::open(n, a.copy)?;
            f.extend(port.fds());
            opened.push(what);
            p.set_port(n, Box::new(port));
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
        names.len(),
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
    report(&workers, a.counters.as_deref())
}

/// When a worker stops and when it sleeps.
struct Looping {
    until: Option<Instant>,
    idle_spins: u32,
}

/// One worker: a scheduling step at a time until a stop signal or the deadline; idle, it
/// sleeps on its ports (and the control socket, which it serves between steps).
fn run_worker(p: &mut Pipeline, fds: &[RawFd], ctl: Option<&control::Control>, reg: &Registry, l: &Looping) {
    p.set_clock(Box::new(CpuClock(Instant::now())));
    let over = || crate::signals::stop_requested() || l.until.is_some_and(|u| Instant::now() >= u);
    // A round is a step per task; the worker sleeps after `idle_spins` rounds made nothing.
    let tasks = p.task_count().max(1) as u64;
    let mut idle = 0u64;
    let mut steps = 0u32;
    loop {
        steps = steps.wrapping_add(1);
        if steps.is_multiple_of(1024) {
            if over() {
                break;
            }
            if let Some(c) = ctl {
                c.serve(p, reg);
            }
        }
        match p.step() {
            Step::Ran(n) if n > 0 => {
                idle = 0;
                continue;
            }
            Step::Ran(_) => idle += 1,
            Step::Throttled(Some(at)) => {
                // A rate limit: nothing may run before `at`, whatever arrives.
                let us = (at.saturating_sub(p.now_ns()) / 1000).clamp(1, 100_000) as u32;
                io::sched::wait_readable(&[], us);
                continue;
            }
            Step::Throttled(None) => idle += 1,
        }
        if idle < u64::from(l.idle_spins) * tasks {
            continue;
        }
        // Packets held for later (a delay line) need the worker again within a tick;
        // otherwise it sleeps until a port has frames (bounded, to see a stop signal).
        let us = if p.holding() > 0 { 50 } else { 100_000 };
        io::sched::wait_readable(fds, us);
        if over() {
            break;
        }
        if let Some(c) = ctl {
            c.serve(p, reg);
        }
    }
}

/// Nanoseconds from the monotonic clock, cycles from the CPU's counter.
struct CpuClock(Instant);

impl Clock for CpuClock {
    fn now_ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }

    fn cycles(&self) -> u64 {
        io::sched::cycles()
    }
}

/// Every module's, port's and class's counters, as the control socket and `--counters` give
/// them.
pub(crate) fn stats_json(p: &Pipeline) -> Json {
    let mut modules = Map::new();
    let own: Vec<Vec<(&'static str, u64)>> = p.module_counters().map(|(_, c)| c).collect();
    for ((name, class, st), c) in p.stats().zip(own) {
        let mut m = Map::new();
        m.insert("class".into(), json!(class));
        m.insert("rx".into(), json!(st.rx));
        m.insert("tx".into(), json!(st.tx));
        m.insert("dropped".into(), json!(st.dropped));
        m.insert("batches".into(), json!(st.batches));
        m.insert("cycles".into(), json!(st.cycles));
        for (k, v) in c {
            m.insert(k.into(), json!(v));
        }
        modules.insert(name.to_string(), Json::Object(m));
    }
    let mut ports = Map::new();
    for np in p.ports() {
        ports.insert(
            np.name.clone(),
            Json::Object(np.port.counters().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect()),
        );
    }
    let mut classes = Map::new();
    for c in p.class_stats() {
        classes.insert(
            c.name.clone(),
            json!({ "policy": c.policy, "runs": c.used.count, "packets": c.used.packets, "bits": c.used.bits, "cycles": c.used.cycles }),
        );
    }
    json!({ "modules": modules, "ports": ports, "classes": classes, "paused": p.paused })
}

/// Prints every module's counters and writes them as JSON if asked (the workers' merged:
/// module and port names are the script's own; classes are prefixed with their worker's
/// name when there are several).
fn report(workers: &[(String, Pipeline, Vec<String>)], path: Option<&std::path::Path>) -> Result<(), String> {
    let mut v = json!({ "modules": {}, "ports": {}, "classes": {}, "paused": 0 });
    for (w, p, _) in workers {
        let one = stats_json(p);
        for key in ["modules", "ports"] {
            if let (Some(all), Some(mine)) = (v[key].as_object_mut(), one[key].as_object()) {
                all.extend(mine.clone());
            }
        }
        if let (Some(all), Some(mine)) = (v["classes"].as_object_mut(), one["classes"].as_object()) {
            for (k, c) in mine {
                let name = if workers.len() > 1 { format!("{w}/{k}") } else { k.clone() };
                all.insert(name, c.clone());
            }
        }
        v["paused"] = json!(v["paused"].as_u64().unwrap_or(0) + p.paused);
    }
    print_stats(&v);
    println!("backpressure pauses: {}", v["paused"]);
    match path {
        Some(path) => write_json(path, &v),
        None => Ok(()),
    }
}
