//! Ethernet II frames: the view and builder take at most one 802.1Q VLAN tag (what the
//! engine serves); [`payload_after_tags`] walks two (802.1ad QinQ, for the pipeline).

use crate::{be16, put16, Error, Result};

pub use crate::addr::MacAddr;

/// EtherType values sirocco knows.
pub struct EtherType;

impl EtherType {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// 802.1Q VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service tag (the outer tag of QinQ).
    pub const QINQ: u16 = 0x88a8;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
}

mod field {
    pub const DST: core::ops::Range<usize> = 0..6;
    pub const SRC: core::ops::Range<usize> = 6..12;
    pub const ETHERTYPE: usize = 12;
    pub const TCI: usize = 14;
    pub const INNER_ETHERTYPE: usize = 16;
}

/// Length of an untagged Ethernet header.
pub const HEADER_LEN: usize = 14;
/// Length of an Ethernet header with one 802.1Q tag.
pub const VLAN_HEADER_LEN: usize = 18;

/// Length of one VLAN tag (TPID and TCI).
pub const TAG_LEN: usize = 4;

/// The offset and EtherType of a frame's payload after up to two VLAN tags (an 802.1ad or
/// 802.1Q outer tag, an 802.1Q inner one); None if the frame is too short to say.
pub fn payload_after_tags(b: &[u8]) -> Option<(usize, u16)> {
    let mut at = field::ETHERTYPE;
    for _ in 0..2 {
        match be16(b.get(..at + 2)?, at) {
            EtherType::VLAN | EtherType::QINQ => at += TAG_LEN,
            _ => break,
        }
    }
    let ethertype = be16(b.get(..at + 2)?, at);
    Some((at + 2, ethertype))
}

/// Tags a frame whose bytes start [`TAG_LEN`] bytes into `buf` (room made in front of it):
/// the addresses move to the start and an 802.1Q tag with `tci` follows them.
pub fn push_tag(buf: &mut [u8], tci: u16) {
    buf.copy_within(TAG_LEN..TAG_LEN + field::ETHERTYPE, 0);
    put16(buf, field::ETHERTYPE, EtherType::VLAN);
    put16(buf, field::TCI, tci);
}

/// Takes the outer VLAN tag (802.1Q or 802.1ad) off `buf`: the addresses move over it, so
/// the untagged frame starts [`TAG_LEN`] bytes in. False (nothing changed) if untagged.
pub fn pop_tag(buf: &mut [u8]) -> bool {
    let tagged =
        buf.len() >= HEADER_LEN + TAG_LEN && matches!(be16(buf, field::ETHERTYPE), EtherType::VLAN | EtherType::QINQ);
    if tagged {
        buf.copy_within(0..field::ETHERTYPE, TAG_LEN);
    }
    tagged
}

/// A read (and, on mutable buffers, write) view of an Ethernet frame.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps `buf` after checking it holds the whole header (including a VLAN tag if any).
    pub fn new_checked(buf: T) -> Result<Self> {
        let b = buf.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if be16(b, field::ETHERTYPE) == EtherType::VLAN && b.len() < VLAN_HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(EthernetFrame { buf })
    }

    /// Wraps `buf` without checking; accessors may panic on short buffers.
    pub fn new_unchecked(buf: T) -> Self {
        EthernetFrame { buf }
    }

    /// The destination address.
    pub fn dst_addr(&self) -> MacAddr {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buf.as_ref()[field::DST]);
        MacAddr(a)
    }

    /// The source address.
    pub fn src_addr(&self) -> MacAddr {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buf.as_ref()[field::SRC]);
        MacAddr(a)
    }

    /// The VLAN id if the frame carries an 802.1Q tag.
    pub fn vlan(&self) -> Option<u16> {
        let b = self.buf.as_ref();
        (be16(b, field::ETHERTYPE) == EtherType::VLAN).then(|| be16(b, field::TCI) & 0x0fff)
    }

    /// The EtherType of the payload (the inner one when tagged).
    pub fn ethertype(&self) -> u16 {
        let b = self.buf.as_ref();
        match be16(b, field::ETHERTYPE) {
            EtherType::VLAN => be16(b, field::INNER_ETHERTYPE),
            t => t,
        }
    }

    /// Header length: 14, or 18 with a VLAN tag.
    pub fn header_len(&self) -> usize {
        if self.vlan().is_some() {
            VLAN_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buf.as_ref()[self.header_len()..]
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buf
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: MacAddr) {
        self.buf.as_mut()[field::DST].copy_from_slice(&a.0);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: MacAddr) {
        self.buf.as_mut()[field::SRC].copy_from_slice(&a.0);
    }

    /// Swaps source and destination addresses (the usual first step of a reply).
    pub fn swap_addrs(&mut self) {
        let b = self.buf.as_mut();
        let mut t = [0u8; 6];
        t.copy_from_slice(&b[field::DST]);
        b.copy_within(field::SRC, field::DST.start);
        b[field::SRC].copy_from_slice(&t);
    }

    /// The bytes after the header, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        &mut self.buf.as_mut()[h..]
    }
}

/// The meaning of an Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    /// Source address.
    pub src: MacAddr,
    /// Destination address.
    pub dst: MacAddr,
    /// VLAN id (12 bits) when tagged.
    pub vlan: Option<u16>,
    /// Payload EtherType.
    pub ethertype: u16,
}

impl EthernetRepr {
    /// Reads the header of a checked frame.
    pub fn parse<T: AsRef<[u8]>>(f: &EthernetFrame<T>) -> Result<Self> {
        Ok(EthernetRepr { src: f.src_addr(), dst: f.dst_addr(), vlan: f.vlan(), ethertype: f.ethertype() })
    }

    /// Header length when emitted.
    pub fn header_len(&self) -> usize {
        if self.vlan.is_some() {
            VLAN_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }

    /// Writes the header to the start of `buf`, which must be at least `header_len()` long.
    pub fn emit(&self, buf: &mut [u8]) {
        buf[field::DST].copy_from_slice(&self.dst.0);
        buf[field::SRC].copy_from_slice(&self.src.0);
        match self.vlan {
            Some(id) => {
                put16(buf, field::ETHERTYPE, EtherType::VLAN);
                put16(buf, field::TCI, id & 0x0fff);
                put16(buf, field::INNER_ETHERTYPE, self.ethertype);
            }
            None => put16(buf, field::ETHERTYPE, self.ethertype),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FRAME: [u8; 18] = [
        0x02, 0, 0, 0, 0, 0x01, // dst
        0x02, 0, 0, 0, 0, 0x02, // src
        0x08, 0x06, // ARP
        0xde, 0xad, 0xbe, 0xef,
    ];

    #[test]
    fn parse_untagged() {
        let f = EthernetFrame::new_checked(&FRAME[..]).unwrap();
        assert_eq!(f.dst_addr(), MacAddr([2, 0, 0, 0, 0, 1]));
        assert_eq!(f.src_addr(), MacAddr([2, 0, 0, 0, 0, 2]));
        assert_eq!(f.ethertype(), EtherType::ARP);
        assert_eq!(f.vlan(), None);
        assert_eq!(f.payload(), &[0xde, 0xad, 0xbe, 0xef]);
    }

    #[test]
    fn parse_tagged() {
        let mut b = FRAME.to_vec();
        b.splice(12..12, [0x81, 0x00, 0x20, 0x2a]);
        let f = EthernetFrame::new_checked(&b[..]).unwrap();
        assert_eq!(f.vlan(), Some(42));
        assert_eq!(f.ethertype(), EtherType::ARP);
        assert_eq!(f.payload(), &[0xde, 0xad, 0xbe, 0xef]);
    }

    #[test]
    fn truncated() {
        assert_eq!(EthernetFrame::new_checked(&FRAME[..13]).unwrap_err(), Error::Truncated);
        let tagged = [0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x81, 0, 0, 1];
        assert_eq!(EthernetFrame::new_checked(&tagged[..]).unwrap_err(), Error::Truncated);
    }

    #[test]
    fn tags_are_walked_up_to_two() {
        let macs = [0u8; 12];
        let frame = |tags: &[[u8; 4]], et: u16| {
            let mut b = macs.to_vec();
            for t in tags {
                b.extend_from_slice(t);
            }
            b.extend_from_slice(&et.to_be_bytes());
            b.extend_from_slice(&[0x45, 0]);
            b
        };
        let (q, ad) = ([0x81, 0, 0, 5], [0x88, 0xa8, 0, 7]);
        assert_eq!(payload_after_tags(&frame(&[], 0x0800)), Some((14, 0x0800)));
        assert_eq!(payload_after_tags(&frame(&[q], 0x0800)), Some((18, 0x0800)));
        assert_eq!(payload_after_tags(&frame(&[ad, q], 0x86dd)), Some((22, 0x86dd)));
        // A third tag is not walked: its TPID is the payload's EtherType.
        assert_eq!(payload_after_tags(&frame(&[ad, q, q], 0x0800)), Some((22, 0x8100)));
        // One tag agrees with the view.
        let one = frame(&[q], 0x0800);
        let f = EthernetFrame::new_checked(&one[..]).unwrap();
        assert_eq!(payload_after_tags(&one), Some((f.header_len(), f.ethertype())));
        // Too short to say.
        assert_eq!(payload_after_tags(&frame(&[ad, q], 0x0800)[..20]), None);
        assert_eq!(payload_after_tags(&macs), None);
    }

    #[test]
    fn swap() {
        let mut b = FRAME;
        EthernetFrame::new_unchecked(&mut b[..]).swap_addrs();
        assert_eq!(&b[0..6], &FRAME[6..12]);
        assert_eq!(&b[6..12], &FRAME[0..6]);
    }

    #[test]
    fn mac_parse() {
        assert_eq!(MacAddr::parse("02:00:0a:ff:00:01"), Some(MacAddr([2, 0, 10, 255, 0, 1])));
        assert_eq!(MacAddr::parse("02:00:0a:ff:00"), None);
        assert_eq!(MacAddr::parse("02:00:0a:ff:00:01:02"), None);
        assert_eq!(MacAddr::parse("zz:00:0a:ff:00:01"), None);
    }

    proptest! {
        #[test]
        fn emit_then_parse(src in any::<[u8; 6]>(), dst in any::<[u8; 6]>(),
                           vlan in proptest::option::of(0u16..4096), et in any::<u16>()) {
            prop_assume!(et != EtherType::VLAN);
            let r = EthernetRepr { src: MacAddr(src), dst: MacAddr(dst), vlan, ethertype: et };
            let mut b = vec![0u8; r.header_len()];
            r.emit(&mut b);
            let f = EthernetFrame::new_checked(&b[..]).unwrap();
            prop_assert_eq!(EthernetRepr::parse(&f).unwrap(), r);
        }
    }
}
