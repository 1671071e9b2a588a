use super::*;
use crate::script::parse;

fn sched(tcs: &str, tasks: &[&str]) -> Result<Scheduler, ScriptError> {
    Scheduler::build(&parse(tcs).unwrap().classes, tasks)
}

/// Runs `steps` picks at 1 µs apart, each run making `made[task]` packets of 1000 bits;
/// returns the runs of each task.
fn simulate(s: &mut Scheduler, tasks: usize, steps: u64, made: &[u64], runnable: &dyn Fn(usize) -> bool) -> Vec<u64> {
    let mut runs = vec![0; tasks];
    for i in 0..steps {
        if let Ok((leaf, t)) = s.next(Instant::from_nanos(i * 1000), runnable) {
            runs[t] += 1;
            s.account(leaf, Usage { count: 1, cycles: 100, packets: made[t], bits: made[t] * 1000 });
        }
    }
    runs
}

#[test]
fn without_classes_every_task_takes_its_turn() {
    let mut s = sched("", &["a", "b", "c"]).unwrap();
    assert_eq!(simulate(&mut s, 3, 300, &[1, 1, 1], &|_| true), [100, 100, 100]);
}

#[test]
fn priority_runs_the_first_while_it_can() {
    let mut s = sched("tc p(policy=priority)\ntc hi(policy=round_robin, parent=p, priority=0, tasks=[a])\ntc lo(policy=round_robin, parent=p, priority=1, tasks=[b])", &["a", "b"]).unwrap();
    assert_eq!(simulate(&mut s, 2, 100, &[1, 1], &|_| true), [100, 0]);
    assert_eq!(simulate(&mut s, 2, 100, &[1, 1], &|t| t != 0), [0, 100], "b runs while a cannot");
}

#[test]
fn weighted_fair_shares_the_resource_by_weight() {
    // By packets: a makes 32 per run, b 8 per run; shares 1:3 of packets.
    let mut s = sched("tc wf(policy=weighted_fair, resource=packet)\ntc x(policy=round_robin, parent=wf, share=1, tasks=[a])\ntc y(policy=round_robin, parent=wf, share=3, tasks=[b])", &["a", "b"]).unwrap();
    let runs = simulate(&mut s, 2, 100_000, &[32, 8], &|_| true);
    let (pa, pb) = (runs[0] * 32, runs[1] * 8);
    let ratio = pb as f64 / pa as f64;
    assert!((ratio - 3.0).abs() < 0.03, "packets {pa} vs {pb}: {ratio}");
}

#[test]
fn an_idle_child_does_not_bank_its_turns() {
    let mut s = sched("tc wf(policy=weighted_fair)\ntc x(policy=round_robin, parent=wf, tasks=[a])\ntc y(policy=round_robin, parent=wf, tasks=[b])", &["a", "b"]).unwrap();
    simulate(&mut s, 2, 1000, &[1, 1], &|t| t == 0);
    // Now both may run: b must not get the next 1000 runs alone.
    let runs = simulate(&mut s, 2, 100, &[1, 1], &|_| true);
    assert!(runs[0] >= 45, "{runs:?}");
}

#[test]
fn a_rate_limit_holds_its_rate() {
    // 200 k packets/s over one simulated second (a run every µs, 32 packets each when allowed).
    let mut s = sched("tc rl(policy=rate_limit, resource=packet, limit=200k, tasks=[a])", &["a", "b"]).unwrap();
    let runs = simulate(&mut s, 2, 1_000_000, &[32, 1], &|_| true);
    let pkts = runs[0] * 32;
    assert!((pkts as f64 - 200_000.0).abs() / 200_000.0 < 0.01, "{pkts} packets in 1 s at 200k/s");
    assert!(runs[1] > 400_000, "the unlimited task takes the rest: {}", runs[1]);
}

#[test]
fn a_rate_limit_in_bits() {
    let mut s = sched("tc rl(policy=rate_limit, resource=bit, limit=100M, tasks=[a])", &["a"]).unwrap();
    let runs = simulate(&mut s, 1, 1_000_000, &[10], &|_| true);
    let bits = runs[0] * 10 * 1000;
    assert!((bits as f64 - 1e8).abs() / 1e8 < 0.01, "{bits} bits in 1 s at 100 Mb/s");
}

#[test]
fn when_everything_is_throttled_it_says_until_when() {
    let mut s = sched("tc rl(policy=rate_limit, resource=count, limit=1000, max_burst=1, tasks=[a])", &["a"]).unwrap();
    let (leaf, _) = s.next(Instant::ZERO, &|_| true).unwrap();
    s.account(leaf, Usage { count: 1, ..Usage::default() });
    s.account(leaf, Usage { count: 1, ..Usage::default() });
    // The bucket starts empty (a measured rate starts at zero): tokens at -2 after two runs,
    // and 1000/s refills one per ms.
    assert_eq!(s.next(Instant::ZERO, &|_| true), Err(Throttled { until: Some(Instant::from_millis(2)) }));
    assert!(s.next(Instant::from_nanos(1_999_999), &|_| true).is_err());
    assert!(s.next(Instant::from_millis(2), &|_| true).is_ok());
}

#[test]
fn bad_classes_are_named() {
    let cases = [
        ("tc a(policy=fast)", "line 1:1: tc a: no policy 'fast' (priority, weighted_fair, round_robin or rate_limit)"),
        ("tc a(policy=rate_limit)", "line 1:1: tc a: a rate_limit class needs limit=N (per second)"),
        ("tc a(policy=priority, parent=zz)", "line 1:1: tc a: no class 'zz'"),
        ("tc a(policy=priority, tasks=[q])", "line 1:1: tc a: 'q' is not a module with a task"),
        (
            "tc a(policy=priority, tasks=[t])\ntc b(policy=priority, tasks=[t])",
            "line 2:1: tc b: task 't' is in two classes",
        ),
        (
            "tc a(policy=priority, parent=b)\ntc b(policy=priority, parent=a)",
            "line 1:1: tc a: its parents make a cycle",
        ),
        ("tc a(policy=priority, resource=watts)", "line 1:1: tc a: no resource 'watts' (count, cycle, packet or bit)"),
        ("tc a(policy=priority, speed=1)", "line 1:1: tc a: unknown argument 'speed'"),
    ];
    for (text, want) in cases {
        assert_eq!(sched(text, &["t"]).unwrap_err().to_string(), want, "{text}");
    }
}
