//! IPv6 (RFC 8200): the fixed header and a bounded walk over extension headers.
//!
//! The walk skips hop-by-hop options (first only), destination options and routing headers
//! with no segments left, and stops at the first upper-layer header. A fragment header ends
//! the walk with [`Error::Fragment`] (sirocco does not reassemble), except an atomic fragment
//! (offset 0, no more fragments: RFC 6946), which is the whole packet. A routing header with
//! segments left names another hop: not for us to answer ([`Error::Unsupported`]). The walk
//! takes at most [`MAX_EXTENSIONS`] headers, each within the payload.

use crate::{be16, be32, put16, put32, Error, Result};

pub use crate::addr::Ipv6Addr;

/// Next-header values sirocco walks or serves.
pub struct NextHeader;

impl NextHeader {
    /// Hop-by-hop options (only directly after the fixed header).
    pub const HOP_BY_HOP: u8 = 0;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// Routing header.
    pub const ROUTING: u8 = 43;
    /// Fragment header.
    pub const FRAGMENT: u8 = 44;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// No next header.
    pub const NONE: u8 = 59;
    /// Destination options.
    pub const DEST_OPTS: u8 = 60;
}

/// The fixed header's length.
pub const HEADER_LEN: usize = 40;
/// Extension headers walked at most before the packet is refused.
pub const MAX_EXTENSIONS: usize = 8;

mod field {
    pub const VER_TC_FLOW: usize = 0;
    pub const LENGTH: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: usize = 8;
    pub const DST: usize = 24;
}

/// A view of an IPv6 packet.
#[derive(Debug)]
pub struct Ipv6Packet<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps `buf` after checking that the fixed header and the payload length it claims fit.
    /// Trailing bytes (Ethernet padding) are allowed.
    pub fn new_checked(buf: T) -> Result<Self> {
        let b = buf.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let p = Ipv6Packet { buf };
        if p.b().len() < HEADER_LEN + usize::from(p.payload_len()) {
            return Err(Error::Truncated);
        }
        Ok(p)
    }

    /// Wraps `buf` without checking; accessors may panic on short buffers.
    pub fn new_unchecked(buf: T) -> Self {
        Ipv6Packet { buf }
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    /// Version field (6).
    pub fn version(&self) -> u8 {
        self.b()[field::VER_TC_FLOW] >> 4
    }
    /// Traffic class (DSCP and ECN).
    pub fn traffic_class(&self) -> u8 {
        ((be16(self.b(), field::VER_TC_FLOW) >> 4) & 0xff) as u8
    }
    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        be32(self.b(), field::VER_TC_FLOW) & 0x000f_ffff
    }
    /// Payload length field: everything after the fixed header, extensions included.
    pub fn payload_len(&self) -> u16 {
        be16(self.b(), field::LENGTH)
    }
    /// The fixed header's next header field.
    pub fn next_header(&self) -> u8 {
        self.b()[field::NEXT_HEADER]
    }
    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.b()[field::HOP_LIMIT]
    }
    /// Source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from_bytes(&self.b()[field::SRC..])
    }
    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from_bytes(&self.b()[field::DST..])
    }
    /// Everything after the fixed header, up to the payload length.
    pub fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    fn bm(&mut self) -> &mut [u8] {
        self.buf.as_mut()
    }
    /// Swaps source and destination (no header checksum in IPv6; an upper-layer checksum
    /// over the pseudo-header is unchanged too: the same words, in another order).
    pub fn swap_addrs(&mut self) {
        let b = self.bm();
        let mut t = [0u8; 16];
        t.copy_from_slice(&b[field::SRC..field::SRC + 16]);
        b.copy_within(field::DST..field::DST + 16, field::SRC);
        b[field::DST..field::DST + 16].copy_from_slice(&t);
    }
    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, h: u8) {
        self.bm()[field::HOP_LIMIT] = h;
    }
    /// Sets the flow label (its low 20 bits).
    pub fn set_flow_label(&mut self, label: u32) {
        let b = self.bm();
        let w = (be32(b, field::VER_TC_FLOW) & 0xfff0_0000) | (label & 0x000f_ffff);
        put32(b, field::VER_TC_FLOW, w);
    }
    /// Sets the payload length field.
    pub fn set_payload_len(&mut self, n: u16) {
        put16(self.bm(), field::LENGTH, n);
    }
    /// Sets the fixed header's next header field.
    pub fn set_next_header(&mut self, nh: u8) {
        self.bm()[field::NEXT_HEADER] = nh;
    }
    /// The payload, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let n = usize::from(self.payload_len());
        &mut self.bm()[HEADER_LEN..HEADER_LEN + n]
    }
}

/// Where the extension headers lead: the upper-layer protocol and the offset of its header
/// within the IPv6 payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upper {
    /// The upper-layer next header value (UDP, TCP, ICMPv6, ...; [`NextHeader::NONE`] too).
    pub protocol: u8,
    /// Offset of the upper-layer header from the start of the IPv6 payload.
    pub offset: usize,
}

/// Walks the extension headers of `payload`, which follows a fixed header whose next header
/// field is `first`.
pub fn walk_extensions(first: u8, payload: &[u8]) -> Result<Upper> {
    let mut nh = first;
    let mut at = 0usize;
    for n in 0..=MAX_EXTENSIONS {
        match nh {
            NextHeader::HOP_BY_HOP | NextHeader::DEST_OPTS | NextHeader::ROUTING | NextHeader::FRAGMENT => {}
            _ => return Ok(Upper { protocol: nh, offset: at }),
        }
        if n == MAX_EXTENSIONS {
            break;
        }
        if nh == NextHeader::HOP_BY_HOP && n != 0 {
            return Err(Error::Malformed); // RFC 8200 §4.1: only right after the fixed header
        }
        let h = payload.get(at..at + 8).ok_or(Error::Truncated)?;
        let len = match nh {
            NextHeader::FRAGMENT => {
                let off_m = be16(h, 2);
                if off_m & 0xfff9 != 0 {
                    return Err(Error::Fragment); // an offset, or more fragments to come
                }
                8
            }
            NextHeader::ROUTING => {
                if h[3] != 0 {
                    return Err(Error::Unsupported); // segments left: another hop's packet
                }
                (usize::from(h[1]) + 1) * 8
            }
            _ => {
                let len = (usize::from(h[1]) + 1) * 8;
                check_options(payload.get(at + 2..at + len).ok_or(Error::Truncated)?)?;
                len
            }
        };
        if payload.len() < at + len {
            return Err(Error::Truncated);
        }
        nh = h[0];
        at += len;
    }
    Err(Error::Malformed)
}

/// Checks a hop-by-hop or destination options area (RFC 8200 §4.2): every option within it,
/// and options of an unknown type whose top two bits say "discard" refuse the packet.
fn check_options(mut o: &[u8]) -> Result<()> {
    while let Some(&t) = o.first() {
        if t == 0 {
            o = &o[1..]; // Pad1
            continue;
        }
        let len = usize::from(*o.get(1).ok_or(Error::Malformed)?);
        if o.len() < 2 + len {
            return Err(Error::Malformed);
        }
        // PadN (1), Router Alert (5), Jumbo Payload (0xc2 is refused: no jumbograms here).
        if !matches!(t, 1 | 5) && t >> 6 != 0 {
            return Err(Error::Unsupported);
        }
        o = &o[2 + len..];
    }
    Ok(())
}

/// The meaning of an IPv6 header (extension headers are walked by `parse` and not kept;
/// `emit` writes none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Repr {
    /// Source.
    pub src: Ipv6Addr,
    /// Destination.
    pub dst: Ipv6Addr,
    /// The upper-layer protocol (after any extension headers).
    pub protocol: u8,
    /// Upper-layer length in bytes (the payload less the extension headers).
    pub payload_len: usize,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Validates the version and walks the extension headers; returns the header's meaning
    /// and the offset of the upper-layer header within the IPv6 payload.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv6Packet<T>) -> Result<(Self, usize)> {
        if p.version() != 6 {
            return Err(Error::Unsupported);
        }
        let payload = p.payload();
        let up = match p.next_header() {
            // Most packets carry no extension headers: no walk for them.
            nh @ (NextHeader::UDP | NextHeader::TCP | NextHeader::ICMPV6) => Upper { protocol: nh, offset: 0 },
            nh => walk_extensions(nh, payload)?,
        };
        Ok((
            Ipv6Repr {
                src: p.src_addr(),
                dst: p.dst_addr(),
                protocol: up.protocol,
                payload_len: payload.len() - up.offset,
                hop_limit: p.hop_limit(),
                traffic_class: p.traffic_class(),
                flow_label: p.flow_label(),
            },
            up.offset,
        ))
    }

    /// Emitted header length (no extension headers).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 40-byte fixed header to the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        let w = (6u32 << 28) | (u32::from(self.traffic_class) << 20) | (self.flow_label & 0x000f_ffff);
        put32(b, field::VER_TC_FLOW, w);
        put16(b, field::LENGTH, self.payload_len as u16);
        b[field::NEXT_HEADER] = self.protocol;
        b[field::HOP_LIMIT] = self.hop_limit;
        b[field::SRC..field::SRC + 16].copy_from_slice(&self.src.0);
        b[field::DST..field::DST + 16].copy_from_slice(&self.dst.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // 2001:2::2 -> 2001:2::10 (RFC 5180's benchmarking range), UDP, 8 bytes of payload.
    fn packet(next: u8, ext: &[u8], upper: &[u8]) -> Vec<u8> {
        let src: std::net::Ipv6Addr = "2001:2::2".parse().unwrap();
        let dst: std::net::Ipv6Addr = "2001:2::10".parse().unwrap();
        let r = Ipv6Repr {
            src: src.into(),
            dst: dst.into(),
            protocol: next,
            payload_len: ext.len() + upper.len(),
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0x12345,
        };
        let mut b = vec![0u8; HEADER_LEN];
        r.emit(&mut b);
        b.extend_from_slice(ext);
        b.extend_from_slice(upper);
        b
    }

    fn parse(b: &[u8]) -> Result<(Ipv6Repr, usize)> {
        Ipv6Repr::parse(&Ipv6Packet::new_checked(b)?)
    }

    #[test]
    fn fixed_header_only() {
        let b = packet(NextHeader::UDP, &[], &[7; 8]);
        let (r, off) = parse(&b).unwrap();
        assert_eq!((r.protocol, r.payload_len, off, r.flow_label, r.hop_limit), (17, 8, 0, 0x12345, 64));
        assert_eq!(r.src.to_string(), "2001:2::2");
    }

    #[test]
    fn extensions_are_walked_to_the_upper_layer() {
        // Hop-by-hop (router alert), destination options (PadN), routing with no segments
        // left, an atomic fragment, then UDP.
        let hbh = [NextHeader::DEST_OPTS, 0, 5, 2, 0, 0, 1, 0];
        let dst = [NextHeader::ROUTING, 0, 1, 4, 0, 0, 0, 0];
        let rt = [NextHeader::FRAGMENT, 0, 0, 0, 0, 0, 0, 0];
        let frag = [NextHeader::UDP, 0, 0, 0, 0, 0, 0, 1];
        let ext: Vec<u8> = [&hbh[..], &dst, &rt, &frag].concat();
        let b = packet(NextHeader::HOP_BY_HOP, &ext, &[7; 8]);
        let (r, off) = parse(&b).unwrap();
        assert_eq!((r.protocol, r.payload_len, off), (NextHeader::UDP, 8, 32));
    }

    #[test]
    fn malformed_chains_are_refused() {
        let udp = [7u8; 8];
        // A real fragment (offset 8, or more to come).
        for m in [[0u8, 8], [0, 1]] {
            let frag = [NextHeader::UDP, 0, m[0], m[1], 0, 0, 0, 1];
            assert_eq!(parse(&packet(NextHeader::FRAGMENT, &frag, &udp)).unwrap_err(), Error::Fragment);
        }
        // Routing with segments left.
        let rt = [NextHeader::UDP, 0, 4, 1, 0, 0, 0, 0];
        assert_eq!(parse(&packet(NextHeader::ROUTING, &rt, &udp)).unwrap_err(), Error::Unsupported);
        // Hop-by-hop after another extension.
        let d = [NextHeader::HOP_BY_HOP, 0, 1, 4, 0, 0, 0, 0];
        let h = [NextHeader::UDP, 0, 1, 4, 0, 0, 0, 0];
        assert_eq!(parse(&packet(NextHeader::DEST_OPTS, &[&d[..], &h].concat(), &udp)).unwrap_err(), Error::Malformed);
        // An extension longer than the payload.
        let d = [NextHeader::UDP, 3, 1, 4, 0, 0, 0, 0];
        assert_eq!(parse(&packet(NextHeader::DEST_OPTS, &d, &udp)).unwrap_err(), Error::Truncated);
        // An option running past its header.
        let d = [NextHeader::UDP, 0, 1, 9, 0, 0, 0, 0];
        assert_eq!(parse(&packet(NextHeader::DEST_OPTS, &d, &udp)).unwrap_err(), Error::Malformed);
        // An unknown option whose type says discard.
        let d = [NextHeader::UDP, 0, 0x80, 4, 0, 0, 0, 0];
        assert_eq!(parse(&packet(NextHeader::DEST_OPTS, &d, &udp)).unwrap_err(), Error::Unsupported);
        // Too many headers: nine destination options.
        let mut ext = Vec::new();
        for i in 0..9 {
            ext.extend_from_slice(&[if i == 8 { NextHeader::UDP } else { NextHeader::DEST_OPTS }, 0, 1, 4, 0, 0, 0, 0]);
        }
        assert_eq!(parse(&packet(NextHeader::DEST_OPTS, &ext, &udp)).unwrap_err(), Error::Malformed);
        // Version 4 in an IPv6 frame; a payload length past the buffer.
        let mut b = packet(NextHeader::UDP, &[], &udp);
        b[0] = 0x40;
        assert_eq!(parse(&b).unwrap_err(), Error::Unsupported);
        let b = packet(NextHeader::UDP, &[], &udp);
        assert_eq!(parse(&b[..b.len() - 1]).unwrap_err(), Error::Truncated);
    }

    #[test]
    fn solicited_node_and_multicast_mac() {
        let a: Ipv6Addr = "2001:2::1:2:3".parse::<std::net::Ipv6Addr>().unwrap().into();
        assert_eq!(a.solicited_node().to_string(), "ff02::1:ff02:3");
        assert_eq!(a.solicited_node().multicast_mac().to_string(), "33:33:ff:02:00:03");
        assert!(a.solicited_node().is_multicast() && !a.is_multicast() && !a.is_link_local());
    }

    proptest! {
        #[test]
        fn emit_then_parse(src in any::<[u8; 16]>(), dst in any::<[u8; 16]>(), proto in any::<u8>(),
                           len in 0usize..1460, hop in any::<u8>(), tc in any::<u8>(), flow in 0u32..1 << 20) {
            prop_assume!(!matches!(proto, 0 | 43 | 44 | 60));
            let r = Ipv6Repr { src: Ipv6Addr(src), dst: Ipv6Addr(dst), protocol: proto, payload_len: len,
                               hop_limit: hop, traffic_class: tc, flow_label: flow };
            let mut b = vec![0u8; HEADER_LEN + len];
            r.emit(&mut b);
            prop_assert_eq!(parse(&b).unwrap(), (r, 0));
        }

        #[test]
        fn any_bytes_parse_or_fail_cleanly(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok((r, off)) = parse(&b) {
                prop_assert!(HEADER_LEN + off + r.payload_len <= b.len());
            }
        }
    }
}
