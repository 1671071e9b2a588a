//! The daemon's policy: which users may be granted which addresses, protocols and ports,
//! and under which rate caps. A TOML file of `[[allow]]` entries; nothing is allowed that no
//! entry allows (root included only if an entry names it).
//!
//! ```toml
//! [[allow]]
//! user = "dns"                  # or uid = 1001
//! addrs = ["198.18.0.53"]
//! ports = ["udp/53", "tcp/53"]  # PROTO/PORT or PROTO/LOW-HIGH
//! max_pps = 200000              # optional: grants must ask for a rate at most this
//! max_queues = 2                # optional (1 by default)
//! max_memory_mib = 512          # optional: packet memory over all queues (256 by default)
//! ```

use crate::{Flow, Proto, Want};
use serde::Deserialize;
use std::net::Ipv4Addr;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    allow: Vec<RawEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    user: Option<String>,
    uid: Option<u32>,
    addrs: Vec<Ipv4Addr>,
    ports: Vec<String>,
    max_pps: Option<u64>,
    max_bps: Option<u64>,
    max_queues: Option<u32>,
    max_memory_mib: Option<u64>,
}

/// Who an entry is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// A user by name.
    User(String),
    /// A user id.
    Uid(u32),
}

/// One `[[allow]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Whom it allows.
    pub who: Who,
    /// The addresses.
    pub addrs: Vec<Ipv4Addr>,
    /// (protocol, lowest port, highest port).
    pub ports: Vec<(Proto, u16, u16)>,
    /// Rate caps: a grant under this entry must ask for at most these.
    pub max_pps: Option<u64>,
    /// In bits per second.
    pub max_bps: Option<u64>,
    /// Most queues.
    pub max_queues: u32,
    /// Most packet memory over all of a grant's queues, in MiB.
    pub max_memory_mib: u64,
}

/// Packet memory a grant may have when its entry does not say.
pub const DEFAULT_MAX_MEMORY_MIB: u64 = 256;

/// The policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Its entries, in file order.
    pub entries: Vec<Entry>,
}

fn port_rule(s: &str) -> Result<(Proto, u16, u16), String> {
    let f = Flow::parse(s).map_err(|e| format!("port rule {e}"))?;
    Ok((f.proto, f.lo, f.hi))
}

impl Policy {
    /// Parses the policy file's text; errors name the entry.
    pub fn parse(text: &str) -> Result<Policy, String> {
        // toml's message spans lines (a picture of the place); one line says where and what.
        let f: File = toml::from_str(text).map_err(|e| {
            let m = e.to_string();
            let lines: Vec<&str> = m.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            match (lines.first(), lines.last()) {
                (Some(a), Some(b)) if a != b => format!("{a}: {b}"),
                _ => m.trim().to_string(),
            }
        })?;
        let mut entries = Vec::new();
        for (i, e) in f.allow.into_iter().enumerate() {
            let at = format!("allow entry {}", i + 1);
            let who = match (e.user, e.uid) {
                (Some(u), None) => Who::User(u),
                (None, Some(u)) => Who::Uid(u),
                _ => return Err(format!("{at}: give user = \"NAME\" or uid = N")),
            };
            let ports = e
                .ports
                .iter()
                .map(|p| port_rule(p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|m| format!("{at}: {m}"))?;
            if e.addrs.is_empty() || ports.is_empty() {
                return Err(format!("{at}: addrs and ports must not be empty"));
            }
            entries.push(Entry {
                who,
                addrs: e.addrs,
                ports,
                max_pps: e.max_pps,
                max_bps: e.max_bps,
                max_queues: e.max_queues.unwrap_or(1).max(1),
                max_memory_mib: e.max_memory_mib.unwrap_or(DEFAULT_MAX_MEMORY_MIB),
            });
        }
        Ok(Policy { entries })
    }

    /// Why user `uid` (named `user`, if it has a name) may not have `w`, or Ok.
    pub fn permits(&self, uid: u32, user: Option<&str>, w: &Want) -> Result<(), String> {
        let mine: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| match &e.who {
                Who::Uid(u) => *u == uid,
                Who::User(n) => Some(n.as_str()) == user,
            })
            .collect();
        if mine.is_empty() {
            return Err(format!("user {} may not be granted anything", user.map_or(uid.to_string(), str::to_string)));
        }
        // One entry covers every flow: its caps are the grant's.
        let allows = |e: &Entry, f: &Flow| e.ports.iter().any(|&(p, lo, hi)| p == f.proto && lo <= f.lo && f.hi <= hi);
        let covering: Vec<&&Entry> =
            mine.iter().filter(|e| e.addrs.contains(&w.addr) && w.flows.iter().all(|f| allows(e, f))).collect();
        let Some(e) = covering.first() else {
            let f = w.flows.iter().find(|f| !mine.iter().any(|e| e.addrs.contains(&w.addr) && allows(e, f)));
            return Err(match f {
                Some(f) => format!("{} {f} is not among the grants allowed to this user", w.addr),
                None => format!("no one entry allows {} {} together", w.addr, w.flows_text()),
            });
        };
        if w.queues > e.max_queues {
            return Err(format!("{} queues asked, {} allowed", w.queues, e.max_queues));
        }
        let mib = (w.memory * u64::from(w.queues)).div_ceil(1 << 20);
        if mib > e.max_memory_mib {
            return Err(format!("{mib} MiB of packet memory asked, {} allowed", e.max_memory_mib));
        }
        let over = |cap: Option<u64>, asked: Option<u64>, what: &str| match (cap, asked) {
            (Some(c), None) => Err(format!("a rate of at most {c} {what} must be asked for")),
            (Some(c), Some(a)) if a > c => Err(format!("{a} {what} asked, at most {c} allowed")),
            _ => Ok(()),
        };
        over(e.max_pps, w.pps, "packets/s")?;
        over(e.max_bps, w.bps, "bits/s")
    }
}
