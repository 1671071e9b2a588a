//! A pipeline built from a script: modules, the links between their gates, the metadata
//! layout. Running it runs every module's task once; each batch a task makes goes through the
//! graph depth first, module after module, until every packet is sent out or dropped (BESS's
//! run-to-completion). Unconnected output gates drop. The graph must have no cycle (a queue
//! module, which would break one, comes later).

use crate::metadata::{layout, Attr};
use crate::module::{Ctx, Module, Out};
use crate::modules::Registry;
use crate::packet::{Batch, Pool};
use crate::port::NamedPort;
use crate::sched::{Scheduler, Throttled, Usage};
use crate::script::{Script, ScriptError};
use timer::Instant;

/// Where the pipeline reads the time: an instant for modules and rate limits, cycles for
/// the `cycle` resource. Tests drive a pipeline on a clock of their own.
pub trait Clock: Send {
    /// The time since some fixed start.
    fn now(&self) -> Instant;
    /// A CPU cycle counter (nanoseconds where there is none).
    fn cycles(&self) -> u64 {
        self.now().as_nanos()
    }
}

/// The monotonic clock, from when the pipeline was built.
pub struct Monotonic(std::time::Instant);

impl Clock for Monotonic {
    fn now(&self) -> Instant {
        Instant::from_nanos(self.0.elapsed().as_nanos() as u64)
    }
}

/// What one scheduling step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A task ran and made this many packets.
    Ran(usize),
    /// Nothing may run (rate limits, backpressure) until then, if a rate limit says.
    Throttled(Option<Instant>),
}

/// A module's counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct NodeStats {
    /// Packets in (on any input gate, or made by its task).
    pub rx: u64,
    /// Packets sent on to a connected gate.
    pub tx: u64,
    /// Packets dropped (by the module, or sent to a gate with nothing connected).
    pub dropped: u64,
    /// Batches handled.
    pub batches: u64,
    /// Cycles spent in the module's own processing (not the modules after it).
    pub cycles: u64,
}

struct Node {
    name: String,
    class: String,
    args: Vec<crate::script::Arg>,
    module: Box<dyn Module>,
    /// Per output gate: the module and input gate it leads to.
    next: Vec<Option<(usize, u32)>>,
    out: Out,
    offsets: Vec<Option<usize>>,
    stats: NodeStats,
}

/// A configured pipeline.
pub struct Pipeline {
    nodes: Vec<Node>,
    pool: Pool,
    ports: Vec<NamedPort>,
    clock: Box<dyn Clock>,
    sched: Scheduler,
    tasks: Vec<usize>,
    /// Per task: the decoupling modules (queues) its packets reach first, whose backpressure
    /// pauses it.
    feeds: Vec<Vec<usize>>,
    /// Task runs skipped for backpressure.
    pub paused: u64,
    /// Configuration warnings (reads of metadata no module upstream writes).
    pub warnings: Vec<String>,
    /// Bytes of metadata the layout uses.
    pub meta_used: usize,
    script: Script,
}

fn at(line: usize, msg: String) -> ScriptError {
    ScriptError { line, col: 1, msg }
}

/// What a script assembles to, before it becomes the pipeline's.
struct Graph {
    nodes: Vec<Node>,
    tasks: Vec<usize>,
    feeds: Vec<Vec<usize>>,
    sched: Scheduler,
    warnings: Vec<String>,
    meta_used: usize,
}

/// Where a node's module comes from: kept from the running graph, or new.
enum Src {
    Old(usize),
    New(Box<dyn Module>),
}

/// Assembles `script`, reusing the modules of `old` whose name, class and arguments are the
/// same (their state and counters carry over); nothing of `old` is taken unless it succeeds.
/// With `fixed_meta`, a change that would move a kept module's metadata to other bytes is
/// refused (packets held in queues carry values at the old places).
fn assemble(
    script: &Script,
    reg: &Registry,
    ports: &[String],
    old: &mut [Option<Node>],
    fixed_meta: bool,
) -> Result<Graph, ScriptError> {
    let mut srcs = Vec::new();
    for d in &script.modules {
        let same =
            |n: &Option<Node>| n.as_ref().is_some_and(|n| n.name == d.name && n.class == d.class && n.args == d.args);
        srcs.push(match old.iter().position(same) {
            Some(j) => Src::Old(j),
            None => Src::New(reg.make(d, ports).map_err(|e| at(d.line, format!("{} :: {}: {e}", d.name, d.class)))?),
        });
    }
    let module = |i: usize| -> &dyn Module {
        match &srcs[i] {
            Src::Old(j) => old[*j].as_ref().map(|n| n.module.as_ref()).expect("kept"),
            Src::New(m) => m.as_ref(),
        }
    };
    let n = srcs.len();
    let name = |i: usize| script.modules[i].name.as_str();
    let index = |name: &str| script.modules.iter().position(|d| d.name == name);
    let mut next: Vec<Vec<Option<(usize, u32)>>> = (0..n).map(|i| vec![None; module(i).ogates() as usize]).collect();
    let mut edges = Vec::new();
    for l in &script.links {
        let (Some(a), Some(b)) = (index(&l.from), index(&l.to)) else {
            return Err(at(l.line, format!("no module '{}' or '{}'", l.from, l.to)));
        };
        let (og, ig) = (l.ogate, l.igate);
        let (oa, ib) = (module(a).ogates(), module(b).igates());
        if og >= oa {
            return Err(at(l.line, format!("{} has {oa} output gate(s); there is no gate {og}", name(a))));
        }
        if ig >= ib {
            return Err(at(l.line, format!("{} has {ib} input gate(s); there is no gate {ig}", name(b))));
        }
        if next[a][og as usize].is_some() {
            return Err(at(l.line, format!("{}:{og} is connected already", name(a))));
        }
        next[a][og as usize] = Some((b, ig));
        edges.push((a, b));
    }
    let direct: Vec<(usize, usize)> = edges.iter().copied().filter(|&(_, b)| !module(b).decouples()).collect();
    if let Some(cycle) = find_cycle(n, &direct) {
        let names: Vec<&str> = cycle.iter().map(|&i| name(i)).collect();
        let line = script.modules[cycle[0]].line;
        return Err(at(line, format!("the links make a cycle: {} (a cycle needs a Queue in it)", names.join(" -> "))));
    }
    let attrs: Vec<Vec<Attr>> = (0..n).map(|i| module(i).attrs()).collect();
    let l = layout(&attrs, &edges).map_err(|e| at(script.modules.first().map_or(1, |d| d.line), e.to_string()))?;
    if fixed_meta {
        for (i, s) in srcs.iter().enumerate() {
            if let Src::Old(j) = s {
                let moved = |o: &Node| {
                    o.offsets.iter().zip(&l.offsets[i]).any(|(a, b)| matches!((a, b), (Some(a), Some(b)) if a != b))
                };
                if old[*j].as_ref().is_some_and(moved) {
                    return Err(at(
                        script.modules[i].line,
                        format!(
                            "the change moves {}'s metadata while queues hold packets; retry when they drain",
                            name(i)
                        ),
                    ));
                }
            }
        }
    }
    let warnings = l
        .unwritten
        .iter()
        .map(|u| {
            format!(
                "line {}: {} reads metadata '{}', which no module upstream writes",
                script.modules[u.module].line,
                name(u.module),
                u.attr
            )
        })
        .collect();
    let tasks: Vec<usize> = (0..n).filter(|&i| module(i).has_task()).collect();
    let feeds = tasks.iter().map(|&t| first_decouplers(&next, &|i| module(i).decouples(), t)).collect();
    let task_names: Vec<&str> = tasks.iter().map(|&t| name(t)).collect();
    let sched = Scheduler::build(&script.classes, &task_names)?;

    // Nothing can fail from here: the kept modules move over.
    let mut nodes = Vec::with_capacity(n);
    for ((i, s), (next, offsets)) in srcs.into_iter().enumerate().zip(next.into_iter().zip(l.offsets)) {
        let d = &script.modules[i];
        let mut node = match s {
            Src::Old(j) => old[j].take().expect("kept"),
            Src::New(module) => Node {
                name: d.name.clone(),
                class: d.class.clone(),
                args: d.args.clone(),
                out: Out::new(module.ogates()),
                module,
                next: Vec::new(),
                offsets: Vec::new(),
                stats: NodeStats::default(),
            },
        };
        node.next = next;
        node.offsets = offsets;
        nodes.push(node);
    }
    Ok(Graph { nodes, tasks, feeds, sched, warnings, meta_used: l.used })
}

impl Pipeline {
    /// Builds the pipeline `script` describes, with modules from `reg`, `pool` buffers and
    /// `ports` for its PortInc and PortOut modules.
    pub fn build(script: &Script, reg: &Registry, pool: usize, ports: Vec<NamedPort>) -> Result<Pipeline, ScriptError> {
        let names: Vec<String> = ports.iter().map(|p| p.name.clone()).collect();
        let g = assemble(script, reg, &names, &mut [], false)?;
        Ok(Pipeline {
            nodes: g.nodes,
            pool: Pool::new(pool),
            ports,
            clock: Box::new(Monotonic(std::time::Instant::now())),
            sched: g.sched,
            tasks: g.tasks,
            feeds: g.feeds,
            paused: 0,
            warnings: g.warnings,
            meta_used: g.meta_used,
            script: script.clone(),
        })
    }

    /// Changes the running pipeline to `script`: modules with the same name, class and
    /// arguments keep their state, packets and counters; new ones are made; the others go.
    /// Between two steps nothing is in flight but what queues and delay lines hold, so
    /// nothing is lost — and a change that would drop a module holding packets, or move the
    /// metadata of held packets, is refused. On error the pipeline is as it was.
    pub fn reconfigure(&mut self, script: &Script, reg: &Registry) -> Result<(), ScriptError> {
        for n in &self.nodes {
            let kept = script.modules.iter().any(|d| d.name == n.name && d.class == n.class && d.args == n.args);
            if !kept && n.module.holds() > 0 {
                let line = script.modules.iter().find(|d| d.name == n.name).map_or(1, |d| d.line);
                return Err(at(
                    line,
                    format!("{} holds {} packets; it cannot go or change until they leave", n.name, n.module.holds()),
                ));
            }
        }
        let names: Vec<String> = self.ports.iter().map(|p| p.name.clone()).collect();
        let held = self.holding() > 0;
        let mut old: Vec<Option<Node>> = std::mem::take(&mut self.nodes).into_iter().map(Some).collect();
        match assemble(script, reg, &names, &mut old, held) {
            Ok(g) => {
                self.nodes = g.nodes;
                self.tasks = g.tasks;
                self.feeds = g.feeds;
                self.sched = g.sched;
                self.warnings = g.warnings;
                self.meta_used = g.meta_used;
                self.script = script.clone();
                Ok(())
            }
            Err(e) => {
                self.nodes = old.into_iter().map(|n| n.expect("nothing taken on error")).collect();
                Err(e)
            }
        }
    }

    /// The script the pipeline runs (as built, or as last changed).
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// Runs the pipeline on `clock` from now on.
    pub fn set_clock(&mut self, clock: Box<dyn Clock>) {
        self.clock = clock;
    }

    /// The names of the modules with tasks.
    pub fn task_names(&self) -> Vec<&str> {
        self.tasks.iter().map(|&t| self.nodes[t].name.as_str()).collect()
    }

    /// Modules with tasks.
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    /// The pipeline's time now.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// True if task `t` may run (no queue it feeds asks for a pause).
    fn may_run(&self, t: usize) -> bool {
        !self.feeds[t].iter().any(|&q| self.nodes[q].module.congested())
    }

    /// Runs every task that may run once, whatever the traffic classes say, and flushes
    /// the ports; returns the packets the tasks made.
    pub fn run_once(&mut self) -> usize {
        let now = self.clock.now();
        let mut made = 0;
        for t in 0..self.tasks.len() {
            if !self.may_run(t) {
                self.paused += 1;
                continue;
            }
            made += self.run_task(t, now).packets as usize;
        }
        self.flush_ports();
        made
    }

    /// Runs the task the traffic classes choose, and flushes the ports.
    pub fn step(&mut self) -> Step {
        let now = self.clock.now();
        let pick = {
            let (nodes, feeds) = (&self.nodes, &self.feeds);
            let may = |t: usize| !feeds[t].iter().any(|&q| nodes[q].module.congested());
            self.sched.next(now, &may)
        };
        let step = match pick {
            Ok((leaf, t)) => {
                let c0 = self.clock.cycles();
                let mut u = self.run_task(t, now);
                u.cycles = self.clock.cycles().saturating_sub(c0);
                self.sched.account(leaf, u);
                Step::Ran(u.packets as usize)
            }
            Err(Throttled { until }) => {
                if self.tasks.iter().enumerate().any(|(t, _)| !self.may_run(t)) {
                    self.paused += 1;
                }
                Step::Throttled(until)
            }
        };
        self.flush_ports();
        step
    }

    fn flush_ports(&mut self) {
        for p in &mut self.ports {
            p.port.flush();
        }
    }

    /// Runs task `t` once at `now`; returns what it made.
    fn run_task(&mut self, t: usize, now: Instant) -> Usage {
        let i = self.tasks[t];
        let node = &mut self.nodes[i];
        let mut out = std::mem::take(&mut node.out);
        let mut ctx = Ctx { pool: &mut self.pool, now, offsets: &node.offsets, ports: &mut self.ports };
        let n = node.module.run_task(&mut ctx, &mut out);
        // What a queue hands on was counted in when it arrived.
        if !node.module.decouples() {
            node.stats.rx += n as u64;
        }
        let bytes: usize = out.gates().iter().flat_map(|b| b.pkts()).map(|&p| self.pool.data(p).len()).sum();
        self.forward(i, out, now);
        Usage { count: 1, cycles: 0, packets: n as u64, bits: bytes as u64 * 8 }
    }

    /// What each traffic class's tasks used.
    pub fn class_stats(&self) -> Vec<crate::sched::ClassStats> {
        self.sched.stats()
    }

    /// Gives `batch` to module `i` on `igate`, and what it sends on to the modules after it.
    fn deliver(&mut self, i: usize, igate: u32, batch: &Batch, now: Instant) {
        let node = &mut self.nodes[i];
        node.stats.rx += batch.len() as u64;
        node.stats.batches += 1;
        let mut out = std::mem::take(&mut node.out);
        let mut ctx = Ctx { pool: &mut self.pool, now, offsets: &node.offsets, ports: &mut self.ports };
        let c0 = self.clock.cycles();
        node.module.process(&mut ctx, igate, batch, &mut out);
        node.stats.cycles += self.clock.cycles().saturating_sub(c0);
        self.forward(i, out, now);
    }

    /// Frees what module `i` dropped, passes on each gate's batch, and gives `out` back.
    fn forward(&mut self, i: usize, mut out: Out, now: Instant) {
        let (freed, done) = out.take_freed();
        let mut n = 0;
        for p in freed {
            self.pool.free(p);
            n += 1;
        }
        self.nodes[i].stats.dropped += n - done as u64;
        self.nodes[i].stats.tx += done as u64;
        for g in 0..out.gates().len() {
            let b = out.gates()[g];
            if b.is_empty() {
                continue;
            }
            out.gates()[g].clear();
            match self.nodes[i].next[g] {
                Some((to, ig)) => {
                    self.nodes[i].stats.tx += b.len() as u64;
                    self.deliver(to, ig, &b, now);
                }
                None => {
                    for &p in b.pkts() {
                        self.pool.free(p);
                    }
                    self.nodes[i].stats.dropped += b.len() as u64;
                }
            }
        }
        self.nodes[i].out = out;
    }

    /// Every module's name, class and counters.
    pub fn stats(&self) -> impl Iterator<Item = (&str, &str, NodeStats)> {
        self.nodes.iter().map(|n| (n.name.as_str(), n.class.as_str(), n.stats))
    }

    /// Packets held by queues and delay lines for later runs.
    pub fn holding(&self) -> usize {
        self.tasks.iter().map(|&t| self.nodes[t].module.holds()).sum()
    }

    /// Puts `port` in the place of the port named `name` (built with a stand-in, so a script
    /// is checked whole before any interface is touched); false if there is no such port.
    pub fn set_port(&mut self, name: &str, port: Box<dyn crate::port::NetPort>) -> bool {
        match self.ports.iter_mut().find(|p| p.name == name) {
            Some(p) => {
                p.port = port;
                true
            }
            None => false,
        }
    }

    /// The ports (to read their counters, or their descriptors to sleep on).
    pub fn ports(&self) -> &[NamedPort] {
        &self.ports
    }

    /// Every module's own counters (see [`Module::counters`]), by module name.
    pub fn module_counters(&self) -> impl Iterator<Item = (&str, Vec<(&'static str, u64)>)> {
        self.nodes.iter().map(|n| (n.name.as_str(), n.module.counters()))
    }

    /// The counters of module `name`.
    pub fn node_stats(&self, name: &str) -> Option<NodeStats> {
        self.nodes.iter().find(|n| n.name == name).map(|n| n.stats)
    }

    /// The packet buffers.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

/// The decoupling modules that packets from `t` reach before any other decoupling module.
fn first_decouplers(next: &[Vec<Option<(usize, u32)>>], decouples: &dyn Fn(usize) -> bool, t: usize) -> Vec<usize> {
    let mut seen = vec![false; next.len()];
    let mut stack = vec![t];
    let mut found = Vec::new();
    seen[t] = true;
    while let Some(v) = stack.pop() {
        for &(to, _) in next[v].iter().flatten() {
            if seen[to] {
                continue;
            }
            seen[to] = true;
            if decouples(to) {
                found.push(to);
            } else {
                stack.push(to);
            }
        }
    }
    found
}

/// A cycle in the graph of `n` nodes, if there is one (its nodes in order).
fn find_cycle(n: usize, edges: &[(usize, usize)]) -> Option<Vec<usize>> {
    let mut next = vec![Vec::new(); n];
    for &(a, b) in edges {
        next[a].push(b);
    }
    // 0: not seen, 1: on the current path, 2: done.
    let mut state = vec![0u8; n];
    let mut path = Vec::new();
    fn dfs(v: usize, next: &[Vec<usize>], state: &mut [u8], path: &mut Vec<usize>) -> Option<Vec<usize>> {
        state[v] = 1;
        path.push(v);
        for &t in &next[v] {
            if state[t] == 1 {
                let from = path.iter().position(|&x| x == t).unwrap_or(0);
                let mut c = path[from..].to_vec();
                c.push(t);
                return Some(c);
            }
            if state[t] == 0 {
                if let Some(c) = dfs(t, next, state, path) {
                    return Some(c);
                }
            }
        }
        path.pop();
        state[v] = 2;
        None
    }
    (0..n).find_map(|v| if state[v] == 0 { dfs(v, &next, &mut state, &mut path) } else { None })
}

#[cfg(test)]
mod tests;
