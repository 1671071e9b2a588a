//! A script with several workers, split into one script per worker: each runs on its own
//! thread and core, BESS's workers. A root traffic class names its worker (`worker=NAME`);
//! a task belongs to the worker of its class (if it has none: to the worker whose packets
//! reach it — a queue after a port —, else the first), and every
//! module a task's packets reach runs on that worker, run to completion. So a module reached
//! from two workers' tasks, a link between modules of two workers, or an interface whose
//! ports sit on two workers are refused: workers share nothing.

use crate::modules::Registry;
use crate::pipeline::Pipeline;
use crate::port::{MemPort, NamedPort};
use crate::script::{Decl, Script, ScriptError, Value};
use std::collections::{HashMap, VecDeque};

/// One worker's part of a script.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The worker's declaration.
    pub worker: Decl,
    /// Its modules, links, classes (and itself as the only worker).
    pub script: Script,
}

fn err(line: usize, msg: String) -> ScriptError {
    ScriptError { line, col: 1, msg }
}

fn word_arg<'a>(d: &'a Decl, key: &str) -> Option<&'a str> {
    d.args.iter().find(|a| a.key.as_deref() == Some(key)).and_then(|a| match &a.value {
        Value::Str(s) | Value::Ident(s) => Some(s.as_str()),
        _ => None,
    })
}

/// The script's parts, one per declared worker (at least two), given which modules have
/// tasks (`tasks`, by name).
pub fn split(s: &Script, tasks: &[&str]) -> Result<Vec<Part>, ScriptError> {
    let nw = s.workers.len();
    let worker_index = |name: &str, line: usize| {
        s.workers.iter().position(|w| w.name == name).ok_or_else(|| err(line, format!("no worker '{name}'")))
    };
    // Each class's worker: its root's `worker=`, else the first.
    let mut class_worker = HashMap::new();
    for c in &s.classes {
        let mut root = c;
        for _ in 0..=s.classes.len() {
            match word_arg(root, "parent").and_then(|p| s.classes.iter().find(|x| x.name == p)) {
                Some(p) => root = p,
                None => break,
            }
        }
        let w = match word_arg(root, "worker") {
            Some(name) => worker_index(name, root.line)?,
            None => 0,
        };
        class_worker.insert(c.name.as_str(), w);
    }
    let mut task_worker: HashMap<&str, usize> = HashMap::new();
    for c in &s.classes {
        for a in c.args.iter().filter(|a| a.key.as_deref() == Some("tasks")) {
            if let Value::List(l) = &a.value {
                for v in l {
                    if let Value::Str(t) | Value::Ident(t) = v {
                        task_worker.insert(t.as_str(), class_worker[c.name.as_str()]);
                    }
                }
            }
        }
    }
    let line_of = |m: &str| s.modules.iter().find(|d| d.name == m).map_or(1, |d| d.line);
    let wname = |w: usize| s.workers[w].name.as_str();
    let mut owner: HashMap<&str, usize> = HashMap::new();
    // Tasks of classes first; then the others, each on the worker whose packets reach it
    // (a queue or delay line after a port), else the first.
    let classed = tasks.iter().filter(|t| task_worker.contains_key(*t));
    let unclassed = tasks.iter().filter(|t| !task_worker.contains_key(*t));
    for &t in classed.chain(unclassed) {
        let w = task_worker.get(t).or(owner.get(t)).copied().unwrap_or(0);
        let mut q = VecDeque::from([t]);
        while let Some(m) = q.pop_front() {
            match owner.get(m) {
                Some(&o) if o == w => continue,
                Some(&o) => {
                    return Err(err(
                        line_of(m),
                        format!(
                            "module '{m}' is reached from tasks of workers {} and {}; a module runs on one worker",
                            wname(o),
                            wname(w)
                        ),
                    ))
                }
                None => {
                    owner.insert(m, w);
                }
            }
            q.extend(s.links.iter().filter(|l| l.from == m).map(|l| l.to.as_str()));
        }
    }
    let of = |m: &str| owner.get(m).copied().unwrap_or(0);
    for l in &s.links {
        if of(&l.from) != of(&l.to) {
            return Err(err(
                l.line,
                format!(
                    "{} (worker {}) -> {} (worker {}): a link between workers",
                    l.from,
                    wname(of(&l.from)),
                    l.to,
                    wname(of(&l.to))
                ),
            ));
        }
    }
    let mut iface: HashMap<&str, usize> = HashMap::new();
    for d in s.modules.iter().filter(|d| d.class == "PortInc" || d.class == "PortOut") {
        if let Some(port) = word_arg(d, "port") {
            let w = of(&d.name);
            if let Some(&o) = iface.get(port).filter(|&&o| o != w) {
                return Err(err(
                    d.line,
                    format!(
                        "interface '{port}' has ports on workers {} and {}; give each worker its own interfaces",
                        wname(o),
                        wname(w)
                    ),
                ));
            }
            iface.insert(port, w);
        }
    }
    Ok((0..nw)
        .map(|w| Part {
            worker: s.workers[w].clone(),
            script: Script {
                modules: s.modules.iter().filter(|d| of(&d.name) == w).cloned().collect(),
                links: s.links.iter().filter(|l| of(&l.from) == w).cloned().collect(),
                classes: s.classes.iter().filter(|c| class_worker[c.name.as_str()] == w).cloned().collect(),
                workers: vec![s.workers[w].clone()],
            },
        })
        .collect())
}

/// The interfaces a script's ports name, in order of first use.
pub fn port_names(s: &Script) -> Result<Vec<String>, String> {
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

/// One worker's pipeline, built with in-memory stand-ins for its ports, and the names of
/// the interfaces its ports are to be put on.
pub struct Built {
    /// The worker's name.
    pub name: String,
    /// Its pipeline.
    pub pipeline: Pipeline,
    /// The interfaces it needs.
    pub ports: Vec<String>,
}

/// Checks the whole script and builds each worker's pipeline (one for a script of one
/// worker), every port a stand-in until the caller puts the real one in its place; so a
/// script that would fail fails before any interface is touched.
pub fn build(s: &Script, reg: &Registry, buffers: usize) -> Result<Vec<Built>, String> {
    let stand_ins = |names: &[String]| -> Vec<NamedPort> {
        names.iter().map(|n| NamedPort { name: n.clone(), port: Box::new(MemPort::new()) }).collect()
    };
    let names = port_names(s)?;
    let whole = Pipeline::build(s, reg, buffers, stand_ins(&names)).map_err(|e| e.to_string())?;
    if s.workers.len() <= 1 {
        let name = s.workers.first().map_or("w0".to_string(), |w| w.name.clone());
        return Ok(vec![Built { name, pipeline: whole, ports: names }]);
    }
    let tasks = whole.task_names();
    let parts = split(s, &tasks).map_err(|e| e.to_string())?;
    drop(whole);
    let mut out = Vec::new();
    for part in parts {
        let ports = port_names(&part.script)?;
        let pipeline = Pipeline::build(&part.script, reg, buffers, stand_ins(&ports))
            .map_err(|e| format!("worker {}: {e}", part.worker.name))?;
        out.push(Built { name: part.worker.name, pipeline, ports });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
