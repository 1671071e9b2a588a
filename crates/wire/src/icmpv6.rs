//! ICMPv6 (RFC 4443) and the neighbour discovery messages sirocco answers (RFC 4861):
//! echo, the errors (destination unreachable, packet too big, time exceeded, parameter
//! problem), neighbour solicitation and advertisement with their link-layer address options.
//! Parsing checks the checksum over the IPv6 pseudo-header and, for neighbour discovery,
//! RFC 4861 §7.1's validity rules (hop limit 255, code 0, lengths, options, no multicast
//! target, no source link-layer option from the unspecified address).

use crate::addr::{Ipv6Addr, MacAddr};
use crate::checksum;
use crate::ipv6::NextHeader;
use crate::{be16, be32, put16, put32, Error, Result};

/// Message types.
pub mod kind {
    /// Destination unreachable.
    pub const DEST_UNREACHABLE: u8 = 1;
    /// Packet too big.
    pub const PACKET_TOO_BIG: u8 = 2;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 3;
    /// Parameter problem.
    pub const PARAM_PROBLEM: u8 = 4;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 128;
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 129;
    /// Router solicitation.
    pub const ROUTER_SOLICIT: u8 = 133;
    /// Router advertisement.
    pub const ROUTER_ADVERT: u8 = 134;
    /// Neighbour solicitation.
    pub const NEIGHBOR_SOLICIT: u8 = 135;
    /// Neighbour advertisement.
    pub const NEIGHBOR_ADVERT: u8 = 136;
}

/// Neighbour discovery option types (RFC 4861 §4.6).
mod opt {
    pub const SOURCE_LL: u8 = 1;
    pub const TARGET_LL: u8 = 2;
}

/// The ICMPv6 header: type, code, checksum, and the 4 bytes every message has next.
pub const HEADER_LEN: usize = 8;
/// Neighbour solicitation and advertisement: the header and a target address.
const ND_LEN: usize = 24;
/// Options walked at most in one message.
const MAX_OPTIONS: usize = 16;

/// Flags of a neighbour advertisement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NaFlags {
    /// R: the sender is a router.
    pub router: bool,
    /// S: sent in response to a solicitation.
    pub solicited: bool,
    /// O: override a cached link-layer address.
    pub override_: bool,
}

/// The meaning of an ICMPv6 message. Echo data and the invoking packet of an error are the
/// bytes after the 8-byte header, left in the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmpv6Repr {
    /// Echo request.
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
    },
    /// Echo reply.
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
    },
    /// Destination unreachable.
    DestUnreachable {
        /// Why (RFC 4443 §3.1: 4 is port unreachable).
        code: u8,
    },
    /// Packet too big, with the next hop's MTU.
    PacketTooBig {
        /// The MTU.
        mtu: u32,
    },
    /// Time exceeded.
    TimeExceeded {
        /// 0 hop limit, 1 reassembly.
        code: u8,
    },
    /// Parameter problem.
    ParamProblem {
        /// What kind.
        code: u8,
        /// Offset of the offending byte.
        pointer: u32,
    },
    /// Neighbour solicitation.
    NeighborSolicit {
        /// The address asked about.
        target: Ipv6Addr,
        /// The asker's link-layer address, if it said.
        source_mac: Option<MacAddr>,
    },
    /// Neighbour advertisement.
    NeighborAdvert {
        /// R, S, O.
        flags: NaFlags,
        /// The address advertised.
        target: Ipv6Addr,
        /// Its link-layer address, if given.
        target_mac: Option<MacAddr>,
    },
    /// Any other message (router discovery, redirects, MLD, ...): recognised, not served.
    Other {
        /// Type.
        msg_type: u8,
        /// Code.
        code: u8,
    },
}

impl Icmpv6Repr {
    /// Parses `msg` (the whole ICMPv6 message) sent from `src` to `dst` with `hop_limit`.
    pub fn parse(src: Ipv6Addr, dst: Ipv6Addr, hop_limit: u8, msg: &[u8]) -> Result<Icmpv6Repr> {
        if msg.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let len = u32::try_from(msg.len()).map_err(|_| Error::BadLength)?;
        let sum = checksum::pseudo_header_v6(src, dst, NextHeader::ICMPV6, len);
        if checksum::fold(checksum::add(sum, msg)) != 0xffff {
            return Err(Error::BadChecksum);
        }
        let (t, code) = (msg[0], msg[1]);
        let (w1, w2) = (be16(msg, 4), be16(msg, 6));
        Ok(match t {
            kind::ECHO_REQUEST => Icmpv6Repr::EchoRequest { ident: w1, seq_no: w2 },
            kind::ECHO_REPLY => Icmpv6Repr::EchoReply { ident: w1, seq_no: w2 },
            kind::DEST_UNREACHABLE => Icmpv6Repr::DestUnreachable { code },
            kind::PACKET_TOO_BIG => Icmpv6Repr::PacketTooBig { mtu: be32(msg, 4) },
            kind::TIME_EXCEEDED => Icmpv6Repr::TimeExceeded { code },
            kind::PARAM_PROBLEM => Icmpv6Repr::ParamProblem { code, pointer: be32(msg, 4) },
            kind::NEIGHBOR_SOLICIT | kind::NEIGHBOR_ADVERT => {
                if hop_limit != 255 || code != 0 {
                    return Err(Error::Malformed); // RFC 4861 §7.1: possibly off-link
                }
                if msg.len() < ND_LEN {
                    return Err(Error::Truncated);
                }
                let target = Ipv6Addr::from_bytes(&msg[8..24]);
                if target.is_multicast() {
                    return Err(Error::Malformed);
                }
                let want = if t == kind::NEIGHBOR_SOLICIT { opt::SOURCE_LL } else { opt::TARGET_LL };
                let mac = link_layer_option(&msg[ND_LEN..], want)?;
                if t == kind::NEIGHBOR_SOLICIT {
                    if src == Ipv6Addr::UNSPECIFIED && (mac.is_some() || dst != target.solicited_node()) {
                        return Err(Error::Malformed); // §7.1.1: duplicate address detection
                    }
                    Icmpv6Repr::NeighborSolicit { target, source_mac: mac }
                } else {
                    let f = msg[4];
                    let flags = NaFlags { router: f & 0x80 != 0, solicited: f & 0x40 != 0, override_: f & 0x20 != 0 };
                    if flags.solicited && dst.is_multicast() {
                        return Err(Error::Malformed); // §7.1.2
                    }
                    Icmpv6Repr::NeighborAdvert { flags, target, target_mac: mac }
                }
            }
            _ => Icmpv6Repr::Other { msg_type: t, code },
        })
    }

    /// The message length `emit` writes, with `data` bytes after the header (echo data, or
    /// the invoking packet of an error); neighbour discovery carries its link-layer option
    /// instead.
    pub fn len(&self, data: usize) -> usize {
        match self {
            Icmpv6Repr::NeighborSolicit { source_mac: m, .. } | Icmpv6Repr::NeighborAdvert { target_mac: m, .. } => {
                ND_LEN + if m.is_some() { 8 } else { 0 }
            }
            _ => HEADER_LEN + data,
        }
    }

    /// Always false: every message has at least its header (for clippy's `len` rule).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the message to `buf` (which holds `self.len(data)` bytes, with any data already
    /// in place after the header) and fills the checksum for `src` → `dst`.
    pub fn emit(&self, src: Ipv6Addr, dst: Ipv6Addr, buf: &mut [u8]) {
        let (t, code) = match *self {
            Icmpv6Repr::EchoRequest { ident, seq_no } => {
                put16(buf, 4, ident);
                put16(buf, 6, seq_no);
                (kind::ECHO_REQUEST, 0)
            }
            Icmpv6Repr::EchoReply { ident, seq_no } => {
                put16(buf, 4, ident);
                put16(buf, 6, seq_no);
                (kind::ECHO_REPLY, 0)
            }
            Icmpv6Repr::DestUnreachable { code } => {
                put32(buf, 4, 0);
                (kind::DEST_UNREACHABLE, code)
            }
            Icmpv6Repr::PacketTooBig { mtu } => {
                put32(buf, 4, mtu);
                (kind::PACKET_TOO_BIG, 0)
            }
            Icmpv6Repr::TimeExceeded { code } => {
                put32(buf, 4, 0);
                (kind::TIME_EXCEEDED, code)
            }
            Icmpv6Repr::ParamProblem { code, pointer } => {
                put32(buf, 4, pointer);
                (kind::PARAM_PROBLEM, code)
            }
            Icmpv6Repr::NeighborSolicit { target, source_mac } => {
                put32(buf, 4, 0);
                buf[8..24].copy_from_slice(&target.0);
                put_link_layer(&mut buf[ND_LEN..], opt::SOURCE_LL, source_mac);
                (kind::NEIGHBOR_SOLICIT, 0)
            }
            Icmpv6Repr::NeighborAdvert { flags, target, target_mac } => {
                let f =
                    (u8::from(flags.router) << 7) | (u8::from(flags.solicited) << 6) | (u8::from(flags.override_) << 5);
                put32(buf, 4, u32::from(f) << 24);
                buf[8..24].copy_from_slice(&target.0);
                put_link_layer(&mut buf[ND_LEN..], opt::TARGET_LL, target_mac);
                (kind::NEIGHBOR_ADVERT, 0)
            }
            Icmpv6Repr::Other { msg_type, code } => (msg_type, code),
        };
        buf[0] = t;
        buf[1] = code;
        put16(buf, 2, 0);
        let sum = checksum::pseudo_header_v6(src, dst, NextHeader::ICMPV6, buf.len() as u32);
        let c = !checksum::fold(checksum::add(sum, buf));
        put16(buf, 2, c);
    }
}

/// Walks neighbour discovery options (RFC 4861 §4.6): each within the message and of non-zero
/// length; returns the Ethernet address of the first option of type `want`.
fn link_layer_option(mut o: &[u8], want: u8) -> Result<Option<MacAddr>> {
    let mut found = None;
    for _ in 0..MAX_OPTIONS {
        if o.is_empty() {
            return Ok(found);
        }
        if o.len() < 2 {
            return Err(Error::Truncated);
        }
        let len = usize::from(o[1]) * 8;
        if len == 0 {
            return Err(Error::Malformed); // §4.6: a zero length must be discarded
        }
        if o.len() < len {
            return Err(Error::Truncated);
        }
        if o[0] == want && found.is_none() {
            if len != 8 {
                return Err(Error::Malformed); // an Ethernet address takes exactly 8 bytes
            }
            let mut m = [0u8; 6];
            m.copy_from_slice(&o[2..8]);
            found = Some(MacAddr(m));
        }
        o = &o[len..];
    }
    if o.is_empty() {
        Ok(found)
    } else {
        Err(Error::Malformed)
    }
}

fn put_link_layer(buf: &mut [u8], t: u8, mac: Option<MacAddr>) {
    if let Some(m) = mac {
        buf[0] = t;
        buf[1] = 1;
        buf[2..8].copy_from_slice(&m.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse::<std::net::Ipv6Addr>().unwrap().into()
    }

    fn built(r: Icmpv6Repr, src: Ipv6Addr, dst: Ipv6Addr, data: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; r.len(data.len())];
        if !data.is_empty() {
            b[HEADER_LEN..].copy_from_slice(data);
        }
        r.emit(src, dst, &mut b);
        b
    }

    // A neighbour solicitation as Linux sends it (ping6 to 2001:2::10 from 2001:2::2, MAC
    // 02:00:00:00:00:02), to the solicited-node address, with its source link-layer option.
    const LINUX_NS: [u8; 32] = [
        0x87, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0x20, 0x01, 0, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x01, 0x01,
        0x02, 0, 0, 0, 0, 0x02,
    ];

    #[test]
    fn a_linux_solicitation_parses_once_its_checksum_is_filled() {
        let (src, target) = (a("2001:2::2"), a("2001:2::10"));
        let dst = target.solicited_node();
        let mut m = LINUX_NS.to_vec();
        let sum = checksum::pseudo_header_v6(src, dst, 58, m.len() as u32);
        let c = !checksum::fold(checksum::add(sum, &m));
        put16(&mut m, 2, c);
        let r = Icmpv6Repr::parse(src, dst, 255, &m).unwrap();
        assert_eq!(r, Icmpv6Repr::NeighborSolicit { target, source_mac: MacAddr::parse("02:00:00:00:00:02") });
        assert_eq!(built(r, src, dst, &[]), m, "emit writes the same bytes");
        // Not from a neighbour: hop limit below 255.
        assert_eq!(Icmpv6Repr::parse(src, dst, 64, &m).unwrap_err(), Error::Malformed);
        m[10] ^= 1;
        assert_eq!(Icmpv6Repr::parse(src, dst, 255, &m).unwrap_err(), Error::BadChecksum);
    }

    #[test]
    fn neighbour_discovery_validity() {
        let (us, peer) = (a("2001:2::10"), a("2001:2::2"));
        let mac = MacAddr::parse("02:00:00:00:00:10");
        // Duplicate address detection: from ::, no source option, to the solicited-node group.
        let dad = Icmpv6Repr::NeighborSolicit { target: us, source_mac: None };
        let b = built(dad, Ipv6Addr::UNSPECIFIED, us.solicited_node(), &[]);
        assert_eq!(Icmpv6Repr::parse(Ipv6Addr::UNSPECIFIED, us.solicited_node(), 255, &b), Ok(dad));
        let bad = Icmpv6Repr::NeighborSolicit { target: us, source_mac: mac };
        let b = built(bad, Ipv6Addr::UNSPECIFIED, us.solicited_node(), &[]);
        assert_eq!(Icmpv6Repr::parse(Ipv6Addr::UNSPECIFIED, us.solicited_node(), 255, &b), Err(Error::Malformed));
        // A solicited advertisement to a multicast address; a multicast target.
        let na = Icmpv6Repr::NeighborAdvert {
            flags: NaFlags { router: false, solicited: true, override_: true },
            target: us,
            target_mac: mac,
        };
        let b = built(na, us, peer, &[]);
        assert_eq!(Icmpv6Repr::parse(us, peer, 255, &b), Ok(na));
        let b = built(na, us, Ipv6Addr::ALL_NODES, &[]);
        assert_eq!(Icmpv6Repr::parse(us, Ipv6Addr::ALL_NODES, 255, &b), Err(Error::Malformed));
        let ns = Icmpv6Repr::NeighborSolicit { target: Ipv6Addr::ALL_NODES, source_mac: mac };
        let b = built(ns, peer, us, &[]);
        assert_eq!(Icmpv6Repr::parse(peer, us, 255, &b), Err(Error::Malformed));
    }

    #[test]
    fn options_of_zero_length_or_past_the_end_are_refused() {
        let (src, dst) = (a("2001:2::2"), a("2001:2::10"));
        for opts in [&[1u8, 0, 0, 0, 0, 0, 0, 0][..], &[1, 2, 0, 0, 0, 0, 0, 0], &[1]] {
            let mut m = LINUX_NS[..24].to_vec();
            m.extend_from_slice(opts);
            let sum = checksum::pseudo_header_v6(src, dst, 58, m.len() as u32);
            let c = !checksum::fold(checksum::add(sum, &m));
            put16(&mut m, 2, c);
            assert!(Icmpv6Repr::parse(src, dst, 255, &m).is_err(), "{opts:?}");
        }
    }

    #[test]
    fn echo_and_errors_round_trip() {
        let (s, d) = (a("2001:2::2"), a("2001:2::10"));
        for r in [
            Icmpv6Repr::EchoRequest { ident: 7, seq_no: 9 },
            Icmpv6Repr::EchoReply { ident: 7, seq_no: 9 },
            Icmpv6Repr::DestUnreachable { code: 4 },
            Icmpv6Repr::PacketTooBig { mtu: 1280 },
            Icmpv6Repr::TimeExceeded { code: 0 },
            Icmpv6Repr::ParamProblem { code: 1, pointer: 40 },
        ] {
            let b = built(r, s, d, b"invoking packet or echo data");
            assert_eq!(Icmpv6Repr::parse(s, d, 64, &b), Ok(r));
            assert_eq!(&b[HEADER_LEN..], b"invoking packet or echo data");
        }
    }

    proptest! {
        #[test]
        fn any_bytes_parse_or_fail_cleanly(m in proptest::collection::vec(any::<u8>(), 0..120), hop in any::<u8>()) {
            let _ = Icmpv6Repr::parse(a("2001:2::2"), a("2001:2::10"), hop, &m);
        }
    }
}
