//! The example scripts shipped in scripts/pipeline/ build, and carry frames.

use sirocco_pipeline::modules::Registry;
use sirocco_pipeline::pipeline::Pipeline;
use sirocco_pipeline::port::{MemPort, NamedPort};
use sirocco_pipeline::script::{parse, Value};

#[test]
fn every_shipped_script_builds_and_forwards() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pipeline");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "pipeline") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let s = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut names: Vec<String> = Vec::new();
        for d in &s.modules {
            for a in &d.args {
                if let (Some("port"), Value::Str(n)) = (a.key.as_deref(), &a.value) {
                    if !names.contains(n) {
                        names.push(n.clone());
                    }
                }
            }
        }
        let mems: Vec<MemPort> = names.iter().map(|_| MemPort::new()).collect();
        let ports =
            names.iter().zip(&mems).map(|(n, m)| NamedPort { name: n.clone(), port: Box::new(m.clone()) }).collect();
        let mut p = Pipeline::build(&s, &Registry::default(), 1024, ports)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(p.warnings.is_empty(), "{}: {:?}", path.display(), p.warnings);
        // A broadcast ARP request on the first port: the switch floods it, the WAN emulator
        // delays it, the router drops it (not IPv4). Nothing may panic or leak.
        let arp = [&[0xffu8; 6][..], &[2, 0, 0, 0, 1, 1], &[0x08, 0x06], &[0u8; 28]].concat();
        mems[0].inject(&arp);
        for _ in 0..100 {
            p.run_once();
        }
        assert_eq!(p.pool().available() + p.holding(), 1024, "{}", path.display());
        seen += 1;
    }
    assert!(seen >= 3, "the switch, router and WAN scripts");
}
