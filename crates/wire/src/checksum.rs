//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Sums are carried as `u64` partial sums so that several pieces (pseudo-header, header,
//! payload) can be added before one final fold.

use crate::addr::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Adds `data` to a running one's-complement partial sum. Odd lengths are padded with a zero
/// byte at the end, as RFC 1071 says; so only the last piece of a sum may have odd length.
#[inline]
pub fn add(mut acc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        // Adding the two 32-bit halves into a 64-bit accumulator never overflows for
        // any packet size we handle (2^32 additions would be needed).
        acc += (w >> 32) + (w & 0xffff_ffff);
    }
    let rest = chunks.remainder();
    let mut pairs = rest.chunks_exact(2);
    for p in &mut pairs {
        acc += u64::from(u16::from_be_bytes([p[0], p[1]]));
    }
    if let [last] = pairs.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

/// Adds `data`, which starts at byte `at` of what is being summed, to a partial sum: a
/// payload gathered from pieces is summed piece by piece. A piece at an odd offset has its
/// bytes in the other halves of the 16-bit words, so its sum is byte-swapped (RFC 1071
/// §2(B)); any piece may then have odd length.
#[inline]
pub fn add_at(acc: u64, data: &[u8], at: usize) -> u64 {
    let s = add(0, data);
    if at.is_multiple_of(2) {
        acc + s
    } else {
        acc + u64::from(fold(s).swap_bytes())
    }
}

/// Folds a partial sum to 16 bits (without complementing).
#[inline]
pub fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The checksum field value for `data`: the complement of its folded sum.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(add(0, data))
}

/// The partial sum of the IPv4 pseudo-header used by UDP and TCP.
#[inline]
pub fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u64 {
    let s = src.to_u32();
    let d = dst.to_u32();
    u64::from(s >> 16)
        + u64::from(s & 0xffff)
        + u64::from(d >> 16)
        + u64::from(d & 0xffff)
        + u64::from(protocol)
        + u64::from(length)
}

/// The partial sum of the IPv6 pseudo-header (RFC 8200 §8.1) used by UDP, TCP and ICMPv6:
/// both addresses, the upper-layer length and the next header value.
#[inline]
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, length: u32) -> u64 {
    add(add(0, &src.0), &dst.0) + u64::from(length >> 16) + u64::from(length & 0xffff) + u64::from(next_header)
}

/// An address family's pseudo-header, so UDP and TCP code serves IPv4 and IPv6 alike (each
/// use is compiled for its family: no cost to IPv4).
pub trait PseudoHeader: Copy {
    /// UDP may leave its checksum out (zero) over this family: IPv4 yes (RFC 768), IPv6 no
    /// (RFC 8200 §8.1).
    const UDP_CHECKSUM_OPTIONAL: bool;
    /// The partial sum of the pseudo-header for `protocol` and an upper-layer `length`.
    fn pseudo_sum(src: Self, dst: Self, protocol: u8, length: u32) -> u64;
}

impl PseudoHeader for Ipv4Addr {
    const UDP_CHECKSUM_OPTIONAL: bool = true;
    #[inline]
    fn pseudo_sum(src: Self, dst: Self, protocol: u8, length: u32) -> u64 {
        pseudo_header(src, dst, protocol, length as u16)
    }
}

impl PseudoHeader for Ipv6Addr {
    const UDP_CHECKSUM_OPTIONAL: bool = false;
    #[inline]
    fn pseudo_sum(src: Self, dst: Self, protocol: u8, length: u32) -> u64 {
        pseudo_header_v6(src, dst, protocol, length)
    }
}

/// Either family, chosen at run time (TCP's connections are of both). Both addresses are of
/// one family in every real packet; a mixed pair sums as IPv6 with the IPv4 address mapped
/// (`::ffff:a.b.c.d`), which no peer will accept — as it should not.
impl PseudoHeader for IpAddr {
    const UDP_CHECKSUM_OPTIONAL: bool = false;
    #[inline]
    fn pseudo_sum(src: Self, dst: Self, protocol: u8, length: u32) -> u64 {
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => pseudo_header(s, d, protocol, length as u16),
            (s, d) => pseudo_header_v6(s.to_v6_mapped(), d.to_v6_mapped(), protocol, length),
        }
    }
}

/// RFC 1624 eqn. 3: the new checksum field after a 16-bit word covered by it changes from
/// `old` to `new`: `HC' = ~(~HC + ~m + m')`.
#[inline]
pub fn update16(hc: u16, old: u16, new: u16) -> u16 {
    let sum = u64::from(!hc) + u64::from(!old) + u64::from(new);
    !fold(sum)
}

/// As [`update16`] for a 32-bit field (two words), e.g. an address or a sequence number.
#[inline]
pub fn update32(hc: u16, old: u32, new: u32) -> u16 {
    let sum = u64::from(!hc)
        + u64::from(!(old >> 16) as u16)
        + u64::from(!(old as u16))
        + u64::from((new >> 16) as u16)
        + u64::from(new as u16);
    !fold(sum)
}

/// As [`update16`] for a run of bytes at an even offset within the checksummed data that
/// changed from `old` to `new` (both the same, even length).
#[inline]
pub fn update_bytes(hc: u16, old: &[u8], new: &[u8]) -> u16 {
    debug_assert_eq!(old.len(), new.len());
    let removed = fold(add(0, old));
    let added = fold(add(0, new));
    update16(hc, removed, added)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rfc1071_example() {
        // The worked example of RFC 1071 section 3: the sum of these words is 0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(add(0, &data)), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(add(0, &[0xab])), 0xab00);
        assert_eq!(fold(add(0, &[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
    }

    #[test]
    fn data_with_its_checksum_sums_to_ones() {
        let mut data = vec![0x45, 0, 0, 0x54, 0x12, 0x34, 0x40, 0, 0x40, 1, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2];
        let c = checksum(&data);
        data[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(fold(add(0, &data)), 0xffff);
    }

    fn reference(data: &[u8]) -> u16 {
        // The plain word-by-word algorithm of RFC 1071, for comparison.
        let mut sum: u32 = 0;
        let mut i = 0;
        while i + 1 < data.len() {
            sum += u32::from(u16::from_be_bytes([data[i], data[i + 1]]));
            i += 2;
        }
        if i < data.len() {
            sum += u32::from(data[i]) << 8;
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    proptest! {
        #[test]
        fn pieces_sum_to_the_whole(data in proptest::collection::vec(any::<u8>(), 0..3000),
                                   cuts in proptest::collection::vec(any::<u16>(), 0..6)) {
            let mut cuts: Vec<usize> = cuts.iter().map(|&c| c as usize % (data.len() + 1)).collect();
            cuts.push(0);
            cuts.push(data.len());
            cuts.sort_unstable();
            let sum = cuts.windows(2).fold(0, |acc, w| add_at(acc, &data[w[0]..w[1]], w[0]));
            prop_assert_eq!(fold(sum), fold(add(0, &data)));
        }

        #[test]
        fn fast_sum_equals_reference(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
            prop_assert_eq!(checksum(&data), reference(&data));
        }

        #[test]
        fn incremental_equals_full_16(mut data in proptest::collection::vec(any::<u8>(), 2..200),
                                      at in any::<prop::sample::Index>(), new in any::<u16>()) {
            let words = data.len() / 2;
            let i = at.index(words) * 2;
            let before = checksum(&data);
            let old = u16::from_be_bytes([data[i], data[i + 1]]);
            data[i..i + 2].copy_from_slice(&new.to_be_bytes());
            let full = checksum(&data);
            let inc = update16(before, old, new);
            // 0x0000 and 0xffff are the same one's-complement value; RFC 1624 is about this.
            prop_assert!(inc == full || (inc ^ full) == 0xffff && (inc == 0 || full == 0),
                "inc {:#x} full {:#x}", inc, full);
        }

        #[test]
        fn incremental_equals_full_32(mut data in proptest::collection::vec(any::<u8>(), 4..200),
                                      at in any::<prop::sample::Index>(), new in any::<u32>()) {
            let words = data.len() / 2 - 1;
            let i = at.index(words) * 2;
            let before = checksum(&data);
            let old = u32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
            data[i..i + 4].copy_from_slice(&new.to_be_bytes());
            let full = checksum(&data);
            let inc = update32(before, old, new);
            prop_assert!(inc == full || (inc ^ full) == 0xffff && (inc == 0 || full == 0),
                "inc {:#x} full {:#x}", inc, full);
        }

        #[test]
        fn incremental_bytes_equals_full(mut data in proptest::collection::vec(any::<u8>(), 8..200),
                                         new in proptest::collection::vec(any::<u8>(), 6)) {
            let before = checksum(&data);
            let old = data[2..8].to_vec();
            data[2..8].copy_from_slice(&new);
            let full = checksum(&data);
            let inc = update_bytes(before, &old, &new);
            prop_assert!(inc == full || (inc ^ full) == 0xffff && (inc == 0 || full == 0));
        }
    }
}
