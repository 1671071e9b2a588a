//! Modules that act on flows: HashLB (a flow to a gate by hash), ACL (5-tuple rules) and
//! RateLimit (a policer).

use super::headers::flow_of;
use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;
use timer::Instant;

/// A 64-bit mix of a flow's fields (the same both ways when `symmetric`).
fn flow_hash(src: u32, dst: u32, proto: u8, sport: u16, dport: u16, symmetric: bool) -> u64 {
    let (a, b) = if symmetric && (src, sport) > (dst, dport) {
        ((dst, dport), (src, sport))
    } else {
        ((src, sport), (dst, dport))
    };
    let mut h = (u64::from(a.0) << 32 | u64::from(b.0)) ^ 0x9e37_79b9_7f4a_7c15;
    h = (h ^ (h >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= u64::from(a.1) << 40 | u64::from(b.1) << 24 | u64::from(proto);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Spreads flows over `gates` by a hash of their 5-tuple (`mode=l4`, the default) or of
/// their addresses only (`mode=l3`); both directions of a flow take the same gate. Frames
/// that are not IPv4 go to gate 0.
pub struct HashLb {
    gates: u32,
    l4: bool,
}

impl HashLb {
    pub(super) fn new(a: &Args) -> Result<HashLb, String> {
        let l4 = match a.string("mode")?.as_deref() {
            None | Some("l4") => true,
            Some("l3") => false,
            Some(m) => return Err(format!("mode '{m}': l3 or l4")),
        };
        Ok(HashLb { gates: a.gates()?, l4 })
    }
}

impl Module for HashLb {
    fn ogates(&self) -> u32 {
        self.gates
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let g = match flow_of(ctx.pool.data(p)) {
                Some(f) if self.l4 => flow_hash(f.src, f.dst, f.proto, f.sport, f.dport, true),
                Some(f) => flow_hash(f.src, f.dst, 0, 0, 0, true),
                None => 0,
            };
            out.emit((g % u64::from(self.gates)) as u32, p);
        }
    }
}

/// One ACL rule: every field given must match.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    src: Option<(u32, u32)>,
    dst: Option<(u32, u32)>,
    proto: Option<u8>,
    sport: Option<(u16, u16)>,
    dport: Option<(u16, u16)>,
    pass: bool,
    hits: u64,
}

fn prefix(v: &str) -> Result<(u32, u32), String> {
    let (a, len) = v.split_once('/').unwrap_or((v, "32"));
    let a: std::net::Ipv4Addr = a.parse().map_err(|_| format!("'{v}' is not an IPv4 address or prefix"))?;
    let len: u32 = len.parse().ok().filter(|l| *l <= 32).ok_or_else(|| format!("'{v}': prefix length 0 to 32"))?;
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    Ok((u32::from(a) & mask, mask))
}

fn ports(v: &str) -> Result<(u16, u16), String> {
    let bad = || format!("'{v}' is not a port or a range LOW-HIGH");
    let (lo, hi) = v.split_once('-').unwrap_or((v, v));
    let (lo, hi): (u16, u16) = (lo.parse().map_err(|_| bad())?, hi.parse().map_err(|_| bad())?);
    if lo > hi {
        return Err(bad());
    }
    Ok((lo, hi))
}

impl Rule {
    /// `"src=198.18.1.0/24 dst=198.18.2.1 proto=tcp dport=80 pass"` (pass or drop last).
    fn parse(s: &str) -> Result<Rule, String> {
        let mut r = Rule { src: None, dst: None, proto: None, sport: None, dport: None, pass: false, hits: 0 };
        let mut verdict = None;
        for w in s.split_whitespace() {
            match w.split_once('=') {
                Some(("src", v)) => r.src = Some(prefix(v)?),
                Some(("dst", v)) => r.dst = Some(prefix(v)?),
                Some(("proto", v)) => {
                    r.proto = Some(match v {
                        "tcp" => wire::Protocol::TCP,
                        "udp" => wire::Protocol::UDP,
                        "icmp" => wire::Protocol::ICMP,
                        n => n.parse().map_err(|_| format!("proto '{n}': tcp, udp, icmp or a number"))?,
                    })
                }
                Some(("sport", v)) => r.sport = Some(ports(v)?),
                Some(("dport", v)) => r.dport = Some(ports(v)?),
                Some((k, _)) => return Err(format!("rule '{s}': no field '{k}' (src, dst, proto, sport, dport)")),
                None if w == "pass" || w == "drop" => verdict = Some(w == "pass"),
                None => return Err(format!("rule '{s}': '{w}' is neither field=value nor pass/drop")),
            }
        }
        r.pass = verdict.ok_or_else(|| format!("rule '{s}' needs pass or drop"))?;
        Ok(r)
    }

    fn matches(&self, f: &super::headers::Flow) -> bool {
        let within = |v: u16, r: Option<(u16, u16)>| r.is_none_or(|(lo, hi)| f.ports && (lo..=hi).contains(&v));
        self.src.is_none_or(|(a, m)| f.src & m == a)
            && self.dst.is_none_or(|(a, m)| f.dst & m == a)
            && self.proto.is_none_or(|p| f.proto == p)
            && within(f.sport, self.sport)
            && within(f.dport, self.dport)
    }
}

/// Passes or drops each IPv4 packet by the first of `rules` it matches (5-tuple fields,
/// prefixes and port ranges); packets no rule matches, and frames that are not IPv4, take
/// `default` (drop unless `default=pass`).
pub struct Acl {
    rules: Vec<Rule>,
    default_pass: bool,
    defaulted: u64,
}

impl Acl {
    pub(super) fn new(a: &Args) -> Result<Acl, String> {
        let rules = a.strings("rules")?.iter().map(|s| Rule::parse(s)).collect::<Result<Vec<_>, _>>()?;
        let default_pass = match a.string("default")?.as_deref() {
            None | Some("drop") => false,
            Some("pass") => true,
            Some(d) => return Err(format!("default '{d}': pass or drop")),
        };
        Ok(Acl { rules, default_pass, defaulted: 0 })
    }
}

impl Module for Acl {
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let verdict = flow_of(ctx.pool.data(p)).and_then(|f| {
                let r = self.rules.iter_mut().find(|r| r.matches(&f))?;
                r.hits += 1;
                Some(r.pass)
            });
            let pass = verdict.unwrap_or_else(|| {
                self.defaulted += 1;
                self.default_pass
            });
            if pass {
                out.emit(0, p);
            } else {
                out.drop(p);
            }
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let matched: u64 = self.rules.iter().map(|r| r.hits).sum();
        vec![("matched", matched), ("defaulted", self.defaulted)]
    }
}

/// A policer: passes at most `pps` packets per second or `bps` bits per second (a token
/// bucket of `burst` packets or bits, 10 ms worth by default); the excess goes out of gate 1,
/// or is dropped if nothing is connected there.
pub struct RateLimit {
    /// Units per second, and whether a unit is a bit (else a packet).
    rate: u64,
    bits: bool,
    /// Tokens times 1e9 (a nanosecond adds `rate`).
    tokens: u128,
    burst: u128,
    last: Option<Instant>,
    excess: u64,
}

impl RateLimit {
    pub(super) fn new(a: &Args) -> Result<RateLimit, String> {
        let pps = a.int("pps", 0, 0..=i64::MAX)? as u64;
        let bps = a.int("bps", 0, 0..=i64::MAX)? as u64;
        let (rate, bits) = match (pps, bps) {
            (0, 0) => return Err("give pps=N or bps=N".into()),
            (p, 0) => (p, false),
            (0, b) => (b, true),
            _ => return Err("give pps or bps, not both".into()),
        };
        let burst = a.int("burst", (rate / 100).max(if bits { 12_000 } else { 1 }) as i64, 1..=i64::MAX)? as u128;
        // The bucket starts full, as a policer's does (RFC 2697 §3): a module inserted under a
        // stream that keeps to the rate must not drop its first batch as excess.
        let burst = burst * 1_000_000_000;
        Ok(RateLimit { rate, bits, tokens: burst, burst, last: None, excess: 0 })
    }
}

impl Module for RateLimit {
    fn ogates(&self) -> u32 {
        2
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        let dt = u128::from(ctx.now.since(*self.last.get_or_insert(ctx.now)).as_nanos());
        self.tokens = (self.tokens + dt * u128::from(self.rate)).min(self.burst);
        self.last = Some(ctx.now);
        for &p in batch.pkts() {
            let cost = if self.bits { ctx.pool.data(p).len() as u128 * 8 } else { 1 } * 1_000_000_000;
            if self.tokens >= cost {
                self.tokens -= cost;
                out.emit(0, p);
            } else {
                self.excess += 1;
                out.emit(1, p);
            }
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("excess", self.excess)]
    }
}

#[cfg(test)]
mod tests;
