use super::*;

const SCRIPT: &str = "in0 :: PortInc(port=\"eth0\")\nout1 :: PortOut(port=\"eth1\")\n\
    in0 -> Bypass() -> Loss(rate=0.25, seed=3) -> out1\n\
    tc t(policy=rate_limit, resource=packet, limit=10k, tasks=[in0])\nworker w(cpu=1)";

fn without_lines(mut s: Script) -> Script {
    for d in s.modules.iter_mut().chain(s.classes.iter_mut()).chain(s.workers.iter_mut()) {
        d.line = 0;
    }
    for l in &mut s.links {
        l.line = 0;
    }
    s
}

#[test]
fn render_parses_back_to_the_same_script() {
    let s = parse(SCRIPT).unwrap();
    let again = parse(&render(&s)).unwrap();
    assert_eq!(without_lines(again), without_lines(s));
    let odd = parse("a :: Source(x=1.0, y=0.00001, s=\"q\\\"\\\\\", l=[1, [2.5, w]], n=-3)").unwrap();
    assert_eq!(without_lines(parse(&render(&odd)).unwrap()), without_lines(odd));
}

#[test]
fn add_puts_a_module_into_a_path() {
    let s = parse(SCRIPT).unwrap();
    let s2 = add(&s, "m :: Timestamp()\nBypass_1 -> m -> Loss_1").unwrap();
    let links: Vec<(&str, &str)> = s2.links.iter().map(|l| (l.from.as_str(), l.to.as_str())).collect();
    assert_eq!(links, [("in0", "Bypass_1"), ("Loss_1", "out1"), ("Bypass_1", "m"), ("m", "Loss_1")]);
    assert_eq!(s2.modules.last().unwrap().line, 1, "lines count from the added text");
    let e = add(&s, "\nnope -> out1").unwrap_err();
    assert_eq!(e.to_string(), "line 2:1: no module 'nope' (declare it first: nope :: Class(...))");
    assert!(add(&s, "Bypass()").unwrap().modules.iter().any(|d| d.name == "Bypass_2"));
}

#[test]
fn remove_joins_upstream_to_downstream() {
    let s = parse(SCRIPT).unwrap();
    let s2 = remove(&s, "Loss_1").unwrap();
    let links: Vec<(&str, &str)> = s2.links.iter().map(|l| (l.from.as_str(), l.to.as_str())).collect();
    assert_eq!(links, [("in0", "Bypass_1"), ("Bypass_1", "out1")]);
    let s3 = remove(&s, "in0").unwrap();
    assert_eq!(s3.classes[0].args[3].value, Value::List(vec![]), "gone from its class's tasks");
    assert_eq!(remove(&s, "zz").unwrap_err(), "no module 'zz'");
}
