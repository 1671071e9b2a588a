//! What the receive path needs to know of an address family to answer a packet in place: the
//! same UDP code serves IPv4 and IPv6, compiled once per family.

use crate::config::TTL;
use crate::neighbour_cache::{NeighbourAddr, NeighbourCache};
use crate::node::Node;
use wire::checksum::PseudoHeader;
use wire::ethernet::EthernetFrame;
use wire::ipv4::{Ipv4Addr, Ipv4Packet};
use wire::ipv6::{self, Ipv6Addr, Ipv6Packet};
use wire::IpAddr;

/// An address family, as the receive path answers its packets.
pub(crate) trait Family: PseudoHeader + NeighbourAddr + Into<IpAddr> {
    /// The engine's neighbour cache for this family.
    fn neighbours(node: &mut Node) -> &mut NeighbourCache<Self>;
    /// Turns the headers of the received frame with its IP header at `hl` around: MACs and
    /// addresses swapped, a fresh TTL or hop limit.
    fn turn_around(buf: &mut [u8], hl: usize);
    /// Sets the IP header's length for an upper-layer message of `upper` bytes at `l4`.
    fn set_upper_len(buf: &mut [u8], hl: usize, l4: usize, upper: usize);
}

impl Family for Ipv4Addr {
    fn neighbours(node: &mut Node) -> &mut NeighbourCache<Self> {
        &mut node.arp
    }

    #[inline]
    fn turn_around(buf: &mut [u8], hl: usize) {
        EthernetFrame::new_unchecked(&mut buf[..]).swap_addrs();
        let mut ip = Ipv4Packet::new_unchecked(&mut buf[hl..]);
        ip.swap_addrs();
        ip.set_ttl(TTL);
    }

    #[inline]
    fn set_upper_len(buf: &mut [u8], hl: usize, l4: usize, upper: usize) {
        Ipv4Packet::new_unchecked(&mut buf[hl..]).set_total_len((l4 - hl + upper) as u16);
    }
}

impl Family for Ipv6Addr {
    fn neighbours(node: &mut Node) -> &mut NeighbourCache<Self> {
        &mut node.nd
    }

    #[inline]
    fn turn_around(buf: &mut [u8], hl: usize) {
        EthernetFrame::new_unchecked(&mut buf[..]).swap_addrs();
        let mut ip = Ipv6Packet::new_unchecked(&mut buf[hl..]);
        ip.swap_addrs();
        ip.set_hop_limit(TTL);
    }

    #[inline]
    fn set_upper_len(buf: &mut [u8], hl: usize, l4: usize, upper: usize) {
        let n = l4 - hl - ipv6::HEADER_LEN + upper;
        Ipv6Packet::new_unchecked(&mut buf[hl..]).set_payload_len(n as u16);
    }
}
