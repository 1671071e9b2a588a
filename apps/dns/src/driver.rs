//! The answers the XDP program gives at the driver: for every (name, type) whose response is
//! fixed bytes, the response the engine itself would send, found by asking the engine.
//!
//! Each entry is made by running a query through [`DnsServer`] — the same code that answers
//! in the engine — and keeping what follows the question, so both paths send the same bytes
//! by construction. Names that do not exist are answered through their closest encloser:
//! two probe names of different lengths below it show which name pointers move with the
//! question's length (the patches), and an answer that differs in anything else (an NSEC
//! chosen per name) is left to the engine.

use crate::compile::{BelowKind, Catalog, NodeInfo};
use crate::server::DnsServer;
use dns::{rtype, HEADER_LEN};
use std::collections::HashMap;
use std::sync::Arc;

/// What the driver's tables can hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Wire bytes of a name.
    pub name_max: usize,
    /// Bytes of an answer behind the question.
    pub body_max: usize,
    /// Name pointers moved by the question's length.
    pub patches: usize,
}

/// What an entry's key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The name, one type.
    Exact,
    /// The name, every type without its own entry.
    Other,
    /// Names below it that do not exist, one type.
    Below,
    /// Names below it that do not exist, every other type.
    BelowOther,
}

/// Which answer an entry gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// This one.
    Id(u32),
    /// None here: the engine answers.
    Pass,
    /// (For DO) the same as without DO.
    Same,
}

/// One key of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Wire form.
    pub name: Vec<u8>,
    /// The type (0 for the kinds that cover every other type).
    pub qtype: u16,
    /// What it names.
    pub kind: Kind,
    /// The answer without DO.
    pub plain: Pick,
    /// The answer with DO.
    pub dnssec: Pick,
    /// A `BelowOther` entry whose name also has `Below` entries (a wildcard's types).
    pub typed: bool,
}

/// An answer: the header's flags (no RD, CD) and counts (no OPT), the bytes behind the
/// question, the question name length they were made for and the body offsets of the name
/// pointers that move with it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Answer {
    /// Flags.
    pub flags: u16,
    /// Answer, authority, additional.
    pub counts: [u16; 3],
    /// Bytes behind the question.
    pub body: Vec<u8>,
    /// The question name's length.
    pub base_len: usize,
    /// Offsets of pointers to move.
    pub patches: Vec<u16>,
}

/// The table for the driver.
#[derive(Debug, Default, Clone)]
pub struct Table {
    /// Keys.
    pub entries: Vec<Entry>,
    /// Answers by id.
    pub answers: Vec<Answer>,
}

impl Table {
    /// Entries whose answer (without DO) is given at the driver.
    pub fn answered(&self) -> usize {
        self.entries.iter().filter(|e| matches!(e.plain, Pick::Id(_))).count()
    }
}

/// A query type no zone answers apart (to ask for "every other type").
fn unlisted(types: &[u16]) -> u16 {
    (1..=u16::MAX).rev().find(|t| !types.contains(t)).unwrap_or(0xfffe)
}

/// Types the program never answers (meta types, OPT): no entries for them.
fn meta(t: u16) -> bool {
    t == 0 || t == rtype::OPT || (128..=255).contains(&t)
}

struct Builder {
    server: DnsServer,
    limits: Limits,
    buf: Vec<u8>,
    ids: HashMap<Answer, u32>,
    table: Table,
}

/// A response split: flags without RD/CD, counts without OPT, body behind the question.
type Split = (u16, [u16; 3], Vec<u8>);

impl Builder {
    /// Asks the engine's code; the response's parts, None if it is truncated or not whole.
    fn ask(&mut self, name: &[u8], qtype: u16, dnssec: Option<bool>) -> Option<Split> {
        let b = &mut self.buf;
        b.clear();
        b.extend_from_slice(&[0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, u8::from(dnssec.is_some())]);
        b.extend_from_slice(name);
        b.extend(qtype.to_be_bytes());
        b.extend(dns::class::IN.to_be_bytes());
        if let Some(d) = dnssec {
            let size = (crate::server::MAX_UDP as u16).to_be_bytes();
            b.extend_from_slice(&[0, 0, 41, size[0], size[1], 0, 0, if d { 0x80 } else { 0 }, 0, 0, 0]);
        }
        let len = b.len();
        b.resize(2048, 0);
        let r = self.server.respond(b, len)?;
        let m = &b[..r.len];
        let q_end = HEADER_LEN + name.len() + 4;
        if m[2] & 0x02 != 0 || r.q_end != q_end || m[4..6] != [0, 1] {
            return None;
        }
        let counts = [0, 1, 2].map(|i| u16::from_be_bytes([m[6 + 2 * i], m[7 + 2 * i]]));
        let mut end = m.len();
        let mut counts = counts;
        if dnssec.is_some() {
            // The OPT record the server appends last.
            end = end.checked_sub(11)?;
            if m[end..end + 3] != [0, 0, 41] || counts[2] == 0 {
                return None;
            }
            counts[2] -= 1;
        }
        let flags = u16::from_be_bytes([m[2], m[3]]) & !0x0110;
        Some((flags, counts, m[q_end..end].to_vec()))
    }

    fn id(&mut self, a: Answer) -> Pick {
        if a.body.len() > self.limits.body_max || a.patches.len() > self.limits.patches {
            return Pick::Pass;
        }
        // Most answers were seen before (a million names share a few hundred thousand): look
        // up first, clone only a new one.
        if let Some(&id) = self.ids.get(&a) {
            return Pick::Id(id);
        }
        let id = self.table.answers.len() as u32;
        self.ids.insert(a.clone(), id);
        self.table.answers.push(a);
        Pick::Id(id)
    }

    /// The answers to `name` itself for `qtype`: without DO (the same bytes whether or not
    /// the query had EDNS, when it fits without) and with DO.
    fn exact(&mut self, name: &[u8], qtype: u16) -> (Pick, Pick) {
        let Some((flags, counts, body)) = self.ask(name, qtype, Some(false)) else { return (Pick::Pass, Pick::Pass) };
        if HEADER_LEN + name.len() + 4 + body.len() <= 512 {
            match self.ask(name, qtype, None) {
                Some((f, c, b)) if (f, c, &b) == (flags, counts, &body) => {}
                _ => return (Pick::Pass, Pick::Pass),
            }
        }
        let dnssec = match self.ask(name, qtype, Some(true)) {
            Some(d) if d == (flags, counts, body.clone()) => Pick::Same,
            Some((f, c, b)) => self.id(Answer { flags: f, counts: c, body: b, base_len: name.len(), patches: vec![] }),
            None => Pick::Pass,
        };
        let plain = self.id(Answer { flags, counts, body, base_len: name.len(), patches: vec![] });
        (plain, dnssec)
    }

    /// The answer to names below `encloser` that do not exist, for `qtype`: two probes
    /// of different lengths must differ only in name pointers, by their length difference.
    /// With DO, only if the same as without (no NSEC chosen per name).
    fn below(&mut self, zone_has: &dyn Fn(&[u8]) -> bool, encloser: &[u8], qtype: u16) -> (Pick, Pick) {
        let probe = |len: usize| {
            let mut p = vec![len as u8];
            p.extend(std::iter::repeat_n(0x01u8, len));
            p.extend_from_slice(encloser);
            p
        };
        let (p1, p2) = (probe(1), probe(2));
        if p2.len() > self.limits.name_max || zone_has(&p1) || zone_has(&p2) {
            return (Pick::Pass, Pick::Pass);
        }
        let (Some(a), Some(b)) = (self.ask(&p1, qtype, Some(false)), self.ask(&p2, qtype, Some(false))) else {
            return (Pick::Pass, Pick::Pass);
        };
        let Some(patches) = pointer_moves(&a.2, &b.2).filter(|_| (a.0, a.1) == (b.0, b.1)) else {
            return (Pick::Pass, Pick::Pass);
        };
        if HEADER_LEN + p2.len() + 4 + a.2.len() <= 512 {
            match self.ask(&p1, qtype, None) {
                Some(n) if n == a => {}
                _ => return (Pick::Pass, Pick::Pass),
            }
        }
        let dnssec = match self.ask(&p1, qtype, Some(true)) {
            Some(d) if d == a => Pick::Same,
            _ => Pick::Pass,
        };
        let (flags, counts, body) = a;
        let plain = self.id(Answer { flags, counts, body, base_len: p1.len(), patches });
        (plain, dnssec)
    }

    fn push(&mut self, name: &[u8], qtype: u16, kind: Kind, (plain, dnssec): (Pick, Pick), typed: bool) {
        self.table.entries.push(Entry { name: name.to_vec(), qtype, kind, plain, dnssec, typed });
    }
}

/// The body offsets where `a` and `b` (the same response for question names one byte apart)
/// hold name pointers one apart; None if they differ in anything else.
fn pointer_moves(a: &[u8], b: &[u8]) -> Option<Vec<u16>> {
    if a.len() != b.len() {
        return None;
    }
    let word = |m: &[u8], i: usize| u16::from_be_bytes([m[i], m[i + 1]]);
    let mut out = Vec::new();
    let mut i = 0;
    while i < a.len() {
        if a[i] == b[i] {
            i += 1;
            continue;
        }
        // The low byte differs (its pointer starts one before) or, on a carry, the high one.
        let start = [i.checked_sub(1), Some(i)]
            .into_iter()
            .flatten()
            .find(|&s| s + 1 < a.len() && a[s] & 0xc0 == 0xc0 && word(a, s).wrapping_add(1) == word(b, s))?;
        out.push(start as u16);
        i = start + 2;
    }
    Some(out)
}

/// Builds the driver's table for `catalog`: a large catalog's names in two halves on two
/// threads where the process may use two CPUs (asking the engine is most of the time).
pub fn build(catalog: &Arc<Catalog>, limits: Limits) -> Table {
    let halves = catalog.zones().iter().map(|z| z.names()).sum::<usize>() >= crate::compile::PARALLEL_NAMES
        && crate::compile::several_cpus();
    build_in(catalog, limits, halves)
}

fn build_in(catalog: &Arc<Catalog>, limits: Limits, halves: bool) -> Table {
    let nodes: Vec<NodeInfo> = catalog.zones().iter().flat_map(|z| z.nodes()).collect();
    if !halves {
        return build_part(catalog, &nodes, limits, 0, 1).0;
    }
    let ((mut table, mut ids), (other, _)) = std::thread::scope(|s| {
        let second = s.spawn(|| build_part(catalog, &nodes, limits, 1, 2));
        let first = build_part(catalog, &nodes, limits, 0, 2);
        (first, second.join().expect("the second half of the driver's table"))
    });
    // The second half's answers take the first's ids where they are the same.
    let remap: Vec<u32> = other
        .answers
        .into_iter()
        .map(|a| match ids.get(&a) {
            Some(&id) => id,
            None => {
                let id = table.answers.len() as u32;
                ids.insert(a.clone(), id);
                table.answers.push(a);
                id
            }
        })
        .collect();
    let moved = |p: Pick| match p {
        Pick::Id(i) => Pick::Id(remap[i as usize]),
        p => p,
    };
    table.entries.extend(other.entries.into_iter().map(|e| Entry {
        plain: moved(e.plain),
        dnssec: moved(e.dnssec),
        ..e
    }));
    table
}

/// The table for every `parts`-th of `nodes` (the names of `catalog`) from the `part`-th on,
/// and its answers' ids.
fn build_part(
    catalog: &Arc<Catalog>,
    nodes: &[NodeInfo],
    limits: Limits,
    part: usize,
    parts: usize,
) -> (Table, HashMap<Answer, u32>) {
    let mut b = Builder {
        server: DnsServer::new(catalog.clone(), 53),
        limits,
        buf: Vec::with_capacity(2048),
        ids: HashMap::new(),
        table: Table::default(),
    };
    let has = |w: &[u8]| catalog.zones().iter().any(|z| z.has_name(w));
    for n in nodes.iter().skip(part).step_by(parts) {
        if n.name.len() > limits.name_max {
            continue;
        }
        // DS always apart: at a zone's apex the parent zone answers it when served here.
        let ds = (!n.types.contains(&rtype::DS)).then_some(rtype::DS);
        for t in n.types.iter().copied().filter(|&t| !meta(t)).chain(ds) {
            let picks = b.exact(n.name, t);
            b.push(n.name, t, Kind::Exact, picks, false);
        }
        let picks = b.exact(n.name, unlisted(&n.types));
        b.push(n.name, 0, Kind::Other, picks, false);
        // Every name gets a below entry, if only to say it exists (the program's walk
        // to the closest encloser stops at it).
        let wild = match &n.below {
            BelowKind::Wild(types) => Some(types.clone()),
            _ => None,
        };
        let below = match &n.below {
            BelowKind::Dname => (Pick::Pass, Pick::Pass),
            _ => b.below(&has, n.name, unlisted(wild.as_deref().unwrap_or(&[]))),
        };
        b.push(n.name, 0, Kind::BelowOther, below, wild.is_some());
        for t in wild.unwrap_or_default().into_iter().filter(|&t| !meta(t)) {
            let picks = b.below(&has, n.name, t);
            b.push(n.name, t, Kind::Below, picks, false);
        }
    }
    (b.table, b.ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_moves_finds_pointers_one_apart() {
        let a = [0xc0, 0x0c, 0, 1, 0xc0, 0x1f, 9];
        let b = [0xc0, 0x0c, 0, 1, 0xc0, 0x20, 9];
        assert_eq!(pointer_moves(&a, &b), Some(vec![4]));
        // A carry into the high byte.
        let a = [0xc0, 0xff, 7];
        let b = [0xc1, 0x00, 7];
        assert_eq!(pointer_moves(&a, &b), Some(vec![0]));
        // Any other difference is not a pointer moving.
        assert_eq!(pointer_moves(&[1, 2, 3], &[1, 2, 4]), None);
        assert_eq!(pointer_moves(&[0xc0, 0x10], &[0xc0, 0x12]), None);
        assert_eq!(pointer_moves(&[1], &[1, 2]), None);
    }

    #[test]
    fn two_halves_make_the_table_one_pass_makes() {
        use std::fmt::Write as _;
        let mut text =
            String::from("$ORIGIN t.test.\n@ SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 198.18.0.1\n*.w A 198.18.0.2\n");
        for i in 0..300 {
            let _ = match i % 3 {
                0 => writeln!(text, "h{i} A 198.18.1.{}", i % 250),
                1 => writeln!(text, "h{i} MX 10 h{}", i - 1),
                _ => writeln!(text, "h{i} TXT \"{}\"", i % 7),
            };
        }
        let z = crate::zone::load_text(std::path::Path::new("t.zone"), text.as_bytes(), None).unwrap();
        let catalog = Arc::new(Catalog::new(vec![crate::CompiledZone::compile(&z)]));
        let limits = Limits { name_max: 64, body_max: 488, patches: 4 };
        // Each entry with its answers' bytes: the ids differ, what they name must not.
        let resolved = |t: &Table| {
            let at = |p: Pick| match p {
                Pick::Id(i) => format!("{:?}", t.answers[i as usize]),
                other => format!("{other:?}"),
            };
            let mut v: Vec<_> = t
                .entries
                .iter()
                .map(|e| (e.name.clone(), e.qtype, e.kind as u8, e.typed, at(e.plain), at(e.dnssec)))
                .collect();
            v.sort_by(|a, b| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2)));
            v
        };
        let (one, two) = (build_in(&catalog, limits, false), build_in(&catalog, limits, true));
        assert!(one.answered() > 600, "{} entries answered", one.answered());
        assert_eq!(resolved(&one), resolved(&two));
        // Answers are not stored twice.
        assert_eq!(one.answers.len(), two.answers.len());
    }
}
