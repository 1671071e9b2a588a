//! ARP for IPv4 over Ethernet (RFC 826).

use crate::{be16, put16, Error, EtherType, Ipv4Addr, MacAddr, Result};

mod field {
    use core::ops::Range;
    pub const HTYPE: usize = 0;
    pub const PTYPE: usize = 2;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: usize = 6;
    pub const SHA: Range<usize> = 8..14;
    pub const SPA: Range<usize> = 14..18;
    pub const THA: Range<usize> = 18..24;
    pub const TPA: Range<usize> = 24..28;
}

const HTYPE_ETHERNET: u16 = 1;
const OPER_REQUEST: u16 = 1;
const OPER_REPLY: u16 = 2;

/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = 28;

/// ARP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArpOp {
    /// Who has `target_ip`?
    Request,
    /// `sender_ip` is at `sender_mac`.
    Reply,
}

/// A view of an ARP packet.
#[derive(Debug)]
pub struct ArpPacket<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps `buf` after checking its length.
    pub fn new_checked(buf: T) -> Result<Self> {
        if buf.as_ref().len() < PACKET_LEN {
            return Err(Error::Truncated);
        }
        Ok(ArpPacket { buf })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// Hardware type (1 for Ethernet).
    pub fn hardware_type(&self) -> u16 {
        be16(self.b(), field::HTYPE)
    }
    /// Protocol type (0x0800 for IPv4).
    pub fn protocol_type(&self) -> u16 {
        be16(self.b(), field::PTYPE)
    }
    /// Hardware address length.
    pub fn hardware_len(&self) -> u8 {
        self.b()[field::HLEN]
    }
    /// Protocol address length.
    pub fn protocol_len(&self) -> u8 {
        self.b()[field::PLEN]
    }
    /// Raw operation code.
    pub fn operation(&self) -> u16 {
        be16(self.b(), field::OPER)
    }
    /// Sender hardware address.
    pub fn sender_mac(&self) -> MacAddr {
        MacAddr(self.b()[field::SHA].try_into().unwrap())
    }
    /// Sender protocol address.
    pub fn sender_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from_bytes(&self.b()[field::SPA])
    }
    /// Target hardware address.
    pub fn target_mac(&self) -> MacAddr {
        MacAddr(self.b()[field::THA].try_into().unwrap())
    }
    /// Target protocol address.
    pub fn target_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from_bytes(&self.b()[field::TPA])
    }
}

/// The meaning of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpRepr {
    /// Request or reply.
    pub op: ArpOp,
    /// Sender hardware address.
    pub sender_mac: MacAddr,
    /// Sender IPv4 address.
    pub sender_ip: Ipv4Addr,
    /// Target hardware address (zero in requests).
    pub target_mac: MacAddr,
    /// Target IPv4 address.
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Validates and reads an ARP packet; anything but Ethernet/IPv4 request or reply is refused.
    pub fn parse<T: AsRef<[u8]>>(p: &ArpPacket<T>) -> Result<Self> {
        if p.hardware_type() != HTYPE_ETHERNET
            || p.protocol_type() != EtherType::IPV4
            || p.hardware_len() != 6
            || p.protocol_len() != 4
        {
            return Err(Error::Unsupported);
        }
        let op = match p.operation() {
            OPER_REQUEST => ArpOp::Request,
            OPER_REPLY => ArpOp::Reply,
            _ => return Err(Error::Malformed),
        };
        Ok(ArpRepr {
            op,
            sender_mac: p.sender_mac(),
            sender_ip: p.sender_ip(),
            target_mac: p.target_mac(),
            target_ip: p.target_ip(),
        })
    }

    /// Writes the packet to the start of `buf` (at least [`PACKET_LEN`] long).
    pub fn emit(&self, buf: &mut [u8]) {
        put16(buf, field::HTYPE, HTYPE_ETHERNET);
        put16(buf, field::PTYPE, EtherType::IPV4);
        buf[field::HLEN] = 6;
        buf[field::PLEN] = 4;
        put16(buf, field::OPER, if self.op == ArpOp::Request { OPER_REQUEST } else { OPER_REPLY });
        buf[field::SHA].copy_from_slice(&self.sender_mac.0);
        buf[field::SPA].copy_from_slice(&self.sender_ip.0);
        buf[field::THA].copy_from_slice(&self.target_mac.0);
        buf[field::TPA].copy_from_slice(&self.target_ip.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // A request captured from Linux: who has 198.18.0.1? tell 198.18.0.2.
    const REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 198, 18, 0, 2, 0, 0, 0, 0,
        0, 0, 198, 18, 0, 1,
    ];

    #[test]
    fn parse_request() {
        let r = ArpRepr::parse(&ArpPacket::new_checked(&REQUEST[..]).unwrap()).unwrap();
        assert_eq!(r.op, ArpOp::Request);
        assert_eq!(r.sender_ip, Ipv4Addr([198, 18, 0, 2]));
        assert_eq!(r.target_ip, Ipv4Addr([198, 18, 0, 1]));
        let mut out = [0u8; 28];
        r.emit(&mut out);
        assert_eq!(out, REQUEST);
    }

    #[test]
    fn refuses_bad() {
        assert_eq!(ArpPacket::new_checked(&REQUEST[..27]).unwrap_err(), Error::Truncated);
        let mut b = REQUEST;
        b[5] = 16;
        assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()).unwrap_err(), Error::Unsupported);
        let mut b = REQUEST;
        b[7] = 9;
        assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()).unwrap_err(), Error::Malformed);
    }

    proptest! {
        #[test]
        fn emit_then_parse(req in any::<bool>(), sm in any::<[u8; 6]>(), si in any::<[u8; 4]>(),
                           tm in any::<[u8; 6]>(), ti in any::<[u8; 4]>()) {
            let r = ArpRepr { op: if req { ArpOp::Request } else { ArpOp::Reply }, sender_mac: MacAddr(sm),
                sender_ip: Ipv4Addr(si), target_mac: MacAddr(tm), target_ip: Ipv4Addr(ti) };
            let mut b = [0u8; PACKET_LEN];
            r.emit(&mut b);
            prop_assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()).unwrap(), r);
        }
    }
}
