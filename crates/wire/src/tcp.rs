//! TCP header (RFC 9293) with the options sirocco speaks: MSS, window scale (RFC 7323),
//! SACK-permitted and SACK blocks (RFC 2018), timestamps (RFC 7323).

use crate::checksum::{self, PseudoHeader};
use crate::transport;
use crate::{be16, be32, put16, put32, Error, Protocol, Result};

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const SEQ: usize = 4;
    pub const ACK: usize = 8;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: usize = 14;
    pub const CHECKSUM: usize = 16;
    pub const URGENT: usize = 18;
}

/// Length of the header without options.
pub const HEADER_LEN: usize = 20;
/// Offset of the checksum field in the header.
pub const CHECKSUM_AT: usize = field::CHECKSUM;
/// Longest header (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;

/// TCP control flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    /// FIN.
    pub const FIN: u8 = 0x01;
    /// SYN.
    pub const SYN: u8 = 0x02;
    /// RST.
    pub const RST: u8 = 0x04;
    /// PSH.
    pub const PSH: u8 = 0x08;
    /// ACK.
    pub const ACK: u8 = 0x10;
    /// URG.
    pub const URG: u8 = 0x20;
    /// ECE.
    pub const ECE: u8 = 0x40;
    /// CWR.
    pub const CWR: u8 = 0x80;

    /// True if every bit in `f` is set.
    pub fn has(self, f: u8) -> bool {
        self.0 & f == f
    }
}

/// A view of a TCP segment.
#[derive(Debug)]
pub struct TcpPacket<T> {
    buf: T,
}

crate::transport::port_view!(TcpPacket, field::CHECKSUM, false);

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wraps `buf` (the whole IP payload) after checking that the header, options included,
    /// fits and the data offset is at least 5.
    pub fn new_checked(buf: T) -> Result<Self> {
        let b = buf.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let p = TcpPacket { buf };
        let h = p.header_len();
        if h < HEADER_LEN {
            return Err(Error::BadLength);
        }
        if h > p.buf.as_ref().len() {
            return Err(Error::Truncated);
        }
        Ok(p)
    }
    /// Sequence number.
    pub fn seq(&self) -> u32 {
        be32(self.b(), field::SEQ)
    }
    /// Acknowledgement number.
    pub fn ack(&self) -> u32 {
        be32(self.b(), field::ACK)
    }
    /// Header length in bytes (data offset × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[field::DATA_OFF] >> 4) * 4
    }
    /// Control flags.
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.b()[field::FLAGS])
    }
    /// Window field (unscaled).
    pub fn window(&self) -> u16 {
        be16(self.b(), field::WINDOW)
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(self.b(), field::CHECKSUM)
    }
    /// Urgent pointer.
    pub fn urgent(&self) -> u16 {
        be16(self.b(), field::URGENT)
    }
    /// Raw option bytes.
    pub fn options(&self) -> &[u8] {
        &self.b()[HEADER_LEN..self.header_len()]
    }
    /// Segment data.
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..]
    }
    /// True if the checksum verifies against the pseudo-header.
    pub fn verify_checksum<A: PseudoHeader>(&self, src: A, dst: A) -> bool {
        transport::sum_verifies(src, dst, Protocol::TCP, self.b())
    }
    /// True if the checksum field holds only the pseudo-header's sum: the sender left the
    /// rest to a NIC (CHECKSUM_PARTIAL), which a veth with TX checksum offload never adds.
    pub fn checksum_unfinished<A: PseudoHeader>(&self, src: A, dst: A) -> bool {
        transport::sum_unfinished(self.checksum(), src, dst, Protocol::TCP, self.b().len())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    fn bm(&mut self) -> &mut [u8] {
        self.buf.as_mut()
    }
    /// Sets the sequence number, updating the checksum incrementally.
    pub fn set_seq(&mut self, v: u32) {
        let old = self.seq();
        put32(self.bm(), field::SEQ, v);
        let c = checksum::update32(self.checksum(), old, v);
        put16(self.bm(), field::CHECKSUM, c);
    }
    /// Sets the acknowledgement number, updating the checksum incrementally.
    pub fn set_ack(&mut self, v: u32) {
        let old = self.ack();
        put32(self.bm(), field::ACK, v);
        let c = checksum::update32(self.checksum(), old, v);
        put16(self.bm(), field::CHECKSUM, c);
    }
    /// Sets the window, updating the checksum incrementally.
    pub fn set_window(&mut self, v: u16) {
        let old = self.window();
        put16(self.bm(), field::WINDOW, v);
        let c = checksum::update16(self.checksum(), old, v);
        put16(self.bm(), field::CHECKSUM, c);
    }
    /// Computes the checksum over the whole segment.
    pub fn fill_checksum<A: PseudoHeader>(&mut self, src: A, dst: A) {
        put16(self.bm(), field::CHECKSUM, 0);
        let len = self.b().len() as u16;
        let c = !checksum::fold(checksum::add(A::pseudo_sum(src, dst, Protocol::TCP, u32::from(len)), self.b()));
        put16(self.bm(), field::CHECKSUM, c);
    }
}

/// Option kinds.
mod kind {
    pub const EOL: u8 = 0;
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WSCALE: u8 = 3;
    pub const SACK_PERM: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMP: u8 = 8;
}

/// The options sirocco understands; unknown options are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpOptions {
    /// Maximum segment size (SYN only).
    pub mss: Option<u16>,
    /// Window scale shift (SYN only; values above 14 are clamped to 14 per RFC 7323).
    pub window_scale: Option<u8>,
    /// SACK permitted (SYN only).
    pub sack_permitted: bool,
    /// Up to four SACK blocks (left, right).
    pub sack_blocks: [Option<(u32, u32)>; 4],
    /// Timestamps (TSval, TSecr).
    pub timestamps: Option<(u32, u32)>,
}

impl TcpOptions {
    /// Parses the option bytes. A length byte that is missing, below 2, runs past the end, or
    /// does not match the fixed size of a known option makes the header malformed.
    pub fn parse(mut o: &[u8]) -> Result<Self> {
        let mut out = TcpOptions::default();
        while let Some(&k) = o.first() {
            match k {
                kind::EOL => break,
                kind::NOP => {
                    o = &o[1..];
                    continue;
                }
                _ => {}
            }
            let len = usize::from(*o.get(1).ok_or(Error::Malformed)?);
            if len < 2 || len > o.len() {
                return Err(Error::Malformed);
            }
            let body = &o[2..len];
            match (k, len) {
                (kind::MSS, 4) => out.mss = Some(be16(body, 0)),
                (kind::WSCALE, 3) => out.window_scale = Some(body[0].min(14)),
                (kind::SACK_PERM, 2) => out.sack_permitted = true,
                (kind::SACK, l) if l >= 10 && (l - 2) % 8 == 0 && l <= 34 => {
                    for (i, blk) in body.chunks_exact(8).enumerate() {
                        out.sack_blocks[i] = Some((be32(blk, 0), be32(blk, 4)));
                    }
                }
                (kind::TIMESTAMP, 10) => out.timestamps = Some((be32(body, 0), be32(body, 4))),
                (kind::MSS | kind::WSCALE | kind::SACK_PERM | kind::SACK | kind::TIMESTAMP, _) => {
                    return Err(Error::Malformed)
                }
                _ => {} // unknown option: skip
            }
            o = &o[len..];
        }
        Ok(out)
    }

    /// Bytes `emit` will write, padded to a multiple of 4.
    pub fn buffer_len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.window_scale.is_some() {
            n += 4; // NOP + 3
        }
        if self.timestamps.is_some() {
            n += if self.sack_permitted { 10 } else { 12 }; // SACK_PERM shares the padding
        }
        if self.sack_permitted {
            n += if self.timestamps.is_some() { 2 } else { 4 };
        }
        let blocks = self.sack_blocks.iter().flatten().count();
        if blocks > 0 {
            n += 4 + 8 * blocks; // NOP NOP kind len + blocks
        }
        n
    }

    /// Writes the options in the layout Linux uses (aligned with NOPs); returns bytes written.
    /// `buf` must be at least `buffer_len()` long, which is at most 40 for what a sender needs:
    /// the caller limits SACK blocks to the room left (3 with timestamps, 4 without).
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let mut i = 0;
        if let Some(mss) = self.mss {
            buf[i] = kind::MSS;
            buf[i + 1] = 4;
            put16(buf, i + 2, mss);
            i += 4;
        }
        match (self.sack_permitted, self.timestamps) {
            (true, Some((v, e))) => {
                buf[i..i + 2].copy_from_slice(&[kind::SACK_PERM, 2]);
                buf[i + 2..i + 4].copy_from_slice(&[kind::TIMESTAMP, 10]);
                put32(buf, i + 4, v);
                put32(buf, i + 8, e);
                i += 12;
            }
            (false, Some((v, e))) => {
                buf[i..i + 4].copy_from_slice(&[kind::NOP, kind::NOP, kind::TIMESTAMP, 10]);
                put32(buf, i + 4, v);
                put32(buf, i + 8, e);
                i += 12;
            }
            (true, None) => {
                buf[i..i + 4].copy_from_slice(&[kind::NOP, kind::NOP, kind::SACK_PERM, 2]);
                i += 4;
            }
            (false, None) => {}
        }
        if let Some(ws) = self.window_scale {
            buf[i..i + 4].copy_from_slice(&[kind::NOP, kind::WSCALE, 3, ws]);
            i += 4;
        }
        let blocks = self.sack_blocks.iter().flatten().count();
        if blocks > 0 {
            buf[i..i + 4].copy_from_slice(&[kind::NOP, kind::NOP, kind::SACK, (2 + 8 * blocks) as u8]);
            i += 4;
            for &(l, r) in self.sack_blocks.iter().flatten() {
                put32(buf, i, l);
                put32(buf, i + 4, r);
                i += 8;
            }
        }
        i
    }
}

/// The meaning of a TCP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number (meaningful when ACK is set).
    pub ack: u32,
    /// Flags.
    pub flags: TcpFlags,
    /// Window field (unscaled).
    pub window: u16,
    /// Options.
    pub options: TcpOptions,
    /// Data length.
    pub payload_len: usize,
}

impl TcpRepr {
    /// Validates the checksum and options and reads the header. Port 0 is refused.
    pub fn parse<T: AsRef<[u8]>, A: PseudoHeader>(p: &TcpPacket<T>, src: A, dst: A) -> Result<Self> {
        if !p.verify_checksum(src, dst) {
            return Err(Error::BadChecksum);
        }
        if p.src_port() == 0 || p.dst_port() == 0 {
            return Err(Error::Malformed);
        }
        Ok(TcpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq: p.seq(),
            ack: p.ack(),
            flags: p.flags(),
            window: p.window(),
            options: TcpOptions::parse(p.options())?,
            payload_len: p.payload().len(),
        })
    }

    /// Header length when emitted.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options.buffer_len().div_ceil(4) * 4
    }

    /// Writes the header to `buf`, whose bytes after the header must already hold the data,
    /// and fills the checksum over header and data.
    pub fn emit<A: PseudoHeader>(&self, buf: &mut [u8], src: A, dst: A) {
        let h = self.header_len();
        let b = &mut buf[..h + self.payload_len];
        self.emit_fields(&mut b[..h]);
        TcpPacket::new_unchecked(b).fill_checksum(src, dst);
    }

    /// Writes the header alone to `buf` (at least [`TcpRepr::header_len`] bytes) for a
    /// payload kept elsewhere, whose one's-complement sum (unfolded, as [`checksum::add`]
    /// gives it, taken from the payload's first byte) is `payload_sum`.
    pub fn emit_header<A: PseudoHeader>(&self, buf: &mut [u8], src: A, dst: A, payload_sum: u64) {
        let h = self.header_len();
        let b = &mut buf[..h];
        self.emit_fields(b);
        let len = (h + self.payload_len) as u16;
        let sum = checksum::add(A::pseudo_sum(src, dst, Protocol::TCP, u32::from(len)) + payload_sum, b);
        put16(b, field::CHECKSUM, !checksum::fold(sum));
    }

    /// Writes the header alone for a device to finish the checksum (CHECKSUM_PARTIAL): the
    /// checksum field holds the folded pseudo-header sum, uncomplemented; the device adds
    /// header and payload and stores the complement (offset [`CHECKSUM_AT`] in the header).
    pub fn emit_header_partial<A: PseudoHeader>(&self, buf: &mut [u8], src: A, dst: A) {
        let h = self.header_len();
        let b = &mut buf[..h];
        self.emit_fields(b);
        let len = (h + self.payload_len) as u16;
        put16(b, field::CHECKSUM, checksum::fold(A::pseudo_sum(src, dst, Protocol::TCP, u32::from(len))));
    }

    /// Every header field but the checksum (zeroed), options padded with EOL.
    fn emit_fields(&self, b: &mut [u8]) {
        let h = b.len();
        put16(b, field::SRC_PORT, self.src_port);
        put16(b, field::DST_PORT, self.dst_port);
        put32(b, field::SEQ, self.seq);
        put32(b, field::ACK, self.ack);
        b[field::DATA_OFF] = ((h / 4) as u8) << 4;
        b[field::FLAGS] = self.flags.0;
        put16(b, field::WINDOW, self.window);
        put16(b, field::CHECKSUM, 0);
        put16(b, field::URGENT, 0);
        let n = self.options.emit(&mut b[HEADER_LEN..h]);
        b[HEADER_LEN + n..h].fill(kind::EOL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ipv4Addr;
    use proptest::prelude::*;

    const S: Ipv4Addr = Ipv4Addr([198, 18, 0, 2]);
    const D: Ipv4Addr = Ipv4Addr([198, 18, 0, 1]);

    // The options of a SYN from Linux 6.x: MSS 1460, SACK_PERM, TS, NOP, WS 7.
    const LINUX_SYN_OPTS: [u8; 20] = [
        0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x12, 0x34, 0x56, 0x78, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03,
        0x03, 0x07,
    ];

    #[test]
    fn linux_syn_options() {
        let o = TcpOptions::parse(&LINUX_SYN_OPTS).unwrap();
        assert_eq!(o.mss, Some(1460));
        assert!(o.sack_permitted);
        assert_eq!(o.timestamps, Some((0x12345678, 0)));
        assert_eq!(o.window_scale, Some(7));
        let mut b = [0u8; 40];
        let n = o.emit(&mut b);
        assert_eq!(n, o.buffer_len());
        // Our layout differs from Linux's only in where the window scale goes; both parse alike.
        assert_eq!(TcpOptions::parse(&b[..n]).unwrap(), o);
    }

    #[test]
    fn a_header_for_a_payload_kept_elsewhere_matches_the_whole_segment() {
        let payload: Vec<u8> = (0..1337u32).map(|i| (i * 7 + 3) as u8).collect();
        let repr = TcpRepr {
            src_port: 443,
            dst_port: 50_000,
            seq: 0xdead_beef,
            ack: 7,
            flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH),
            window: 512,
            options: TcpOptions { timestamps: Some((1, 2)), ..TcpOptions::default() },
            payload_len: payload.len(),
        };
        let h = repr.header_len();
        let mut whole = vec![0u8; h + payload.len()];
        whole[h..].copy_from_slice(&payload);
        repr.emit(&mut whole, S, D);
        // The payload summed in three pieces, two at odd offsets.
        let sum = [0..5, 5..700, 700..payload.len()]
            .into_iter()
            .fold(0, |acc, r| checksum::add_at(acc, &payload[r.clone()], r.start));
        let mut head = [0u8; 60];
        repr.emit_header(&mut head, S, D, sum);
        assert_eq!(head[..h], whole[..h]);
    }

    #[test]
    fn a_partial_checksum_finished_like_a_device_matches_the_whole_segment() {
        let payload: Vec<u8> = (0..999u32).map(|i| (i * 13 + 1) as u8).collect();
        let repr = TcpRepr {
            src_port: 80,
            dst_port: 40_000,
            seq: 1,
            ack: 2,
            flags: TcpFlags(TcpFlags::ACK),
            window: 100,
            options: TcpOptions { timestamps: Some((3, 4)), ..TcpOptions::default() },
            payload_len: payload.len(),
        };
        let h = repr.header_len();
        let mut whole = vec![0u8; h + payload.len()];
        whole[h..].copy_from_slice(&payload);
        repr.emit(&mut whole, S, D);
        let mut partial = whole.clone();
        repr.emit_header_partial(&mut partial, S, D);
        // What a NIC does with CHECKSUM_PARTIAL: sum from the header on, store the complement.
        let c = !checksum::fold(checksum::add(0, &partial));
        partial[CHECKSUM_AT..CHECKSUM_AT + 2].copy_from_slice(&c.to_be_bytes());
        assert_eq!(partial, whole);
    }

    #[test]
    fn malformed_options() {
        assert_eq!(TcpOptions::parse(&[2]).unwrap_err(), Error::Malformed);
        assert_eq!(TcpOptions::parse(&[2, 1, 0, 0]).unwrap_err(), Error::Malformed);
        assert_eq!(TcpOptions::parse(&[2, 8, 0, 0]).unwrap_err(), Error::Malformed);
        assert_eq!(TcpOptions::parse(&[2, 3, 0, 0]).unwrap_err(), Error::Malformed);
        assert_eq!(TcpOptions::parse(&[5, 6, 0, 0, 0, 0]).unwrap_err(), Error::Malformed);
        // An unknown option of valid length is skipped; EOL ends the list.
        assert_eq!(TcpOptions::parse(&[0xfe, 4, 0, 0, 1, 0, 9, 9]).unwrap(), TcpOptions::default());
        assert_eq!(TcpOptions::parse(&[3, 3, 200]).unwrap().window_scale, Some(14));
    }

    #[test]
    fn header_checks() {
        let mut b = vec![0u8; 20];
        TcpRepr {
            src_port: 1,
            dst_port: 2,
            seq: 3,
            ack: 4,
            flags: TcpFlags(TcpFlags::SYN),
            window: 5,
            options: TcpOptions::default(),
            payload_len: 0,
        }
        .emit(&mut b, S, D);
        assert_eq!(TcpPacket::new_checked(&b[..19]).unwrap_err(), Error::Truncated);
        let mut x = b.clone();
        x[12] = 0x40;
        assert_eq!(TcpPacket::new_checked(&x[..]).unwrap_err(), Error::BadLength);
        let mut x = b.clone();
        x[12] = 0x60;
        assert_eq!(TcpPacket::new_checked(&x[..]).unwrap_err(), Error::Truncated);
        let mut x = b.clone();
        x[7] ^= 1;
        assert_eq!(TcpRepr::parse(&TcpPacket::new_checked(&x[..]).unwrap(), S, D).unwrap_err(), Error::BadChecksum);
    }

    #[test]
    fn a_checksum_left_to_the_nic_is_told_apart_from_a_wrong_one() {
        let mut b = vec![0u8; 20];
        let syn = TcpRepr {
            src_port: 1,
            dst_port: 2,
            seq: 3,
            ack: 0,
            flags: TcpFlags(TcpFlags::SYN),
            window: 5,
            options: TcpOptions::default(),
            payload_len: 0,
        };
        syn.emit(&mut b, S, D);
        assert!(!TcpPacket::new_checked(&b[..]).unwrap().checksum_unfinished(S, D));
        let partial = checksum::fold(checksum::pseudo_header(S, D, Protocol::TCP, 20));
        b[16..18].copy_from_slice(&partial.to_be_bytes());
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(TcpRepr::parse(&p, S, D).unwrap_err(), Error::BadChecksum);
        assert!(p.checksum_unfinished(S, D));
        b[17] ^= 1;
        assert!(!TcpPacket::new_checked(&b[..]).unwrap().checksum_unfinished(S, D));
    }

    fn opts() -> impl Strategy<Value = TcpOptions> {
        (
            proptest::option::of(any::<u16>()),
            proptest::option::of(0u8..=14),
            any::<bool>(),
            proptest::option::of(any::<(u32, u32)>()),
            proptest::collection::vec(any::<(u32, u32)>(), 0..=3),
        )
            .prop_map(|(mss, ws, sp, ts, blocks)| {
                let mut o =
                    TcpOptions { mss, window_scale: ws, sack_permitted: sp, timestamps: ts, ..Default::default() };
                // Room is 40 bytes: a SYN carries no blocks; otherwise up to 3 with timestamps.
                if mss.is_none() && ws.is_none() && !sp {
                    let max = if ts.is_some() { 2 } else { 3 };
                    for (i, b) in blocks.into_iter().take(max).enumerate() {
                        o.sack_blocks[i] = Some(b);
                    }
                }
                o
            })
    }

    proptest! {
        #[test]
        fn emit_then_parse(sp in 1u16.., dp in 1u16.., seq in any::<u32>(), ack in any::<u32>(), flags in any::<u8>(),
                           window in any::<u16>(), options in opts(), data in proptest::collection::vec(any::<u8>(), 0..1460)) {
            let r = TcpRepr { src_port: sp, dst_port: dp, seq, ack, flags: TcpFlags(flags), window, options, payload_len: data.len() };
            let h = r.header_len();
            prop_assert!(h <= MAX_HEADER_LEN);
            let mut b = vec![0u8; h + data.len()];
            b[h..].copy_from_slice(&data);
            r.emit(&mut b, S, D);
            let p = TcpPacket::new_checked(&b[..]).unwrap();
            prop_assert_eq!(TcpRepr::parse(&p, S, D).unwrap(), r);
            prop_assert_eq!(p.payload(), &data[..]);
        }

        #[test]
        fn incremental_setters_equal_full(seq in any::<u32>(), ack in any::<u32>(), win in any::<u16>(), port in 1u16..,
                                          newdst in any::<[u8; 4]>(), data in proptest::collection::vec(any::<u8>(), 0..600)) {
            let r = TcpRepr { src_port: 80, dst_port: 40000, seq: 1, ack: 2, flags: TcpFlags(TcpFlags::ACK), window: 3,
                options: TcpOptions { timestamps: Some((5, 6)), ..Default::default() }, payload_len: data.len() };
            let h = r.header_len();
            let mut b = vec![0u8; h + data.len()];
            b[h..].copy_from_slice(&data);
            r.emit(&mut b, S, D);
            let nd = Ipv4Addr(newdst);
            let mut p = TcpPacket::new_unchecked(&mut b[..]);
            p.set_seq(seq);
            p.set_ack(ack);
            p.set_window(win);
            p.set_dst_port(port);
            p.update_checksum_for_addr(D, nd);
            prop_assert!(p.verify_checksum(S, nd));
        }
    }

    #[test]
    fn over_ipv6_the_checksum_covers_the_v6_pseudo_header() {
        use crate::Ipv6Addr;
        let s6: Ipv6Addr = "2001:2::2".parse::<std::net::Ipv6Addr>().unwrap().into();
        let d6: Ipv6Addr = "2001:2::10".parse::<std::net::Ipv6Addr>().unwrap().into();
        let r = TcpRepr {
            src_port: 40000,
            dst_port: 80,
            seq: 1,
            ack: 2,
            flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH),
            window: 500,
            options: TcpOptions { timestamps: Some((3, 4)), ..Default::default() },
            payload_len: 3,
        };
        let h = r.header_len();
        let mut b = vec![0u8; h + 3];
        b[h..].copy_from_slice(b"GET");
        r.emit(&mut b, s6, d6);
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(TcpRepr::parse(&p, s6, d6), Ok(r));
        assert_eq!(TcpRepr::parse(&p, d6, s6), Ok(r), "the sum does not depend on the order");
        assert_eq!(TcpRepr::parse(&p, s6, Ipv6Addr::UNSPECIFIED), Err(Error::BadChecksum));
    }
}
