//! The worker's scheduler: a tree of traffic classes, as BESS's (Han's thesis §5.4). Leaves are
//! module tasks; an inner class picks among its children by priority (lowest number first,
//! the next only when the first has nothing runnable), weighted fair share (stride scheduling
//! on a resource: the child with the least pass runs, and its pass grows by what it used over
//! its share), or round robin; a rate-limit class lets its children run while its token bucket
//! (refilled at `limit` units of the resource per second, up to `max_burst`) is not empty.
//! Resources: task runs (`count`), CPU cycles (`cycle`), packets (`packet`) and bits (`bit`).
//! Tasks no class names hang under the root, which deals in round robin. The scheduler is
//! sans-IO: the pipeline tells it the time and what each run used.

use crate::script::{Decl, ScriptError, Value};
use timer::{Duration, Instant};

/// What a run of a task used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Task runs (1 per run).
    pub count: u64,
    /// CPU cycles.
    pub cycles: u64,
    /// Packets made.
    pub packets: u64,
    /// Bits of the packets made.
    pub bits: u64,
}

/// A resource classes share or limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Task runs.
    Count,
    /// CPU cycles.
    Cycle,
    /// Packets.
    Packet,
    /// Bits.
    Bit,
}

impl Resource {
    fn of(self, u: &Usage) -> u64 {
        match self {
            Resource::Count => u.count,
            Resource::Cycle => u.cycles,
            Resource::Packet => u.packets,
            Resource::Bit => u.bits,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Policy {
    Priority,
    WeightedFair,
    RoundRobin,
    RateLimit {
        /// Units per second.
        limit: i128,
        /// Most units saved up, times 1e9.
        max_burst: i128,
    },
    Leaf(usize),
}

const NS: i128 = 1_000_000_000;

/// Stride of a share of 1 (pass grows by usage × STRIDE / share).
const STRIDE: u128 = 1 << 32;

#[derive(Debug, Clone)]
struct Class {
    name: String,
    policy: Policy,
    resource: Resource,
    children: Vec<usize>,
    parent: Option<usize>,
    priority: i64,
    share: u64,
    pass: u128,
    rr_next: usize,
    /// A weighted-fair class's children by pass, rebuilt each pick in a buffer kept here
    /// (picking allocates nothing).
    order: Vec<usize>,
    /// Units available times 1e9 (exact: a nanosecond adds `limit`).
    tokens: i128,
    refilled: Instant,
    used: Usage,
}

impl Class {
    fn new(name: &str, policy: Policy, resource: Resource) -> Class {
        Class {
            name: name.to_string(),
            policy,
            resource,
            children: Vec::new(),
            parent: None,
            priority: 0,
            share: 1,
            pass: 0,
            rr_next: 0,
            order: Vec::new(),
            tokens: 0,
            refilled: Instant::ZERO,
            used: Usage::default(),
        }
    }
}

/// A class's name, policy and what its subtree used, for `stats`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassStats {
    /// Its name (`task:MODULE` for a leaf).
    pub name: String,
    /// Its policy.
    pub policy: &'static str,
    /// What its tasks used.
    pub used: Usage,
}

/// The traffic-class tree of one worker.
#[derive(Debug, Clone)]
pub struct Scheduler {
    classes: Vec<Class>,
}

/// What a pick looks at: the time and which tasks may run; and what it finds on the way,
/// the earliest a rate-limited class may run again.
struct Picking<'a> {
    now: Instant,
    runnable: &'a dyn Fn(usize) -> bool,
    wake: Option<Instant>,
}

/// When nothing may run: the earliest time a rate limit lets something run again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttled {
    /// On the clock the scheduler is given.
    pub until: Option<Instant>,
}

fn err(d: &Decl, msg: String) -> ScriptError {
    ScriptError { line: d.line, col: 1, msg: format!("tc {}: {msg}", d.name) }
}

impl Scheduler {
    /// The tree the script's `tc` declarations describe, over the tasks `tasks` (each the
    /// module's name, in the pipeline's task order).
    pub fn build(tcs: &[Decl], tasks: &[&str]) -> Result<Scheduler, ScriptError> {
        let mut classes = vec![Class::new("root", Policy::RoundRobin, Resource::Count)];
        let mut parents: Vec<(usize, Option<String>, &Decl)> = Vec::new();
        let mut task_class: Vec<Option<usize>> = vec![None; tasks.len()];
        for d in tcs {
            let mut policy = None;
            let mut resource = Resource::Count;
            let (mut limit, mut burst, mut parent, mut priority, mut share) = (None, None, None, 0, 1);
            let mut names = Vec::new();
            for a in &d.args {
                let key = a.key.as_deref().ok_or_else(|| err(d, "arguments are given as key=value".into()))?;
                let word = || match &a.value {
                    Value::Str(s) | Value::Ident(s) => Ok(s.clone()),
                    _ => Err(err(d, format!("{key} must be a word"))),
                };
                let int = |lo: i64| match a.value {
                    Value::Int(v) if v >= lo => Ok(v),
                    _ => Err(err(d, format!("{key} must be an integer of at least {lo}"))),
                };
                match key {
                    "policy" => policy = Some(word()?),
                    "resource" => {
                        resource = match word()?.as_str() {
                            "count" => Resource::Count,
                            "cycle" => Resource::Cycle,
                            "packet" => Resource::Packet,
                            "bit" => Resource::Bit,
                            r => return Err(err(d, format!("no resource '{r}' (count, cycle, packet or bit)"))),
                        }
                    }
                    "limit" => limit = Some(int(1)?),
                    "max_burst" => burst = Some(int(1)?),
                    "parent" => parent = Some(word()?),
                    // Which worker runs the class (see crate::workers); for a root class only.
                    "worker" => {
                        word()?;
                        if d.args.iter().any(|a| a.key.as_deref() == Some("parent")) {
                            return Err(err(
                                d,
                                "a class with a parent runs on its parent's worker: no worker= here".into(),
                            ));
                        }
                    }
                    "priority" => priority = int(0)?,
                    "share" => share = int(1)?,
                    "tasks" => match &a.value {
                        Value::List(l) => {
                            for v in l {
                                match v {
                                    Value::Str(s) | Value::Ident(s) => names.push(s.clone()),
                                    _ => return Err(err(d, "tasks must be a list of module names".into())),
                                }
                            }
                        }
                        _ => return Err(err(d, "tasks must be a list of module names".into())),
                    },
                    k => return Err(err(d, format!("unknown argument '{k}'"))),
                }
            }
            let policy = match (policy.as_deref(), limit) {
                (Some("priority"), None) => Policy::Priority,
                (Some("weighted_fair"), None) => Policy::WeightedFair,
                (Some("round_robin"), None) => Policy::RoundRobin,
                (Some("rate_limit"), Some(l)) => {
                    // Ten milliseconds of budget unless told.
                    let b = burst.unwrap_or((l / 100).max(1));
                    Policy::RateLimit { limit: i128::from(l), max_burst: i128::from(b) * NS }
                }
                (Some("rate_limit"), None) => {
                    return Err(err(d, "a rate_limit class needs limit=N (per second)".into()))
                }
                (Some("priority" | "weighted_fair" | "round_robin"), Some(_)) => {
                    return Err(err(d, "limit= is for rate_limit classes".into()))
                }
                (Some(p), _) => {
                    return Err(err(d, format!("no policy '{p}' (priority, weighted_fair, round_robin or rate_limit)")))
                }
                (None, _) => return Err(err(d, "policy= is required".into())),
            };
            if classes.iter().any(|c| c.name == d.name) || d.name == "root" {
                return Err(err(d, "declared twice".into()));
            }
            let mut c = Class::new(&d.name, policy, resource);
            c.priority = priority;
            c.share = share as u64;
            let at = classes.len();
            classes.push(c);
            for n in names {
                let t = tasks
                    .iter()
                    .position(|t| *t == n)
                    .ok_or_else(|| err(d, format!("'{n}' is not a module with a task")))?;
                if task_class[t].replace(at).is_some() {
                    return Err(err(d, format!("task '{n}' is in two classes")));
                }
            }
            parents.push((at, parent, d));
        }
        for (at, parent, d) in parents {
            let p = match parent {
                None => 0,
                Some(p) => classes
                    .iter()
                    .position(|c| c.name == p && !matches!(c.policy, Policy::Leaf(_)))
                    .ok_or_else(|| err(d, format!("no class '{p}'")))?,
            };
            classes[at].parent = Some(p);
            classes[p].children.push(at);
        }
        for (t, name) in tasks.iter().enumerate() {
            let p = task_class[t].unwrap_or(0);
            let mut leaf = Class::new(&format!("task:{name}"), Policy::Leaf(t), Resource::Count);
            leaf.parent = Some(p);
            // A leaf takes its own class's share and priority where it is the only child.
            let at = classes.len();
            classes.push(leaf);
            classes[p].children.push(at);
        }
        // Every class must reach the root (a parent cycle would not).
        for i in 0..classes.len() {
            let mut c = i;
            for _ in 0..=classes.len() {
                match classes[c].parent {
                    Some(p) => c = p,
                    None => break,
                }
            }
            if c != 0 {
                let d = tcs.iter().find(|d| d.name == classes[i].name).unwrap_or(&tcs[0]);
                return Err(err(d, "its parents make a cycle".into()));
            }
        }
        let mut s = Scheduler { classes };
        for i in 0..s.classes.len() {
            let mut kids = std::mem::take(&mut s.classes[i].children);
            kids.sort_by_key(|&k| s.classes[k].priority);
            s.classes[i].children = kids;
        }
        Ok(s)
    }

    /// The task to run next at `now`, given which tasks may run at all (backpressure); or,
    /// if none may, until when.
    pub fn next(&mut self, now: Instant, runnable: &dyn Fn(usize) -> bool) -> Result<(usize, usize), Throttled> {
        let mut p = Picking { now, runnable, wake: None };
        match self.pick(0, &mut p) {
            Some(leaf) => match self.classes[leaf].policy {
                Policy::Leaf(t) => Ok((leaf, t)),
                _ => Err(Throttled { until: p.wake }),
            },
            None => Err(Throttled { until: p.wake }),
        }
    }

    fn pick(&mut self, c: usize, p: &mut Picking<'_>) -> Option<usize> {
        let now = p.now;
        match self.classes[c].policy {
            Policy::Leaf(t) => (p.runnable)(t).then_some(c),
            Policy::RateLimit { limit, max_burst } => {
                let cl = &mut self.classes[c];
                let dt = i128::from(now.since(cl.refilled).as_nanos());
                cl.tokens = (cl.tokens + dt * limit).min(max_burst);
                cl.refilled = now;
                if cl.tokens < 0 {
                    let at = now + Duration::from_nanos(((-cl.tokens + limit - 1) / limit) as u64);
                    p.wake = Some(p.wake.map_or(at, |w| w.min(at)));
                    return None;
                }
                self.round_robin(c, p)
            }
            Policy::RoundRobin => self.round_robin(c, p),
            Policy::Priority => {
                // Children are sorted by priority when the tree is built.
                (0..self.classes[c].children.len()).find_map(|i| self.pick(self.classes[c].children[i], p))
            }
            Policy::WeightedFair => {
                let mut kids = std::mem::take(&mut self.classes[c].order);
                kids.clear();
                kids.extend_from_slice(&self.classes[c].children);
                kids.sort_by_key(|&k| self.classes[k].pass);
                let mut found = None;
                for (i, &k) in kids.iter().enumerate() {
                    if let Some(leaf) = self.pick(k, p) {
                        // Children that could not run do not bank the turns they miss: when
                        // they can again, they start level with the one that ran.
                        let pass = self.classes[k].pass;
                        for &idle in &kids[..i] {
                            self.classes[idle].pass = pass;
                        }
                        found = Some(leaf);
                        break;
                    }
                }
                self.classes[c].order = kids;
                found
            }
        }
    }

    fn round_robin(&mut self, c: usize, p: &mut Picking<'_>) -> Option<usize> {
        let n = self.classes[c].children.len();
        let start = self.classes[c].rr_next;
        for i in 0..n {
            let k = self.classes[c].children[(start + i) % n];
            if let Some(leaf) = self.pick(k, p) {
                self.classes[c].rr_next = (start + i + 1) % n;
                return Some(leaf);
            }
        }
        None
    }

    /// Charges what the run of `leaf` used to it and every class above it.
    pub fn account(&mut self, leaf: usize, u: Usage) {
        let mut c = leaf;
        loop {
            let cl = &mut self.classes[c];
            cl.used.count += u.count;
            cl.used.cycles += u.cycles;
            cl.used.packets += u.packets;
            cl.used.bits += u.bits;
            let Some(p) = cl.parent else { break };
            match self.classes[p].policy {
                Policy::WeightedFair => {
                    let r = self.classes[p].resource;
                    // A run that made nothing still costs a little, so an idle child does
                    // not keep the lowest pass and the turn forever.
                    let amount = r.of(&u).max(1);
                    let share = self.classes[c].share;
                    self.classes[c].pass += u128::from(amount) * STRIDE / u128::from(share);
                }
                Policy::RateLimit { .. } => {
                    let r = self.classes[p].resource;
                    self.classes[p].tokens -= i128::from(r.of(&u)) * NS;
                }
                _ => {}
            }
            c = p;
        }
    }

    /// Every class with what it used, root first.
    pub fn stats(&self) -> Vec<ClassStats> {
        self.classes
            .iter()
            .map(|c| ClassStats {
                name: c.name.clone(),
                policy: match c.policy {
                    Policy::Priority => "priority",
                    Policy::WeightedFair => "weighted_fair",
                    Policy::RoundRobin => "round_robin",
                    Policy::RateLimit { .. } => "rate_limit",
                    Policy::Leaf(_) => "leaf",
                },
                used: c.used,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
