//! Response rate limiting (RRL), as Knot DNS and NSD do it: responses per second per client
//! prefix and response class, over UDP only. A client over the limit gets nothing, except
//! every `slip`-th response, which is sent truncated (TC=1, no records) so that a real
//! client behind a spoofed flood can still get its answer over TCP; a reflection attack
//! gains nothing from it.
//!
//! Buckets are token buckets in a fixed table, two-way set associative under a key of the
//! process's own (an attacker cannot aim collisions): a new key takes the staler of its two
//! buckets, so a flood from many prefixes evicts idle entries and never makes two clients
//! share one.

use crate::transfer::Acl;
use std::hash::{BuildHasher, Hasher};
use wire::IpAddr;

/// What kind of response a bucket counts (answers of different kinds to one client are
/// limited apart, as in Knot and BIND).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Class {
    /// A positive answer or a referral.
    Normal = 0,
    /// NXDOMAIN: keyed by what answered it (the zone's denial), not the name asked, so that
    /// random names do not each get a bucket.
    Nxdomain = 1,
    /// NOERROR without an answer (NODATA).
    Empty = 2,
    /// Any other error (REFUSED, FORMERR, ...): keyed by the client only.
    Error = 3,
    /// A response larger than 1 KB: the best amplification, limited apart.
    Large = 4,
    /// QTYPE ANY.
    Any = 5,
}

/// What to do with a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Under the limit: send it.
    Pass,
    /// Over: send nothing.
    Drop,
    /// Over, but this one goes out truncated.
    Slip,
}

/// The limits.
#[derive(Debug, Clone, Copy)]
pub struct RrlSettings {
    /// Responses per second per bucket (a bucket holds up to a second's worth).
    pub rate: u32,
    /// Every `slip`-th limited response is sent truncated; 0 never, 1 always.
    pub slip: u32,
    /// Leading bits of an IPv4 client address that make its prefix.
    pub ipv4_prefix: u8,
    /// Leading bits of an IPv6 client address that make its prefix.
    pub ipv6_prefix: u8,
    /// Buckets (per engine).
    pub table_size: usize,
}

impl Default for RrlSettings {
    /// BIND's and NSD's defaults for prefixes and slip; the rate has no default (RRL is off
    /// unless one is given).
    fn default() -> Self {
        RrlSettings { rate: 200, slip: 2, ipv4_prefix: 24, ipv6_prefix: 56, table_size: 65_536 }
    }
}

impl RrlSettings {
    /// The settings if they are in range, else what is not (named as the options are).
    pub fn checked(self) -> Result<RrlSettings, String> {
        if self.ipv4_prefix == 0 || self.ipv4_prefix > 32 {
            return Err(format!("--rrl-ipv4-prefix must be 1 to 32, not {}", self.ipv4_prefix));
        }
        if self.ipv6_prefix == 0 || self.ipv6_prefix > 128 {
            return Err(format!("--rrl-ipv6-prefix must be 1 to 128, not {}", self.ipv6_prefix));
        }
        if !(2..=1 << 26).contains(&self.table_size) {
            return Err(format!("--rrl-table-size must be 2 to {}, not {}", 1 << 26, self.table_size));
        }
        Ok(self)
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    /// The key's hash (0: never used).
    tag: u64,
    /// When the tokens were last brought up to date, in ms.
    last: u64,
    /// Thousandths of a response.
    tokens: u64,
    /// Limited responses since the last slip.
    limited: u32,
}

/// One engine's RRL table.
pub struct Rrl {
    settings: RrlSettings,
    table: Vec<Bucket>,
    keys: std::collections::hash_map::RandomState,
    /// Clients never limited (monitoring, other servers of the operator's).
    exempt: Acl,
}

impl Rrl {
    /// An empty table for `settings` (`rate` at least 1, `table_size` rounded up to even).
    pub fn new(settings: RrlSettings) -> Rrl {
        let size = settings.table_size.max(2).next_multiple_of(2);
        Rrl { settings, table: vec![Bucket::default(); size], keys: Default::default(), exempt: Acl::default() }
    }

    /// Never limits the clients `exempt` names.
    pub fn with_exempt(mut self, exempt: Acl) -> Rrl {
        self.exempt = exempt;
        self
    }

    /// The prefix of `addr` the limits count, as bytes (the rest zeroed).
    fn prefix(&self, addr: IpAddr) -> [u8; 16] {
        let (octets, bits): ([u8; 16], u8) = match addr {
            IpAddr::V4(a) => {
                let mut o = [0u8; 16];
                o[..4].copy_from_slice(&a.0);
                o[15] = 4; // keeps an IPv4 prefix apart from an IPv6 one with the same bits
                (o, self.settings.ipv4_prefix.min(32))
            }
            IpAddr::V6(a) => (a.0, self.settings.ipv6_prefix.min(128)),
        };
        let mut out = octets;
        for (i, b) in out.iter_mut().enumerate().take(if matches!(addr, IpAddr::V4(_)) { 4 } else { 16 }) {
            let keep = u32::from(bits).saturating_sub(8 * i as u32).min(8);
            *b &= if keep == 0 { 0 } else { 0xffu8 << (8 - keep) };
        }
        out
    }

    /// Counts a response of `class` about `key` (what answered it; 0 for none) to `client`
    /// at `now_ms` and says what to do with it.
    pub fn check(&mut self, now_ms: u64, client: IpAddr, class: Class, key: usize) -> Decision {
        if !self.exempt.is_empty() && self.exempt.allows(client) {
            return Decision::Pass;
        }
        let mut h = self.keys.build_hasher();
        h.write(&self.prefix(client));
        h.write_u8(class as u8);
        h.write_usize(if class == Class::Error { 0 } else { key });
        let tag = h.finish() | 1;
        let pair = (tag as usize >> 1) % (self.table.len() / 2) * 2;
        let cap = u64::from(self.settings.rate) * 1000;
        let at = if self.table[pair].tag == tag {
            pair
        } else if self.table[pair + 1].tag == tag {
            pair + 1
        } else {
            // A new key: it takes the bucket used longer ago, full.
            let at = if self.table[pair].last <= self.table[pair + 1].last { pair } else { pair + 1 };
            self.table[at] = Bucket { tag, last: now_ms, tokens: cap, limited: 0 };
            at
        };
        let b = &mut self.table[at];
        let elapsed = now_ms.saturating_sub(b.last);
        b.tokens = (b.tokens + elapsed * u64::from(self.settings.rate)).min(cap);
        b.last = b.last.max(now_ms);
        if b.tokens >= 1000 {
            b.tokens -= 1000;
            return Decision::Pass;
        }
        if self.settings.slip == 0 {
            return Decision::Drop;
        }
        b.limited += 1;
        if b.limited >= self.settings.slip {
            b.limited = 0;
            Decision::Slip
        } else {
            Decision::Drop
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::{Ipv4Addr, Ipv6Addr};

    fn v4(a: [u8; 4]) -> IpAddr {
        IpAddr::V4(Ipv4Addr(a))
    }

    fn rrl(rate: u32, slip: u32) -> Rrl {
        Rrl::new(RrlSettings { rate, slip, table_size: 1024, ..RrlSettings::default() })
    }

    #[test]
    fn a_second_of_burst_then_the_rate_with_every_second_limited_response_slipped() {
        let mut r = rrl(10, 2);
        let c = v4([198, 18, 7, 1]);
        let first: Vec<Decision> = (0..14).map(|_| r.check(1000, c, Class::Normal, 7)).collect();
        assert!(first[..10].iter().all(|&d| d == Decision::Pass), "{first:?}");
        assert_eq!(&first[10..], &[Decision::Drop, Decision::Slip, Decision::Drop, Decision::Slip]);
        // 10 per second: one every 100 ms.
        assert_eq!(r.check(1099, c, Class::Normal, 7), Decision::Drop);
        assert_eq!(r.check(1100, c, Class::Normal, 7), Decision::Pass);
        assert_eq!(r.check(1100, c, Class::Normal, 7), Decision::Slip);
        // After a quiet spell, no more than a second's worth.
        let later: Vec<Decision> = (0..12).map(|_| r.check(60_000, c, Class::Normal, 7)).collect();
        assert_eq!(later.iter().filter(|&&d| d == Decision::Pass).count(), 10);
    }

    #[test]
    fn prefixes_classes_and_keys_are_limited_apart() {
        let mut r = rrl(1, 0);
        assert_eq!(r.check(0, v4([198, 18, 7, 1]), Class::Normal, 7), Decision::Pass);
        assert_eq!(r.check(0, v4([198, 18, 7, 200]), Class::Normal, 7), Decision::Drop, "one /24");
        assert_eq!(r.check(0, v4([198, 18, 8, 1]), Class::Normal, 7), Decision::Pass, "another /24");
        assert_eq!(r.check(0, v4([198, 18, 7, 1]), Class::Nxdomain, 7), Decision::Pass, "another class");
        assert_eq!(r.check(0, v4([198, 18, 7, 1]), Class::Normal, 8), Decision::Pass, "another answer");
        assert_eq!(r.check(0, v4([198, 18, 7, 1]), Class::Error, 1), Decision::Pass);
        assert_eq!(r.check(0, v4([198, 18, 7, 1]), Class::Error, 2), Decision::Drop, "errors: by client only");
        let a = |last: u16| IpAddr::V6(Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0x12, 0, 0, 0, 0, 0, 0, 0, last as u8]));
        assert_eq!(r.check(0, a(1), Class::Normal, 7), Decision::Pass);
        assert_eq!(r.check(0, a(2), Class::Normal, 7), Decision::Drop, "one /56");
        let same56 = IpAddr::V6(Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0x13, 0, 0, 0, 0, 0, 0, 0, 1]));
        assert_eq!(r.check(0, same56, Class::Normal, 7), Decision::Drop, "bits past 56 differ: one /56");
        let other56 = IpAddr::V6(Ipv6Addr([0x20, 1, 0, 2, 0, 0, 1, 0x12, 0, 0, 0, 0, 0, 0, 0, 1]));
        assert_eq!(r.check(0, other56, Class::Normal, 7), Decision::Pass, "another /56");
    }

    #[test]
    fn exempt_clients_are_never_limited() {
        let exempt = Acl::parse(&["198.18.9.0/24"]).unwrap();
        let mut r = rrl(1, 0).with_exempt(exempt);
        let (monitor, other) = (v4([198, 18, 9, 5]), v4([198, 18, 10, 5]));
        assert!((0..100).all(|_| r.check(0, monitor, Class::Normal, 7) == Decision::Pass));
        assert_eq!(r.check(0, other, Class::Normal, 7), Decision::Pass);
        assert_eq!(r.check(0, other, Class::Normal, 7), Decision::Drop, "the others are");
    }

    #[test]
    fn a_flood_from_many_prefixes_never_limits_a_quiet_client() {
        let mut r = Rrl::new(RrlSettings { rate: 5, slip: 0, table_size: 64, ..RrlSettings::default() });
        let quiet = v4([198, 19, 0, 2]);
        let mut passed = 0;
        for t in 0..2000u64 {
            for i in 0..50u32 {
                let b = (t as u32 * 50 + i).to_be_bytes();
                r.check(t * 10, v4([198, 18, b[2], b[3]]), Class::Normal, 1);
            }
            if t % 50 == 0 && r.check(t * 10, quiet, Class::Normal, 1) == Decision::Pass {
                passed += 1;
            }
        }
        assert_eq!(passed, 40, "2 per second, under its 5: every one");
    }
}
