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

/// The part of a transport view that does not depend on the protocol: wrapping without a
/// check, and the two ports.
macro_rules! port_view {
    ($view:ident) => {
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
    };
}
pub(crate) use port_view;
