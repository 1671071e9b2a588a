//! Prepared TCP segments (Sandstorm's pre-packetised frames).
//!
//! A master segment is a TCP header template followed by its payload, with every field that
//! differs per client zero — addresses (in the pseudo-header), ports, sequence and
//! acknowledgement numbers, window, the timestamp values — and a checksum that is valid for
//! that template. Serving a client copies the master and writes those fields; because they
//! were zero, RFC 1624's update `HC' = ~(~HC + ~m + m')` reduces to adding the new words, plus
//! the one word that was not zero in the template (offset and flags). The payload is never
//! read again. A master serves IPv4 and IPv6 alike: with zero addresses both pseudo-headers
//! sum to the protocol and the length.

use wire::checksum;
use wire::tcp::{TcpFlags, TcpRepr};
use wire::{IpAddr, Ipv4Addr};

/// TCP header of a prepared segment: 20 bytes and NOP NOP TIMESTAMP — the layout of every
/// data segment of a connection that negotiated timestamps (all Linux clients do).
pub const HEADER: usize = 32;
/// The offset-and-flags word of the template: 8 words of header, ACK.
const TEMPLATE_FLAGS: u16 = (8 << 12) | TcpFlags::ACK as u16;

/// Appends a master segment carrying `payload` to `out`.
pub fn build_master(payload: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER]);
    out.extend_from_slice(payload);
    let seg = &mut out[start..];
    seg[12..14].copy_from_slice(&TEMPLATE_FLAGS.to_be_bytes());
    seg[20..24].copy_from_slice(&[1, 1, 8, 10]);
    let len = seg.len() as u16;
    let sum = checksum::add(checksum::pseudo_header(Ipv4Addr([0; 4]), Ipv4Addr([0; 4]), 6, len), seg);
    let c = !checksum::fold(sum);
    seg[16..18].copy_from_slice(&c.to_be_bytes());
}

/// True if segments with `repr`'s header can be served from masters: timestamps and nothing
/// else among the options (no SACK blocks), no SYN/RST/URG.
#[inline]
pub fn fits(repr: &TcpRepr) -> bool {
    let o = &repr.options;
    o.timestamps.is_some()
        && o.mss.is_none()
        && o.window_scale.is_none()
        && !o.sack_permitted
        && o.sack_blocks[0].is_none()
        && repr.flags.0 & !(TcpFlags::ACK | TcpFlags::PSH | TcpFlags::FIN) == 0
}

#[inline]
fn words32(v: u32) -> u64 {
    u64::from(v >> 16) + u64::from(v & 0xffff)
}

/// The sum of an address's 16-bit words, as its pseudo-header adds them.
#[inline]
fn addr_words(a: IpAddr) -> u64 {
    match a {
        IpAddr::V4(a) => words32(a.to_u32()),
        IpAddr::V6(a) => checksum::add(0, &a.0),
    }
}

/// Copies `master` (a segment from [`build_master`]) into `buf` and makes it `repr`'s
/// segment from `src` to `dst`: the header fields are written and the checksum updated
/// incrementally. `repr` must [`fit`](fits) and carry exactly the master's payload length.
#[inline]
pub fn write(master: &[u8], repr: &TcpRepr, src: IpAddr, dst: IpAddr, buf: &mut [u8]) {
    debug_assert!(fits(repr) && master.len() == HEADER + repr.payload_len);
    let seg = &mut buf[..master.len()];
    seg.copy_from_slice(master);
    rewrite(seg, repr, src, dst);
}

/// As [`write`], on a copy of the master that is already in place (a replica).
#[inline]
pub fn rewrite(seg: &mut [u8], repr: &TcpRepr, src: IpAddr, dst: IpAddr) {
    let (tsval, tsecr) = repr.options.timestamps.unwrap_or((0, 0));
    let flags = (8u16 << 12) | u16::from(repr.flags.0);
    seg[0..2].copy_from_slice(&repr.src_port.to_be_bytes());
    seg[2..4].copy_from_slice(&repr.dst_port.to_be_bytes());
    seg[4..8].copy_from_slice(&repr.seq.to_be_bytes());
    seg[8..12].copy_from_slice(&repr.ack.to_be_bytes());
    seg[12..14].copy_from_slice(&flags.to_be_bytes());
    seg[14..16].copy_from_slice(&repr.window.to_be_bytes());
    seg[24..28].copy_from_slice(&tsval.to_be_bytes());
    seg[28..32].copy_from_slice(&tsecr.to_be_bytes());
    let hc = u16::from_be_bytes([seg[16], seg[17]]);
    // The fields that were zero in the template: their old words add nothing.
    let added = addr_words(src)
        + addr_words(dst)
        + u64::from(repr.src_port)
        + u64::from(repr.dst_port)
        + words32(repr.seq)
        + words32(repr.ack)
        + u64::from(repr.window)
        + words32(tsval)
        + words32(tsecr);
    let sum = u64::from(!hc) + added + u64::from(!TEMPLATE_FLAGS) + u64::from(flags);
    seg[16..18].copy_from_slice(&(!checksum::fold(sum)).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::tcp::TcpOptions;

    fn repr(flags: u8, len: usize) -> TcpRepr {
        TcpRepr {
            src_port: 80,
            dst_port: 51_234,
            seq: 0xdead_beef,
            ack: 0x0102_0304,
            flags: TcpFlags(flags),
            window: 502,
            options: TcpOptions { timestamps: Some((0xffff_fffe, 77)), ..Default::default() },
            payload_len: len,
        }
    }

    #[test]
    fn same_bytes_as_the_ordinary_path_in_both_families() {
        let v6 = |s: &str| IpAddr::V6(s.parse::<std::net::Ipv6Addr>().unwrap().into());
        let pairs = [
            (IpAddr::V4(Ipv4Addr([198, 18, 0, 1])), IpAddr::V4(Ipv4Addr([198, 18, 0, 2]))),
            (v6("2001:2::1"), v6("2001:2::ffff:2")),
        ];
        for (src, dst) in pairs {
            same_bytes(src, dst);
        }
    }

    fn same_bytes(src: IpAddr, dst: IpAddr) {
        for len in [1usize, 2, 3, 100, 1447, 1448] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut m = Vec::new();
            build_master(&payload, &mut m);
            for flags in [TcpFlags::ACK, TcpFlags::ACK | TcpFlags::PSH, TcpFlags::ACK | TcpFlags::PSH | TcpFlags::FIN] {
                let r = repr(flags, len);
                assert!(fits(&r));
                let mut fast = vec![0u8; HEADER + len];
                write(&m, &r, src, dst, &mut fast);
                let mut slow = vec![0u8; HEADER + len];
                slow[HEADER..].copy_from_slice(&payload);
                r.emit(&mut slow, src, dst);
                assert_eq!(fast, slow, "len {len} flags {flags:#x}");
            }
        }
    }

    #[test]
    fn sack_blocks_or_no_timestamps_do_not_fit() {
        let mut r = repr(TcpFlags::ACK, 10);
        r.options.sack_blocks[0] = Some((1, 2));
        assert!(!fits(&r));
        let mut r = repr(TcpFlags::ACK, 10);
        r.options.timestamps = None;
        assert!(!fits(&r));
        assert!(!fits(&repr(TcpFlags::ACK | TcpFlags::SYN, 0)));
    }
}
