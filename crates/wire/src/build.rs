//! Whole frames built at once, for the places that originate traffic (the engine's transmit
//! path, the generator, tests): every header byte of an originated frame is written here.

use crate::addr::{Ipv4Addr, MacAddr};
use crate::arp::{self, ArpOp, ArpRepr};
use crate::ethernet::{self, EtherType, EthernetRepr};
use crate::ipv4::{self, Ipv4Repr, Protocol};
use crate::udp::{self, UdpRepr};

/// Where the IPv4 payload starts in an untagged frame whose IPv4 header has no options.
pub const IPV4_PAYLOAD_AT: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN;
/// Bytes of Ethernet + IPv4 (no options) + UDP headers.
pub const UDP_HEADERS: usize = IPV4_PAYLOAD_AT + udp::HEADER_LEN;
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
