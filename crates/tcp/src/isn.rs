//! Initial sequence numbers (RFC 6528) and SYN cookies (RFC 4987), both keyed hashes of the
//! connection's addresses.

use crate::seq::Seq;
use crate::siphash::{hash, Key};
use crate::tuple::{Tuple, TUPLE_BYTES};
use timer::{Duration, Instant};

/// The tuple's bytes with `extra` after them, and their length (16 for IPv4, 40 for IPv6).
fn tuple_bytes(t: &Tuple, extra: u32) -> ([u8; TUPLE_BYTES + 4], usize) {
    let mut b = [0u8; TUPLE_BYTES + 4];
    let (tb, n) = t.bytes();
    b[..n].copy_from_slice(&tb[..n]);
    b[n..n + 4].copy_from_slice(&extra.to_be_bytes());
    (b, n + 4)
}

/// RFC 6528: ISN = M + F(localip, localport, remoteip, remoteport, secretkey), M a 4 µs clock.
pub fn isn(key: Key, t: &Tuple, now: Instant) -> Seq {
    let (b, n) = tuple_bytes(t, 0);
    Seq((hash(key, &b[..n]) as u32).wrapping_add((now.as_micros() / 4) as u32))
}

/// The secret offset of a tuple's timestamp clock ([`ts_clock`](crate::timestamps::ts_clock)): the
/// same for every incarnation of the tuple, unrelated across tuples.
pub fn ts_offset(key: Key, t: &Tuple) -> u32 {
    let (b, n) = tuple_bytes(t, 0x7473_6f66);
    hash(key, &b[..n]) as u32
}

/// MSS values a cookie can carry (3 bits); the peer's MSS is rounded down to one of them.
const MSS_TABLE: [u16; 8] = [216, 536, 1220, 1360, 1400, 1440, 1452, 1460];
/// A cookie's time slice: cookies stay valid for one to two slices.
const SLICE: Duration = Duration::from_secs(64);

fn slice(now: Instant) -> u32 {
    (now.as_nanos() / SLICE.as_nanos()) as u32
}

fn mac(key: Key, t: &Tuple, peer_isn: u32, slice: u32, mss_idx: u32) -> u32 {
    let mut b = [0u8; TUPLE_BYTES + 12];
    let (tb, n) = tuple_bytes(t, peer_isn);
    b[..n].copy_from_slice(&tb[..n]);
    b[n..n + 4].copy_from_slice(&slice.to_be_bytes());
    b[n + 4..n + 8].copy_from_slice(&mss_idx.to_be_bytes());
    hash(key, &b[..n + 8]) as u32 & 0x00ff_ffff
}

/// The cookie to use as our ISN in the SYN-ACK: 5 bits of time slice, 3 of MSS index and a
/// 24-bit MAC over the addresses, the peer's ISN, the slice and the index.
pub fn cookie(key: Key, t: &Tuple, peer_isn: u32, mss: u16, now: Instant) -> Seq {
    let slice = slice(now);
    let idx = MSS_TABLE.iter().rposition(|&m| m <= mss).unwrap_or(0) as u32;
    Seq(((slice & 31) << 27) | (idx << 24) | mac(key, t, peer_isn, slice, idx))
}

/// Checks the ACK completing a cookie handshake: `ack` acknowledges cookie + 1 and `seq` is
/// the peer's ISN + 1. Returns the peer's MSS, or None if the cookie is forged or stale.
pub fn check_cookie(key: Key, t: &Tuple, seq: u32, ack: u32, now: Instant) -> Option<u16> {
    let c = ack.wrapping_sub(1);
    let now_slice = slice(now);
    let idx = (c >> 24) & 7;
    // The slice the cookie was made in: now's or the one before.
    let slice = (0..2).map(|back| now_slice.wrapping_sub(back)).find(|s| s & 31 == c >> 27)?;
    (mac(key, t, seq.wrapping_sub(1), slice, idx) == c & 0x00ff_ffff).then_some(MSS_TABLE[idx as usize])
}

/// Window scale and SACK ride in the low 6 bits of our TSval (echoed back in TSecr).
/// The result stays below `tsval`, so the connection's later timestamps (from the same clock)
/// never look older to the peer's PAWS check.
pub fn options_to_ts(tsval: u32, wscale: Option<u8>, sack: bool) -> u32 {
    let ws = u32::from(wscale.map_or(15, |w| w.min(14)));
    (tsval.wrapping_sub(64) & !0x3f) | ws | (u32::from(sack) << 4)
}

/// What a valid cookie recalls of the peer's SYN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieSyn {
    /// The peer's MSS, rounded down to the cookie's table.
    pub mss: u16,
    /// The peer's window scale, if it offered one (known only with timestamps).
    pub wscale: Option<u8>,
    /// The peer offered SACK (known only with timestamps).
    pub sack: bool,
}

impl CookieSyn {
    /// The MSS from [`check_cookie`], and window scale and SACK read back from the TSecr that
    /// echoes what [`options_to_ts`] stored; without timestamps, neither.
    pub fn recall(mss: u16, tsecr: Option<u32>) -> CookieSyn {
        match tsecr {
            Some(e) => {
                let ws = (e & 15) as u8;
                CookieSyn { mss, wscale: (ws != 15).then_some(ws), sack: e & 16 != 0 }
            }
            None => CookieSyn { mss, wscale: None, sack: false },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::Ipv4Addr;

    const K: Key = Key([0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210]);
    const T: Tuple = Tuple {
        local: wire::IpAddr::V4(Ipv4Addr([198, 18, 0, 10])),
        remote: wire::IpAddr::V4(Ipv4Addr([198, 18, 0, 2])),
        local_port: 7,
        remote_port: 40000,
    };

    const US: fn(u64) -> Instant = Instant::from_micros;

    #[test]
    fn isn_moves_with_time_and_differs_per_tuple() {
        let a = isn(K, &T, Instant::ZERO);
        assert_eq!(isn(K, &T, US(4_000)).since(a), 1000);
        let other = Tuple { remote_port: 40001, ..T };
        assert_ne!(isn(K, &other, Instant::ZERO), a);
    }

    #[test]
    fn cookies_validate_within_two_slices_only() {
        let made = US(10_000_000);
        let c = cookie(K, &T, 1000, 1460, made);
        let later = US(20_000_000);
        assert_eq!(check_cookie(K, &T, 1001, c.0 + 1, later), Some(1460));
        assert_eq!(check_cookie(K, &T, 1001, c.0 + 1, made + SLICE), Some(1460));
        assert_eq!(check_cookie(K, &T, 1001, c.0 + 1, made + SLICE * 3), None, "stale");
        assert_eq!(check_cookie(K, &T, 1002, c.0 + 1, later), None, "other peer ISN");
        assert_eq!(check_cookie(K, &T, 1001, c.0 + 2, later), None, "forged");
        let other = Tuple { remote_port: 40001, ..T };
        assert_eq!(check_cookie(K, &other, 1001, c.0 + 1, later), None, "other tuple");
        let small = cookie(K, &T, 1000, 1300, Instant::ZERO);
        assert_eq!(check_cookie(K, &T, 1001, small.0 + 1, Instant::ZERO), Some(1220));
    }

    #[test]
    fn options_round_trip_through_the_timestamp() {
        for ws in [None, Some(0), Some(7), Some(14)] {
            for sack in [false, true] {
                let ts = options_to_ts(0xdead_beef, ws, sack);
                assert_eq!(CookieSyn::recall(1460, Some(ts)), CookieSyn { mss: 1460, wscale: ws, sack });
                assert!(ts < 0xdead_beef && ts > 0xdead_beef - 128);
            }
        }
    }
}
