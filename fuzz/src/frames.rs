//! Fuzz targets for packet headers, TCP options, the TCP endpoint and the engine's receive path.

use super::*;

/// Ethernet header parsing and re-emission.
pub fn ethernet(data: &[u8]) {
    if let Ok(f) = EthernetFrame::new_checked(data) {
        let r = EthernetRepr::parse(&f).unwrap();
        let _ = f.payload();
        if r.ethertype != wire::EtherType::VLAN {
            let mut b = vec![0u8; r.header_len()];
            r.emit(&mut b);
            assert_eq!(EthernetRepr::parse(&EthernetFrame::new_checked(&b[..]).unwrap()).unwrap(), r);
        }
    }
}

/// ARP.
pub fn arp(data: &[u8]) {
    if let Ok(p) = ArpPacket::new_checked(data) {
        if let Ok(r) = ArpRepr::parse(&p) {
            let mut b = [0u8; 28];
            r.emit(&mut b);
            assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()).unwrap(), r);
        }
    }
}

/// IPv4 header, options and payload bounds.
pub fn ipv4(data: &[u8]) {
    if let Ok(p) = Ipv4Packet::new_checked(data) {
        let _ = (p.options(), p.payload(), p.is_fragment());
        if let Ok(r) = Ipv4Repr::parse(&p) {
            let mut b = vec![0u8; 20 + r.payload_len];
            r.emit(&mut b);
            assert_eq!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&b[..]).unwrap()).unwrap(), r);
        }
    }
}

/// IPv6 and its extension header walk: whatever parses lies within the buffer and survives
/// a round trip of the fixed header.
pub fn ipv6(data: &[u8]) {
    use wire::ipv6::{Ipv6Packet, Ipv6Repr, HEADER_LEN};
    if let Ok(p) = Ipv6Packet::new_checked(data) {
        if let Ok((r, off)) = Ipv6Repr::parse(&p) {
            assert!(HEADER_LEN + off + r.payload_len <= data.len());
            let mut b = vec![0u8; HEADER_LEN + r.payload_len];
            r.emit(&mut b);
            assert_eq!(Ipv6Repr::parse(&Ipv6Packet::new_checked(&b[..]).unwrap()).unwrap(), (r, 0));
        }
    }
}

/// ICMPv6 and neighbour discovery: the first byte is the hop limit; the checksum is filled
/// so the fuzzer reaches the message parsers. What parses survives emit and parse.
pub fn icmpv6(data: &[u8]) {
    use wire::icmpv6::{Icmpv6Repr, HEADER_LEN};
    let Some((&hop, msg)) = data.split_first() else { return };
    if msg.len() < HEADER_LEN || msg.len() > 1500 {
        return;
    }
    let (src, dst) = (wire::Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]), V6_SERVER);
    let mut m = msg.to_vec();
    m[2..4].copy_from_slice(&[0, 0]);
    let sum = wire::checksum::pseudo_header_v6(src, dst, 58, m.len() as u32);
    let c = !wire::checksum::fold(wire::checksum::add(sum, &m));
    m[2..4].copy_from_slice(&c.to_be_bytes());
    if let Ok(r) = Icmpv6Repr::parse(src, dst, hop, &m) {
        let data = &m[HEADER_LEN..];
        let mut b = vec![0u8; r.len(data.len())];
        if b.len() == m.len() && !matches!(r, Icmpv6Repr::NeighborSolicit { .. } | Icmpv6Repr::NeighborAdvert { .. }) {
            b[HEADER_LEN..].copy_from_slice(data);
        }
        r.emit(src, dst, &mut b);
        assert_eq!(Icmpv6Repr::parse(src, dst, hop, &b), Ok(r));
    }
}

/// ICMP.
pub fn icmp(data: &[u8]) {
    if let Ok(p) = IcmpPacket::new_checked(data) {
        if let Ok(r) = IcmpRepr::parse(&p) {
            if let Some(n) = r.buffer_len() {
                let mut b = vec![0u8; n];
                assert!(r.emit(&mut b));
                assert_eq!(IcmpRepr::parse(&IcmpPacket::new_checked(&b[..]).unwrap()).unwrap(), r);
            }
        }
    }
}

/// UDP with the pseudo-header checksum.
pub fn udp(data: &[u8]) {
    if let Ok(p) = UdpPacket::new_checked(data) {
        let _ = p.payload();
        if let Ok(r) = UdpRepr::parse(&p, A, B) {
            let mut b = vec![0u8; 8 + r.payload_len];
            b[8..].copy_from_slice(p.payload());
            r.emit(&mut b, A, B);
            assert_eq!(UdpRepr::parse(&UdpPacket::new_checked(&b[..]).unwrap(), A, B).unwrap(), r);
        }
    }
}

/// TCP header and options. The checksum is filled first so the fuzzer reaches option parsing.
pub fn tcp(data: &[u8]) {
    let mut d = data.to_vec();
    if let Ok(mut p) = TcpPacket::new_checked(&mut d[..]) {
        p.fill_checksum(A, B);
        let p = TcpPacket::new_checked(&d[..]).unwrap();
        let _ = p.payload();
        if let Ok(r) = TcpRepr::parse(&p, A, B) {
            // Re-emit only what fits a header (parsed SACK blocks plus SYN options may not).
            if r.options.buffer_len() <= 40 {
                let h = r.header_len();
                let mut b = vec![0u8; h + r.payload_len];
                b[h..].copy_from_slice(p.payload());
                r.emit(&mut b, A, B);
                assert_eq!(TcpRepr::parse(&TcpPacket::new_checked(&b[..]).unwrap(), A, B).unwrap(), r);
            }
        }
    }
}

/// TCP options alone.
pub fn tcp_options(data: &[u8]) {
    if let Ok(o) = TcpOptions::parse(data) {
        if o.buffer_len() <= 40 {
            let mut b = [0u8; 40];
            let n = o.emit(&mut b);
            assert_eq!(TcpOptions::parse(&b[..n]).unwrap(), o);
        }
    }
}

/// The TCP endpoint's collecting TX ring: every segment it emits must parse back.
struct TcpOut(Vec<Vec<u8>>);

impl tcp::Output for TcpOut {
    fn room(&self) -> usize {
        16
    }
    fn send(&mut self, local: wire::IpAddr, remote: wire::IpAddr, len: usize, write: &mut dyn FnMut(&mut [u8])) {
        assert_eq!((local, remote), (B.into(), A.into()));
        let mut b = vec![0u8; len];
        write(&mut b);
        let p = TcpPacket::new_checked(&b[..]).expect("emitted segment is well formed");
        TcpRepr::parse(&p, remote, local).expect("emitted segment has a valid checksum and options");
        self.0.push(b);
    }
}

/// An application that echoes what it gets and keeps a bounded source.
#[derive(Default)]
struct EchoApp;

#[derive(Default)]
struct EchoConn(Vec<u8>);

impl tcp::Source for EchoConn {
    fn end(&self) -> u64 {
        self.0.len() as u64
    }
    fn fill(&self, off: u64, dst: &mut [u8]) {
        dst.copy_from_slice(&self.0[off as usize..off as usize + dst.len()]);
    }
}

impl tcp::App for EchoApp {
    type Conn = EchoConn;
    fn accept(&mut self, _: tcp::Handle, _: u16, _: (wire::IpAddr, u16)) -> Option<EchoConn> {
        Some(EchoConn::default())
    }
    fn recv(&mut self, _: tcp::Handle, c: &mut EchoConn, data: &[u8], ctl: &mut tcp::Ctl) {
        if c.0.len() < 100_000 {
            c.0.extend_from_slice(data);
        }
        ctl.recv_done(data.len() as u32);
    }
    fn closed(&mut self, _: tcp::Handle, _: EchoConn, _: tcp::End) {}
}

/// Segments into a TCP endpoint that has one connection open: each record is
/// [time step (ms), header bytes...] with sequence and acknowledgement numbers taken relative
/// to the connection's, so mutations land near the windows where the state machine lives.
pub fn tcp_endpoint(data: &[u8]) {
    use tcp::{Config, Endpoint, Limits};
    let limits = Limits { max_conns: 8, syn_backlog: 2, ooo_buffers: 2, max_time_wait: 2, ..Limits::default() };
    let mut ep: Endpoint<EchoApp> = Endpoint::new(limits, tcp::Instant::ZERO);
    let mut app = EchoApp;
    ep.listen(80, Config { rcv_buf: 8192, time_wait: tcp::Duration::from_secs(2), ..Config::default() });
    let mut out = TcpOut(Vec::new());
    let syn = TcpRepr {
        src_port: 40000,
        dst_port: 80,
        seq: 1000,
        ack: 0,
        flags: wire::TcpFlags(wire::TcpFlags::SYN),
        window: 65535,
        options: TcpOptions { mss: Some(1000), sack_permitted: true, timestamps: Some((1, 0)), ..Default::default() },
        payload_len: 0,
    };
    ep.input(&mut app, tcp::Instant::ZERO, A.into(), B.into(), &syn, &[]);
    ep.output(&mut app, tcp::Instant::ZERO, &mut out);
    let iss = out.0.last().map_or(0, |b| TcpPacket::new_unchecked(&b[..]).seq());
    let mut now = tcp::Instant::ZERO;
    for rec in data.chunks(48) {
        let (dt, seg) = rec.split_first().unwrap_or((&0, &[]));
        now += tcp::Duration::from_millis(u64::from(*dt));
        let mut b = seg.to_vec();
        if let Ok(mut p) = TcpPacket::new_checked(&mut b[..]) {
            p.set_seq(p.seq().wrapping_add(1000));
            p.set_ack(p.ack().wrapping_add(iss));
            p.fill_checksum(A, B);
            let p = TcpPacket::new_checked(&b[..]).unwrap();
            if let Ok(r) = TcpRepr::parse(&p, A, B) {
                ep.input(&mut app, now, A.into(), B.into(), &r, p.payload());
            }
        }
        ep.advance(&mut app, now);
        ep.output(&mut app, now, &mut out);
        out.0.clear();
        assert!(ep.len() <= 8, "the table limit holds");
        assert!(ep.ooo_in_use() <= 2);
    }
    // Time heals: everything that is not open waits out its timers and goes.
    for _ in 0..200 {
        now += tcp::Duration::from_secs(1);
        ep.advance(&mut app, now);
        ep.output(&mut app, now, &mut out);
        out.0.clear();
    }
    assert!(ep.time_wait() == 0, "TIME-WAIT drained");
}

/// A whole frame through the engine's stack (memory port): counted exactly once, no leak.
pub fn engine_frame(data: &[u8]) {
    use engine::{Engine, EngineConfig};
    use io::mem::MemPort;
    let (port, wire) = MemPort::with_wire(4);
    let mut app = echo::UdpEcho::new(7);
    let mac = wire::MacAddr([0x02, 0, 0, 0, 0, 0x01]);
    let cfg = EngineConfig::new(B, mac, true, "fuzz0").with_ipv6(V6_SERVER, true);
    let mut e = Engine::new(port, cfg, &app);
    wire.inject(data);
    e.poll(tcp::Instant::ZERO, &mut app);
    let c = e.counters();
    let out = wire.take_sent();
    assert_eq!(c.rx_packets, 1);
    let answered =
        c.udp_replies + c.arp_replies + c.icmp_echo + c.icmpv6_echo + c.nd_replies + c.nd_learned + c.icmp_too_big;
    assert_eq!(c.total_drops() + answered, 1, "{c:?}");
    assert_eq!(out.len() as u64, c.tx_packets);
    assert_eq!(e.port().free_frames(), 4);
}

/// Inputs this area's targets start from (None: not one of its targets).
pub(crate) fn seeds(target: &str) -> Option<Vec<Vec<u8>>> {
    use wire::ethernet::MacAddr;
    let udp_frame = wire::build::UdpFrame {
        src_mac: MacAddr([2, 0, 0, 0, 0, 2]),
        dst_mac: MacAddr([2, 0, 0, 0, 0, 1]),
        src: A,
        dst: B,
        src_port: 40000,
        dst_port: 7,
    }
    .to_vec(&[0x5a; 16]);
    let tcp_seg = {
        let r = TcpRepr {
            src_port: 40000,
            dst_port: 80,
            seq: 1,
            ack: 0,
            flags: wire::TcpFlags(wire::TcpFlags::SYN),
            window: 65535,
            options: TcpOptions {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: Some((1, 0)),
                ..Default::default()
            },
            payload_len: 0,
        };
        let mut b = vec![0u8; r.header_len()];
        r.emit(&mut b, A, B);
        b
    };
    Some(match target {
        "ethernet" | "engine" => {
            let (us, peer) = (MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]));
            let a6 = wire::Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
            let mut udp6 = vec![0u8; wire::build::UDP6_HEADERS + 16];
            wire::build::udp6(&mut udp6, (peer, a6, 40000), (us, V6_SERVER, 7), 16, 64);
            let mut ns = vec![0u8; 200];
            let n = wire::build::neighbor_solicit(&mut ns, peer, a6, V6_SERVER);
            ns.truncate(n);
            vec![
                udp_frame.clone(),
                {
                    let mut b = udp_frame;
                    b.splice(12..12, [0x81, 0, 0, 5]);
                    b
                },
                udp6,
                ns,
            ]
        }
        "arp" => vec![vec![0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 2, 198, 18, 0, 2, 0, 0, 0, 0, 0, 0, 198, 18, 0, 10]],
        "ipv4" => vec![udp_frame[14..].to_vec()],
        "ipv6" => vec![{
            let r = wire::Ipv6Repr {
                src: wire::Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]),
                dst: V6_SERVER,
                protocol: wire::NextHeader::DEST_OPTS,
                payload_len: 16,
                hop_limit: 64,
                traffic_class: 0,
                flow_label: 1,
            };
            let mut b = vec![0u8; 56];
            r.emit(&mut b);
            b[40..48].copy_from_slice(&[wire::NextHeader::UDP, 0, 1, 4, 0, 0, 0, 0]);
            b
        }],
        "icmpv6" => vec![
            [&[255u8, 135, 0, 0, 0, 0, 0, 0, 0][..], &V6_SERVER.0, &[1, 1, 2, 0, 0, 0, 0, 2]].concat(),
            [&[64u8, 128, 0, 0, 0, 0, 1, 0, 1][..], b"ping data"].concat(),
        ],
        "icmp" => vec![{
            let mut b = vec![0u8; 16];
            IcmpRepr::EchoRequest { ident: 1, seq: 1, data: &[1; 8] }.emit(&mut b);
            b
        }],
        "udp" => vec![udp_frame[34..].to_vec()],
        "tcp" => vec![tcp_seg.clone()],
        "tcp_endpoint" => {
            // The handshake's ACK, then data, then a FIN, in relative numbers.
            let seg = |seq: u32, ack: u32, flags: u8, len: usize| {
                let r = TcpRepr {
                    src_port: 40000,
                    dst_port: 80,
                    seq,
                    ack,
                    flags: wire::TcpFlags(flags),
                    window: 65535,
                    options: TcpOptions { timestamps: Some((2, 0)), ..Default::default() },
                    payload_len: len,
                };
                let mut b = vec![0u8; r.header_len() + len];
                r.emit(&mut b, A, B);
                let mut rec = vec![1u8];
                rec.extend_from_slice(&b);
                rec.resize(48, 0);
                rec
            };
            use wire::TcpFlags as F;
            vec![[seg(1, 1, F::ACK, 0), seg(1, 1, F::ACK | F::PSH, 10), seg(11, 11, F::ACK | F::FIN, 0)].concat()]
        }
        "tcp_options" => vec![tcp_seg[20..].to_vec()],
        _ => return None,
    })
}
