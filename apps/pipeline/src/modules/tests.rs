//! Tests of the switching, routing, queueing and timing modules, each run alone on exact frames.

use super::testing::frames::udp_ttl;
use super::testing::{run, One};
use timer::histogram::Histogram;
use wire::checksum;

const A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
const B: [u8; 6] = [2, 0, 0, 0, 0, 0xb];
const C: [u8; 6] = [2, 0, 0, 0, 0, 0xc];
const BCAST: [u8; 6] = [0xff; 6];

fn eth(dst: [u8; 6], src: [u8; 6], tag: u8) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend(dst);
    f.extend(src);
    f.extend([0x88, 0xb5, tag]);
    f.resize(60, 0);
    f
}

/// An Ethernet frame with IPv4/UDP from `src` to `dst`, TTL `ttl`, right checksums.
fn ipv4(src: [u8; 4], dst: [u8; 4], ttl: u8) -> Vec<u8> {
    udp_ttl(src, dst, ttl, 12345, 7, b"payload!")
}

#[test]
fn l2forward_floods_the_unknown_then_forwards_what_it_learnt() {
    let mut m = One::new("L2Forward", "gates=3");
    // A speaks from gate 0 to B, unknown: flooded to gates 1 and 2, one copy each.
    let (g, d) = m.process_at(0, &[eth(B, A, 1)], 0);
    assert_eq!((g[0].len(), g[1].clone(), g[2].clone(), d), (0, vec![eth(B, A, 1)], vec![eth(B, A, 1)], 0));
    // B answers from gate 2: A is known behind gate 0.
    let (g, _) = m.process_at(2, &[eth(A, B, 2)], 1);
    assert_eq!((g[0].clone(), g[1].len(), g[2].len()), (vec![eth(A, B, 2)], 0, 0));
    // Now B is known behind gate 2; broadcast still floods.
    let (g, _) = m.process_at(0, &[eth(B, A, 3), eth(BCAST, A, 4)], 2);
    assert_eq!(g[2], vec![eth(B, A, 3), eth(BCAST, A, 4)]);
    assert_eq!(g[1], vec![eth(BCAST, A, 4)]);
    // A frame for a MAC behind the gate it came from is not sent back.
    let (g, d) = m.process_at(0, &[eth(A, C, 5)], 3);
    assert_eq!((g.iter().map(Vec::len).sum::<usize>(), d), (0, 1));
    let c: std::collections::HashMap<_, _> = m.m.counters().into_iter().collect();
    assert_eq!((c["learnt"], c["floods"], c["filtered"]), (3, 2, 1));
}

#[test]
fn l2forward_forgets_entries_after_the_timeout() {
    let mut m = One::new("L2Forward", "gates=2, timeout_s=5");
    m.process_at(1, &[eth(BCAST, B, 0)], 0);
    let (g, _) = m.process_at(0, &[eth(B, A, 1)], 4_000_000_000);
    assert_eq!(g[1].len(), 1);
    assert_eq!(m.m.counters()[1], ("floods", 1));
    m.process_at(0, &[eth(B, A, 2)], 6_000_000_000);
    assert_eq!(m.m.counters()[1], ("floods", 2), "B was last seen 6 s before: flooded again");
}

#[test]
fn mac_rewrite_sets_the_addresses() {
    let (g, _) = run("MACRewrite", "src=\"02:00:00:00:00:0c\", dst=\"02:00:00:00:00:0a\"", &[eth(B, A, 7)]);
    assert_eq!(g[0], vec![eth(A, C, 7)]);
    assert!(super::Registry::default()
        .make(&crate::script::parse("m :: MACRewrite(src=\"zz\")").unwrap().modules[0], &[])
        .is_err());
}

#[test]
fn iplookup_sends_each_destination_to_its_route_and_drops_misses() {
    let routes = "routes=[\"198.18.1.0/24 0\", \"198.18.2.0/24 1\", \"198.18.2.128/25 2\"]";
    let f = |d: [u8; 4]| ipv4([198, 18, 9, 9], d, 64);
    let (g, dropped) = run(
        "IPLookup",
        routes,
        &[f([198, 18, 1, 1]), f([198, 18, 2, 1]), f([198, 18, 2, 200]), f([127, 0, 0, 1]), eth(A, B, 0)],
    );
    assert_eq!(g, vec![vec![f([198, 18, 1, 1])], vec![f([198, 18, 2, 1])], vec![f([198, 18, 2, 200])]]);
    assert_eq!(dropped, 2);
}

#[test]
fn iplookup_reads_a_route_file_and_names_a_bad_line() {
    let dir = std::env::temp_dir().join(format!("sirocco-lpm-{}", std::process::id()));
    std::fs::write(&dir, "# routes\n198.18.0.0/15 1\n\n0.0.0.0/0 0 # default\n").unwrap();
    let (g, _) = run("IPLookup", &format!("file=\"{}\"", dir.display()), &[ipv4([127, 0, 0, 2], [198, 19, 0, 1], 9)]);
    assert_eq!(g[1].len(), 1);
    std::fs::write(&dir, "198.18.0.0/15 1\n198.18.0.0/40 1\n").unwrap();
    let d = crate::script::parse(&format!("m :: IPLookup(file=\"{}\")", dir.display())).unwrap();
    let e = super::Registry::default().make(&d.modules[0], &[]).err().unwrap();
    assert!(e.contains(":2: route"), "{e}");
    std::fs::remove_file(&dir).unwrap();
}

#[test]
fn icmp_time_exceeded_is_built_as_rfc_792_says() {
    let orig = ipv4([198, 18, 1, 2], [198, 18, 2, 2], 1);
    let (g, _) = run("ICMPTimeExceeded", "addr=\"198.18.1.254\"", std::slice::from_ref(&orig));
    let r = &g[0][0];
    assert_eq!(&r[0..6], &orig[6..12], "back to the sender");
    assert_eq!(&r[6..12], &orig[0..6], "from the router's MAC");
    let ip = &r[14..34];
    assert_eq!(checksum::checksum(ip), 0, "header checksum");
    assert_eq!((ip[9], &ip[12..16], &ip[16..20]), (1, &[198u8, 18, 1, 254][..], &[198u8, 18, 1, 2][..]));
    assert_eq!(usize::from(u16::from_be_bytes([ip[2], ip[3]])), r.len() - 14);
    let icmp = &r[34..];
    assert_eq!((icmp[0], icmp[1]), (11, 0));
    assert_eq!(checksum::checksum(icmp), 0, "ICMP checksum");
    assert_eq!(&icmp[8..], &orig[14..14 + 28], "the original header and 8 bytes quoted");
}

#[test]
fn no_icmp_error_about_an_icmp_error_or_a_fragment() {
    let mut err = ipv4([198, 18, 1, 2], [198, 18, 2, 2], 1);
    err[23] = 1; // protocol ICMP
    err[34] = 3; // destination unreachable
    let mut frag = ipv4([198, 18, 1, 2], [198, 18, 2, 2], 1);
    frag[20] = 0x00;
    frag[21] = 0x10; // offset 16
    let (g, dropped) = run("ICMPTimeExceeded", "addr=\"198.18.1.254\"", &[err, frag]);
    assert_eq!((g[0].len(), dropped), (0, 2));
}

#[test]
fn queue_is_fifo_bounded_and_signals_backpressure() {
    let mut q = One::new("Queue", "size=8, burst=3, high=6, low=2");
    let frames: Vec<Vec<u8>> = (0..10).map(|i| eth(B, A, i)).collect();
    let (_, dropped) = q.process_at(0, &frames, 0);
    assert_eq!(dropped, 2, "two past the size");
    assert!(q.m.congested());
    let (g, _) = q.task_at(0);
    assert_eq!(g[0], frames[0..3].to_vec());
    assert!(q.m.congested(), "5 left: above low");
    q.task_at(0);
    let (g, _) = q.task_at(0);
    assert_eq!(g[0], frames[6..8].to_vec());
    assert!(!q.m.congested());
}

#[test]
fn a_queue_with_a_rate_is_a_drop_tail_bottleneck() {
    // 1 Mb/s: a 60-byte frame (480 bits) may leave every 480 µs.
    let mut q = One::new("Queue", "size=4, rate=1000000");
    let frames: Vec<Vec<u8>> = (0..6).map(|i| eth(B, A, i)).collect();
    let bits = frames[0].len() as u64 * 8;
    let (_, dropped) = q.process_at(0, &frames, 0);
    assert_eq!(dropped, 2, "drop-tail past the size");
    assert!(!q.m.congested(), "a bottleneck drops; it does not push back");
    assert_eq!(q.task_at(0).0[0].len(), 0, "no credit yet");
    let per = bits * 1000; // ns per frame at 1 Mb/s
    assert_eq!(q.task_at(per - 1).0[0].len(), 0, "not a nanosecond early");
    assert_eq!(q.task_at(per).0[0], frames[0..1].to_vec());
    assert_eq!(q.task_at(per + per / 2).0[0].len(), 0, "one frame time each");
    assert_eq!(q.task_at(2 * per).0[0], frames[1..2].to_vec());
    // After a pause the link has saved up two full-size frames' time (about fifty of these
    // small ones), not the whole pause: the rest leave at once, and the next frame that comes
    // waits for the bucket to refill from what they used.
    assert_eq!(q.task_at(1000 * per).0[0], frames[2..4].to_vec());
    let more: Vec<Vec<u8>> = (10..70).map(|i| eth(B, A, i)).collect();
    q.process_at(0, &more[..4], 1000 * per);
    assert_eq!(q.task_at(1000 * per).0[0], more[..4].to_vec(), "within the bucket");
}

#[test]
fn delay_holds_each_packet_for_its_delay_and_keeps_order() {
    let mut d = One::new("Delay", "delay_ms=2, tick_us=100");
    let ms = 1_000_000;
    d.process_at(0, &[eth(B, A, 1), eth(B, A, 2)], 10 * ms);
    d.process_at(0, &[eth(B, A, 3)], 10 * ms + 50_000);
    assert_eq!(d.task_at(11 * ms).0[0].len(), 0);
    assert_eq!(d.task_at(12 * ms - 1).0[0].len(), 0, "not a nanosecond early");
    assert_eq!(d.task_at(12 * ms).0[0], vec![eth(B, A, 1), eth(B, A, 2)]);
    assert_eq!(d.task_at(12 * ms + 60_000).0[0].len(), 0, "the third is due a tick later (rounded up)");
    assert_eq!(d.task_at(12 * ms + 100_000).0[0], vec![eth(B, A, 3)]);
    assert_eq!(d.m.counters()[0], ("held", 0));
}

#[test]
fn delay_bands_give_each_address_pair_one_delay_both_ways() {
    let mut d = One::new("Delay", "bands=[1, 5, 9, 13], tick_us=1000");
    let ms = 1_000_000;
    let mut seen = std::collections::BTreeSet::new();
    for c in 1..=40u8 {
        let there = ipv4([198, 18, 1, c], [198, 18, 2, 1], 64);
        let back = ipv4([198, 18, 2, 1], [198, 18, 1, c], 64);
        d.process_at(0, &[there, back], 0);
        // Find when they leave: both at once.
        let mut left = None;
        for t in 0..=13 {
            let (g, _) = d.task_at(t * ms);
            if !g[0].is_empty() {
                assert_eq!(g[0].len(), 2, "client {c}: both ways in the same band");
                left = Some(t);
                break;
            }
        }
        let t = left.expect("left within the longest band");
        assert!([1, 5, 9, 13].contains(&t), "client {c} left at {t} ms");
        seen.insert(t);
        // Start the next client's time afresh.
        d = One::new("Delay", "bands=[1, 5, 9, 13], tick_us=1000");
    }
    assert_eq!(seen.len(), 4, "40 clients spread over every band: {seen:?}");
}

#[test]
fn histogram_quantiles_are_within_its_precision() {
    let mut h = Histogram::default();
    for v in 1..=10_000u64 {
        h.record(v * 1000);
    }
    for (q, want) in [(0.5, 5_000_000f64), (0.99, 9_900_000.0), (0.999, 9_990_000.0)] {
        let got = h.quantile(q) as f64;
        assert!((got - want).abs() / want < 1.0 / 16.0, "q{q}: {got} vs {want}");
    }
    assert_eq!(h.max(), 10_000_000);
    assert_eq!(Histogram::default().quantile(0.5), 0);
}

#[test]
fn dump_writes_a_pcap_tcpdump_can_read() {
    let path = std::env::temp_dir().join(format!("sirocco-dump-{}.pcap", std::process::id()));
    let frames: Vec<Vec<u8>> = (0..5).map(|i| ipv4([198, 18, 1, i], [198, 18, 2, 1], 64)).collect();
    {
        let mut d = One::new("Dump", &format!("path=\"{}\"", path.display()));
        let (g, _) = d.process_at(0, &frames, 5_000);
        assert_eq!(g[0], frames, "passed on unchanged");
    }
    let b = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(&b[..4], &0xa1b2_c3d4u32.to_le_bytes());
    assert_eq!(b.len(), 24 + frames.iter().map(|f| 16 + f.len()).sum::<usize>());
    assert_eq!(&b[24 + 16..24 + 16 + frames[0].len()], &frames[0][..]);
}
