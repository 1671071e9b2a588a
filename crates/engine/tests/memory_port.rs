//! The engine driven through the in-memory port: exact frames in, exact frames out.

use io::mem::{MemPort, Wire};
use sirocco_engine::{Counters, Datagram, DropReason, Engine, EngineConfig, Instant, Service, Verdict};
use wire::arp::{ArpOp, ArpPacket, ArpRepr};
use wire::build::UdpFrame;
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::icmp::{IcmpPacket, IcmpRepr};
use wire::ipv4::{Ipv4Addr, Ipv4Packet, Ipv4Repr, Protocol};
use wire::udp::UdpPacket;

const US_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
const PEER_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x02]);
const US: Ipv4Addr = Ipv4Addr([198, 18, 0, 10]);
const PEER: Ipv4Addr = Ipv4Addr([198, 18, 0, 2]);

struct Echo;
impl Service for Echo {
    fn udp_ports(&self) -> Vec<u16> {
        vec![7]
    }
    fn udp(&mut self, _: Instant, _: Datagram<'_>) -> Verdict {
        Verdict::Echo
    }
}

/// Answers "<payload> back" through `Verdict::Reply`, to exercise length and checksum fixing.
struct Upper;
impl Service for Upper {
    fn udp_ports(&self) -> Vec<u16> {
        vec![9]
    }
    fn udp(&mut self, _: Instant, d: Datagram<'_>) -> Verdict {
        let n = d.len;
        d.buf[n..n + 5].copy_from_slice(b" back");
        Verdict::Reply(n + 5)
    }
}

/// Replies like `Upper`, but hands the engine the payload's sum (right or, to prove the
/// engine uses it, deliberately wrong).
struct Summed {
    lie: bool,
}
impl Service for Summed {
    fn udp_ports(&self) -> Vec<u16> {
        vec![9]
    }
    fn udp(&mut self, _: Instant, d: Datagram<'_>) -> Verdict {
        let n = d.len;
        d.buf[n..n + 5].copy_from_slice(b" back");
        let sum = wire::checksum::fold(wire::checksum::add(0, &d.buf[..n + 5]));
        Verdict::ReplySummed { len: n + 5, sum: if self.lie { sum ^ 1 } else { sum } }
    }
}

fn engine<A: Service>(app: &A, owns_alone: bool) -> (Engine<MemPort>, Wire) {
    let (port, wire) = MemPort::with_wire(64);
    (Engine::new(port, EngineConfig::new(US, US_MAC, owns_alone, "mem0"), app), wire)
}

fn udp_frame(dst_port: u16, payload: &[u8]) -> Vec<u8> {
    UdpFrame { src_mac: PEER_MAC, dst_mac: US_MAC, src: PEER, dst: US, src_port: 40000, dst_port }.to_vec(payload)
}

fn run<A: Service>(e: &mut Engine<MemPort>, app: &mut A) {
    for t in 0..4 {
        e.poll(Instant::from_micros(t), app);
    }
}

fn ip_fix(b: &mut [u8]) {
    Ipv4Packet::new_unchecked(&mut b[14..]).fill_checksum();
}

#[test]
fn udp_echo_is_byte_identical_with_turned_headers() {
    let (mut e, wire) = engine(&Echo, false);
    for len in [1usize, 2, 63, 64, 100, 1472] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        wire.inject(&udp_frame(7, &payload));
        run(&mut e, &mut Echo);
        let out = wire.take_sent();
        assert_eq!(out.len(), 1, "one reply for size {len}");
        let f = EthernetFrame::new_checked(&out[0][..]).unwrap();
        assert_eq!((f.src_addr(), f.dst_addr()), (US_MAC, PEER_MAC));
        let ip = Ipv4Packet::new_checked(f.payload()).unwrap();
        let ipr = Ipv4Repr::parse(&ip).unwrap();
        assert_eq!((ipr.src, ipr.dst, ipr.ttl), (US, PEER, 64));
        let u = UdpPacket::new_checked(ip.payload()).unwrap();
        assert!(u.verify_checksum(US, PEER));
        assert_eq!((u.src_port(), u.dst_port()), (7, 40000));
        assert_eq!(u.payload(), &payload[..]);
    }
    assert_eq!(e.counters().udp_replies, 6);
    assert_eq!(e.counters().total_drops(), 0);
    assert_eq!(e.port().free_frames(), 64, "every buffer came back");
}

#[test]
fn reply_verdict_fixes_lengths_and_checksums() {
    let (mut e, wire) = engine(&Upper, false);
    wire.inject(&udp_frame(9, b"ping"));
    run(&mut e, &mut Upper);
    let out = wire.take_sent();
    assert_eq!(out.len(), 1);
    let ip = Ipv4Packet::new_checked(&out[0][14..]).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!(ip.total_len(), 20 + 8 + 9);
    let u = UdpPacket::new_checked(ip.payload()).unwrap();
    assert!(u.verify_checksum(US, PEER));
    assert_eq!(u.payload(), b"ping back");
}

#[test]
fn udp_reply_with_a_supplied_payload_sum() {
    for lie in [false, true] {
        let mut app = Summed { lie };
        let (mut e, wire) = engine(&app, false);
        wire.inject(&udp_frame(9, b"pong"));
        run(&mut e, &mut app);
        let out = wire.take_sent();
        let ip = Ipv4Packet::new_checked(&out[0][14..]).unwrap();
        let u = UdpPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(u.payload(), b"pong back");
        assert_eq!(u.verify_checksum(US, PEER), !lie, "the engine trusts the supplied sum");
    }
}

#[test]
fn arp_and_ping_answered_only_when_owned_alone() {
    let req = {
        let mut b = vec![0u8; 60];
        EthernetRepr { src: PEER_MAC, dst: MacAddr::BROADCAST, vlan: None, ethertype: EtherType::ARP }.emit(&mut b);
        ArpRepr { op: ArpOp::Request, sender_mac: PEER_MAC, sender_ip: PEER, target_mac: MacAddr::ZERO, target_ip: US }
            .emit(&mut b[14..]);
        b
    };
    let ping = {
        let data = [0xab; 56];
        let mut b = vec![0u8; 14 + 20 + 64];
        EthernetRepr { src: PEER_MAC, dst: US_MAC, vlan: None, ethertype: EtherType::IPV4 }.emit(&mut b);
        Ipv4Repr {
            src: PEER,
            dst: US,
            protocol: Protocol::ICMP,
            payload_len: 64,
            ttl: 64,
            ident: 1,
            tos: 0,
            dont_frag: true,
        }
        .emit(&mut b[14..]);
        IcmpRepr::EchoRequest { ident: 9, seq: 3, data: &data }.emit(&mut b[34..]);
        b
    };
    let (mut e, wire) = engine(&Echo, true);
    wire.inject(&req);
    wire.inject(&ping);
    run(&mut e, &mut Echo);
    let out = wire.take_sent();
    assert_eq!(out.len(), 2);
    let arp = ArpRepr::parse(&ArpPacket::new_checked(&out[0][14..]).unwrap()).unwrap();
    assert_eq!(arp.op, ArpOp::Reply);
    assert_eq!((arp.sender_ip, arp.sender_mac, arp.target_ip, arp.target_mac), (US, US_MAC, PEER, PEER_MAC));
    assert_eq!(EthernetFrame::new_checked(&out[0][..]).unwrap().dst_addr(), PEER_MAC);
    let ip = Ipv4Packet::new_checked(&out[1][14..]).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!((ip.src_addr(), ip.dst_addr()), (US, PEER));
    let icmp = IcmpPacket::new_checked(ip.payload()).unwrap();
    assert_eq!(IcmpRepr::parse(&icmp).unwrap(), IcmpRepr::EchoReply { ident: 9, seq: 3, data: &[0xab; 56] });

    // Shared with the kernel: neither is answered (and both are counted).
    let (mut e, wire) = engine(&Echo, false);
    wire.inject(&req);
    wire.inject(&ping);
    run(&mut e, &mut Echo);
    assert!(wire.take_sent().is_empty());
    assert_eq!(e.counters().dropped(DropReason::ArpNotForUs), 1);
    assert_eq!(e.counters().dropped(DropReason::Ipv4UnknownProtocol), 1);
}

/// Every malformed case, the counter it must land in, and nothing sent.
#[test]
fn malformed_frames_are_counted_and_dropped() {
    let good = udp_frame(7, b"0123456789");
    let mut cases: Vec<(&str, Vec<u8>, DropReason)> = vec![];
    cases.push(("runt", good[..10].to_vec(), DropReason::EthTruncated));
    cases.push((
        "vlan tag cut",
        {
            let mut b = good[..12].to_vec();
            b.extend_from_slice(&[0x81, 0x00, 0x00]);
            b
        },
        DropReason::EthTruncated,
    ));
    let mut b = good.clone();
    b[0..6].copy_from_slice(&[2, 9, 9, 9, 9, 9]);
    cases.push(("other mac", b, DropReason::EthNotForUs));
    let mut b = good.clone();
    b[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    cases.push(("ipv6", b, DropReason::EthUnknownType));
    let mut b = good.clone();
    b[12..14].copy_from_slice(&0x88ccu16.to_be_bytes());
    cases.push(("lldp", b, DropReason::EthUnknownType));
    cases.push(("ip cut", good[..30].to_vec(), DropReason::Ipv4Truncated));
    let mut b = good.clone();
    b[14] = 0x44;
    ip_fix(&mut b);
    cases.push(("ihl 4", b, DropReason::Ipv4BadLength));
    let mut b = good.clone();
    b[16..18].copy_from_slice(&500u16.to_be_bytes());
    ip_fix(&mut b);
    cases.push(("total length past frame", b, DropReason::Ipv4Truncated));
    let mut b = good.clone();
    b[16..18].copy_from_slice(&10u16.to_be_bytes());
    ip_fix(&mut b);
    cases.push(("total length below header", b, DropReason::Ipv4BadLength));
    let mut b = good.clone();
    b[14] = 0x65;
    ip_fix(&mut b);
    cases.push(("version 6 in ipv4 frame", b, DropReason::Ipv4BadVersion));
    let mut b = good.clone();
    b[24] ^= 0x55;
    cases.push(("ip checksum", b, DropReason::Ipv4BadChecksum));
    let mut b = good.clone();
    b[20] = 0x20; // MF
    ip_fix(&mut b);
    cases.push(("first fragment", b, DropReason::Ipv4Fragment));
    let mut b = good.clone();
    b[20] = 0x00;
    b[21] = 0x10; // offset 128
    ip_fix(&mut b);
    cases.push(("later fragment", b, DropReason::Ipv4Fragment));
    let mut b = good.clone();
    b[30..34].copy_from_slice(&[198, 18, 0, 99]);
    ip_fix(&mut b);
    cases.push(("other ip", b, DropReason::Ipv4NotForUs));
    let mut b = good.clone();
    b[23] = 47; // GRE
    ip_fix(&mut b);
    cases.push(("gre", b, DropReason::Ipv4UnknownProtocol));
    let mut b = good.clone();
    b[38..40].copy_from_slice(&100u16.to_be_bytes());
    cases.push(("udp length past ip", b, DropReason::UdpMalformed));
    let mut b = good.clone();
    b[38..40].copy_from_slice(&3u16.to_be_bytes());
    cases.push(("udp length below header", b, DropReason::UdpMalformed));
    let mut b = good.clone();
    b[45] ^= 1;
    cases.push(("udp checksum", b, DropReason::UdpBadChecksum));
    cases.push(("no handler", udp_frame(8, b"x"), DropReason::UdpNoHandler));
    let mut b = good.clone();
    b[23] = 6;
    ip_fix(&mut b);
    cases.push(("tcp shorter than its header", b, DropReason::TcpMalformed));
    // A well-formed SYN to a port no TCP service listens on.
    let mut b = good[..34].to_vec();
    b.resize(54, 0);
    let ip = Ipv4Packet::new_unchecked(&b[14..]);
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    wire::tcp::TcpRepr {
        src_port: 40000,
        dst_port: 80,
        seq: 1,
        ack: 0,
        flags: wire::tcp::TcpFlags(wire::tcp::TcpFlags::SYN),
        window: 1000,
        options: Default::default(),
        payload_len: 0,
    }
    .emit(&mut b[34..], src, dst);
    b[23] = 6;
    b[16..18].copy_from_slice(&40u16.to_be_bytes());
    ip_fix(&mut b);
    cases.push(("tcp to a port not served", b, DropReason::TcpNotServed));
    let mut b = vec![0u8; 60];
    EthernetRepr { src: PEER_MAC, dst: MacAddr::BROADCAST, vlan: None, ethertype: EtherType::ARP }.emit(&mut b);
    b[14..16].copy_from_slice(&6u16.to_be_bytes()); // hardware type 6
    cases.push(("arp not ethernet", b, DropReason::ArpMalformed));
    cases.push((
        "arp cut",
        good[..14 + 20].iter().copied().enumerate().map(|(i, v)| if i == 13 { 6 } else { v }).collect(),
        DropReason::ArpMalformed,
    ));

    for (name, frame, why) in cases {
        let (mut e, wire) = engine(&Echo, true);
        wire.inject(&frame);
        run(&mut e, &mut Echo);
        assert!(wire.take_sent().is_empty(), "{name}: nothing may be sent");
        let c: &Counters = e.counters();
        assert_eq!(c.dropped(why), 1, "{name}: expected {why:?}, counters {c:?}");
        assert_eq!(c.total_drops(), 1, "{name}: counted once");
        assert_eq!(e.port().free_frames(), 64, "{name}: buffer returned");
        // The engine still answers afterwards.
        wire.inject(&good);
        run(&mut e, &mut Echo);
        assert_eq!(wire.take_sent().len(), 1, "{name}: still serving");
    }
}

#[test]
fn vlan_tagged_request_gets_tagged_reply() {
    let mut b = udp_frame(7, b"tagged");
    b.splice(12..12, [0x81, 0x00, 0x00, 0x2a]);
    let (mut e, wire) = engine(&Echo, false);
    wire.inject(&b);
    run(&mut e, &mut Echo);
    let out = wire.take_sent();
    assert_eq!(out.len(), 1);
    let f = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!(f.vlan(), Some(42));
    let ip = Ipv4Packet::new_checked(f.payload()).unwrap();
    assert_eq!(UdpPacket::new_checked(ip.payload()).unwrap().payload(), b"tagged");
}

#[test]
fn random_garbage_never_panics_and_is_always_counted() {
    // A small deterministic xorshift, so failures reproduce.
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let good = udp_frame(7, b"0123456789abcdef");
    let (mut e, wire) = engine(&Echo, true);
    let mut injected = 0u64;
    for _ in 0..20_000 {
        let mut f = good.clone();
        let flips = 1 + next() % 6;
        for _ in 0..flips {
            let i = (next() as usize) % f.len();
            f[i] = next() as u8;
        }
        let cut = (next() as usize) % (f.len() + 1);
        if next() % 4 == 0 {
            f.truncate(cut);
        }
        wire.inject(&f);
        injected += 1;
        e.poll(Instant::from_nanos(injected), &mut Echo);
        wire.take_sent();
    }
    let c = e.counters();
    assert_eq!(c.rx_packets, injected);
    assert_eq!(c.total_drops() + c.udp_replies + c.arp_replies + c.icmp_echo, injected, "{c:?}");
    assert_eq!(e.port().free_frames(), 64);
}

#[test]
fn memory_port_frees_buffers_when_ring_full() {
    // Engine with a 4-frame port: more replies than buffers never leak.
    let (port, wire) = MemPort::with_wire(4);
    let mut e = Engine::new(port, EngineConfig::new(US, US_MAC, false, "mem0"), &Echo);
    for _ in 0..10 {
        wire.inject(&udp_frame(7, b"x"));
    }
    for t in 0..10 {
        e.poll(Instant::from_nanos(t), &mut Echo);
    }
    assert_eq!(wire.take_sent().len(), 10);
    assert_eq!(e.port().free_frames(), 4, "every buffer is back after the replies left");
}

/// Originates as many datagrams as the engine says there is room for.
struct Burst {
    sent: u64,
}
impl Service for Burst {
    fn produce(&mut self, _now: Instant, out: &mut dyn sirocco_engine::Originate) -> usize {
        let mut n = 0;
        while out.room() > 0 && n < 1000 {
            if out
                .udp(US.into(), 9, 40000, &mut |b: &mut [u8]| {
                    b[0] = 1;
                    1
                })
                .is_err()
            {
                break;
            }
            n += 1;
        }
        self.sent += n as u64;
        n
    }
}

#[test]
fn room_never_promises_more_frames_than_are_free() {
    // The port's TX ring has room for more frames than its arena holds: what the engine
    // offers to originate must be bounded by the free frames, or a segment counted as sent
    // finds no frame and is lost.
    let (a, b) = MemPort::pair(16);
    let mut srv = Engine::new(a, EngineConfig::new(US, US_MAC, true, "m0"), &Echo);
    let mut burst = Burst { sent: 0 };
    let mut cli = Engine::new(b, EngineConfig::new(PEER, PEER_MAC, true, "m1"), &burst);
    for t in 0..50 {
        cli.poll(Instant::from_micros(t), &mut burst);
        srv.poll(Instant::from_micros(t), &mut Echo);
    }
    assert!(burst.sent > 16, "sent {}", burst.sent);
    assert_eq!(cli.counters().dropped(DropReason::NoBuffer), 0);
}
