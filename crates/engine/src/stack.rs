//! Per-frame processing: Ethernet, ARP, IPv4, ICMP echo and UDP, answered in the receive
//! buffer itself (the reply reuses the frame, so there is no allocation and no copy); TCP
//! segments are handed to the application's TCP service as views of the frame.

use crate::app::{App, Datagram, Verdict};
use crate::arp_cache::{ArpCache, Lookup};
use crate::counters::{Counters, Drop};
use crate::engine::EngineConfig;
use wire::arp::{self, ArpOp, ArpPacket, ArpRepr};
use wire::ethernet::{EtherType, EthernetFrame, MacAddr};
use wire::icmp::{kind, IcmpPacket};
use wire::ipv4::{Ipv4Packet, Protocol};
use wire::tcp::{TcpFlags, TcpPacket, TcpRepr};
use wire::{checksum, udp, Error};

/// TTL of packets sirocco sends.
pub const TTL: u8 = 64;

/// The state frame processing needs besides the buffer (split from the port and the app so
/// all three can be borrowed at once).
pub struct Stack {
    pub cfg: EngineConfig,
    pub counters: Counters,
    pub arp: ArpCache,
    /// Bitset of UDP ports with a handler.
    pub udp_ports: Box<[u64; 1024]>,
    /// Bitset of TCP ports with a service.
    pub tcp_ports: Box<[u64; 1024]>,
    /// The id the next TCP segment's payload view gets.
    pub next_view: u32,
    /// Set when the frame just handled is to be kept: where its TCP payload lies.
    pub hold: Option<(u16, u16)>,
}

impl Stack {
    pub fn new(cfg: EngineConfig) -> Stack {
        Stack {
            cfg,
            counters: Counters::default(),
            arp: ArpCache::new(1024, 60_000, 1_000),
            udp_ports: Box::new([0; 1024]),
            tcp_ports: Box::new([0; 1024]),
            next_view: 0,
            hold: None,
        }
    }

    pub fn serve_udp(&mut self, port: u16) {
        self.udp_ports[usize::from(port) / 64] |= 1 << (port % 64);
    }

    /// Serves TCP on `port` (segments go to the application's TCP service).
    pub fn serve_tcp(&mut self, port: u16) {
        self.tcp_ports[usize::from(port) / 64] |= 1 << (port % 64);
    }

    #[inline]
    fn serves_tcp(&self, port: u16) -> bool {
        self.tcp_ports[usize::from(port) / 64] & (1 << (port % 64)) != 0
    }

    #[inline]
    fn serves_udp(&self, port: u16) -> bool {
        self.udp_ports[usize::from(port) / 64] & (1 << (port % 64)) != 0
    }

    /// Processes one received frame in place. Returns the length of the reply now in `buf`,
    /// or None if the frame was consumed or dropped (and counted).
    #[inline]
    pub fn handle<A: App + ?Sized>(&mut self, buf: &mut [u8], len: usize, now_ns: u64, app: &mut A) -> Option<usize> {
        let Ok(eth) = EthernetFrame::new_checked(&buf[..len]) else {
            self.counters.drop(Drop::EthTruncated);
            return None;
        };
        let dst = eth.dst_addr();
        let hl = eth.header_len();
        let et = eth.ethertype();
        if dst != self.cfg.mac && dst != MacAddr::BROADCAST {
            self.counters.drop(Drop::EthNotForUs);
            return None;
        }
        match et {
            EtherType::IPV4 if dst == self.cfg.mac => self.ipv4(buf, hl, len, now_ns, app),
            EtherType::ARP => self.arp_in(buf, hl, len, now_ns),
            EtherType::IPV4 => {
                self.counters.drop(Drop::EthNotForUs);
                None
            }
            _ => {
                self.counters.drop(Drop::EthUnknownType);
                None
            }
        }
    }

    fn arp_in(&mut self, buf: &mut [u8], hl: usize, len: usize, now_ns: u64) -> Option<usize> {
        let repr = match ArpPacket::new_checked(&buf[hl..len]).and_then(|p| ArpRepr::parse(&p)) {
            Ok(r) => r,
            Err(_) => {
                self.counters.drop(Drop::ArpMalformed);
                return None;
            }
        };
        let now_ms = now_ns / 1_000_000;
        if repr.target_ip != self.cfg.addr || !self.cfg.owns_alone {
            self.arp.update_if_present(repr.sender_ip, repr.sender_mac, now_ms);
            self.counters.drop(Drop::ArpNotForUs);
            return None;
        }
        self.arp.insert(repr.sender_ip, repr.sender_mac, now_ms);
        if repr.op != ArpOp::Request {
            return None; // a reply to our request: learned above
        }
        let reply = ArpRepr {
            op: ArpOp::Reply,
            sender_mac: self.cfg.mac,
            sender_ip: self.cfg.addr,
            target_mac: repr.sender_mac,
            target_ip: repr.sender_ip,
        };
        let mut eth = EthernetFrame::new_unchecked(&mut buf[..]);
        eth.set_dst_addr(repr.sender_mac);
        eth.set_src_addr(self.cfg.mac);
        reply.emit(&mut buf[hl..]);
        self.counters.arp_replies += 1;
        // Keep the received length: Linux pads ARP to the 60-byte minimum and so do we.
        Some(len.max(hl + arp::PACKET_LEN))
    }

    #[inline]
    fn ipv4<A: App + ?Sized>(
        &mut self,
        buf: &mut [u8],
        hl: usize,
        len: usize,
        now_ns: u64,
        app: &mut A,
    ) -> Option<usize> {
        let ip = match Ipv4Packet::new_checked(&buf[hl..len]) {
            Ok(p) => p,
            Err(Error::Truncated) => return self.dropped(Drop::Ipv4Truncated),
            Err(_) => return self.dropped(Drop::Ipv4BadLength),
        };
        if ip.version() != 4 {
            return self.dropped(Drop::Ipv4BadVersion);
        }
        if !ip.verify_checksum() {
            return self.dropped(Drop::Ipv4BadChecksum);
        }
        if ip.is_fragment() {
            return self.dropped(Drop::Ipv4Fragment);
        }
        if ip.dst_addr() != self.cfg.addr {
            return self.dropped(Drop::Ipv4NotForUs);
        }
        let ihl = ip.header_len();
        let total = usize::from(ip.total_len());
        let l4 = hl + ihl;
        let end = hl + total;
        match ip.protocol() {
            Protocol::UDP => self.udp(buf, hl, l4, end, now_ns, app),
            Protocol::ICMP if self.cfg.owns_alone => self.icmp(buf, hl, l4, end),
            Protocol::TCP => self.tcp(buf, hl, l4, end, now_ns, app),
            _ => self.dropped(Drop::Ipv4UnknownProtocol),
        }
    }

    /// Hands a TCP segment to the application's TCP service; the frame is released after.
    fn tcp<A: App + ?Sized>(
        &mut self,
        buf: &mut [u8],
        hl: usize,
        l4: usize,
        end: usize,
        now_ns: u64,
        app: &mut A,
    ) -> Option<usize> {
        let Ok(p) = TcpPacket::new_checked(&buf[l4..end]) else {
            return self.dropped(Drop::TcpMalformed);
        };
        if !self.serves_tcp(p.dst_port()) {
            return self.dropped(Drop::TcpNotServed);
        }
        let ip = Ipv4Packet::new_unchecked(&buf[hl..]);
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        let Ok(repr) = TcpRepr::parse(&p, src, dst) else {
            return self.dropped(Drop::TcpMalformed);
        };
        // Replies go to the MAC the segment came from: learn it (shared-address mode has no
        // ARP of its own, the kernel may never have talked to this peer, and with several
        // queues the answer to this engine's ARP request may reach another engine). A SYN
        // only fills a free slot: a flood forges source addresses by the thousand and must
        // neither redirect nor push out the real peers, which are learnt from their ACKs.
        let mac = EthernetFrame::new_unchecked(&buf[..]).src_addr();
        let now_ms = now_ns / 1_000_000;
        match self.arp.lookup(src, now_ms) {
            Lookup::Known(m) if m == mac => {}
            Lookup::Known(_) if repr.flags.has(TcpFlags::SYN) => {}
            _ if repr.flags.has(TcpFlags::SYN) => self.arp.insert_if_room(src, mac, now_ms),
            _ => self.arp.insert(src, mac, now_ms),
        }
        self.counters.tcp_delivered += 1;
        let payload = p.payload();
        app.tcp(now_ns, src, dst, &repr, payload, self.next_view);
        if app.holds_tcp_frames() {
            let at = end - payload.len();
            self.hold = Some((at as u16, payload.len() as u16));
        }
        None
    }

    #[inline]
    fn dropped(&mut self, why: Drop) -> Option<usize> {
        self.counters.drop(why);
        None
    }

    /// Turns the headers of a received IPv4 frame around: MACs, addresses, fresh TTL.
    #[inline]
    fn turn_around(&self, buf: &mut [u8], hl: usize) {
        EthernetFrame::new_unchecked(&mut buf[..]).swap_addrs();
        let mut ip = Ipv4Packet::new_unchecked(&mut buf[hl..]);
        ip.swap_addrs();
        ip.set_ttl(TTL);
    }

    fn icmp(&mut self, buf: &mut [u8], hl: usize, l4: usize, end: usize) -> Option<usize> {
        let Ok(p) = IcmpPacket::new_checked(&buf[l4..end]) else {
            return self.dropped(Drop::IcmpMalformed);
        };
        if !p.verify_checksum() {
            return self.dropped(Drop::IcmpMalformed);
        }
        if p.msg_type() != kind::ECHO_REQUEST || p.code() != 0 {
            return self.dropped(Drop::IcmpIgnored);
        }
        IcmpPacket::new_unchecked(&mut buf[l4..end]).echo_request_to_reply();
        self.turn_around(buf, hl);
        self.counters.icmp_echo += 1;
        Some(end)
    }

    #[inline]
    fn udp<A: App + ?Sized>(
        &mut self,
        buf: &mut [u8],
        hl: usize,
        l4: usize,
        end: usize,
        now_ns: u64,
        app: &mut A,
    ) -> Option<usize> {
        let (src, dst) = {
            let ip = Ipv4Packet::new_unchecked(&buf[hl..]);
            (ip.src_addr(), ip.dst_addr())
        };
        let Ok(u) = udp::UdpPacket::new_checked(&buf[l4..end]) else {
            return self.dropped(Drop::UdpMalformed);
        };
        if !u.verify_checksum(src, dst) {
            return self.dropped(Drop::UdpBadChecksum);
        }
        let (src_port, dst_port, ulen) = (u.src_port(), u.dst_port(), usize::from(u.len()));
        if !self.serves_udp(dst_port) {
            return self.dropped(Drop::UdpNoHandler);
        }
        self.counters.udp_delivered += 1;
        let payload = l4 + udp::HEADER_LEN;
        // Replies may grow up to the MTU (and the buffer).
        let limit = (hl + self.cfg.mtu).min(buf.len());
        let d = Datagram { src, src_port, dst_port, buf: &mut buf[payload..limit], len: ulen - udp::HEADER_LEN };
        match app.udp(now_ns, d) {
            Verdict::Consume => {
                self.counters.udp_consumed += 1;
                None
            }
            Verdict::Drop => {
                self.counters.drop(Drop::UdpHandlerDropped);
                None
            }
            Verdict::Echo => {
                self.turn_around(buf, hl);
                udp::UdpPacket::new_unchecked(&mut buf[l4..end]).swap_ports();
                self.counters.udp_replies += 1;
                Some(end)
            }
            v @ (Verdict::Reply(_) | Verdict::ReplySummed { .. }) => {
                let (n, known) = match v {
                    Verdict::ReplySummed { len, sum } if len <= limit - payload => (len, Some(sum)),
                    Verdict::Reply(n) | Verdict::ReplySummed { len: n, .. } => (n.min(limit - payload), None),
                    _ => unreachable!("matched above"),
                };
                let new_total = (payload + n - hl) as u16;
                self.turn_around(buf, hl);
                let (old_total, ihl) = {
                    let ip = Ipv4Packet::new_unchecked(&buf[hl..]);
                    (ip.total_len(), ip.header_len())
                };
                ip_set_total_len(&mut buf[hl..hl + ihl], old_total, new_total);
                let ulen = (udp::HEADER_LEN + n) as u16;
                let u = &mut buf[l4..l4 + usize::from(ulen)];
                u[0..2].copy_from_slice(&dst_port.to_be_bytes());
                u[2..4].copy_from_slice(&src_port.to_be_bytes());
                u[4..6].copy_from_slice(&ulen.to_be_bytes());
                u[6..8].copy_from_slice(&[0, 0]);
                let pseudo = checksum::pseudo_header(dst, src, Protocol::UDP, ulen);
                let sum = match known {
                    Some(payload_sum) => checksum::add(pseudo, &u[..udp::HEADER_LEN]) + u64::from(payload_sum),
                    None => checksum::add(pseudo, u),
                };
                let c = match !checksum::fold(sum) {
                    0 => 0xffff,
                    c => c,
                };
                u[6..8].copy_from_slice(&c.to_be_bytes());
                self.counters.udp_replies += 1;
                Some(payload + n)
            }
        }
    }
}

/// Sets an IPv4 header's total length, updating its checksum incrementally.
fn ip_set_total_len(h: &mut [u8], old: u16, new: u16) {
    h[2..4].copy_from_slice(&new.to_be_bytes());
    let c = u16::from_be_bytes([h[10], h[11]]);
    h[10..12].copy_from_slice(&checksum::update16(c, old, new).to_be_bytes());
}
