//! What the TCP and UDP views share: ports and checksum at the same offsets (RFC 793 and
//! RFC 768 put them there alike), and a checksum over a pseudo-header.

use crate::checksum::{self, PseudoHeader};

pub(crate) const SRC_PORT: usize = 0;
pub(crate) const DST_PORT: usize = 2;

/// True if the segment's sum with its pseudo-header folds to all ones.
pub(crate) fn sum_verifies<A: PseudoHeader>(src: A, dst: A, protocol: u8, segment: &[u8]) -> bool {
    let len = segment.len() as u32;
    checksum::fold(checksum::add(A::pseudo_sum(src, dst, protocol, len), segment)) == 0xffff
}

/// True if `field` holds only the pseudo-header's sum: the sender left the rest to a NIC
/// (CHECKSUM_PARTIAL), which a veth with TX checksum offload never adds.
pub(crate) fn sum_unfinished<A: PseudoHeader>(field: u16, src: A, dst: A, protocol: u8, len: usize) -> bool {
    field == checksum::fold(A::pseudo_sum(src, dst, protocol, len as u32))
}

/// A checksum after one 16-bit word of what it covers changed from `old` to `new` (RFC 1624);
/// for UDP (`zero_is_none`) a zero checksum stays zero (none was computed) and a zero result
/// is sent as all ones.
pub(crate) fn updated16(c: u16, old: u16, new: u16, zero_is_none: bool) -> u16 {
    match (c, checksum::update16(c, old, new)) {
        (0, _) if zero_is_none => 0,
        (_, 0) if zero_is_none => 0xffff,
        (_, u) => u,
    }
}

/// The part of a transport view that does not depend on the protocol: wrapping without a
/// check, the two ports, and rewriting them or the pseudo-header's addresses (a NAT, a
/// port-preserving redirect) with the checksum at `$checksum` updated incrementally.
macro_rules! port_view {
    ($view:ident, $checksum:expr, $zero_is_none:expr) => {
        impl<T: AsRef<[u8]>> $view<T> {
            /// Wraps `buf` without checking.
            pub fn new_unchecked(buf: T) -> Self {
                $view { buf }
            }
            fn b(&self) -> &[u8] {
                self.buf.as_ref()
            }
            /// Source port.
            pub fn src_port(&self) -> u16 {
                $crate::be16(self.b(), $crate::transport::SRC_PORT)
            }
            /// Destination port.
            pub fn dst_port(&self) -> u16 {
                $crate::be16(self.b(), $crate::transport::DST_PORT)
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            fn put_word(&mut self, at: usize, v: u16) {
                let b = self.buf.as_mut();
                let (old, c) = ($crate::be16(b, at), $crate::be16(b, $checksum));
                $crate::put16(b, at, v);
                $crate::put16(b, $checksum, $crate::transport::updated16(c, old, v, $zero_is_none));
            }
            /// Sets the source port, updating the checksum incrementally.
            pub fn set_src_port(&mut self, v: u16) {
                self.put_word($crate::transport::SRC_PORT, v);
            }
            /// Sets the destination port, updating the checksum incrementally.
            pub fn set_dst_port(&mut self, v: u16) {
                self.put_word($crate::transport::DST_PORT, v);
            }
            /// Adjusts the checksum for a pseudo-header address change (a new source or
            /// destination written into the IPv4 header).
            pub fn update_checksum_for_addr(&mut self, old: $crate::Ipv4Addr, new: $crate::Ipv4Addr) {
                let b = self.buf.as_mut();
                let c = $crate::be16(b, $checksum);
                let (o, n) = (old.to_u32(), new.to_u32());
                let c = $crate::transport::updated16(c, (o >> 16) as u16, (n >> 16) as u16, $zero_is_none);
                let c = $crate::transport::updated16(c, o as u16, n as u16, $zero_is_none);
                $crate::put16(b, $checksum, c);
            }
        }
    };
}
pub(crate) use port_view;
