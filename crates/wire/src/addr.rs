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

/// An IPv6 address in network byte order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Ipv6Addr(pub [u8; 16]);

impl Ipv6Addr {
    /// `::`
    pub const UNSPECIFIED: Ipv6Addr = Ipv6Addr([0; 16]);
    /// `ff02::1`, all nodes on the link.
    pub const ALL_NODES: Ipv6Addr = Ipv6Addr([0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);

    /// From the first sixteen bytes of `b`.
    pub fn from_bytes(b: &[u8]) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&b[..16]);
        Ipv6Addr(a)
    }

    /// True for `ff00::/8`.
    pub fn is_multicast(&self) -> bool {
        self.0[0] == 0xff
    }

    /// True for `fe80::/10`.
    pub fn is_link_local(&self) -> bool {
        self.0[0] == 0xfe && self.0[1] & 0xc0 == 0x80
    }

    /// The solicited-node multicast address of this address (RFC 4291 §2.7.1):
    /// `ff02::1:ffXX:XXXX` with its low 24 bits.
    pub fn solicited_node(&self) -> Ipv6Addr {
        let mut a = [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, 0, 0, 0];
        a[13..].copy_from_slice(&self.0[13..]);
        Ipv6Addr(a)
    }

    /// The Ethernet address a multicast IPv6 address maps to (RFC 2464 §7): 33:33 and the
    /// low 32 bits.
    pub fn multicast_mac(&self) -> MacAddr {
        let a = self.0;
        MacAddr([0x33, 0x33, a[12], a[13], a[14], a[15]])
    }
}

impl From<std::net::Ipv6Addr> for Ipv6Addr {
    fn from(a: std::net::Ipv6Addr) -> Self {
        Ipv6Addr(a.octets())
    }
}

impl From<Ipv6Addr> for std::net::Ipv6Addr {
    fn from(a: Ipv6Addr) -> Self {
        std::net::Ipv6Addr::from(a.0)
    }
}

impl core::fmt::Debug for Ipv6Addr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(self, f)
    }
}

impl core::fmt::Display for Ipv6Addr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // RFC 5952's text form, as the standard library writes it.
        core::fmt::Display::fmt(&std::net::Ipv6Addr::from(self.0), f)
    }
}

/// An address of either family: what an application sees of a peer on a dual-stack engine.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IpAddr {
    /// IPv4.
    V4(Ipv4Addr),
    /// IPv6.
    V6(Ipv6Addr),
}

impl IpAddr {
    /// True for an IPv6 address.
    pub fn is_ipv6(&self) -> bool {
        matches!(self, IpAddr::V6(_))
    }

    /// The address as IPv6: itself, or an IPv4 address mapped (`::ffff:a.b.c.d`).
    pub fn to_v6_mapped(self) -> Ipv6Addr {
        match self {
            IpAddr::V6(a) => a,
            IpAddr::V4(a) => {
                let mut b = [0u8; 16];
                b[10] = 0xff;
                b[11] = 0xff;
                b[12..].copy_from_slice(&a.0);
                Ipv6Addr(b)
            }
        }
    }

    /// The address's bytes in network order (4 or 16 of them).
    pub fn octets(&self) -> &[u8] {
        match self {
            IpAddr::V4(a) => &a.0,
            IpAddr::V6(a) => &a.0,
        }
    }
}

impl From<Ipv4Addr> for IpAddr {
    fn from(a: Ipv4Addr) -> Self {
        IpAddr::V4(a)
    }
}

impl From<Ipv6Addr> for IpAddr {
    fn from(a: Ipv6Addr) -> Self {
        IpAddr::V6(a)
    }
}

impl From<std::net::IpAddr> for IpAddr {
    fn from(a: std::net::IpAddr) -> Self {
        match a {
            std::net::IpAddr::V4(a) => IpAddr::V4(a.into()),
            std::net::IpAddr::V6(a) => IpAddr::V6(a.into()),
        }
    }
}

impl From<IpAddr> for std::net::IpAddr {
    fn from(a: IpAddr) -> Self {
        match a {
            IpAddr::V4(a) => std::net::IpAddr::V4(a.into()),
            IpAddr::V6(a) => std::net::IpAddr::V6(a.into()),
        }
    }
}

impl core::fmt::Debug for IpAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(self, f)
    }
}

impl core::fmt::Display for IpAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            IpAddr::V4(a) => core::fmt::Display::fmt(a, f),
            IpAddr::V6(a) => core::fmt::Display::fmt(a, f),
        }
    }
}
