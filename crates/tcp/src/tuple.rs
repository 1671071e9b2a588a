//! A connection's identity: its addresses and ports.

use wire::IpAddr;

/// A connection's addresses, from this side's point of view (both of one family).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuple {
    /// This side's address.
    pub local: IpAddr,
    /// The peer's address.
    pub remote: IpAddr,
    /// This side's port.
    pub local_port: u16,
    /// The peer's port.
    pub remote_port: u16,
}

/// Most bytes [`Tuple::bytes`] gives (IPv6: two addresses and two ports).
pub const TUPLE_BYTES: usize = 36;

impl Tuple {
    /// The bytes that identify the connection, in `buf[..n]`: 12 for IPv4 (the same as
    /// before IPv6 was served, so IPv4's hashes are unchanged), 36 for IPv6.
    pub fn bytes(&self) -> ([u8; TUPLE_BYTES], usize) {
        let mut b = [0u8; TUPLE_BYTES];
        let (l, r) = (self.local.octets(), self.remote.octets());
        let a = l.len();
        b[..a].copy_from_slice(l);
        b[a..2 * a].copy_from_slice(&r[..a.min(r.len())]);
        b[2 * a..2 * a + 2].copy_from_slice(&self.local_port.to_be_bytes());
        b[2 * a + 2..2 * a + 4].copy_from_slice(&self.remote_port.to_be_bytes());
        (b, 2 * a + 4)
    }

    /// True for a connection over IPv6.
    pub fn is_ipv6(&self) -> bool {
        self.local.is_ipv6()
    }

    /// Bytes of the IP header in front of each segment (no options or extension headers).
    pub fn ip_header_len(&self) -> u16 {
        if self.is_ipv6() {
            40
        } else {
            20
        }
    }
}

// By hand: the derived Hash adds length prefixes that a small keyed hasher would have to
// buffer; one write of the tuple's bytes is all the table needs.
impl std::hash::Hash for Tuple {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let (b, n) = self.bytes();
        state.write(&b[..n]);
    }
}
