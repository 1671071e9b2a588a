use super::*;
use crate::script::parse;

const TWO: &str = "\
a1 :: PortInc(port=\"eth1\")\na2 :: PortInc(port=\"eth2\")\nsw :: L2Forward(gates=2)\n\
a1 -> 0:sw\na2 -> 1:sw\nsw:0 -> PortOut(port=\"eth1\")\nsw:1 -> PortOut(port=\"eth2\")\n\
b3 :: PortInc(port=\"eth3\") -> Delay(delay_ms=5) -> PortOut(port=\"eth4\")\n\
b4 :: PortInc(port=\"eth4\") -> Delay(delay_ms=5) -> PortOut(port=\"eth3\")\n\
tc slow(policy=round_robin, worker=w1, tasks=[b3, b4])\n\
worker w0(cpu=0)\nworker w1(cpu=1)\n";

fn names(p: &Part) -> Vec<&str> {
    p.script.modules.iter().map(|d| d.name.as_str()).collect()
}

#[test]
fn each_worker_gets_what_its_tasks_reach() {
    let s = parse(TWO).unwrap();
    let parts = split(&s, &["a1", "a2", "b3", "b4", "Delay_1", "Delay_2"]).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(names(&parts[0]), ["a1", "a2", "sw", "PortOut_1", "PortOut_2"]);
    assert_eq!(names(&parts[1]), ["b3", "Delay_1", "PortOut_3", "b4", "Delay_2", "PortOut_4"]);
    assert_eq!(parts[1].script.classes.len(), 1);
    assert_eq!(parts[0].script.links.len() + parts[1].script.links.len(), s.links.len());
    assert_eq!(parts[1].worker.name, "w1");
}

#[test]
fn sharing_between_workers_is_refused() {
    // A task of w1 feeding a module w0's task reaches.
    let s = parse("a :: Source()\nb :: Source()\nk :: Sink()\na -> k\nb -> k\ntc t(policy=round_robin, worker=w1, tasks=[b])\nworker w0(cpu=0)\nworker w1(cpu=1)").unwrap();
    let e = split(&s, &["a", "b"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 3:1: module 'k' is reached from tasks of workers w1 and w0; a module runs on one worker"
    );
    // One interface on two workers.
    let s = parse("PortInc(port=\"e\") -> Sink()\nSource() -> PortOut(port=\"e\")\ntc t(policy=round_robin, worker=w1, tasks=[Source_1])\nworker w0(cpu=0)\nworker w1(cpu=1)").unwrap();
    let e = split(&s, &["PortInc_1", "Source_1"]).unwrap_err();
    assert!(e.msg.contains("interface 'e' has ports on workers w0 and w1"), "{e}");
    let s = parse("tc t(policy=round_robin, worker=w9)\nworker w0(cpu=0)\nworker w1(cpu=1)").unwrap();
    assert_eq!(split(&s, &[]).unwrap_err().to_string(), "line 1:1: no worker 'w9'");
}

#[test]
fn built_workers_name_their_interfaces_and_a_bad_port_is_refused() {
    let reg = Registry::default();
    let built = build(&parse(TWO).unwrap(), &reg, 256).unwrap();
    let got: Vec<(&str, Vec<&str>)> =
        built.iter().map(|b| (b.name.as_str(), b.ports.iter().map(String::as_str).collect())).collect();
    assert_eq!(got, [("w0", vec!["eth1", "eth2"]), ("w1", vec!["eth3", "eth4"])]);
    let one = build(&parse("PortInc(port=\"x\") -> PortOut(port=\"y\")").unwrap(), &reg, 256).unwrap();
    assert_eq!((one.len(), one[0].name.as_str(), one[0].ports.clone()), (1, "w0", vec!["x".into(), "y".into()]));
    let e = build(&parse("PortInc() -> Sink()").unwrap(), &reg, 256).err().unwrap();
    assert_eq!(e, "line 1: PortInc_1 :: PortInc needs port=\"INTERFACE\"");
}
