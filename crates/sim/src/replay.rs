//! A property over many seeds, and one seed replayed with the trace of the connection that
//! failed.
//!
//! [`seeds`] runs a test's seeds (`SIM_SEEDS` of them, else the test's default). A seed
//! fails when its run returns an error or panics (an `assert!` in it); every failure is
//! listed with the command that replays it: `scripts/replay-seed FILE::TEST SEED`. That
//! command runs the one seed (`SIM_SEED`) with the packet trace on (`SIM_TRACE`, see
//! [`crate::trace`]): the failure is reported as before, then one line per flow, then the
//! frames of the connection that failed — the one the test named with [`blame`], else
//! the TCP connections that did not close cleanly, else every flow; `SIM_TRACE_PORT` picks
//! one by port.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::trace;

/// What [`seeds`] ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    /// Every seed from 0 up to this count: aggregate properties may be checked.
    All(u64),
    /// One seed, replayed (`SIM_SEED`).
    One(u64),
}

thread_local! {
    static BLAMED: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
}

/// Names the connection that failed, by one of its ports (the client's is unique), before
/// a test returns its error or panics: its trace is then the one printed.
pub fn blame(port: u16) {
    BLAMED.with(|b| b.borrow_mut().push(port));
}

fn take_blamed() -> Vec<u16> {
    BLAMED.with(|b| std::mem::take(&mut *b.borrow_mut()))
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    match v.parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name} must be a number, not {v:?}"),
    }
}

/// Runs seed `seed`; Err is why it failed (its error, or what it panicked with).
fn run_one(seed: u64, run: &mut impl FnMut(u64) -> Result<(), String>) -> Result<(), String> {
    take_blamed();
    match catch_unwind(AssertUnwindSafe(|| run(seed))) {
        Ok(r) => r,
        Err(p) => Err(p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panicked".into())),
    }
}

/// Runs `run` for each seed of test `name` (`FILE::TEST`, as `scripts/replay-seed` takes
/// it): `default` seeds from 0, or `SIM_SEEDS`, or the one seed `SIM_SEED` (traced if
/// `SIM_TRACE` is set). Panics listing every seed that failed.
pub fn seeds(name: &str, default: u64, mut run: impl FnMut(u64) -> Result<(), String>) -> Ran {
    if let Some(seed) = env_u64("SIM_SEED") {
        let tracing = std::env::var_os("SIM_TRACE").is_some();
        if tracing {
            trace::start();
        }
        let r = run_one(seed, &mut run);
        let blamed = take_blamed();
        let trace = trace::stop();
        let Err(why) = r else {
            eprintln!("seed {seed} passes");
            return Ran::One(seed);
        };
        if let Some(t) = trace {
            report(seed, &t, &blamed);
        }
        panic!("seed {seed}: {why}");
    }
    let n = env_u64("SIM_SEEDS").unwrap_or(default);
    let failed: Vec<String> = (0..n)
        .filter_map(|seed| {
            run_one(seed, &mut run)
                .err()
                .map(|why| format!("seed {seed}: {why}\n  replay: scripts/replay-seed {name} {seed}"))
        })
        .collect();
    assert!(failed.is_empty(), "{} of {n} seeds failed:\n{}", failed.len(), failed.join("\n"));
    Ran::All(n)
}

/// Prints the flows, then the frames of the connection(s) that failed.
fn report(seed: u64, t: &trace::Trace, blamed: &[u16]) {
    let chosen: Vec<u16> = match std::env::var("SIM_TRACE_PORT") {
        Ok(p) => p.split(',').filter_map(|p| p.trim().parse().ok()).collect(),
        Err(_) => blamed.to_vec(),
    };
    let suspects = t.suspects(&chosen);
    eprintln!(
        "seed {seed}: {} flows; the {} traced below (net, ends; -> from the first end, <- from the second):",
        t.flows.len(),
        suspects.len()
    );
    for l in t.summary_lines(&suspects) {
        eprintln!("{l}");
    }
    let whose = if !chosen.is_empty() {
        format!("the connection(s) on port(s) {chosen:?}")
    } else if suspects.len() < t.flows.len() {
        "the connection(s) that did not close cleanly".to_string()
    } else {
        "every flow (none singled out; SIM_TRACE_PORT=PORT picks one)".to_string()
    };
    let lines: Vec<&str> = t.lines_of(&suspects).collect();
    let mut head = format!("seed {seed}: the trace of {whose} ({} of {} frames", lines.len(), t.records.len());
    if t.forgotten > 0 {
        head += &format!("; the first {} frames of the run were not kept", t.forgotten);
    }
    eprintln!("{head}; net, seconds, frame, [what the link did]):");
    for l in lines {
        eprintln!("{l}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_an_error_or_a_panic_and_names_its_replay() {
        let mut calls = 0;
        assert_eq!(run_one(3, &mut |_| Ok(())), Ok(()));
        assert_eq!(run_one(3, &mut |s| Err(format!("seed was {s}"))), Err("seed was 3".into()));
        let r = run_one(4, &mut |s| {
            calls += 1;
            assert_eq!(s, 5, "wrong seed");
            Ok(())
        });
        assert!(r.unwrap_err().contains("wrong seed"));
        assert_eq!(calls, 1);
        blame(80);
        assert_eq!(take_blamed(), [80]);
        assert!(take_blamed().is_empty());
        if std::env::var_os("SIM_SEED").is_none() && std::env::var_os("SIM_SEEDS").is_none() {
            let out = catch_unwind(|| seeds("engine_x::t", 4, |s| if s % 2 == 1 { Err("odd".into()) } else { Ok(()) }));
            let msg = *out.unwrap_err().downcast::<String>().unwrap();
            assert!(msg.starts_with("2 of 4 seeds failed"), "{msg}");
            assert!(msg.contains("seed 3: odd\n  replay: scripts/replay-seed engine_x::t 3"), "{msg}");
            assert_eq!(seeds("engine_x::t", 4, |_| Ok(())), Ran::All(4));
        }
    }
}
