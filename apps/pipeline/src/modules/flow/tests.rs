use crate::modules::testing::frames::{tcp, udp};
use crate::modules::testing::{run, One};

const A: [u8; 4] = [198, 18, 1, 2];
const B: [u8; 4] = [198, 18, 2, 1];

#[test]
fn hashlb_keeps_a_flow_on_one_gate_both_ways_and_spreads_flows() {
    let mut m = One::new("HashLB", "gates=4");
    let mut used = [0; 4];
    for port in 1000..1400u16 {
        let (g, _) = m.process_at(0, &[udp(A, B, port, 53, b"x"), udp(B, A, 53, port, b"y")], 0);
        let gate = g.iter().position(|v| !v.is_empty()).unwrap();
        assert_eq!(g[gate].len(), 2, "port {port}: both directions on gate {gate}");
        used[gate] += 1;
    }
    assert!(used.iter().all(|&n| n > 70), "400 flows over 4 gates: {used:?}");
}

#[test]
fn acl_first_match_wins_and_the_default_applies() {
    let rules = "rules=[\"src=198.18.1.0/24 proto=tcp dport=22 drop\", \"dst=198.18.2.1 proto=tcp dport=1-1023 pass\", \"proto=udp sport=1000-2000 pass\"]";
    let frames = [
        tcp(A, B, 5555, 22),
        tcp(A, B, 5555, 80),
        tcp(A, B, 5555, 8080),
        udp(A, B, 1500, 9, b""),
        udp(A, B, 2500, 9, b""),
    ];
    let (g, dropped) = run("ACL", rules, &frames);
    assert_eq!(g[0], vec![frames[1].clone(), frames[3].clone()]);
    assert_eq!(dropped, 3);
    let (g, _) = run("ACL", &format!("{rules}, default=pass"), &frames);
    assert_eq!(g[0].len(), 4, "only the ssh rule drops");
    for bad in [
        "rules=[\"src=1.2.3.0/33 pass\"]",
        "rules=[\"dport=80\"]",
        "rules=[\"port=80 pass\"]",
        "rules=[\"dport=9-3 drop\"]",
    ] {
        let d = crate::script::parse(&format!("m :: ACL({bad})")).unwrap();
        assert!(crate::modules::Registry::default().make(&d.modules[0], &[]).is_err(), "{bad}");
    }
}

#[test]
fn ratelimit_polices_to_its_rate() {
    let mut m = One::new("RateLimit", "pps=1000, burst=10");
    let f = udp(A, B, 1, 2, b"");
    let mut passed = 0;
    // 2 s at 32 packets every ms: 64000 offered at 1000/s allowed.
    for ms in 0..2000u64 {
        let (g, _) = m.process_at(0, &vec![f.clone(); 32], ms * 1_000_000);
        passed += g[0].len();
        assert_eq!(g[0].len() + g[1].len(), 32);
    }
    assert!((1990..=2010).contains(&passed), "{passed} passed in 2 s at 1000/s");
    let mut m = One::new("RateLimit", "bps=800000");
    let mut bits = 0;
    for ms in 0..1000u64 {
        let (g, _) = m.process_at(0, &vec![f.clone(); 4], ms * 1_000_000);
        bits += g[0].iter().map(|p| p.len() * 8).sum::<usize>();
    }
    assert!((bits as f64 - 800_000.0).abs() < 16_000.0, "{bits} bits in 1 s at 800 kb/s");
}

#[test]
fn ratelimit_starts_with_a_full_bucket() {
    // A fresh policer of 1 M pps (a burst of 10 000) under a stream of 10 k/s: its first
    // batch is within the rate and passes whole; an empty bucket dropped it as excess.
    let mut m = One::new("RateLimit", "pps=1000000");
    let f = udp(A, B, 1, 2, b"");
    let (g, _) = m.process_at(0, &vec![f.clone(); 32], 5_000_000_000);
    assert_eq!((g[0].len(), g[1].len()), (32, 0));
    // The burst is the bound of what passes at once, not more.
    let mut m = One::new("RateLimit", "pps=1000, burst=10");
    let (g, _) = m.process_at(0, &vec![f; 32], 1_000_000);
    assert_eq!((g[0].len(), g[1].len()), (10, 22));
}
