//! `sirocco pipeline`: a BESS pipeline between interfaces, from a script. The interfaces the
//! script's PortInc/PortOut modules name are taken whole (every frame to the pipeline); one
//! worker runs every task in turn, run to completion.

mod xdp_port;

use crate::dataplane::report::write_json;
use clap::Args;
use pipeline::modules::Registry;
use pipeline::pipeline::{Clock, Pipeline, Step};
use pipeline::port::{MemPort, NamedPort};
use pipeline::script::{self, Script, Value};
use serde_json::{json, Map, Value as Json};
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use xdp_port::XdpPort;

#[derive(Args)]
pub struct PipelineArgs {
    /// The pipeline script: modules, links, traffic classes, workers (see the README's
    /// pipeline section; scripts/pipeline/ has examples).
    #[arg(long, value_name = "FILE")]
    pub script: PathBuf,
    /// CPU to pin the worker to [default: the script's `worker` cpu, else not pinned].
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

/// The worker's CPU: `--cpus`, else the script's first `worker NAME(cpu=N)`.
fn worker_cpu(a: &PipelineArgs, s: &Script) -> Result<Option<usize>, String> {
    if let Some(c) = &a.cpus {
        if c.len() != 1 {
            return Err("--cpus: this pipeline runs one worker; give one CPU".into());
        }
        return Ok(Some(c[0]));
    }
    if s.workers.len() > 1 {
        return Err(format!("line {}: this pipeline runs one worker; declare one", s.workers[1].line));
    }
    if let Some(w) = s.workers.first() {
        return match w.args.as_slice() {
            [arg] if arg.key.as_deref() == Some("cpu") => match arg.value {
                Value::Int(c) if c >= 0 => Ok(Some(c as usize)),
                _ => Err(format!("line {}: cpu must be a CPU number", w.line)),
            },
            _ => Err(format!("line {}: a worker takes cpu=N", w.line)),
        };
    }
    Ok(None)
}

pub fn run(a: PipelineArgs) -> Result<(), String> {
    let file = a.script.display().to_string();
    let text = std::fs::read_to_string(&a.script).map_err(|e| format!("{file}: {e}"))?;
    let s = script::parse(&text).map_err(|e| format!("{file}: {e}"))?;
    let names = port_names(&s).map_err(|e| format!("{file}: {e}"))?;
    if names.is_empty() {
        return Err(format!("{file}: no PortInc or PortOut: the pipeline would touch no interface"));
    }
    let cpu = worker_cpu(&a, &s).map_err(|e| format!("{file}: {e}"))?;
    io::iface::require_root().map_err(|e| e.to_string())?;

    // The whole script is checked, with stand-in ports, before any interface is touched.
    let stand_ins = names.iter().map(|n| NamedPort { name: n.clone(), port: Box::new(MemPort::new()) }).collect();
    let mut p =
        Pipeline::build(&s, &Registry::default(), a.buffers as usize, stand_ins).map_err(|e| format!("{file}: {e}"))?;
    let mut fds: Vec<RawFd> = Vec::new();
    let mut opened = Vec::new();
    for n in &names {
        let (port, what) = XdpPort::open(n, a.copy)?;
        fds.extend(port.fds());
        opened.push(what);
        p.set_port(n, Box::new(port));
    }
    if fds.len() > 16 {
        return Err("more than 16 receive queues over all ports".into());
    }
    for what in opened {
        eprintln!("sirocco: pipeline port {what}");
    }
    for w in &p.warnings {
        eprintln!("sirocco: warning: {file}: {w}");
    }
    if let Some(c) = cpu {
        io::iface::pin_thread(c).map_err(|e| format!("pinning the worker to CPU {c}: {e}"))?;
    }
    eprintln!(
        "sirocco: pipeline {file} running: {} modules, {} port(s), {} buffers, {} B of metadata{}",
        p.stats().count(),
        names.len(),
        a.buffers,
        p.meta_used,
        cpu.map(|c| format!(", worker on CPU {c}")).unwrap_or_default()
    );
    p.set_clock(Box::new(CpuClock(Instant::now())));
    let until = a.duration.map(|d| Instant::now() + Duration::from_secs_f64(d.max(0.0)));
    // A round is a step per task; the worker sleeps after `idle_spins` rounds made nothing.
    let tasks = p.task_count().max(1) as u64;
    let mut idle = 0u64;
    let mut steps = 0u32;
    loop {
        steps = steps.wrapping_add(1);
        if steps.is_multiple_of(1024)
            && (crate::signals::stop_requested() || until.is_some_and(|u| Instant::now() >= u))
        {
            break;
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
        if idle < u64::from(a.idle_spins) * tasks {
            continue;
        }
        // Packets held for later (a delay line) need the worker again within a tick;
        // otherwise it sleeps until a port has frames (bounded, to see a stop signal).
        let us = if p.holding() > 0 { 50 } else { 100_000 };
        io::sched::wait_readable(&fds, us);
        if crate::signals::stop_requested() || until.is_some_and(|u| Instant::now() >= u) {
            break;
        }
    }
    report(&p, a.counters.as_deref())
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

/// Prints every module's counters and writes them as JSON if asked.
fn report(p: &Pipeline, path: Option<&std::path::Path>) -> Result<(), String> {
    let mut modules = Map::new();
    let own: Vec<(String, Vec<(&'static str, u64)>)> = p.module_counters().map(|(n, c)| (n.to_string(), c)).collect();
    for ((name, class, st), (_, c)) in p.stats().zip(own) {
        let extra: Vec<String> = c.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!(
            "{name} ({class}): rx {} tx {} dropped {} batches {}{}{}",
            st.rx,
            st.tx,
            st.dropped,
            st.batches,
            if extra.is_empty() { "" } else { ", " },
            extra.join(", ")
        );
        let mut m = Map::new();
        m.insert("class".into(), json!(class));
        m.insert("rx".into(), json!(st.rx));
        m.insert("tx".into(), json!(st.tx));
        m.insert("dropped".into(), json!(st.dropped));
        m.insert("batches".into(), json!(st.batches));
        for (k, v) in c {
            m.insert(k.into(), json!(v));
        }
        modules.insert(name.to_string(), Json::Object(m));
    }
    let mut ports = Map::new();
    for np in p.ports() {
        let c = np.port.counters();
        println!("port {}: {}", np.name, c.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", "));
        ports.insert(np.name.clone(), Json::Object(c.into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect()));
    }
    println!("backpressure pauses: {}", p.paused);
    let mut classes = Map::new();
    for c in p.class_stats() {
        println!(
            "class {} ({}): runs {} packets {} bits {} cycles {}",
            c.name, c.policy, c.used.count, c.used.packets, c.used.bits, c.used.cycles
        );
        classes.insert(
            c.name.clone(),
            json!({ "policy": c.policy, "runs": c.used.count, "packets": c.used.packets, "bits": c.used.bits, "cycles": c.used.cycles }),
        );
    }
    match path {
        Some(path) => {
            write_json(path, &json!({ "modules": modules, "ports": ports, "classes": classes, "paused": p.paused }))
        }
        None => Ok(()),
    }
}
