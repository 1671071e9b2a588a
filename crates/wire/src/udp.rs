//! UDP (RFC 768).

use crate::checksum::{self, PseudoHeader};
use crate::transport;
use crate::{be16, put16, Error, Protocol, Result};

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const LENGTH: usize = 4;
    pub const CHECKSUM: usize = 6;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

/// A view of a UDP datagram.
#[derive(Debug)]
pub struct UdpPacket<T> {
    buf: T,
}

crate::transport::port_view!(UdpPacket, field::CHECKSUM, true);

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps `buf` (the IP payload) after checking the header and that the length field is
    /// at least 8 and fits in the buffer.
    pub fn new_checked(buf: T) -> Result<Self> {
        let b = buf.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let len = usize::from(be16(b, field::LENGTH));
        if len < HEADER_LEN {
            return Err(Error::BadLength);
        }
        if len > b.len() {
            return Err(Error::Truncated);
        }
        Ok(UdpPacket { buf })
    }
    /// Length field (header + payload).
    pub fn len(&self) -> u16 {
        be16(self.b(), field::LENGTH)
    }
    /// True if the length field says there is no payload.
    pub fn is_empty(&self) -> bool {
        self.len() as usize == HEADER_LEN
    }
    /// Checksum field (0 means none was computed).
    pub fn checksum(&self) -> u16 {
        be16(self.b(), field::CHECKSUM)
    }
    /// The payload, up to the length field.
    pub fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..usize::from(self.len())]
    }
    /// True if the checksum verifies against the pseudo-header, or is absent (zero) where
    /// the family allows that (IPv4; over IPv6 a zero checksum is invalid).
    #[inline]
    pub fn verify_checksum<A: PseudoHeader>(&self, src: A, dst: A) -> bool {
        if self.checksum() == 0 {
            return A::UDP_CHECKSUM_OPTIONAL;
        }
        transport::sum_verifies(src, dst, Protocol::UDP, &self.b()[..usize::from(self.len())])
    }
    /// True if the checksum field holds only the pseudo-header's sum: the sender left the
    /// rest to a NIC (CHECKSUM_PARTIAL), which a veth with TX checksum offload never adds.
    pub fn checksum_unfinished<A: PseudoHeader>(&self, src: A, dst: A) -> bool {
        transport::sum_unfinished(self.checksum(), src, dst, Protocol::UDP, usize::from(self.len()))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Swaps the ports; the checksum is unchanged (same words, other order).
    pub fn swap_ports(&mut self) {
        let b = self.buf.as_mut();
        let (s, d) = (be16(b, field::SRC_PORT), be16(b, field::DST_PORT));
        put16(b, field::SRC_PORT, d);
        put16(b, field::DST_PORT, s);
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, c: u16) {
        put16(self.buf.as_mut(), field::CHECKSUM, c);
    }
    /// The payload, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = usize::from(self.len());
        &mut self.buf.as_mut()[HEADER_LEN..len]
    }
}

/// The meaning of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload length.
    pub payload_len: usize,
}

impl UdpRepr {
    /// Validates the checksum and reads the header.
    #[inline]
    pub fn parse<T: AsRef<[u8]>, A: PseudoHeader>(p: &UdpPacket<T>, src: A, dst: A) -> Result<Self> {
        if !p.verify_checksum(src, dst) {
            return Err(Error::BadChecksum);
        }
        Ok(UdpRepr { src_port: p.src_port(), dst_port: p.dst_port(), payload_len: usize::from(p.len()) - HEADER_LEN })
    }

    /// Writes the header to `buf`, whose payload (after 8 bytes) must already hold the data,
    /// and fills the checksum over it.
    pub fn emit<A: PseudoHeader>(&self, buf: &mut [u8], src: A, dst: A) {
        let len = self.write_header(buf);
        let sum = checksum::add(A::pseudo_sum(src, dst, Protocol::UDP, u32::from(len)), &buf[..usize::from(len)]);
        self.put_checksum(buf, sum);
    }

    /// As [`UdpRepr::emit`], for a payload whose one's-complement sum (folded, not
    /// complemented) the caller already knows: only the header is read.
    pub fn emit_summed<A: PseudoHeader>(&self, buf: &mut [u8], src: A, dst: A, payload_sum: u16) {
        let len = self.write_header(buf);
        let pseudo = A::pseudo_sum(src, dst, Protocol::UDP, u32::from(len));
        let sum = checksum::add(pseudo, &buf[..HEADER_LEN]) + u64::from(payload_sum);
        self.put_checksum(buf, sum);
    }

    /// Writes the header with a zero checksum: none computed, which only IPv4 allows (a
    /// tunnel's outer header, RFC 7348 §5).
    pub fn emit_without_checksum(&self, buf: &mut [u8]) {
        self.write_header(buf);
    }

    /// Ports and length, with a zero checksum; returns the length field.
    fn write_header(&self, buf: &mut [u8]) -> u16 {
        let len = (HEADER_LEN + self.payload_len) as u16;
        put16(buf, field::SRC_PORT, self.src_port);
        put16(buf, field::DST_PORT, self.dst_port);
        put16(buf, field::LENGTH, len);
        put16(buf, field::CHECKSUM, 0);
        len
    }

    fn put_checksum(&self, buf: &mut [u8], sum: u64) {
        let c = match !checksum::fold(sum) {
            0 => 0xffff, // zero means "no checksum" in UDP
            c => c,
        };
        put16(buf, field::CHECKSUM, c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ipv4Addr;
    use proptest::prelude::*;

    const S: Ipv4Addr = Ipv4Addr([198, 18, 0, 2]);
    const D: Ipv4Addr = Ipv4Addr([198, 18, 0, 1]);

    fn datagram(payload: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 8 + payload.len()];
        b[8..].copy_from_slice(payload);
        UdpRepr { src_port: 40000, dst_port: 7, payload_len: payload.len() }.emit(&mut b, S, D);
        b
    }

    #[test]
    fn a_checksum_left_to_the_nic_is_told_apart_from_a_wrong_one() {
        let mut b = datagram(b"sum me later");
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum(S, D) && !p.checksum_unfinished(S, D));
        // What Linux leaves for the NIC with CHECKSUM_PARTIAL: the pseudo-header's folded sum.
        let partial = checksum::fold(checksum::pseudo_header(S, D, Protocol::UDP, b.len() as u16));
        b[6..8].copy_from_slice(&partial.to_be_bytes());
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert!(!p.verify_checksum(S, D) && p.checksum_unfinished(S, D));
        // Another pseudo-header, or a corrupted field, is just wrong.
        assert!(!p.checksum_unfinished(S, Ipv4Addr([198, 18, 0, 3])));
        b[6] ^= 1;
        assert!(!UdpPacket::new_checked(&b[..]).unwrap().checksum_unfinished(S, D));
    }

    #[test]
    fn rewritten_ports_and_addresses_keep_the_checksum_right_or_absent() {
        let n = Ipv4Addr([198, 18, 5, 5]);
        for payload in [&b"hello"[..], b"", &[0xff; 301]] {
            let mut b = datagram(payload);
            let mut p = UdpPacket::new_unchecked(&mut b[..]);
            p.set_src_port(1234);
            p.set_dst_port(53);
            p.update_checksum_for_addr(S, n);
            let p = UdpPacket::new_checked(&b[..]).unwrap();
            assert!(p.verify_checksum(n, D) && p.checksum() != 0);
            assert_eq!((p.src_port(), p.dst_port()), (1234, 53));
        }
        let mut b = datagram(b"x");
        b[6..8].fill(0);
        let mut p = UdpPacket::new_unchecked(&mut b[..]);
        p.set_src_port(9);
        p.update_checksum_for_addr(S, n);
        assert_eq!(p.checksum(), 0, "no checksum stays none");
    }

    #[test]
    fn known_datagram() {
        // "hi" from 198.18.0.2:40000 to 198.18.0.1:7; checksum computed by hand from RFC 768.
        let b = datagram(b"hi");
        assert_eq!(&b[..6], &[0x9c, 0x40, 0x00, 0x07, 0x00, 0x0a]);
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum(S, D));
        assert!(!p.verify_checksum(S, Ipv4Addr([198, 18, 0, 3])));
        assert_eq!(p.payload(), b"hi");
    }

    #[test]
    fn malformed() {
        let b = datagram(b"hello");
        assert_eq!(UdpPacket::new_checked(&b[..7]).unwrap_err(), Error::Truncated);
        assert_eq!(UdpPacket::new_checked(&b[..12]).unwrap_err(), Error::Truncated);
        let mut x = b.clone();
        x[5] = 4;
        assert_eq!(UdpPacket::new_checked(&x[..]).unwrap_err(), Error::BadLength);
        let mut x = b.clone();
        x[9] ^= 1;
        assert_eq!(UdpRepr::parse(&UdpPacket::new_checked(&x[..]).unwrap(), S, D).unwrap_err(), Error::BadChecksum);
        let mut x = b;
        x[6] = 0;
        x[7] = 0;
        x[9] ^= 1;
        assert!(UdpRepr::parse(&UdpPacket::new_checked(&x[..]).unwrap(), S, D).is_ok(), "zero means no checksum");
    }

    proptest! {
        #[test]
        fn emit_summed_equals_emit(sp in any::<u16>(), dp in any::<u16>(), data in proptest::collection::vec(any::<u8>(), 0..1472)) {
            let r = UdpRepr { src_port: sp, dst_port: dp, payload_len: data.len() };
            let mut a = vec![0u8; HEADER_LEN + data.len()];
            a[HEADER_LEN..].copy_from_slice(&data);
            let mut b = a.clone();
            r.emit(&mut a, S, D);
            r.emit_summed(&mut b, S, D, checksum::fold(checksum::add(0, &data)));
            prop_assert_eq!(a, b);
        }

        #[test]
        fn emit_then_parse(sp in any::<u16>(), dp in any::<u16>(), data in proptest::collection::vec(any::<u8>(), 0..1472)) {
            let mut b = vec![0u8; 8 + data.len()];
            b[8..].copy_from_slice(&data);
            let r = UdpRepr { src_port: sp, dst_port: dp, payload_len: data.len() };
            r.emit(&mut b, S, D);
            let p = UdpPacket::new_checked(&b[..]).unwrap();
            prop_assert_eq!(UdpRepr::parse(&p, S, D).unwrap(), r);
            prop_assert_eq!(p.payload(), &data[..]);
            let mut b2 = b.clone();
            let mut p2 = UdpPacket::new_unchecked(&mut b2[..]);
            p2.swap_ports();
            prop_assert!(p2.verify_checksum(D, S));
        }
    }

    #[test]
    fn over_ipv6_the_checksum_covers_the_v6_pseudo_header_and_is_mandatory() {
        use crate::Ipv6Addr;
        let s6: Ipv6Addr = "2001:2::2".parse::<std::net::Ipv6Addr>().unwrap().into();
        let d6: Ipv6Addr = "2001:2::10".parse::<std::net::Ipv6Addr>().unwrap().into();
        let r = UdpRepr { src_port: 5000, dst_port: 7, payload_len: 5 };
        let mut b = vec![0u8; 13];
        b[8..].copy_from_slice(b"hello");
        r.emit(&mut b, s6, d6);
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p, s6, d6), Ok(r));
        assert!(!p.verify_checksum(d6, Ipv6Addr::UNSPECIFIED), "another pseudo-header");
        let mut z = b.clone();
        UdpPacket::new_unchecked(&mut z[..]).set_checksum(0);
        assert!(!UdpPacket::new_checked(&z[..]).unwrap().verify_checksum(s6, d6), "zero is no checksum: invalid");
        assert!(UdpPacket::new_checked(&z[..]).unwrap().verify_checksum(S, D), "over IPv4 it is allowed");
    }
}
