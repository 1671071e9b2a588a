//! Receive-side scaling: which receive queue a NIC puts a flow on, so an active open can pick
//! a source port whose replies land on the opening engine's own queue (IX's `connect`).
//!
//! The NIC hashes each received packet's (source address, destination address, source port,
//! destination port) with the Toeplitz function under its RSS key and looks the low bits of the
//! hash up in its indirection table. For a connection we open, the received packets come from
//! the peer: the peer's address and port come first.

use wire::IpAddr;

/// A NIC's RSS configuration (as `ethtool -x` shows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rss {
    key: Vec<u8>,
    table: Vec<u16>,
}

/// Why an RSS configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RssError {
    /// The key must cover the 12 input bytes plus 4 (at least 16 bytes).
    KeyTooShort,
    /// The indirection table is empty.
    EmptyTable,
}

impl Rss {
    /// The hash key and the indirection table (queue per entry).
    pub fn new(key: &[u8], table: &[u16]) -> Result<Rss, RssError> {
        if key.len() < 16 {
            return Err(RssError::KeyTooShort);
        }
        if table.is_empty() {
            return Err(RssError::EmptyTable);
        }
        Ok(Rss { key: key.to_vec(), table: table.to_vec() })
    }

    /// The Toeplitz hash of `input`: for every set bit, counted from the most significant bit
    /// of the first byte, XOR in the 32 key bits starting at that bit.
    pub fn toeplitz(&self, input: &[u8]) -> u32 {
        let mut result = 0u32;
        // The key window: 32 bits at the current position, plus the next byte to shift in.
        let mut window = u32::from_be_bytes([self.key[0], self.key[1], self.key[2], self.key[3]]);
        for (i, &byte) in input.iter().enumerate() {
            let next = self.key.get(i + 4).copied().unwrap_or(0);
            for bit in 0..8 {
                if byte & (0x80 >> bit) != 0 {
                    result ^= window;
                }
                window = (window << 1) | u32::from((next >> (7 - bit)) & 1);
            }
        }
        result
    }

    /// The hash of a received TCP packet, over IPv4 or IPv6 (addresses, then ports, as
    /// Microsoft's RSS specification hashes TCP/IPv4 and TCP/IPv6 without extension headers).
    pub fn hash(&self, src: IpAddr, dst: IpAddr, src_port: u16, dst_port: u16) -> u32 {
        let mut b = [0u8; 36];
        let (s, d) = (src.octets(), dst.octets());
        let a = s.len();
        b[..a].copy_from_slice(s);
        b[a..2 * a].copy_from_slice(&d[..a.min(d.len())]);
        b[2 * a..2 * a + 2].copy_from_slice(&src_port.to_be_bytes());
        b[2 * a + 2..2 * a + 4].copy_from_slice(&dst_port.to_be_bytes());
        self.toeplitz(&b[..2 * a + 4])
    }

    /// The queue a received TCP packet goes to.
    pub fn queue(&self, src: IpAddr, dst: IpAddr, src_port: u16, dst_port: u16) -> u16 {
        let h = self.hash(src, dst, src_port, dst_port);
        self.table[h as usize % self.table.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of Microsoft's RSS verification suite.
    const KEY: [u8; 40] = [
        0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca,
        0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b,
        0xbe, 0xac, 0x01, 0xfa,
    ];

    #[test]
    fn the_verification_suite_hashes() {
        let rss = Rss::new(&KEY, &[0]).unwrap();
        // (source, source port, destination, destination port, IPv4-only hash, with ports)
        let cases = [
            ([66, 9, 149, 187], 2794, [161, 142, 100, 80], 1766, 0x323e_8fc2u32, 0x51cc_c178u32),
            ([199, 92, 111, 2], 14230, [65, 69, 140, 83], 4739, 0xd718_262a, 0xc626_b0ea),
            ([24, 19, 198, 95], 12898, [12, 22, 207, 184], 38024, 0xd2d0_a5de, 0x5c2b_394a),
            ([38, 27, 205, 30], 48228, [209, 142, 163, 6], 2217, 0x8298_9176, 0xafc7_327f),
        ];
        for (s, sp, d, dp, l3, l4) in cases {
            let mut b = [0u8; 8];
            b[..4].copy_from_slice(&s);
            b[4..].copy_from_slice(&d);
            assert_eq!(rss.toeplitz(&b), l3, "{s:?} -> {d:?}");
            assert_eq!(
                rss.hash(IpAddr::V4(wire::Ipv4Addr(s)), IpAddr::V4(wire::Ipv4Addr(d)), sp, dp),
                l4,
                "{s:?}:{sp} -> {d:?}:{dp}"
            );
        }
    }

    #[test]
    fn the_verification_suite_hashes_ipv6() {
        let rss = Rss::new(&KEY, &[0]).unwrap();
        let a = |s: &str| IpAddr::V6(s.parse::<std::net::Ipv6Addr>().unwrap().into());
        // (source, source port, destination, destination port, hash with ports)
        let cases = [
            ("3ffe:2501:200:1fff::7", 2794, "3ffe:2501:200:3::1", 1766, 0x4020_7d3du32),
            ("3ffe:501:8::260:97ff:fe40:efab", 14230, "ff02::1", 4739, 0xdde5_1bbf),
            ("3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251, "fe80::200:f8ff:fe21:67cf", 38024, 0x02d1_feef),
        ];
        for (s, sp, d, dp, l4) in cases {
            assert_eq!(rss.hash(a(s), a(d), sp, dp), l4, "{s}:{sp} -> {d}:{dp}");
        }
    }

    #[test]
    fn the_table_picks_the_queue_and_bad_configurations_are_refused() {
        let rss = Rss::new(&KEY, &[0, 1, 2, 3]).unwrap();
        let (s, d) = (IpAddr::V4(wire::Ipv4Addr([66, 9, 149, 187])), IpAddr::V4(wire::Ipv4Addr([161, 142, 100, 80])));
        assert_eq!(rss.queue(s, d, 2794, 1766), (0x51cc_c178u32 % 4) as u16);
        assert_eq!(Rss::new(&KEY[..8], &[0]), Err(RssError::KeyTooShort));
        assert_eq!(Rss::new(&KEY, &[]), Err(RssError::EmptyTable));
    }
}
