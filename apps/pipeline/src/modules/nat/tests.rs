use crate::modules::testing::frames::{checksums_ok, echo, tcp, udp};
use crate::modules::testing::One;

const IN: [u8; 4] = [198, 18, 1, 2];
const IN2: [u8; 4] = [198, 18, 1, 3];
const EXT: [u8; 4] = [198, 18, 2, 254];
const SRV: [u8; 4] = [198, 18, 2, 1];

fn nat(args: &str) -> One {
    let sep = if args.is_empty() { "" } else { ", " };
    One::new("NAT", &format!("ext_addr=\"198.18.2.254\"{sep}{args}"))
}

fn ports(f: &[u8]) -> (u16, u16) {
    (u16::from_be_bytes([f[34], f[35]]), u16::from_be_bytes([f[36], f[37]]))
}

#[test]
fn outgoing_flows_get_the_outside_address_and_answers_find_their_way_back() {
    let mut n = nat("ports=\"2000-2009\"");
    for f in [udp(IN, SRV, 5000, 53, b"query"), tcp(IN2, SRV, 40000, 80), echo(IN, SRV, false, 77)] {
        let (g, _) = n.process_at(0, std::slice::from_ref(&f), 0);
        let o = &g[0][0];
        assert_eq!(&o[26..30], &EXT, "source rewritten");
        assert_eq!(&o[30..34], &SRV);
        assert!(checksums_ok(o), "checksums right after the rewrite");
        let l4 = if f[23] == 6 { 20 } else { 8 };
        assert_eq!(o[34 + l4..], f[34 + l4..], "payload untouched");
        // The answer: from the server to the outside port (ICMP: the identifier).
        let back = match f[23] {
            17 => udp(SRV, EXT, 53, ports(o).0, b"answer"),
            6 => tcp(SRV, EXT, 80, ports(o).0),
            _ => echo(SRV, EXT, true, u16::from_be_bytes([o[38], o[39]])),
        };
        let (g, _) = n.process_at(1, &[back], 1);
        let r = &g[1][0];
        assert_eq!(&r[30..34], &f[26..30], "back to the inside host");
        if f[23] == 1 {
            assert_eq!(&r[38..40], &f[38..40], "and its identifier");
        } else {
            assert_eq!(ports(r).1, ports(&f).0, "and its port");
        }
        assert!(checksums_ok(r));
    }
}

#[test]
fn a_flow_keeps_its_port_and_unknown_answers_are_dropped() {
    let mut n = nat("");
    let (a, _) = n.process_at(0, &[udp(IN, SRV, 5000, 53, b"1")], 0);
    let (b, _) = n.process_at(0, &[udp(IN, SRV, 5000, 53, b"2")], 5);
    assert_eq!(ports(&a[0][0]).0, ports(&b[0][0]).0);
    let (c, _) = n.process_at(0, &[udp(IN, SRV, 5001, 53, b"3")], 5);
    assert_ne!(ports(&a[0][0]).0, ports(&c[0][0]).0, "another flow, another port");
    let (_, dropped) =
        n.process_at(1, &[udp(SRV, EXT, 53, 9999, b"?"), udp(SRV, [198, 18, 2, 9], 53, ports(&a[0][0]).0, b"?")], 6);
    assert_eq!(dropped, 2);
}

#[test]
fn ports_run_out_then_come_back_after_the_timeout() {
    let mut n = nat("ports=\"3000-3001\", timeout_s=10");
    let s = 1_000_000_000;
    n.process_at(0, &[udp(IN, SRV, 1, 53, b""), udp(IN, SRV, 2, 53, b"")], 0);
    let (_, dropped) = n.process_at(0, &[udp(IN, SRV, 3, 53, b"")], s);
    assert_eq!(dropped, 1, "two ports, both bound");
    let (g, _) = n.process_at(0, &[udp(IN, SRV, 3, 53, b"")], 11 * s);
    assert_eq!(g[0].len(), 1, "an expired binding is taken over");
    let c: std::collections::HashMap<_, _> = n.m.counters().into_iter().collect();
    assert_eq!((c["bound"], c["expired"], c["no_port"]), (3, 1, 1));
}
