//! The address types of the link and network layers (kept apart from the headers that carry
//! them, so the checksum code can use them without depending on a header module).

/// A 48-bit MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    /// 00:00:00:00:00:00.
    pub const ZERO: MacAddr = MacAddr([0; 6]);

    /// True for group (multicast and broadcast) addresses.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 1 != 0
    }

    /// Parses `aa:bb:cc:dd:ee:ff`.
    pub fn parse(s: &str) -> Option<MacAddr> {
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for b in &mut out {
            *b = u8::from_str_radix(parts.next()?, 16).ok()?;
        }
        parts.next().is_none().then_some(MacAddr(out))
    }
}

impl core::fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(self, f)
    }
}

impl core::fmt::Display for MacAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let b = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3], b[4], b[5])
    }
}

/// An IPv4 address in network byte order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Ipv4Addr(pub [u8; 4]);

impl Ipv4Addr {
    /// 0.0.0.0
    pub const UNSPECIFIED: Ipv4Addr = Ipv4Addr([0; 4]);

    /// From the first four bytes of `b`.
    pub fn from_bytes(b: &[u8]) -> Ipv4Addr {
        Ipv4Addr([b[0], b[1], b[2], b[3]])
    }
    /// As a host-order integer.
    pub fn to_u32(self) -> u32 {
        u32::from_be_bytes(self.0)
    }
    /// From a host-order integer.
    pub fn from_u32(v: u32) -> Ipv4Addr {
        Ipv4Addr(v.to_be_bytes())
    }
}

impl From<std::net::Ipv4Addr> for Ipv4Addr {
    fn from(a: std::net::Ipv4Addr) -> Self {
        Ipv4Addr(a.octets())
    }
}

impl From<Ipv4Addr> for std::net::Ipv4Addr {
    fn from(a: Ipv4Addr) -> Self {
        std::net::Ipv4Addr::from(a.0)
    }
}

impl core::fmt::Debug for Ipv4Addr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(self, f)
    }
}

impl core::fmt::Display for Ipv4Addr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let b = self.0;
        write!(f, "{}.{}.{}.{}", b[0], b[1], b[2], b[3])
    }
}
