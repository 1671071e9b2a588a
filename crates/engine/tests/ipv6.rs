//! IPv6 through the engine on the in-memory port: neighbour discovery, ICMPv6 echo, UDP in
//! both families, extension headers, and what is refused — exact frames in, exact frames out.

use io::mem::{MemPort, Wire};
use sirocco_engine::{Datagram, DropReason, Engine, EngineConfig, Instant, Originate, Service, Verdict};
use wire::build::{self, IPV6_PAYLOAD_AT, UDP6_HEADERS};
use wire::ethernet::{EtherType, EthernetFrame, MacAddr};
use wire::icmpv6::{self, Icmpv6Repr, NaFlags};
use wire::ipv4::Ipv4Addr;
use wire::ipv6::{Ipv6Addr, Ipv6Packet, Ipv6Repr, NextHeader};
use wire::udp::{UdpPacket, UdpRepr};
use wire::IpAddr;

const US_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
const PEER_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x02]);
const US4: Ipv4Addr = Ipv4Addr([198, 18, 0, 10]);

fn a6(s: &str) -> Ipv6Addr {
    s.parse::<std::net::Ipv6Addr>().unwrap().into()
}

fn us() -> Ipv6Addr {
    a6("2001:2::10")
}

fn peer() -> Ipv6Addr {
    a6("2001:2::2")
}

/// Echoes port 7; answers "<payload> back" on port 9; remembers who sent what.
#[derive(Default)]
struct App {
    senders: Vec<IpAddr>,
}

impl Service for App {
    fn udp_ports(&self) -> Vec<u16> {
        vec![7, 9]
    }
    fn udp(&mut self, _: Instant, d: Datagram<'_>) -> Verdict {
        self.senders.push(d.src);
        if d.dst_port == 7 {
            return Verdict::Echo;
        }
        let n = d.len;
        d.buf[n..n + 5].copy_from_slice(b" back");
        Verdict::Reply(n + 5)
    }
}

fn engine(app: &App, owns_alone6: bool) -> (Engine<MemPort>, Wire) {
    let (port, wire) = MemPort::with_wire(64);
    let cfg = EngineConfig::new(US4, US_MAC, true, "mem0").with_ipv6(us(), owns_alone6);
    (Engine::new(port, cfg, app), wire)
}

fn run<A: Service>(e: &mut Engine<MemPort>, app: &mut A) {
    for t in 0..4 {
        e.poll(Instant::from_micros(t), app);
    }
}

/// An IPv6 frame from the peer: `ext` extension header bytes (starting with `first`'s
/// header) then `upper` of `protocol`.
fn frame6(dst_mac: MacAddr, src: Ipv6Addr, dst: Ipv6Addr, hop: u8, first: u8, ext: &[u8], upper: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; IPV6_PAYLOAD_AT + ext.len() + upper.len()];
    build::ipv6_headers(&mut b, (PEER_MAC, src), (dst_mac, dst), first, ext.len() + upper.len(), hop);
    b[IPV6_PAYLOAD_AT..IPV6_PAYLOAD_AT + ext.len()].copy_from_slice(ext);
    b[IPV6_PAYLOAD_AT + ext.len()..].copy_from_slice(upper);
    b
}

fn icmp(src: Ipv6Addr, dst: Ipv6Addr, m: Icmpv6Repr, data: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; m.len(data.len())];
    b[icmpv6::HEADER_LEN..icmpv6::HEADER_LEN + data.len()].copy_from_slice(data);
    m.emit(src, dst, &mut b);
    b
}

fn udp(src: Ipv6Addr, dst: Ipv6Addr, dst_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 8 + payload.len()];
    b[8..].copy_from_slice(payload);
    UdpRepr { src_port: 40000, dst_port, payload_len: payload.len() }.emit(&mut b, src, dst);
    b
}

/// The IPv6 packet of a sent frame: its repr and the upper-layer bytes.
fn parse_sent(f: &[u8]) -> (MacAddr, Ipv6Repr, Vec<u8>) {
    let e = EthernetFrame::new_checked(f).unwrap();
    assert_eq!((e.src_addr(), e.ethertype()), (US_MAC, EtherType::IPV6));
    let ip = Ipv6Packet::new_checked(e.payload()).unwrap();
    let (r, ext) = Ipv6Repr::parse(&ip).unwrap();
    assert_eq!(ext, 0, "sirocco sends no extension headers");
    (e.dst_addr(), r, ip.payload().to_vec())
}

fn solicitation(src: Ipv6Addr, target: Ipv6Addr, mac: Option<MacAddr>, hop: u8) -> Vec<u8> {
    let group = target.solicited_node();
    let ns = icmp(src, group, Icmpv6Repr::NeighborSolicit { target, source_mac: mac }, &[]);
    frame6(group.multicast_mac(), src, group, hop, NextHeader::ICMPV6, &[], &ns)
}

#[test]
fn a_solicitation_for_our_address_is_advertised_to_its_sender() {
    let mut app = App::default();
    let (mut e, wire) = engine(&app, true);
    wire.inject(&solicitation(peer(), us(), Some(PEER_MAC), 255));
    run(&mut e, &mut app);
    let out = wire.take_sent();
    assert_eq!(out.len(), 1);
    let (mac, r, msg) = parse_sent(&out[0]);
    assert_eq!((mac, r.src, r.dst, r.hop_limit, r.protocol), (PEER_MAC, us(), peer(), 255, NextHeader::ICMPV6));
    let na = Icmpv6Repr::parse(r.src, r.dst, r.hop_limit, &msg).unwrap();
    let flags = NaFlags { router: false, solicited: true, override_: true };
    assert_eq!(na, Icmpv6Repr::NeighborAdvert { flags, target: us(), target_mac: Some(US_MAC) });
    assert_eq!((e.counters().nd_replies, e.counters().total_drops()), (1, 0));
    assert_eq!(e.port().free_frames(), 64);
}

#[test]
fn duplicate_address_detection_gets_an_advertisement_to_all_nodes() {
    let mut app = App::default();
    let (mut e, wire) = engine(&app, true);
    wire.inject(&solicitation(Ipv6Addr::UNSPECIFIED, us(), None, 255));
    run(&mut e, &mut app);
    let out = wire.take_sent();
    let (mac, r, msg) = parse_sent(&out[0]);
    assert_eq!((mac, r.dst), (MacAddr([0x33, 0x33, 0, 0, 0, 1]), Ipv6Addr::ALL_NODES));
    let Icmpv6Repr::NeighborAdvert { flags, .. } = Icmpv6Repr::parse(r.src, r.dst, 255, &msg).unwrap() else {
        panic!("not an advertisement")
    };
    assert!(!flags.solicited && flags.override_);
}

#[test]
fn neighbour_discovery_that_fails_rfc_4861_checks_is_dropped() {
    let mut app = App::default();
    let (mut e, wire) = engine(&app, true);
    // Hop limit below 255: it may have crossed a router.
    wire.inject(&solicitation(peer(), us(), Some(PEER_MAC), 64));
    // Duplicate address detection must not carry a link-layer address.
    wire.inject(&solicitation(Ipv6Addr::UNSPECIFIED, us(), Some(PEER_MAC), 255));
    // An option of length zero.
    let mut ns = icmp(peer(), us(), Icmpv6Repr::NeighborSolicit { target: us(), source_mac: Some(PEER_MAC) }, &[]);
    ns[25] = 0;
    wire.inject(&frame6(US_MAC, peer(), us(), 255, NextHeader::ICMPV6, &[], &ns));
    run(&mut e, &mut app);
    assert!(wire.take_sent().is_empty());
    assert_eq!(e.counters().dropped(DropReason::Icmpv6Malformed), 3);
    assert_eq!(e.counters().nd_replies, 0);
}

#[test]
fn a_solicitation_for_another_address_is_not_answered() {
    let mut app = App::default();
    let (mut e, wire) = engine(&app, true);
    // Unicast to us, asking about someone else.
    let other = a6("2001:2::99");
    let ns = icmp(peer(), us(), Icmpv6Repr::NeighborSolicit { target: other, source_mac: Some(PEER_MAC) }, &[]);
    wire.inject(&frame6(US_MAC, peer(), us(), 255, NextHeader::ICMPV6, &[], &ns));
    // To another address's solicited-node group: its Ethernet group is not ours.
    wire.inject(&solicitation(peer(), other, Some(PEER_MAC), 255));
    run(&mut e, &mut app);
    assert!(wire.take_sent().is_empty());
    assert_eq!(e.counters().dropped(DropReason::Icmpv6Ignored), 1);
    assert_eq!(e.counters().dropped(DropReason::EthNotForUs), 1);
}

#[test]
fn an_address_shared_with_the_kernel_leaves_it_neighbour_discovery_and_ping() {
    let mut app = App::default();
    let (mut e, wire) = engine(&app, false);
    wire.inject(&solicitation(peer(), us(), Some(PEER_MAC), 255));
    let ping = icmp(peer(), us(), Icmpv6Repr::EchoRequest { ident: 1, seq_no: 1 }, b"abc");
    wire.inject(&frame6(US_MAC, peer(), us(), 64, NextHeader::ICMPV6, &[], &ping));
    run(&mut e, &mut app);
    assert!(wire.take_sent().is_empty());
    assert_eq!(e.counters().dropped(DropReason::EthNotForUs), 1, "the solicited-node group is not ours");
    assert_eq!(e.counters().dropped(DropReason::Ipv6UnknownProtocol), 1);
}

#[test]
fn echo_requests_are_answered_in_place() {
    let mut app = App::default();
    let (mut e, wire) = engine(&app, true);
    let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
    let ping = icmp(peer(), us(), Icmpv6Repr::EchoRequest { ident: 0x1234, seq_no: 7 }, &data);
    wire.inject(&frame6(US_MAC, peer(), us(), 64, NextHeader::ICMPV6, &[], &ping));
    run(&mut e, &mut app);
    let out = wire.take_sent();
    let (mac, r, msg) = parse_sent(&out[0]);
    assert_eq!((mac, r.src, r.dst, r.hop_limit), (PEER_MAC, us(), peer(), 64));
    let rep = Icmpv6Repr::parse(r.src, r.dst, r.hop_limit, &msg).unwrap();
    assert_eq!(rep, Icmpv6Repr::EchoReply { ident: 0x1234, seq_no: 7 });
    assert_eq!(&msg[8..], &data[..]);
    assert_eq!(e.counters().icmpv6_echo, 1);
}

#[test]
fn udp_is_served_in_both_families_by_the_same_handlers() {
    let mut app = App::default();
    let (mut e, wire) = engine(&app, true);
    wire.inject(&frame6(US_MAC, peer(), us(), 64, NextHeader::UDP, &[], &udp(peer(), us(), 7, b"echo me")));
    wire.inject(&frame6(US_MAC, peer(), us(), 64, NextHeader::UDP, &[], &udp(peer(), us(), 9, b"ping")));
    let v4 = build::UdpFrame {
        src_mac: PEER_MAC,
        dst_mac: US_MAC,
        src: Ipv4Addr([198, 18, 0, 2]),
        dst: US4,
        src_port: 40000,
        dst_port: 9,
    };
    wire.inject(&v4.to_vec(b"four"));
    run(&mut e, &mut app);
    let out = wire.take_sent();
    assert_eq!(out.len(), 3);
    for (f, want) in out[..2].iter().zip([&b"echo me"[..], b"ping back"]) {
        let (_, r, seg) = parse_sent(f);
        assert_eq!((r.src, r.dst, r.payload_len), (us(), peer(), 8 + want.len()));
        let u = UdpPacket::new_checked(&seg[..]).unwrap();
        assert!(u.verify_checksum(us(), peer()));
        assert_eq!((u.dst_port(), u.payload()), (40000, want));
    }
    assert_eq!(app.senders, vec![IpAddr::V6(peer()), IpAddr::V6(peer()), IpAddr::V4(Ipv4Addr([198, 18, 0, 2]))]);
    assert_eq!(e.counters().udp_replies, 3);
}

#[test]
fn extension_headers_are_walked_and_not_sent_back() {
    let mut app = App::default();
    let (mut e, wire) = engine(&app, true);
    // Hop-by-hop (PadN), then destination options (Pad1s), then UDP.
    let hbh = [NextHeader::DEST_OPTS, 0, 1, 4, 0, 0, 0, 0];
    let dst = [NextHeader::UDP, 0, 0, 0, 0, 0, 0, 0];
    let ext = [hbh, dst].concat();
    wire.inject(&frame6(US_MAC, peer(), us(), 64, NextHeader::HOP_BY_HOP, &ext, &udp(peer(), us(), 9, b"through")));
    run(&mut e, &mut app);
    let out = wire.take_sent();
    let (_, r, seg) = parse_sent(&out[0]);
    assert_eq!(r.protocol, NextHeader::UDP);
    let u = UdpPacket::new_checked(&seg[..]).unwrap();
    assert!(u.verify_checksum(us(), peer()));
    assert_eq!(u.payload(), b"through back");
    assert_eq!(e.counters().total_drops(), 0);
}

#[test]
fn refused_packets_are_counted_by_reason() {
    let mut app = App::default();
    let (mut e, wire) = engine(&app, true);
    let u = udp(peer(), us(), 7, b"x");
    let send = |first: u8, ext: &[u8], upper: &[u8]| {
        wire.inject(&frame6(US_MAC, peer(), us(), 64, first, ext, upper));
    };
    // A first fragment (more fragments follow).
    send(NextHeader::FRAGMENT, &[NextHeader::UDP, 0, 0, 1, 0, 0, 0, 1], &u);
    // A routing header with segments left.
    send(NextHeader::ROUTING, &[NextHeader::UDP, 0, 4, 1, 0, 0, 0, 0], &u);
    // Hop-by-hop after destination options.
    send(
        NextHeader::DEST_OPTS,
        &[NextHeader::HOP_BY_HOP, 0, 1, 4, 0, 0, 0, 0, NextHeader::UDP, 0, 1, 4, 0, 0, 0, 0],
        &u,
    );
    // An unknown option whose type says discard.
    send(NextHeader::DEST_OPTS, &[NextHeader::UDP, 0, 0x41, 4, 0, 0, 0, 0], &u);
    // A zero UDP checksum, which IPv6 forbids.
    let mut z = u.clone();
    z[6..8].fill(0);
    send(NextHeader::UDP, &[], &z);
    // Not ours.
    wire.inject(&frame6(US_MAC, peer(), a6("2001:2::11"), 64, NextHeader::UDP, &[], &u));
    // A payload length beyond the frame.
    let mut t = frame6(US_MAC, peer(), us(), 64, NextHeader::UDP, &[], &u);
    t[18..20].copy_from_slice(&200u16.to_be_bytes());
    wire.inject(&t);
    // SCTP: not served.
    send(132, &[], &[0u8; 20]);
    run(&mut e, &mut app);
    assert!(wire.take_sent().is_empty());
    let c = e.counters();
    for (why, n) in [
        (DropReason::Ipv6Fragment, 1),
        (DropReason::Ipv6Malformed, 3),
        (DropReason::UdpBadChecksum, 1),
        (DropReason::Ipv6NotForUs, 1),
        (DropReason::Ipv6Truncated, 1),
        (DropReason::Ipv6UnknownProtocol, 1),
    ] {
        assert_eq!(c.dropped(why), n, "{why:?}");
    }
    assert_eq!(c.udp_delivered, 0);
    assert_eq!(e.port().free_frames(), 64);
}

#[test]
fn an_engine_without_ipv6_counts_it_as_unknown() {
    let mut app = App::default();
    let (port, wire) = MemPort::with_wire(64);
    let mut e = Engine::new(port, EngineConfig::new(US4, US_MAC, true, "mem0"), &app);
    wire.inject(&frame6(US_MAC, peer(), us(), 64, NextHeader::UDP, &[], &udp(peer(), us(), 7, b"x")));
    run(&mut e, &mut app);
    assert!(wire.take_sent().is_empty());
    assert_eq!(e.counters().dropped(DropReason::EthUnknownType), 1);
}

/// Sends one datagram to the peer over IPv6 each poll until it goes.
struct Sender {
    sent: usize,
}

impl Service for Sender {
    fn produce(&mut self, _: Instant, out: &mut dyn Originate) -> usize {
        if self.sent > 0 {
            return 0;
        }
        let r = out.udp(IpAddr::V6(peer()), 7, 40001, &mut |b: &mut [u8]| {
            b[..5].copy_from_slice(b"hello");
            5
        });
        self.sent += usize::from(r.is_ok());
        usize::from(r.is_ok())
    }
}

#[test]
fn originating_over_ipv6_solicits_the_neighbour_first() {
    let mut app = Sender { sent: 0 };
    let (port, wire) = MemPort::with_wire(64);
    let cfg = EngineConfig::new(US4, US_MAC, true, "mem0").with_ipv6(us(), true);
    let mut e = Engine::new(port, cfg, &app);
    e.poll(Instant::from_micros(1), &mut app);
    let out = wire.take_sent();
    assert_eq!(out.len(), 1, "a solicitation, and nothing else yet");
    let (mac, r, msg) = parse_sent(&out[0]);
    assert_eq!((mac, r.dst, r.hop_limit), (peer().solicited_node().multicast_mac(), peer().solicited_node(), 255));
    let ns = Icmpv6Repr::parse(r.src, r.dst, 255, &msg).unwrap();
    assert_eq!(ns, Icmpv6Repr::NeighborSolicit { target: peer(), source_mac: Some(US_MAC) });
    assert_eq!(e.counters().nd_requests, 1);
    // The peer advertises itself; the datagram goes out to its MAC.
    let flags = NaFlags { router: false, solicited: true, override_: true };
    let na = icmp(peer(), us(), Icmpv6Repr::NeighborAdvert { flags, target: peer(), target_mac: Some(PEER_MAC) }, &[]);
    wire.inject(&frame6(US_MAC, peer(), us(), 255, NextHeader::ICMPV6, &[], &na));
    e.poll(Instant::from_micros(2), &mut app);
    e.poll(Instant::from_micros(3), &mut app);
    let out = wire.take_sent();
    assert_eq!(out.len(), 1);
    let (mac, r, seg) = parse_sent(&out[0]);
    assert_eq!((mac, r.src, r.dst), (PEER_MAC, us(), peer()));
    let u = UdpPacket::new_checked(&seg[..]).unwrap();
    assert!(u.verify_checksum(us(), peer()));
    assert_eq!((u.src_port(), u.dst_port(), u.payload()), (40001, 7, &b"hello"[..]));
    assert_eq!(out[0].len(), UDP6_HEADERS + 5);
}
