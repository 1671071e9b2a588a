//! Whole frames built at once, for the places that originate traffic (the generator, ARP
//! requests, tests).

use crate::ethernet::{EtherType, EthernetRepr, MacAddr};
use crate::ipv4::{Ipv4Addr, Ipv4Repr, Protocol};
use crate::udp::UdpRepr;

/// Bytes of Ethernet + IPv4 (no options) + UDP headers.
pub const UDP_HEADERS: usize = 14 + 20 + 8;

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
        EthernetRepr { src: self.src_mac, dst: self.dst_mac, vlan: None, ethertype: EtherType::IPV4 }.emit(buf);
        Ipv4Repr {
            src: self.src,
            dst: self.dst,
            protocol: Protocol::UDP,
            payload_len: 8 + payload_len,
            ttl,
            ident,
            tos: 0,
            dont_frag: true,
        }
        .emit(&mut buf[14..]);
        UdpRepr { src_port: self.src_port, dst_port: self.dst_port, payload_len }.emit(
            &mut buf[34..],
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EthernetFrame, Ipv4Packet, UdpPacket};

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
}
