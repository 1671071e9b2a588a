use crate::modules::testing::frames::udp;
use crate::modules::testing::run;

#[test]
fn encap_then_decap_gives_the_frame_back() {
    let inner = udp([198, 19, 0, 1], [198, 19, 0, 2], 1234, 80, b"inner payload");
    let (g, _) = run(
        "VXLANEncap",
        "src_mac=\"02:00:00:00:0a:01\", dst_mac=\"02:00:00:00:0a:02\", src_ip=\"198.18.1.1\", dst_ip=\"198.18.2.1\", vni=0x123456",
        std::slice::from_ref(&inner),
    );
    let o = &g[0][0];
    assert_eq!(o.len(), inner.len() + 50);
    assert_eq!(&o[0..6], &[2, 0, 0, 0, 0x0a, 2]);
    assert_eq!(wire::checksum::checksum(&o[14..34]), 0, "outer IPv4 header checksum");
    assert_eq!(&o[40..42], &[0, 0], "no UDP checksum (RFC 7348 §5)");
    assert_eq!(&o[36..38], &4789u16.to_be_bytes());
    assert_eq!(&o[42..50], &[0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0]);
    assert_eq!(&o[50..], &inner[..]);
    let (g, _) = run("VXLANDecap", "vni=0x123456", &[o.clone(), inner.clone()]);
    assert_eq!(g[0], vec![inner.clone()]);
    assert_eq!(g[1], vec![inner.clone()], "not VXLAN: gate 1, unchanged");
    let (g, _) = run("VXLANDecap", "vni=7", std::slice::from_ref(o));
    assert_eq!(g[1].len(), 1, "another network's packet");
}
