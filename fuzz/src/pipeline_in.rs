//! Fuzz targets for the pipeline's script parser and its header-reading modules.

use super::*;

/// The pipeline's script parser: no panic; a script it accepts links only modules it
/// declared; an error points inside the text.
pub fn pipeline_script(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match pipeline::script::parse(&text) {
        Ok(s) => {
            for l in &s.links {
                assert!(s.modules.iter().any(|m| m.name == l.from) && s.modules.iter().any(|m| m.name == l.to));
            }
            // What the control socket shows parses back to the same pipeline.
            let again = pipeline::script::parse(&pipeline::change::render(&s)).expect("rendered script parses");
            let strip = |mut s: pipeline::script::Script| {
                for d in s.modules.iter_mut().chain(s.classes.iter_mut()).chain(s.workers.iter_mut()) {
                    d.line = 0;
                }
                for l in &mut s.links {
                    l.line = 0;
                }
                s
            };
            assert_eq!(strip(again), strip(s));
        }
        Err(e) => {
            assert!(e.line >= 1 && e.line <= text.lines().count().max(1) && e.col >= 1);
        }
    }
}

/// Every module that reads packet headers, in one pipeline, on arbitrary frames (each a
/// length byte and that many bytes): no panic, and every buffer comes back to the pool.
pub fn pipeline_frames(data: &[u8]) {
    use pipeline::port::{MemPort, NamedPort};
    const SCRIPT: &str = "\
in :: PortInc(port=p, burst=64)
out :: PortOut(port=p)
in -> VLANPop() -> dx :: VXLANDecap()
dx:1 -> acl :: ACL(rules=[\"src=198.18.0.0/15 proto=tcp dport=1-1000 drop\"], default=pass) -> 0:nat :: NAT(ext_addr=\"198.18.9.9\", ports=\"100-110\")
dx:0 -> 1:nat
nat:0 -> lb :: HashLB(gates=2)
nat:1 -> ttl :: UpdateTTL()
lb:0 -> rt :: IPLookup(routes=[\"198.18.0.0/15 0\", \"0.0.0.0/1 1\"])
lb:1 -> VXLANEncap(src_mac=\"02:00:00:00:00:01\", dst_mac=\"02:00:00:00:00:02\", src_ip=\"198.18.0.1\", dst_ip=\"198.18.0.2\", vni=5) -> out
ttl:1 -> ICMPTimeExceeded(addr=\"198.18.0.254\") -> out
ttl:0 -> Delay(delay_ms=0) -> IPChecksum(verify=true) -> out
rt:0 -> L2Forward(gates=2) -> RateLimit(pps=1M) -> out
rt:1 -> IPChecksum() -> Replicate(gates=2) -> out
";
    thread_local! {
        static P: std::cell::RefCell<Option<(pipeline::pipeline::Pipeline, MemPort)>> = const { std::cell::RefCell::new(None) };
    }
    P.with(|cell| {
        let mut cell = cell.borrow_mut();
        let (p, port) = cell.get_or_insert_with(|| {
            let port = MemPort::new();
            let script = pipeline::script::parse(SCRIPT).expect("fuzz pipeline script");
            let ports = vec![NamedPort { name: "p".into(), port: Box::new(port.clone()) }];
            let p = pipeline::pipeline::Pipeline::build(&script, &pipeline::modules::Registry::default(), 512, ports)
                .expect("fuzz pipeline builds");
            (p, port)
        });
        let mut rest = data;
        while let Some((&n, tail)) = rest.split_first() {
            let n = usize::from(n).min(tail.len());
            port.inject(&tail[..n]);
            rest = &tail[n..];
        }
        for _ in 0..8 {
            p.run_once();
        }
        port.take_sent();
        assert_eq!(p.pool().available() + p.holding(), 512, "every buffer back or held");
    });
}

/// Inputs this area's targets start from (None: not one of its targets).
pub(crate) fn seeds(target: &str) -> Option<Vec<Vec<u8>>> {
    Some(match target {
        "pipeline_script" => vec![
            b"in :: PortInc(port=\"eth0\")\nin -> TTL() -> rt :: IPLookup(routes=[\"0.0.0.0/0 1\"])\nrt:1 -> 0:Sink()\n".to_vec(),
            b"tc t(policy=rate_limit, limit=10k) # c\nworker w(cpu=1)\ns :: Source(size=[64, 1.5, x])".to_vec(),
        ],
        "pipeline_frames" => vec![
            // A UDP datagram, a TCP SYN to port 22, an ICMP echo with TTL 1, a VXLAN packet.
            [&[42u8][..], &hex(b"0200000000020200000000010800450000220000400040110000c6120101c6120201138900350008000071")].concat(),
            [&[54u8][..], &hex(b"0200000000020200000000010800450000280000400040060000c6120909c612020104d2001600000000000000005002ffff00000000")].concat(),
            [&[42u8][..], &hex(b"02000000000202000000000108004500001c0000400001010000c6120101c61202010800f7ff0000000100000000")].concat(),
            [&[92u8][..], &hex(b"0200000000020200000000010800450000500000400040110000c6120001c612000212b512b5003c000008000000000005000200000000020200000000010800450000220000400040110000c6130001c61300020001000200080000aa")].concat(),
        ],
        _ => return None,
    })
}
