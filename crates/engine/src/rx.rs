//! The receive path: one frame through Ethernet, ARP, IPv4, ICMP echo, IPv6, ICMPv6 echo and
//! neighbour discovery, UDP (either family) and TCP demux.
//! Replies are built in the receive buffer itself (no allocation, no copy); TCP segments go
//! to the application's TCP service as views of the frame. Each frame's fate is the return
//! value: a reply to send from the same buffer, a frame to keep for the application, or done.

use crate::counters::DropReason;
use crate::family::Family;
use crate::neighbour_cache::Lookup;
use crate::node::Node;
use crate::service::{Datagram, Service, Verdict};
use timer::Instant;
use wire::arp::{self, ArpOp, ArpPacket, ArpRepr};
use wire::checksum;
use wire::ethernet::{EtherType, EthernetFrame, MacAddr};
use wire::icmp::{kind, IcmpPacket};
use wire::icmpv6::{self, Icmpv6Repr, NaFlags};
use wire::ipv4::{Ipv4Addr, Ipv4Packet, Ipv4Repr, Protocol};
use wire::ipv6::{self, Ipv6Addr, Ipv6Packet, Ipv6Repr, NextHeader};
use wire::tcp::{TcpFlags, TcpPacket, TcpRepr};
use wire::udp::{self, UdpPacket, UdpRepr};
use wire::{Error, IpAddr};

/// Hop limit of neighbour discovery messages (RFC 4861 §7.1: receivers check it).
const ND_HOP_LIMIT: u8 = 255;
/// ICMP destination unreachable, code 4: fragmentation needed and DF set.
const FRAG_NEEDED: u8 = 4;
/// The smallest IPv4 path MTU believed from an ICMP message.
const MIN_PATH_MTU4: u16 = 576;

/// What became of a received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Received {
    /// The frame now holds a reply of this many bytes: send it.
    Reply(usize),
    /// The application reads the TCP payload at `at..at + len` until its `produce` returns:
    /// keep the frame until then.
    Hold {
        /// Offset of the payload in the frame.
        at: u16,
        /// Payload length.
        len: u16,
    },
    /// Consumed or dropped (and counted): the frame can be reused.
    Done,
    /// A TCP segment of a connection this engine does not hold: to the next engine.
    Stray,
}

/// A set of ports, one bit each.
pub(crate) struct PortSet(Box<[u64; 1024]>);

impl PortSet {
    pub(crate) fn new() -> PortSet {
        PortSet(Box::new([0; 1024]))
    }

    pub(crate) fn insert(&mut self, port: u16) {
        self.0[usize::from(port) / 64] |= 1 << (port % 64);
    }

    #[inline]
    fn contains(&self, port: u16) -> bool {
        self.0[usize::from(port) / 64] & (1 << (port % 64)) != 0
    }
}

/// The ports the application serves, by protocol.
pub(crate) struct Served {
    pub(crate) udp: PortSet,
    pub(crate) tcp: PortSet,
}

/// One received frame on its way through the layers.
pub(crate) struct Rx<'a, A: Service + ?Sized> {
    pub(crate) node: &'a mut Node,
    pub(crate) served: &'a Served,
    pub(crate) app: &'a mut A,
    pub(crate) now: Instant,
    /// The id the application gets for this frame's TCP payload if it holds it.
    pub(crate) view: u32,
}

impl<A: Service + ?Sized> Rx<'_, A> {
    /// Processes the frame `buf[..len]` in place.
    #[inline]
    pub(crate) fn frame(mut self, buf: &mut [u8], len: usize) -> Received {
        let Ok(eth) = EthernetFrame::new_checked(&buf[..len]) else {
            return self.dropped(DropReason::EthTruncated);
        };
        let (dst, hl, et) = (eth.dst_addr(), eth.header_len(), eth.ethertype());
        let ours = dst == self.node.cfg.mac;
        if !ours && dst != MacAddr::BROADCAST && !self.solicited_group(dst) {
            return self.dropped(DropReason::EthNotForUs);
        }
        match et {
            EtherType::IPV4 if ours => self.ipv4(buf, hl, len),
            EtherType::IPV6 if self.node.cfg.addr6.is_some() && dst != MacAddr::BROADCAST => self.ipv6(buf, hl, len),
            EtherType::ARP => self.arp(buf, hl, len),
            EtherType::IPV4 => self.dropped(DropReason::EthNotForUs),
            EtherType::IPV6 if self.node.cfg.addr6.is_some() => self.dropped(DropReason::EthNotForUs),
            _ => self.dropped(DropReason::EthUnknownType),
        }
    }

    /// True for the Ethernet group of our IPv6 address's solicited-node multicast address,
    /// where neighbour solicitations for it are sent (when we answer them).
    fn solicited_group(&self, dst: MacAddr) -> bool {
        let cfg = &self.node.cfg;
        dst.is_multicast() && cfg.owns_alone6 && cfg.addr6.is_some_and(|a| dst == a.solicited_node().multicast_mac())
    }

    #[inline]
    fn dropped(&mut self, why: DropReason) -> Received {
        self.node.counters.count_drop(why);
        Received::Done
    }

    fn arp(&mut self, buf: &mut [u8], hl: usize, len: usize) -> Received {
        let Ok(repr) = ArpPacket::new_checked(&buf[hl..len]).and_then(|p| ArpRepr::parse(&p)) else {
            return self.dropped(DropReason::ArpMalformed);
        };
        let now = self.now;
        let node = &mut *self.node;
        if Some(repr.target_ip) != node.cfg.addr || !node.cfg.owns_alone {
            node.arp.update_if_present(repr.sender_ip, repr.sender_mac, now);
            return self.dropped(DropReason::ArpNotForUs);
        }
        node.learned(IpAddr::V4(repr.sender_ip), repr.sender_mac, now);
        if repr.op != ArpOp::Request {
            return Received::Done; // a reply to our request: learned above
        }
        let reply = ArpRepr {
            op: ArpOp::Reply,
            sender_mac: node.cfg.mac,
            sender_ip: repr.target_ip,
            target_mac: repr.sender_mac,
            target_ip: repr.sender_ip,
        };
        let mut eth = EthernetFrame::new_unchecked(&mut buf[..]);
        eth.set_dst_addr(repr.sender_mac);
        eth.set_src_addr(node.cfg.mac);
        reply.emit(&mut buf[hl..]);
        node.counters.arp_replies += 1;
        // Keep the received length: Linux pads ARP to the 60-byte minimum and so do we.
        Received::Reply(len.max(hl + arp::PACKET_LEN))
    }

    #[inline]
    fn ipv4(&mut self, buf: &mut [u8], hl: usize, len: usize) -> Received {
        let ip = match Ipv4Packet::new_checked(&buf[hl..len]) {
            Ok(p) => p,
            Err(Error::Truncated) => return self.dropped(DropReason::Ipv4Truncated),
            Err(_) => return self.dropped(DropReason::Ipv4BadLength),
        };
        let repr = match Ipv4Repr::parse(&ip) {
            Ok(r) => r,
            Err(Error::BadChecksum) => return self.dropped(DropReason::Ipv4BadChecksum),
            Err(Error::Fragment) => return self.dropped(DropReason::Ipv4Fragment),
            Err(_) => return self.dropped(DropReason::Ipv4BadVersion),
        };
        if Some(repr.dst) != self.node.cfg.addr {
            return self.dropped(DropReason::Ipv4NotForUs);
        }
        let l4 = hl + ip.header_len();
        let at = L4 { hl, l4, end: l4 + repr.payload_len, src: repr.src, dst: repr.dst };
        match repr.protocol {
            Protocol::UDP => self.udp(buf, at),
            Protocol::ICMP if self.node.cfg.owns_alone => self.icmp(buf, at),
            Protocol::TCP => self.tcp(buf, at),
            _ => self.dropped(DropReason::Ipv4UnknownProtocol),
        }
    }

    /// An IPv6 packet to our address (or, for neighbour discovery, to its solicited-node
    /// group). Extension headers are walked ([`ipv6::walk_extensions`]'s bounds) and then
    /// taken out of the frame, so that an answer built in place carries none back.
    fn ipv6(&mut self, buf: &mut [u8], hl: usize, len: usize) -> Received {
        let Some(ours) = self.node.cfg.addr6 else { return self.dropped(DropReason::EthUnknownType) };
        let Ok(ip) = Ipv6Packet::new_checked(&buf[hl..len]) else {
            return self.dropped(DropReason::Ipv6Truncated);
        };
        let (repr, ext) = match Ipv6Repr::parse(&ip) {
            Ok(r) => r,
            Err(Error::Truncated) => return self.dropped(DropReason::Ipv6Truncated),
            Err(Error::Fragment) => return self.dropped(DropReason::Ipv6Fragment),
            Err(_) => return self.dropped(DropReason::Ipv6Malformed),
        };
        if repr.dst != ours {
            // Only neighbour discovery comes to our solicited-node group (and only when we
            // answer it).
            let to_group = repr.protocol == NextHeader::ICMPV6 && repr.dst == ours.solicited_node();
            if !(to_group && self.node.cfg.owns_alone6) {
                return self.dropped(DropReason::Ipv6NotForUs);
            }
        }
        let l4 = hl + ipv6::HEADER_LEN;
        if ext > 0 {
            buf.copy_within(l4 + ext..l4 + ext + repr.payload_len, l4);
            let mut ip = Ipv6Packet::new_unchecked(&mut buf[hl..]);
            ip.set_next_header(repr.protocol);
            ip.set_payload_len(repr.payload_len as u16);
        }
        let at = L4 { hl, l4, end: l4 + repr.payload_len, src: repr.src, dst: repr.dst };
        match repr.protocol {
            NextHeader::UDP => self.udp(buf, at),
            NextHeader::TCP => self.tcp(buf, at),
            NextHeader::ICMPV6 if self.node.cfg.owns_alone6 => self.icmpv6(buf, at, repr.hop_limit),
            _ => self.dropped(DropReason::Ipv6UnknownProtocol),
        }
    }

    /// ICMPv6 to an address sirocco owns alone: echo answered in place, neighbour
    /// solicitations for the address answered with an advertisement in place (RFC 4861
    /// §7.2.4), advertisements learnt.
    fn icmpv6(&mut self, buf: &mut [u8], at: L4<Ipv6Addr>, hop_limit: u8) -> Received {
        let Ok(msg) = Icmpv6Repr::parse(at.src, at.dst, hop_limit, &buf[at.l4..at.end]) else {
            return self.dropped(DropReason::Icmpv6Malformed);
        };
        let ours = at.dst == self.node.cfg.addr6.unwrap_or(Ipv6Addr::UNSPECIFIED);
        let from = EthernetFrame::new_unchecked(&buf[..]).src_addr();
        let now = self.now;
        match msg {
            Icmpv6Repr::EchoRequest { .. } if ours => {
                let m = &mut buf[at.l4..at.end];
                m[0] = icmpv6::kind::ECHO_REPLY;
                let c = u16::from_be_bytes([m[2], m[3]]);
                let c = checksum::update16(
                    c,
                    u16::from(icmpv6::kind::ECHO_REQUEST) << 8,
                    u16::from(icmpv6::kind::ECHO_REPLY) << 8,
                );
                m[2..4].copy_from_slice(&c.to_be_bytes());
                Ipv6Addr::turn_around(buf, at.hl);
                self.node.counters.icmpv6_echo += 1;
                Received::Reply(at.end)
            }
            Icmpv6Repr::NeighborSolicit { target, source_mac } if Some(target) == self.node.cfg.addr6 => {
                let dad = at.src == Ipv6Addr::UNSPECIFIED;
                if let (false, Some(m)) = (dad, source_mac) {
                    self.node.learned(IpAddr::V6(at.src), m, now);
                }
                // §7.2.4: to the solicitation's source; a duplicate address detection probe
                // (unspecified source) gets an unsolicited answer to all nodes.
                let (dst, dst_mac) = if dad {
                    (Ipv6Addr::ALL_NODES, Ipv6Addr::ALL_NODES.multicast_mac())
                } else {
                    (at.src, source_mac.unwrap_or(from))
                };
                let mac = self.node.cfg.mac;
                let na = Icmpv6Repr::NeighborAdvert {
                    flags: NaFlags { router: false, solicited: !dad, override_: true },
                    target,
                    target_mac: Some(mac),
                };
                let n = na.len(0);
                let end = at.l4 + n;
                if end > buf.len() {
                    return self.dropped(DropReason::NoBuffer);
                }
                let mut eth = EthernetFrame::new_unchecked(&mut buf[..]);
                eth.set_dst_addr(dst_mac);
                eth.set_src_addr(mac);
                Ipv6Repr {
                    src: target,
                    dst,
                    protocol: NextHeader::ICMPV6,
                    payload_len: n,
                    hop_limit: ND_HOP_LIMIT,
                    traffic_class: 0,
                    flow_label: 0,
                }
                .emit(&mut buf[at.hl..]);
                na.emit(target, dst, &mut buf[at.l4..end]);
                self.node.counters.nd_replies += 1;
                Received::Reply(end)
            }
            Icmpv6Repr::PacketTooBig { mtu } if ours => {
                // The invoking packet: one of our TCP segments, as far as the router kept it.
                let inner = &buf[at.l4 + icmpv6::HEADER_LEN..at.end];
                if inner.len() < ipv6::HEADER_LEN + 4 || inner[6] != NextHeader::TCP {
                    return self.dropped(DropReason::Icmpv6Ignored);
                }
                let (src, dst) = (Ipv6Addr::from_bytes(&inner[8..]), Ipv6Addr::from_bytes(&inner[24..]));
                if src != at.dst {
                    return self.dropped(DropReason::Icmpv6Ignored);
                }
                let p = &inner[ipv6::HEADER_LEN..];
                let (sport, dport) = (u16::from_be_bytes([p[0], p[1]]), u16::from_be_bytes([p[2], p[3]]));
                // RFC 8201 §4: never below IPv6's minimum link MTU.
                let mtu = mtu.clamp(1280, u32::from(u16::MAX)) as u16;
                self.app.path_mtu(src.into(), dst.into(), sport, dport, mtu);
                self.node.counters.icmp_too_big += 1;
                Received::Done
            }
            Icmpv6Repr::NeighborAdvert { flags, target, target_mac } => {
                self.node.counters.nd_learned += 1;
                if let Some(m) = target_mac {
                    if flags.solicited {
                        self.node.learned(IpAddr::V6(target), m, now);
                    } else {
                        self.node.nd.update_if_present(target, m, now);
                    }
                }
                Received::Done
            }
            _ => self.dropped(DropReason::Icmpv6Ignored),
        }
    }

    /// Hands a TCP segment to the application's TCP service; the frame is released after,
    /// or held while the application reads it.
    fn tcp<F: Family>(&mut self, buf: &mut [u8], at: L4<F>) -> Received {
        let Ok(p) = TcpPacket::new_checked(&buf[at.l4..at.end]) else {
            return self.dropped(DropReason::TcpMalformed);
        };
        if !self.served.tcp.contains(p.dst_port()) {
            return self.dropped(DropReason::TcpNotServed);
        }
        let repr = match TcpRepr::parse(&p, at.src, at.dst) {
            Ok(r) => r,
            Err(Error::BadChecksum) if p.checksum_unfinished(at.src, at.dst) => {
                return self.dropped(DropReason::ChecksumUnfinished)
            }
            Err(_) => return self.dropped(DropReason::TcpMalformed),
        };
        let mac = EthernetFrame::new_unchecked(&buf[..]).src_addr();
        self.learn_peer(at.src, mac, repr.flags.has(TcpFlags::SYN));
        let payload = p.payload();
        self.app.tcp(self.now, at.src.into(), at.dst.into(), &repr, payload, self.view);
        if self.app.take_stray() {
            return Received::Stray;
        }
        self.node.counters.tcp_delivered += 1;
        if self.app.holds_tcp_frames() {
            let len = payload.len();
            Received::Hold { at: (at.end - len) as u16, len: len as u16 }
        } else {
            Received::Done
        }
    }

    /// Replies go to the MAC a segment came from: learn it (shared-address mode has no ARP of
    /// its own, the kernel may never have talked to this peer, and with several queues the
    /// answer to this engine's ARP request may reach another engine). A SYN only fills a free
    /// slot: a flood forges source addresses by the thousand and must neither redirect nor
    /// push out the real peers, which are learnt from their ACKs.
    fn learn_peer<F: Family>(&mut self, src: F, mac: MacAddr, syn: bool) {
        let now = self.now;
        let arp = F::neighbours(self.node);
        match arp.lookup(src, now) {
            Lookup::Known(m) if m == mac => {}
            Lookup::Known(_) if syn => {}
            _ if syn => arp.insert_if_room(src, mac, now),
            _ => arp.insert(src, mac, now),
        }
    }

    fn icmp(&mut self, buf: &mut [u8], at: L4<Ipv4Addr>) -> Received {
        let Ok(p) = IcmpPacket::new_checked(&buf[at.l4..at.end]) else {
            return self.dropped(DropReason::IcmpMalformed);
        };
        if !p.verify_checksum() {
            return self.dropped(DropReason::IcmpMalformed);
        }
        if p.msg_type() == kind::DEST_UNREACHABLE && p.code() == FRAG_NEEDED {
            return self.frag_needed(buf, at);
        }
        if p.msg_type() != kind::ECHO_REQUEST || p.code() != 0 {
            return self.dropped(DropReason::IcmpIgnored);
        }
        IcmpPacket::new_unchecked(&mut buf[at.l4..at.end]).echo_request_to_reply();
        Ipv4Addr::turn_around(buf, at.hl);
        self.node.counters.icmp_echo += 1;
        Received::Reply(at.end)
    }

    /// ICMP "fragmentation needed" (RFC 1191) about one of our TCP segments: TCP sends
    /// smaller ones on that connection.
    fn frag_needed(&mut self, buf: &[u8], at: L4<Ipv4Addr>) -> Received {
        let m = &buf[at.l4..at.end];
        let inner = &m[wire::icmp::HEADER_LEN..];
        let ihl = usize::from(inner.first().map_or(0, |b| b & 0x0f)) * 4;
        if ihl < 20 || inner.len() < ihl + 4 || inner[9] != Protocol::TCP {
            return self.dropped(DropReason::IcmpIgnored);
        }
        let (src, dst) = (Ipv4Addr::from_bytes(&inner[12..]), Ipv4Addr::from_bytes(&inner[16..]));
        if src != at.dst {
            return self.dropped(DropReason::IcmpIgnored);
        }
        let p = &inner[ihl..];
        let (sport, dport) = (u16::from_be_bytes([p[0], p[1]]), u16::from_be_bytes([p[2], p[3]]));
        // The next hop's MTU (0 from routers older than RFC 1191), never believed below 576:
        // a forged message must not shrink segments to nothing.
        let mtu = u16::from_be_bytes([m[6], m[7]]).max(MIN_PATH_MTU4);
        self.app.path_mtu(src.into(), dst.into(), sport, dport, mtu);
        self.node.counters.icmp_too_big += 1;
        Received::Done
    }

    #[inline]
    fn udp<F: Family>(&mut self, buf: &mut [u8], at: L4<F>) -> Received {
        let Ok(u) = UdpPacket::new_checked(&buf[at.l4..at.end]) else {
            return self.dropped(DropReason::UdpMalformed);
        };
        let Ok(repr) = UdpRepr::parse(&u, at.src, at.dst) else {
            if u.checksum_unfinished(at.src, at.dst) {
                return self.dropped(DropReason::ChecksumUnfinished);
            }
            return self.dropped(DropReason::UdpBadChecksum);
        };
        if !self.served.udp.contains(repr.dst_port) {
            return self.dropped(DropReason::UdpNoHandler);
        }
        self.node.counters.udp_delivered += 1;
        let payload = at.l4 + udp::HEADER_LEN;
        // Replies may grow up to the MTU (and the buffer).
        let limit = (at.hl + self.node.cfg.mtu).min(buf.len());
        let d = Datagram {
            src: at.src.into(),
            src_port: repr.src_port,
            dst_port: repr.dst_port,
            buf: &mut buf[payload..limit],
            len: repr.payload_len,
        };
        let (n, known_sum) = match self.app.udp(self.now, d) {
            Verdict::Consume => {
                self.node.counters.udp_consumed += 1;
                return Received::Done;
            }
            Verdict::Drop => return self.dropped(DropReason::UdpHandlerDropped),
            Verdict::Echo => {
                F::turn_around(buf, at.hl);
                UdpPacket::new_unchecked(&mut buf[at.l4..at.end]).swap_ports();
                self.node.counters.udp_replies += 1;
                return Received::Reply(at.end);
            }
            Verdict::ReplySummed { len, sum } if len <= limit - payload => (len, Some(sum)),
            Verdict::Reply(n) | Verdict::ReplySummed { len: n, .. } => (n.min(limit - payload), None),
        };
        F::turn_around(buf, at.hl);
        F::set_upper_len(buf, at.hl, at.l4, udp::HEADER_LEN + n);
        let reply = UdpRepr { src_port: repr.dst_port, dst_port: repr.src_port, payload_len: n };
        let u = &mut buf[at.l4..payload + n];
        match known_sum {
            Some(sum) => reply.emit_summed(u, at.dst, at.src, sum),
            None => reply.emit(u, at.dst, at.src),
        }
        self.node.counters.udp_replies += 1;
        Received::Reply(payload + n)
    }
}

/// Where a packet's transport header lies in its frame, and its addresses.
#[derive(Clone, Copy)]
struct L4<A> {
    /// Start of the IP header.
    hl: usize,
    /// Start of the transport header.
    l4: usize,
    /// End of the IP packet (Ethernet padding excluded).
    end: usize,
    src: A,
    dst: A,
}
