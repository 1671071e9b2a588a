//! How a worker runs its pipeline: a scheduling step at a time, as long as steps make
//! packets; after `idle_spins` rounds of steps that made none it sleeps on its ports
//! (briefly when packets are held for later, as a delay line does); a rate limit that lets
//! nothing run sleeps until the time it names. The host — threads, sockets, the clock of
//! signals — is the caller's ([`Host`]); the policy is here, and tested.

use crate::pipeline::{Pipeline, Step};

/// What a worker needs from where it runs.
pub trait Host {
    /// Whether the worker should stop (a signal, a deadline).
    fn stop(&self) -> bool;
    /// Sleeps `us` microseconds at most; with `ports`, less if a port has frames.
    fn wait(&mut self, us: u32, ports: bool);
    /// Serves the control socket between steps, if there is one.
    fn serve(&mut self, p: &mut Pipeline);
}

/// Steps between two looks at [`Host::stop`] and the control socket while busy.
const CHECK_EVERY: u32 = 1024;
/// The longest sleep on the ports (bounded, to see a stop in time).
const IDLE_SLEEP_US: u32 = 100_000;
/// The sleep while packets are held for later: they need the worker again within a tick.
const HOLDING_SLEEP_US: u32 = 50;

/// Runs `p` until `host` says stop.
pub fn drive(p: &mut Pipeline, idle_spins: u32, host: &mut impl Host) {
    // A round is a step per task; the worker sleeps after `idle_spins` rounds made nothing.
    let tasks = p.task_count().max(1) as u64;
    let mut idle = 0u64;
    let mut steps = 0u32;
    loop {
        steps = steps.wrapping_add(1);
        if steps.is_multiple_of(CHECK_EVERY) {
            if host.stop() {
                return;
            }
            host.serve(p);
        }
        match p.step() {
            Step::Ran(n) if n > 0 => {
                idle = 0;
                continue;
            }
            Step::Ran(_) => idle += 1,
            Step::Throttled(Some(at)) => {
                // A rate limit: nothing may run before `at`, whatever arrives.
                let us = at.since(p.now()).as_micros().clamp(1, u64::from(IDLE_SLEEP_US)) as u32;
                host.wait(us, false);
                continue;
            }
            Step::Throttled(None) => idle += 1,
        }
        if idle < u64::from(idle_spins) * tasks {
            continue;
        }
        let us = if p.holding() > 0 { HOLDING_SLEEP_US } else { IDLE_SLEEP_US };
        host.wait(us, true);
        if host.stop() {
            return;
        }
        host.serve(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::Registry;
    use crate::script::parse;

    /// Records the sleeps; stops after `stop_after` of them.
    struct Fake {
        waits: Vec<(u32, bool)>,
        served: usize,
        stop_after: usize,
    }

    impl Host for Fake {
        fn stop(&self) -> bool {
            self.waits.len() >= self.stop_after
        }
        fn wait(&mut self, us: u32, ports: bool) {
            self.waits.push((us, ports));
        }
        fn serve(&mut self, _: &mut Pipeline) {
            self.served += 1;
        }
    }

    fn pipeline(text: &str) -> Pipeline {
        Pipeline::build(&parse(text).unwrap(), &Registry::default(), 1024, Vec::new()).unwrap()
    }

    #[test]
    fn a_busy_pipeline_runs_its_work_before_it_sleeps_on_the_ports() {
        let mut p = pipeline("s :: Source(size=60, count=100000, batch=32) -> k :: Sink()");
        let mut h = Fake { waits: Vec::new(), served: 0, stop_after: 1 };
        drive(&mut p, 4, &mut h);
        assert_eq!(p.node_stats("k").unwrap().rx, 100_000, "all made before the first sleep");
        assert_eq!(h.waits, vec![(IDLE_SLEEP_US, true)]);
        assert!(h.served >= 1, "the control socket is served between steps");
    }

    #[test]
    fn an_idle_pipeline_sleeps_on_its_ports_after_its_spins() {
        let mut p = pipeline("s :: Source(size=60, count=1) -> k :: Sink()");
        let mut h = Fake { waits: Vec::new(), served: 0, stop_after: 3 };
        drive(&mut p, 100, &mut h);
        assert_eq!(p.node_stats("k").unwrap().rx, 1);
        assert_eq!(h.waits, vec![(IDLE_SLEEP_US, true); 3]);
    }

    #[test]
    fn a_rate_limit_sleeps_until_it_lets_work_run() {
        // A class limited to 1 000 packets per second: after its burst the scheduler names
        // when the next may go, and the worker sleeps that long, not on the ports.
        let mut p = pipeline(
            "s :: Source(size=60, batch=1) -> k :: Sink()\n\
             tc limited(policy=rate_limit, resource=packet, limit=1k, tasks=[s])",
        );
        let mut h = Fake { waits: Vec::new(), served: 0, stop_after: 20 };
        drive(&mut p, 1, &mut h);
        assert!(h.waits.iter().any(|&(us, ports)| !ports && us >= 1), "{:?}", h.waits);
    }
}
