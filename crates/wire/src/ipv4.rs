//! IPv4 (RFC 791): header checksum, options, fragments.

use crate::checksum;
use crate::{be16, put16, Error, Result};

pub use crate::addr::Ipv4Addr;

/// IP protocol numbers sirocco knows.
pub struct Protocol;

impl Protocol {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
}

mod field {
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLG_OFF: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = 20;

/// A view of an IPv4 packet.
#[derive(Debug)]
pub struct Ipv4Packet<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buf` after checking that the header and the total length the header claims fit
    /// in it. Trailing bytes beyond the total length (Ethernet padding) are allowed.
    pub fn new_checked(buf: T) -> Result<Self> {
        let b = buf.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let p = Ipv4Packet { buf };
        let ihl = p.header_len();
        let total = usize::from(p.total_len());
        if ihl < HEADER_LEN || total < ihl {
            return Err(Error::BadLength);
        }
        if p.buf.as_ref().len() < total {
            return Err(Error::Truncated);
        }
        Ok(p)
    }

    /// Wraps `buf` without checking; accessors may panic on short buffers.
    pub fn new_unchecked(buf: T) -> Self {
        Ipv4Packet { buf }
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    /// Version field (4).
    pub fn version(&self) -> u8 {
        self.b()[field::VER_IHL] >> 4
    }
    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[field::VER_IHL] & 0x0f) * 4
    }
    /// DSCP and ECN byte.
    pub fn tos(&self) -> u8 {
        self.b()[field::TOS]
    }
    /// Total length field.
    pub fn total_len(&self) -> u16 {
        be16(self.b(), field::LENGTH)
    }
    /// Identification field.
    pub fn ident(&self) -> u16 {
        be16(self.b(), field::IDENT)
    }
    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.b()[field::FLG_OFF] & 0x40 != 0
    }
    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        self.b()[field::FLG_OFF] & 0x20 != 0
    }
    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u16 {
        (be16(self.b(), field::FLG_OFF) & 0x1fff) * 8
    }
    /// True if this is any fragment of a larger datagram.
    pub fn is_fragment(&self) -> bool {
        self.more_frags() || self.frag_offset() != 0
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.b()[field::TTL]
    }
    /// Payload protocol.
    pub fn protocol(&self) -> u8 {
        self.b()[field::PROTOCOL]
    }
    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        be16(self.b(), field::CHECKSUM)
    }
    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from_bytes(&self.b()[field::SRC..])
    }
    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from_bytes(&self.b()[field::DST..])
    }
    /// The options bytes (empty when IHL is 5).
    pub fn options(&self) -> &[u8] {
        &self.b()[HEADER_LEN..self.header_len()]
    }
    /// True if the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::add(0, &self.b()[..self.header_len()])) == 0xffff
    }
    /// The payload, up to the total length (Ethernet padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    fn bm(&mut self) -> &mut [u8] {
        self.buf.as_mut()
    }
    /// Sets the TTL, updating the checksum incrementally.
    pub fn set_ttl(&mut self, ttl: u8) {
        let old = be16(self.b(), field::TTL);
        self.bm()[field::TTL] = ttl;
        let new = be16(self.b(), field::TTL);
        let c = checksum::update16(self.checksum(), old, new);
        put16(self.bm(), field::CHECKSUM, c);
    }
    /// Sets the total length, updating the checksum incrementally.
    pub fn set_total_len(&mut self, len: u16) {
        let old = self.total_len();
        put16(self.bm(), field::LENGTH, len);
        let c = checksum::update16(self.checksum(), old, len);
        put16(self.bm(), field::CHECKSUM, c);
    }
    /// Swaps source and destination; the checksum is unchanged (same words, other order).
    pub fn swap_addrs(&mut self) {
        let b = self.bm();
        let mut t = [0u8; 4];
        t.copy_from_slice(&b[field::SRC..field::SRC + 4]);
        b.copy_within(field::DST..field::DST + 4, field::SRC);
        b[field::DST..field::DST + 4].copy_from_slice(&t);
    }
    /// Sets the source address, updating the checksum incrementally.
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        let old = self.src_addr();
        self.bm()[field::SRC..field::SRC + 4].copy_from_slice(&a.0);
        let c = checksum::update32(self.checksum(), old.to_u32(), a.to_u32());
        put16(self.bm(), field::CHECKSUM, c);
    }
    /// Sets the destination address, updating the checksum incrementally.
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        let old = self.dst_addr();
        self.bm()[field::DST..field::DST + 4].copy_from_slice(&a.0);
        let c = checksum::update32(self.checksum(), old.to_u32(), a.to_u32());
        put16(self.bm(), field::CHECKSUM, c);
    }
    /// Recomputes the header checksum from scratch.
    pub fn fill_checksum(&mut self) {
        put16(self.bm(), field::CHECKSUM, 0);
        let h = self.header_len();
        let c = checksum::checksum(&self.b()[..h]);
        put16(self.bm(), field::CHECKSUM, c);
    }
    /// The payload, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (h, t) = (self.header_len(), usize::from(self.total_len()));
        &mut self.bm()[h..t]
    }
}

/// The meaning of an IPv4 header (options are not represented; `emit` writes none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    /// Source.
    pub src: Ipv4Addr,
    /// Destination.
    pub dst: Ipv4Addr,
    /// Payload protocol.
    pub protocol: u8,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// Identification.
    pub ident: u16,
    /// DSCP/ECN.
    pub tos: u8,
    /// Don't-fragment flag.
    pub dont_frag: bool,
}

impl Ipv4Repr {
    /// Validates version and checksum and refuses fragments (sirocco does not reassemble).
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Self> {
        if p.version() != 4 {
            return Err(Error::Unsupported);
        }
        if !p.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        if p.is_fragment() {
            return Err(Error::Fragment);
        }
        Ok(Ipv4Repr {
            src: p.src_addr(),
            dst: p.dst_addr(),
            protocol: p.protocol(),
            payload_len: usize::from(p.total_len()) - p.header_len(),
            ttl: p.ttl(),
            ident: p.ident(),
            tos: p.tos(),
            dont_frag: p.dont_frag(),
        })
    }

    /// Emitted header length (no options).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes a 20-byte header with its checksum to the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        b[field::VER_IHL] = 0x45;
        b[field::TOS] = self.tos;
        put16(b, field::LENGTH, (HEADER_LEN + self.payload_len) as u16);
        put16(b, field::IDENT, self.ident);
        put16(b, field::FLG_OFF, if self.dont_frag { 0x4000 } else { 0 });
        b[field::TTL] = self.ttl;
        b[field::PROTOCOL] = self.protocol;
        put16(b, field::CHECKSUM, 0);
        b[field::SRC..field::SRC + 4].copy_from_slice(&self.src.0);
        b[field::DST..field::DST + 4].copy_from_slice(&self.dst.0);
        let c = checksum::checksum(b);
        put16(b, field::CHECKSUM, c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // An ICMP echo request header as Linux sends it (198.18.0.2 -> 198.18.0.1, 84 bytes).
    const HEADER: [u8; 20] =
        [0x45, 0x00, 0x00, 0x54, 0x9c, 0x3b, 0x40, 0x00, 0x40, 0x01, 0x00, 0x00, 198, 18, 0, 2, 198, 18, 0, 1];

    fn packet() -> Vec<u8> {
        let mut b = HEADER.to_vec();
        b.resize(84, 0xab);
        Ipv4Packet::new_unchecked(&mut b[..]).fill_checksum();
        b
    }

    #[test]
    fn parse_real_header() {
        let b = packet();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum());
        let r = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(r.src, Ipv4Addr([198, 18, 0, 2]));
        assert_eq!(r.dst, Ipv4Addr([198, 18, 0, 1]));
        assert_eq!(r.protocol, Protocol::ICMP);
        assert_eq!(r.payload_len, 64);
        assert!(r.dont_frag);
        let mut out = vec![0u8; 84];
        r.emit(&mut out);
        assert_eq!(&out[..20], &b[..20]);
    }

    #[test]
    fn malformed() {
        let b = packet();
        assert_eq!(Ipv4Packet::new_checked(&b[..19]).unwrap_err(), Error::Truncated);
        assert_eq!(Ipv4Packet::new_checked(&b[..83]).unwrap_err(), Error::Truncated);
        let mut x = b.clone();
        x[0] = 0x44; // IHL 4
        assert_eq!(Ipv4Packet::new_checked(&x[..]).unwrap_err(), Error::BadLength);
        let mut x = b.clone();
        x[0] = 0x4f; // IHL 15 = 60 bytes > total length? no: 84 >= 60; but options are garbage
        Ipv4Packet::new_unchecked(&mut x[..]).fill_checksum();
        assert!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&x[..]).unwrap()).is_ok());
        let mut x = b.clone();
        x[2] = 0;
        x[3] = 10; // total length below header
        assert_eq!(Ipv4Packet::new_checked(&x[..]).unwrap_err(), Error::BadLength);
        let mut x = b.clone();
        x[0] = 0x65;
        Ipv4Packet::new_unchecked(&mut x[..]).fill_checksum();
        assert_eq!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&x[..]).unwrap()).unwrap_err(), Error::Unsupported);
        let mut x = b.clone();
        x[8] ^= 1;
        assert_eq!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&x[..]).unwrap()).unwrap_err(), Error::BadChecksum);
        for (flags, off) in [(0x20u8, 0u8), (0x00, 0x10), (0x20, 0x01)] {
            let mut x = b.clone();
            x[6] = flags;
            x[7] = off;
            Ipv4Packet::new_unchecked(&mut x[..]).fill_checksum();
            assert_eq!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&x[..]).unwrap()).unwrap_err(), Error::Fragment);
        }
    }

    #[test]
    fn padding_is_not_payload() {
        let mut b = packet();
        b.extend_from_slice(&[0; 6]);
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.payload().len(), 64);
    }

    #[test]
    fn options_are_seen() {
        let mut b = HEADER.to_vec();
        b[0] = 0x46;
        b[3] = 0x58;
        b.extend_from_slice(&[0x94, 0x04, 0, 0]); // router alert
        b.resize(0x58, 0);
        Ipv4Packet::new_unchecked(&mut b[..]).fill_checksum();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.options(), &[0x94, 0x04, 0, 0]);
        assert_eq!(Ipv4Repr::parse(&p).unwrap().payload_len, 64);
    }

    proptest! {
        #[test]
        fn emit_then_parse(src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(), proto in any::<u8>(),
                           len in 0usize..1480, ttl in any::<u8>(), ident in any::<u16>(), tos in any::<u8>(), df in any::<bool>()) {
            let r = Ipv4Repr { src: Ipv4Addr(src), dst: Ipv4Addr(dst), protocol: proto, payload_len: len, ttl, ident, tos, dont_frag: df };
            let mut b = vec![0u8; 20 + len];
            r.emit(&mut b);
            let p = Ipv4Packet::new_checked(&b[..]).unwrap();
            prop_assert_eq!(Ipv4Repr::parse(&p).unwrap(), r);
        }

        #[test]
        fn incremental_setters_keep_checksum_valid(ttl in any::<u8>(), dst in any::<[u8; 4]>()) {
            let mut b = packet();
            let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
            p.set_ttl(ttl);
            p.set_dst_addr(Ipv4Addr(dst));
            p.swap_addrs();
            prop_assert!(p.verify_checksum());
        }
    }
}
