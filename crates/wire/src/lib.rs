//! Packet formats, sans-IO and zero-copy.
//!
//! Each protocol has a *view* (`XxxPacket<T: AsRef<[u8]>>`) that reads fields in place, with
//! setters when `T: AsMut<[u8]>`, and a *repr* (`XxxRepr`) holding the header's meaning with
//! `parse` (which validates, so everything after it can trust the packet) and `emit`.
//! Checksums are in [`checksum`], including RFC 1624 incremental updates.

pub mod addr;
pub mod arp;
pub mod build;
pub mod checksum;
pub mod ethernet;
pub mod icmp;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod pcap;
pub mod tcp;
mod transport;
pub mod udp;

pub use addr::IpAddr;
pub use arp::{ArpOp, ArpPacket, ArpRepr};
pub use ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
pub use icmp::{IcmpPacket, IcmpRepr};
pub use ipv4::{Ipv4Addr, Ipv4Packet, Ipv4Repr, Protocol};
pub use ipv6::{Ipv6Addr, Ipv6Packet, Ipv6Repr, NextHeader};
pub use tcp::{TcpFlags, TcpOptions, TcpPacket, TcpRepr};
pub use udp::{UdpPacket, UdpRepr};

/// Why a packet was refused. Each variant is a drop reason the engine counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer is shorter than the header, or than a length the header claims.
    Truncated,
    /// A length or offset field is impossible (IHL < 5, total length < header, ...).
    BadLength,
    /// A version or hardware/protocol type this code does not speak.
    Unsupported,
    /// The checksum does not verify.
    BadChecksum,
    /// An IPv4 or IPv6 fragment (sirocco does not reassemble).
    Fragment,
    /// A field holds a value the protocol forbids.
    Malformed,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = match self {
            Error::Truncated => "truncated",
            Error::BadLength => "bad length",
            Error::Unsupported => "unsupported",
            Error::BadChecksum => "bad checksum",
            Error::Fragment => "fragment",
            Error::Malformed => "malformed",
        };
        f.write_str(s)
    }
}

impl std::error::Error for Error {}

/// Result of parsing a packet.
pub type Result<T> = core::result::Result<T, Error>;

#[inline]
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline]
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline]
pub(crate) fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

#[inline]
pub(crate) fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}
