//! Whole frames built at once, for the places that originate traffic (the engine's transmit
//! path, the generator, tests): every header byte of an originated frame is written here.

use crate::addr::{Ipv4Addr, Ipv6Addr, MacAddr};
use crate::arp::{self, ArpOp, ArpRepr};
use crate::ethernet::{self, EtherType, EthernetRepr};
use crate::icmpv6::Icmpv6Repr;
use crate::ipv4::{self, Ipv4Repr, Protocol};
use crate::ipv6::{self, Ipv6Repr, NextHeader};
use crate::udp::{self, UdpRepr};

/// Where the IPv4 payload starts in an untagged frame whose IPv4 header has no options.
pub const IPV4_PAYLOAD_AT: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN;
/// Bytes of Ethernet + IPv4 (no options) + UDP headers.
pub const UDP_HEADERS: usize = IPV4_PAYLOAD_AT + udp::HEADER_LEN;
/// Where the IPv6 payload starts in an untagged frame without extension headers.
pub const IPV6_PAYLOAD_AT: usize = ethernet::HEADER_LEN + ipv6::HEADER_LEN;
/// Bytes of Ethernet + IPv6 (no extension headers) + UDP headers.
pub const UDP6_HEADERS: usize = IPV6_PAYLOAD_AT + udp::HEADER_LEN;
/// Hop limit of neighbour discovery messages (RFC 4861 §7.1: receivers check it).
pub const ND_HOP_LIMIT: u8 = 255;
/// The shortest Ethernet frame (without its FCS); shorter ones are padded.
pub const MIN_FRAME_LEN: usize = 60;

/// The link and network headers of an untagged Ethernet/IPv4 frame without options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Frame {
    /// Source MAC.
    pub src_mac: MacAddr,
    /// Destination MAC.
    pub dst_mac: MacAddr,
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Payload protocol.
    pub protocol: u8,
}

impl Ipv4Frame {
    /// Writes the Ethernet and IPv4 headers (don't-fragment, checksum filled) in front of a
    /// payload of `payload_len` bytes at `buf[IPV4_PAYLOAD_AT..]`; returns the frame length.
    pub fn emit(&self, buf: &mut [u8], payload_len: usize, ident: u16, ttl: u8) -> usize {
        EthernetRepr { src: self.src_mac, dst: self.dst_mac, vlan: None, ethertype: EtherType::IPV4 }.emit(buf);
        Ipv4Repr {
            src: self.src,
            dst: self.dst,
            protocol: self.protocol,
            payload_len,
            ttl,
            ident,
            tos: 0,
            dont_frag: true,
        }
        .emit(&mut buf[ethernet::HEADER_LEN..]);
        IPV4_PAYLOAD_AT + payload_len
    }
}

/// The addressing of an untagged Ethernet/IPv4/UDP frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpFrame {
    /// Source MAC.
    pub src_mac: MacAddr,
    /// Destination MAC.
    pub dst_mac: MacAddr,
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl UdpFrame {
    /// Writes the headers in front of a payload of `payload_len` bytes already at
    /// `buf[UDP_HEADERS..]`, with full checksums; returns the frame length.
    pub fn emit(&self, buf: &mut [u8], payload_len: usize, ident: u16, ttl: u8) -> usize {
        let ip = Ipv4Frame {
            src_mac: self.src_mac,
            dst_mac: self.dst_mac,
            src: self.src,
            dst: self.dst,
            protocol: Protocol::UDP,
        };
        ip.emit(buf, udp::HEADER_LEN + payload_len, ident, ttl);
        UdpRepr { src_port: self.src_port, dst_port: self.dst_port, payload_len }.emit(
            &mut buf[IPV4_PAYLOAD_AT..],
            self.src,
            self.dst,
        );
        UDP_HEADERS + payload_len
    }

    /// A new frame holding `payload`.
    pub fn to_vec(&self, payload: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; UDP_HEADERS + payload.len()];
        b[UDP_HEADERS..].copy_from_slice(payload);
        self.emit(&mut b, payload.len(), 1, 64);
        b
    }
}

/// Writes the Ethernet and IPv6 headers of an untagged frame from `src_mac`/`src` to
/// `dst_mac`/`dst` carrying `payload_len` bytes of `protocol` at `buf[IPV6_PAYLOAD_AT..]`;
/// returns the frame length.
pub fn ipv6_headers(
    buf: &mut [u8],
    (src_mac, src): (MacAddr, Ipv6Addr),
    (dst_mac, dst): (MacAddr, Ipv6Addr),
    protocol: u8,
    payload_len: usize,
    hop_limit: u8,
) -> usize {
    EthernetRepr { src: src_mac, dst: dst_mac, vlan: None, ethertype: EtherType::IPV6 }.emit(buf);
    Ipv6Repr { src, dst, protocol, payload_len, hop_limit, traffic_class: 0, flow_label: 0 }
        .emit(&mut buf[ethernet::HEADER_LEN..]);
    IPV6_PAYLOAD_AT + payload_len
}

/// Writes a UDP/IPv6 frame around a payload of `payload_len` bytes already at
/// `buf[UDP6_HEADERS..]`, with its checksum; returns the frame length.
pub fn udp6(
    buf: &mut [u8],
    from: (MacAddr, Ipv6Addr, u16),
    to: (MacAddr, Ipv6Addr, u16),
    payload_len: usize,
    hop_limit: u8,
) -> usize {
    let n = udp::HEADER_LEN + payload_len;
    ipv6_headers(buf, (from.0, from.1), (to.0, to.1), NextHeader::UDP, n, hop_limit);
    UdpRepr { src_port: from.2, dst_port: to.2, payload_len }.emit(&mut buf[IPV6_PAYLOAD_AT..], from.1, to.1);
    UDP6_HEADERS + payload_len
}

/// Writes a neighbour solicitation from `mac`/`src` for `target` to the target's
/// solicited-node group (RFC 4861 §7.2.2), with our link-layer address; returns its length.
pub fn neighbor_solicit(buf: &mut [u8], mac: MacAddr, src: Ipv6Addr, target: Ipv6Addr) -> usize {
    let group = target.solicited_node();
    let ns = Icmpv6Repr::NeighborSolicit { target, source_mac: Some(mac) };
    let n = ns.len(0);
    ipv6_headers(buf, (mac, src), (group.multicast_mac(), group), NextHeader::ICMPV6, n, ND_HOP_LIMIT);
    ns.emit(src, group, &mut buf[IPV6_PAYLOAD_AT..IPV6_PAYLOAD_AT + n]);
    IPV6_PAYLOAD_AT + n
}

/// Writes a broadcast ARP request from `mac`/`ip` for `target` to the start of `buf`, padded
/// to the shortest frame; returns its length.
pub fn arp_request(buf: &mut [u8], mac: MacAddr, ip: Ipv4Addr, target: Ipv4Addr) -> usize {
    EthernetRepr { src: mac, dst: MacAddr::BROADCAST, vlan: None, ethertype: EtherType::ARP }.emit(buf);
    ArpRepr { op: ArpOp::Request, sender_mac: mac, sender_ip: ip, target_mac: MacAddr::ZERO, target_ip: target }
        .emit(&mut buf[ethernet::HEADER_LEN..]);
    buf[ethernet::HEADER_LEN + arp::PACKET_LEN..MIN_FRAME_LEN].fill(0);
    MIN_FRAME_LEN
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ArpPacket, EthernetFrame, Ipv4Packet, UdpPacket};

    #[test]
    fn builds_a_valid_frame() {
        let f = UdpFrame {
            src_mac: MacAddr([2, 0, 0, 0, 0, 2]),
            dst_mac: MacAddr([2, 0, 0, 0, 0, 1]),
            src: Ipv4Addr([198, 18, 0, 2]),
            dst: Ipv4Addr([198, 18, 0, 1]),
            src_port: 40000,
            dst_port: 7,
        };
        let b = f.to_vec(b"payload");
        let e = EthernetFrame::new_checked(&b[..]).unwrap();
        let ip = Ipv4Packet::new_checked(e.payload()).unwrap();
        assert!(ip.verify_checksum());
        let u = UdpPacket::new_checked(ip.payload()).unwrap();
        assert!(u.verify_checksum(f.src, f.dst));
        assert_eq!(u.payload(), b"payload");
    }

    #[test]
    fn udp6_and_neighbor_solicit_parse_back() {
        let (m1, m2) = (MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]));
        let a1: Ipv6Addr = "2001:2::1".parse::<std::net::Ipv6Addr>().unwrap().into();
        let a2: Ipv6Addr = "2001:2::2".parse::<std::net::Ipv6Addr>().unwrap().into();
        let mut b = vec![0u8; 200];
        b[UDP6_HEADERS..UDP6_HEADERS + 5].copy_from_slice(b"hello");
        let n = udp6(&mut b, (m1, a1, 4000), (m2, a2, 53), 5, 64);
        let e = EthernetFrame::new_checked(&b[..n]).unwrap();
        assert_eq!(e.ethertype(), EtherType::IPV6);
        let ip = crate::Ipv6Packet::new_checked(e.payload()).unwrap();
        let (r, ext) = Ipv6Repr::parse(&ip).unwrap();
        assert_eq!((r.src, r.dst, r.protocol, r.payload_len, ext), (a1, a2, NextHeader::UDP, 13, 0));
        let u = UdpPacket::new_checked(ip.payload()).unwrap();
        assert!(u.verify_checksum(a1, a2));
        assert_eq!((u.src_port(), u.dst_port(), u.payload()), (4000, 53, &b"hello"[..]));

        let n = neighbor_solicit(&mut b, m1, a1, a2);
        let e = EthernetFrame::new_checked(&b[..n]).unwrap();
        assert_eq!(e.dst_addr(), MacAddr([0x33, 0x33, 0xff, 0, 0, 2]));
        let ip = crate::Ipv6Packet::new_checked(e.payload()).unwrap();
        let (r, _) = Ipv6Repr::parse(&ip).unwrap();
        assert_eq!((r.dst, r.hop_limit), (a2.solicited_node(), 255));
        let m = Icmpv6Repr::parse(r.src, r.dst, r.hop_limit, ip.payload()).unwrap();
        assert_eq!(m, Icmpv6Repr::NeighborSolicit { target: a2, source_mac: Some(m1) });
    }

    #[test]
    fn arp_request_is_padded_and_parses() {
        let mut b = [0xaau8; 64];
        let (mac, ip, target) = (MacAddr([2, 0, 0, 0, 0, 1]), Ipv4Addr([198, 18, 0, 1]), Ipv4Addr([198, 18, 0, 2]));
        assert_eq!(arp_request(&mut b, mac, ip, target), MIN_FRAME_LEN);
        let e = EthernetFrame::new_checked(&b[..MIN_FRAME_LEN]).unwrap();
        assert_eq!((e.dst_addr(), e.src_addr(), e.ethertype()), (MacAddr::BROADCAST, mac, EtherType::ARP));
        let r = ArpRepr::parse(&ArpPacket::new_checked(e.payload()).unwrap()).unwrap();
        assert_eq!((r.op, r.sender_ip, r.target_ip), (ArpOp::Request, ip, target));
        assert!(b[42..MIN_FRAME_LEN].iter().all(|&x| x == 0), "padding zeroed");
    }

    #[test]
    fn total_length_update_keeps_the_checksum_valid() {
        let mut b = vec![0u8; 100];
        let f = Ipv4Frame {
            src_mac: MacAddr([2, 0, 0, 0, 0, 2]),
            dst_mac: MacAddr([2, 0, 0, 0, 0, 1]),
            src: Ipv4Addr([198, 18, 0, 2]),
            dst: Ipv4Addr([198, 18, 0, 1]),
            protocol: Protocol::UDP,
        };
        f.emit(&mut b, 40, 7, 64);
        let mut ip = Ipv4Packet::new_unchecked(&mut b[ethernet::HEADER_LEN..]);
        ip.set_total_len(60);
        assert_eq!(ip.total_len(), 60);
        assert!(ip.verify_checksum());
    }
}
