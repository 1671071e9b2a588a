//! The answer rules of an authoritative server (RFC 1034 4.3.2, RFC 2308, RFC 4592,
//! RFC 6672, RFC 8482), run at load time over a zone to draft every response sirocco can
//! give. The query path never runs this code: it only picks a prepared result.
//!
//! Names are lowercase wire-format slices borrowed from the zone, so that a zone of a
//! million names is drafted without copying names around.

use crate::message::{Draft, Owner, Rec};
use crate::zone::{RRset, Zone};
use dns::name::{hash_wire, label_starts, wire_ends_with, FnvBuild, Name};
use dns::{rcode, rtype};
use std::borrow::Cow;
use std::collections::HashSet;

/// Longest CNAME/DNAME chain followed inside a zone (the answer stops there, as it would at
/// a loop).
pub const MAX_CHAIN: usize = 8;

/// What a name is in a zone.
pub enum Found<'z> {
    /// The name exists (possibly as an empty non-terminal) with these RRsets.
    Exact(&'z [RRset]),
    /// The name is the delegation point given, or below it.
    Cut(&'z [u8]),
    /// The name does not exist; a wildcard `*.<closest encloser>` with these RRsets stands
    /// in for it.
    Wild(&'z [RRset]),
    /// The name is below the DNAME owner given.
    Dname(&'z [u8], &'z RRset),
    /// The name does not exist.
    Nx,
}

/// A zone with the facts the rules need.
pub struct View<'z> {
    /// The zone.
    pub z: &'z Zone,
    apex: &'z [u8],
    /// Every name that exists: owners and empty non-terminals (suffixes of owners).
    exists: HashSet<&'z [u8], FnvBuild>,
    neg_soa: RRset,
}

impl<'z> View<'z> {
    /// Indexes `z`.
    pub fn new(z: &'z Zone) -> View<'z> {
        let apex = z.origin.as_wire();
        let mut exists: HashSet<&'z [u8], FnvBuild> =
            HashSet::with_capacity_and_hasher(z.nodes.len() * 2, FnvBuild::default());
        let mut starts = [0u8; 128];
        for n in z.nodes.keys() {
            let k = label_starts(n, &mut starts);
            for &s in &starts[..k] {
                let suffix = &n[usize::from(s)..];
                if suffix.len() < apex.len() || !exists.insert(suffix) {
                    break;
                }
            }
        }
        let soa = z.soa().expect("the loader checks the SOA");
        let minimum = soa.rdatas[0]
            .len()
            .checked_sub(4)
            .map(|i| u32::from_be_bytes(soa.rdatas[0][i..i + 4].try_into().expect("4 bytes")));
        // RFC 2308 section 3: the negative TTL is the lesser of the SOA's TTL and MINIMUM.
        let neg_soa =
            RRset { rtype: rtype::SOA, ttl: soa.ttl.min(minimum.unwrap_or(soa.ttl)), rdatas: soa.rdatas.clone() };
        View { z, apex, exists, neg_soa }
    }

    /// The SOA as negative answers carry it.
    pub fn negative_soa(&self) -> &RRset {
        &self.neg_soa
    }

    /// Every name that exists in the zone, empty non-terminals included.
    pub fn names(&self) -> impl Iterator<Item = &'z [u8]> + '_ {
        self.exists.iter().copied()
    }

    /// The RRsets at a name (none for an empty non-terminal).
    pub fn sets(&self, n: &[u8]) -> &'z [RRset] {
        self.z.nodes.get(n).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// True for a delegation point (NS below the apex).
    pub fn is_cut(&self, n: &[u8]) -> bool {
        n.len() > self.apex.len() && self.z.rrset(n, rtype::NS).is_some()
    }

    /// True if the name is hidden by a cut or a DNAME above it (RFC 6672 section 2.3), so
    /// the query path must never find it directly.
    pub fn occluded(&self, n: &[u8]) -> bool {
        let mut starts = [0u8; 128];
        let k = label_starts(n, &mut starts);
        starts[1..k]
            .iter()
            .map(|&s| &n[usize::from(s)..])
            .take_while(|a| a.len() >= self.apex.len())
            .any(|a| self.is_cut(a) || self.z.rrset(a, rtype::DNAME).is_some())
    }

    /// Classifies a name of the zone, walking down from the apex.
    pub fn find(&self, name: &[u8]) -> Found<'z> {
        let mut starts = [0u8; 128];
        let k = label_starts(name, &mut starts);
        let mut above: Option<&[u8]> = None;
        for &s in starts[..k].iter().rev() {
            let a = &name[usize::from(s)..];
            if a.len() < self.apex.len() {
                continue;
            }
            if self.is_cut(a) {
                let (key, _) = self.z.nodes.get_key_value(a).expect("a cut has NS");
                return Found::Cut(key);
            }
            if !self.exists.contains(a) {
                let encloser = above.expect("the apex exists");
                let mut w = [0u8; 257];
                w[..2].copy_from_slice(b"\x01*");
                w[2..2 + encloser.len()].copy_from_slice(encloser);
                let wild = &w[..2 + encloser.len()];
                return match self.exists.contains(wild) {
                    true => Found::Wild(self.sets(wild)),
                    false => Found::Nx,
                };
            }
            if a.len() < name.len() {
                if let Some((key, sets)) = self.z.nodes.get_key_value(a) {
                    if let Some(d) = sets.iter().find(|s| s.rtype == rtype::DNAME) {
                        return Found::Dname(key, d);
                    }
                }
            }
            above = Some(a);
        }
        Found::Exact(self.sets(name))
    }

    /// Drafts the response to (`name`, `qtype`), with `owner` standing for `name` in the
    /// message.
    pub fn draft<'a>(&'a self, name: &[u8], owner: Owner<'a>, qtype: u16) -> Draft<'a> {
        let mut d = Draft { aa: true, rcode: rcode::NOERROR, ..Default::default() };
        let mut seen = Vec::with_capacity(MAX_CHAIN);
        self.answer(&mut d, name, owner, qtype, 0, &mut seen);
        d
    }

    fn answer<'a>(
        &'a self,
        d: &mut Draft<'a>,
        name: &[u8],
        owner: Owner<'a>,
        qtype: u16,
        depth: usize,
        seen: &mut Vec<u64>,
    ) {
        seen.push(hash_wire(name));
        let sets = match self.find(name) {
            Found::Cut(c) if c == name && qtype == rtype::DS => {
                // The parent side is authoritative for DS (RFC 4035 section 3.1.4.1).
                match self.z.rrset(name, rtype::DS) {
                    Some(ds) => d.push(0, owner, ds.rtype, ds.ttl, &ds.rdatas),
                    None => self.negative(d, rcode::NOERROR),
                }
                return;
            }
            Found::Cut(c) => {
                if depth == 0 {
                    d.aa = false;
                }
                self.referral(d, c);
                return;
            }
            Found::Nx => {
                self.negative(d, rcode::NXDOMAIN);
                return;
            }
            Found::Dname(o, dname) => {
                d.push(0, Owner::Name(Cow::Borrowed(o)), rtype::DNAME, dname.ttl, &dname.rdatas);
                let Some(target) = substitute(name, o, &dname.rdatas[0]) else {
                    d.rcode = rcode::YXDOMAIN;
                    return;
                };
                // The synthesised CNAME (RFC 6672 section 3.3) carries the DNAME's TTL.
                let rdata = Cow::Owned(target.as_wire().to_vec());
                d.sections[0].push(Rec { owner, rtype: rtype::CNAME, ttl: dname.ttl, rdata });
                self.follow(d, target.as_wire(), qtype, depth, seen);
                return;
            }
            Found::Exact(s) | Found::Wild(s) => s,
        };
        let cname = sets.iter().find(|s| s.rtype == rtype::CNAME);
        if let Some(c) = cname.filter(|_| qtype != rtype::CNAME) {
            d.push(0, owner, c.rtype, c.ttl, &c.rdatas);
            if let Ok(target) = Name::from_wire(&c.rdatas[0]) {
                if qtype != rtype::ANY {
                    self.follow(d, target.as_wire(), qtype, depth, seen);
                }
            }
            return;
        }
        let pick = if qtype == rtype::ANY { any_choice(sets) } else { sets.iter().find(|s| s.rtype == qtype) };
        match pick {
            Some(s) => {
                d.push(0, owner, s.rtype, s.ttl, &s.rdatas);
                self.target_addresses(d, s);
            }
            None => self.negative(d, rcode::NOERROR),
        }
    }

    /// Continues a chain at `target` if it is in this zone and not a loop.
    fn follow<'a>(&'a self, d: &mut Draft<'a>, target: &[u8], qtype: u16, depth: usize, seen: &mut Vec<u64>) {
        if depth + 1 >= MAX_CHAIN || !wire_ends_with(target, self.apex) || seen.contains(&hash_wire(target)) {
            return;
        }
        let owner = match self.z.nodes.get_key_value(target) {
            Some((k, _)) => Owner::Name(Cow::Borrowed(k)),
            None => Owner::Name(Cow::Owned(target.to_vec())),
        };
        self.answer(d, target, owner, qtype, depth + 1, seen);
    }

    fn negative<'a>(&'a self, d: &mut Draft<'a>, rc: u8) {
        d.rcode = rc;
        d.push(1, Owner::Name(Cow::Borrowed(self.apex)), rtype::SOA, self.neg_soa.ttl, &self.neg_soa.rdatas);
    }

    fn referral<'a>(&'a self, d: &mut Draft<'a>, cut: &'z [u8]) {
        let ns = self.z.rrset(cut, rtype::NS).expect("a cut has NS");
        d.push(1, Owner::Name(Cow::Borrowed(cut)), rtype::NS, ns.ttl, &ns.rdatas);
        for r in &ns.rdatas {
            self.addresses(d, r);
        }
    }

    /// RFC 1034 4.3.2 step 6: addresses of NS, MX and SRV targets that the zone has.
    fn target_addresses<'a>(&'a self, d: &mut Draft<'a>, s: &'a RRset) {
        let skip = match s.rtype {
            rtype::NS => 0,
            rtype::MX => 2,
            rtype::SRV => 6,
            _ => return,
        };
        for r in &s.rdatas {
            if let Some(target) = r.get(skip..) {
                self.addresses(d, target);
            }
        }
    }

    /// The in-zone A and AAAA of `target` (as written in record data, any case).
    fn addresses<'a>(&'a self, d: &mut Draft<'a>, target: &[u8]) {
        let Ok(t) = Name::from_wire(target) else { return };
        let Some((key, sets)) = self.z.nodes.get_key_value(t.as_wire()) else { return };
        for ty in [rtype::A, rtype::AAAA] {
            if d.has(2, key, ty) {
                continue;
            }
            if let Some(a) = sets.iter().find(|s| s.rtype == ty) {
                d.push(2, Owner::Name(Cow::Borrowed(key)), ty, a.ttl, &a.rdatas);
            }
        }
    }
}

/// RFC 6672 section 2.2: `name` with its suffix `owner` replaced by the DNAME target; None
/// if the result would be longer than a name can be.
pub fn substitute(name: &[u8], owner: &[u8], target: &[u8]) -> Option<Name> {
    let prefix = name.len() - owner.len();
    let mut w = Vec::with_capacity(prefix + target.len());
    w.extend_from_slice(&name[..prefix]);
    w.extend_from_slice(target);
    Name::from_wire(&w).ok()
}

/// RFC 8482 section 4.1: answer ANY with one RRset of the name. sirocco picks the smallest,
/// so ANY never amplifies more than an ordinary query would.
pub fn any_choice(sets: &[RRset]) -> Option<&RRset> {
    sets.iter().min_by_key(|s| (s.rdatas.iter().map(|r| r.len() + 12).sum::<usize>(), s.rtype))
}
