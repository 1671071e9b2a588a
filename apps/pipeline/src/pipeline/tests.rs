use super::*;
use crate::metadata::Mode;
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;
use crate::pipeline::Clock;
use crate::script::parse;
use std::sync::{Arc, Mutex};

fn build(text: &str, reg: &Registry) -> Result<Pipeline, ScriptError> {
    Pipeline::build(&parse(text)?, reg, 1024, Vec::new())
}

fn stats(p: &Pipeline, name: &str) -> NodeStats {
    p.node_stats(name).unwrap_or_else(|| panic!("no module {name}"))
}

#[test]
fn round_robin_deals_every_packet_in_turn() {
    let mut p = build("s :: Source(size=60, count=100, batch=32)\ns -> rr :: RoundRobin(gates=3)\nrr:0 -> a :: Sink()\nrr:1 -> b :: Sink()\nrr:2 -> c :: Sink()", &Registry::default()).unwrap();
    let mut made = 0;
    for _ in 0..10 {
        made += p.run_once();
    }
    assert_eq!(made, 100, "count=100 makes 100, then no more");
    assert_eq!((stats(&p, "a").rx, stats(&p, "b").rx, stats(&p, "c").rx), (34, 33, 33));
    assert_eq!(stats(&p, "rr").tx, 100);
    assert_eq!(p.pool().available(), 1024, "every buffer back");
}

#[test]
fn unconnected_gates_drop_and_count() {
    let mut p =
        build("s :: Source(count=10)\ns -> rr :: RoundRobin(gates=2)\nrr:0 -> a :: Sink()", &Registry::default())
            .unwrap();
    p.run_once();
    assert_eq!(stats(&p, "a").rx, 5);
    assert_eq!(stats(&p, "rr").dropped, 5);
    assert_eq!(p.pool().available(), 1024);
}

/// What a Recorder saw: each packet's counter and the attribute's value.
type Seen = Arc<Mutex<Vec<(u64, Option<u32>)>>>;

/// A test module that records what reaches it: the packets' counters (first 8 bytes) and an
/// attribute's value.
struct Recorder {
    seen: Seen,
    attr: Option<String>,
}

impl Module for Recorder {
    fn attrs(&self) -> Vec<crate::metadata::Attr> {
        self.attr.iter().map(|a| crate::metadata::Attr::new(a, 4, Mode::Read)).collect()
    }
    fn ogates(&self) -> u32 {
        0
    }
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let seq = u64::from_be_bytes(ctx.pool.data(p)[..8].try_into().unwrap());
            let v = ctx.attr(p, 0, 4).map(|b| u32::from_be_bytes(b.try_into().unwrap()));
            self.seen.lock().unwrap().push((seq, v));
            out.drop(p);
        }
    }
}

thread_local! {
    // Makers are plain functions: the recorder of the test running on this thread reaches
    // them here (tests run on threads of their own).
    static SEEN: std::cell::RefCell<Option<Seen>> = const { std::cell::RefCell::new(None) };
}

fn registry_with_recorder() -> (Registry, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    SEEN.with(|s| *s.borrow_mut() = Some(seen.clone()));
    let mut r = Registry::default();
    r.add("Recorder", |a| {
        let seen = SEEN.with(|s| s.borrow().clone()).expect("set by the test");
        Ok(Box::new(Recorder { seen, attr: a.string("attr")? }))
    });
    (r, seen)
}

#[test]
fn packets_and_metadata_arrive_as_sent() {
    let (reg, seen) = registry_with_recorder();
    let mut p = build(
        "s :: Source(count=6, batch=6)\ns -> SetMetadata(attr=\"class\", size=4, value=7) -> Replicate(gates=2) -> Bypass() -> r :: Recorder(attr=class)\nReplicate_1:1 -> r",
        &reg,
    )
    .unwrap();
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(p.meta_used, 4);
    p.run_once();
    let mut got = seen.lock().unwrap().clone();
    got.sort_unstable();
    let want: Vec<(u64, Option<u32>)> = (0..6).flat_map(|s| [(s, Some(7)), (s, Some(7))]).collect();
    assert_eq!(got, want, "each packet twice (the copy too), with its metadata");
    assert_eq!(p.pool().available(), 1024);
}

#[test]
fn a_read_nobody_writes_is_a_warning_with_its_line() {
    let (reg, _) = registry_with_recorder();
    let p = build("s :: Source(count=1)\n\ns -> r :: Recorder(attr=color)", &reg).unwrap();
    assert_eq!(p.warnings, ["line 3: r reads metadata 'color', which no module upstream writes"]);
}

#[test]
fn random_split_keeps_its_share_and_drops_its_rate() {
    let mut p = build("s :: Source(count=20000)\ns -> rs :: RandomSplit(gates=2, drop=0.25, seed=7)\nrs:0 -> a :: Sink()\nrs:1 -> b :: Sink()", &Registry::default()).unwrap();
    for _ in 0..400 {
        p.run_once();
    }
    let (a, b, d) = (stats(&p, "a").rx, stats(&p, "b").rx, stats(&p, "rs").dropped);
    assert_eq!(a + b + d, 20_000);
    assert!((4_600..5_400).contains(&d), "dropped {d} of 20000 at 0.25");
    assert!(a.abs_diff(b) < 600, "{a} vs {b}");
}

#[test]
fn bad_configurations_name_their_line() {
    let reg = Registry::default();
    let cases = [
        ("s :: Source()\ns -> Nope()", "line 2:1: Nope_1 :: Nope: no module class 'Nope'"),
        ("s :: Source(sise=64)", "line 1:1: s :: Source: unknown argument 'sise'"),
        ("s :: Source(size=9000)", "line 1:1: s :: Source: size must be an integer from 8 to 1920"),
        ("s :: Source()\nx :: Sink()\ns:1 -> x", "line 3:1: s has 1 output gate(s); there is no gate 1"),
        ("s :: Source()\nx :: Sink()\ny :: Sink()\ns -> x\ns -> y", "line 5:1: s:0 is connected already"),
        ("s :: Source()\ns -> 1:Sink()", "line 2:1: Sink_1 has 1 input gate(s); there is no gate 1"),
        (
            "a :: Bypass()\nb :: Bypass()\na -> b\nb -> a",
            "line 1:1: the links make a cycle: a -> b -> a (a cycle needs a Queue in it)",
        ),
        ("x :: Sink()\nx -> Sink()", "line 2:1: x has 0 output gate(s); there is no gate 0"),
    ];
    for (text, want) in cases {
        match build(text, &reg) {
            Ok(_) => panic!("{text:?} built"),
            Err(e) => assert_eq!(e.to_string(), want, "for {text:?}"),
        }
    }
}

fn mem_ports(names: &[&str]) -> (Vec<crate::port::NamedPort>, Vec<crate::port::MemPort>) {
    let mems: Vec<_> = names.iter().map(|_| crate::port::MemPort::new()).collect();
    let ports = names
        .iter()
        .zip(&mems)
        .map(|(n, m)| crate::port::NamedPort { name: n.to_string(), port: Box::new(m.clone()) })
        .collect();
    (ports, mems)
}

fn frame(i: u16) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5];
    f.extend(i.to_be_bytes());
    f.resize(64, 0);
    f
}

#[test]
fn ports_carry_frames_through_in_order() {
    let (ports, mems) = mem_ports(&["a", "b"]);
    let mut p = Pipeline::build(
        &parse("PortInc(port=\"a\", burst=16) -> PortOut(port=\"b\")\nPortInc(port=b) -> PortOut(port=a)").unwrap(),
        &Registry::default(),
        64,
        ports,
    )
    .unwrap();
    let sent: Vec<Vec<u8>> = (0..100).map(frame).collect();
    for f in &sent {
        mems[0].inject(f);
    }
    mems[1].inject(&frame(999));
    for _ in 0..10 {
        p.run_once();
    }
    assert_eq!(mems[1].take_sent(), sent);
    assert_eq!(mems[0].take_sent(), vec![frame(999)]);
    assert_eq!(stats(&p, "PortOut_1").tx, 100);
    assert_eq!(p.pool().available(), 64);
}

#[test]
fn a_port_the_pipeline_lacks_is_named() {
    let (ports, _) = mem_ports(&["a"]);
    let e =
        Pipeline::build(&parse("x :: PortInc(port=\"eth9\")").unwrap(), &Registry::default(), 64, ports).err().unwrap();
    assert_eq!(e.to_string(), "line 1:1: x :: PortInc: no port 'eth9' (ports: a)");
}

#[test]
fn a_full_queue_pauses_what_feeds_it_and_loses_nothing() {
    let (ports, mems) = mem_ports(&["in", "out"]);
    // Frames come in 8 per run and leave the queue 4 per run: it fills, and its backpressure
    // must stop PortInc before it overflows; the frames wait in the port meanwhile.
    let mut p = Pipeline::build(
        &parse("PortInc(port=in, burst=8) -> q :: Queue(size=64, burst=4, high=32, low=8) -> PortOut(port=out)")
            .unwrap(),
        &Registry::default(),
        256,
        ports,
    )
    .unwrap();
    for i in 0..500 {
        mems[0].inject(&frame(i));
    }
    for _ in 0..200 {
        p.run_once();
    }
    let got = mems[1].take_sent();
    let order: Vec<u16> = got.iter().map(|f| u16::from_be_bytes([f[14], f[15]])).collect();
    assert_eq!(order, (0..500).collect::<Vec<u16>>(), "every frame, in order");
    assert!(p.paused > 0, "backpressure paused the port");
    let c: Vec<_> = p.module_counters().find(|(n, _)| *n == "q").unwrap().1;
    assert_eq!(c[1], ("overflows", 0));
    assert!(c[2].1 > 0, "{c:?}");
}

#[test]
fn a_queue_may_close_a_cycle() {
    let reg = Registry::default();
    let text = "src :: Source(count=4, batch=1)\nsrc -> rr :: RoundRobin(gates=2)\nrr:0 -> q :: Queue()\nrr:1 -> k :: Sink()\nq -> rr";
    let mut p = build(text, &reg).unwrap();
    for _ in 0..20 {
        p.run_once();
    }
    assert_eq!(stats(&p, "k").rx, 4, "every packet goes round until it leaves");
    assert_eq!(p.pool().available(), 1024);
    let e = build(&text.replace("Queue()", "Bypass()"), &reg).err().unwrap();
    assert!(e.to_string().contains("a cycle needs a Queue"), "{e}");
}

/// A clock the test moves.
#[derive(Clone, Default)]
struct TestClock(Arc<std::sync::atomic::AtomicU64>);

impl Clock for TestClock {
    fn now(&self) -> Instant {
        Instant::from_nanos(self.0.load(std::sync::atomic::Ordering::SeqCst))
    }
}

#[test]
fn traffic_classes_share_and_limit_as_configured() {
    let mut p = build(
        "a :: Source(size=100, batch=32) -> ka :: Sink()\n\
         b :: Source(size=100, batch=32) -> kb :: Sink()\n\
         c :: Source(size=100, batch=16) -> kc :: Sink()\n\
         tc top(policy=priority)\n\
         tc limited(policy=rate_limit, resource=packet, limit=50k, parent=top, priority=0, tasks=[c])\n\
         tc fair(policy=weighted_fair, resource=packet, parent=top, priority=1)\n\
         tc one(policy=round_robin, parent=fair, share=1, tasks=[a])\n\
         tc two(policy=round_robin, parent=fair, share=2, tasks=[b])",
        &Registry::default(),
    )
    .unwrap();
    let clock = TestClock::default();
    p.set_clock(Box::new(clock.clone()));
    // One simulated second, a step every 2 µs.
    for i in 0..500_000u64 {
        clock.0.store(i * 2000, std::sync::atomic::Ordering::SeqCst);
        p.step();
    }
    let (a, b, c) = (stats(&p, "ka").rx, stats(&p, "kb").rx, stats(&p, "kc").rx);
    assert!((c as f64 - 50_000.0).abs() / 50_000.0 < 0.01, "rate limit 50k/s: {c}");
    let r = b as f64 / a as f64;
    assert!((r - 2.0).abs() < 0.02, "shares 1:2 of packets: {a} vs {b}");
    let cs = p.class_stats();
    let limited = cs.iter().find(|c| c.name == "limited").unwrap();
    assert_eq!((limited.policy, limited.used.packets), ("rate_limit", c));
    assert_eq!(limited.used.bits, c * 800);
}

#[test]
fn changes_under_traffic_lose_nothing_and_keep_state() {
    let reg = Registry::default();
    let (ports, mems) = mem_ports(&["in", "out"]);
    let mut p = Pipeline::build(
        &parse("PortInc(port=in, burst=8) -> q :: Queue(size=4096, burst=2) -> b :: Bypass() -> PortOut(port=out)")
            .unwrap(),
        &reg,
        1024,
        ports,
    )
    .unwrap();
    for i in 0..600 {
        mems[0].inject(&frame(i));
    }
    let mut changes = 0;
    for round in 0..1000 {
        p.step();
        match round {
            // A module into the path while the queue holds packets; then out again.
            100 => {
                assert!(p.holding() > 0, "the queue holds packets during the change");
                let s = crate::change::add(p.script(), "t :: Timestamp()\nm :: Measure()\nb -> t -> m -> PortOut_1")
                    .unwrap();
                p.reconfigure(&s, &reg).unwrap();
                changes += 1;
            }
            300 => {
                let s = crate::change::remove(p.script(), "t").unwrap();
                p.reconfigure(&s, &reg).unwrap();
                changes += 1;
            }
            _ => {}
        }
    }
    assert_eq!(changes, 2);
    let order: Vec<u16> = mems[1].take_sent().iter().map(|f| u16::from_be_bytes([f[14], f[15]])).collect();
    assert_eq!(order, (0..600).collect::<Vec<u16>>(), "every frame, in order, across both changes");
    assert_eq!(stats(&p, "q").rx, 600, "the queue kept its counters");
    let m: Vec<_> = p.module_counters().find(|(n, _)| *n == "m").unwrap().1;
    assert!(m[0].1 > 0, "Measure saw packets: {m:?}");
    assert_eq!(p.pool().available(), 1024);
}

#[test]
fn a_module_holding_packets_cannot_go() {
    let reg = Registry::default();
    let (ports, mems) = mem_ports(&["in", "out"]);
    let mut p = Pipeline::build(
        &parse("PortInc(port=in) -> q :: Queue(burst=1) -> PortOut(port=out)").unwrap(),
        &reg,
        256,
        ports,
    )
    .unwrap();
    for i in 0..10 {
        mems[0].inject(&frame(i));
    }
    p.step();
    let s = crate::change::remove(p.script(), "q").unwrap();
    let e = p.reconfigure(&s, &reg).unwrap_err();
    assert!(e.msg.starts_with("q holds 10 packets"), "{e}");
    // Still running as before.
    for _ in 0..40 {
        p.step();
    }
    assert_eq!(mems[1].take_sent().len(), 10);
    p.reconfigure(&s, &reg).unwrap();
}
