//! The answer rules of an authoritative server (RFC 1034 4.3.2, RFC 2308, RFC 4592,
//! RFC 6672, RFC 8482), run at load time over a zone to draft every response sirocco can
//! give. The query path never runs this code: it only picks a prepared result.
//!
//! Names are lowercase wire-format slices borrowed from the zone, so that a zone of a
//! million names is drafted without copying names around.
//!
//! Each response is drafted twice for a signed zone: as before, and for a query with the DO
//! bit (RFC 4035 section 3.1): RRSIGs with every signed RRset, the SOA and NSEC records of
//! denials, DS or the NSEC proving its absence in referrals. What depends on the query name
//! itself (the NSEC covering a name that does not exist) is marked on the draft and added
//! per query.

use crate::message::{Draft, Owner, Rec};
use crate::zone::{sigs_in, RRset, Zone};
use dns::name::{canonical_cmp, hash_wire, label_starts, wire_ends_with, FnvBuild, Name};
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
    /// The name does not exist; the wildcard `*.<closest encloser>` (its owner given) with
    /// these RRsets stands in for it.
    Wild(&'z [u8], &'z [RRset]),
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
    /// Owners of NSEC records in canonical order (empty unless the zone is signed with NSEC).
    nsec: Vec<&'z [u8]>,
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
        let mut nsec: Vec<&'z [u8]> = match z.signed {
            true => z
                .nodes
                .iter()
                .filter(|(_, sets)| sets.iter().any(|s| s.rtype == rtype::NSEC))
                .map(|(n, _)| &**n)
                .collect(),
            false => Vec::new(),
        };
        nsec.sort_unstable_by(|a, b| canonical_cmp(a, b));
        View { z, apex, exists, neg_soa, nsec }
    }

    /// NSEC owners in canonical order.
    pub fn nsec_owners(&self) -> &[&'z [u8]] {
        &self.nsec
    }

    /// The owner of the NSEC that matches or covers `name` (the last one not after it).
    pub fn nsec_for(&self, name: &[u8]) -> Option<&'z [u8]> {
        let i = self.nsec.partition_point(|o| canonical_cmp(o, name).is_le());
        i.checked_sub(1).map(|i| self.nsec[i]).or(self.nsec.last().copied())
    }

    /// The longest suffix of `name` that exists (its closest encloser, RFC 4592).
    pub fn closest_encloser<'n>(&self, name: &'n [u8]) -> &'n [u8] {
        let mut i = 0;
        while name.len() - i > self.apex.len() && !self.exists.contains(&name[i..]) {
            i += 1 + usize::from(name[i]);
        }
        &name[i..]
    }

    /// Adds the NSEC at `owner` and its RRSIGs to the authority section, once.
    fn push_nsec<'a>(&'a self, d: &mut Draft<'a>, owner: &'z [u8]) {
        if d.has(1, owner, rtype::NSEC) {
            return;
        }
        let sets = self.sets(owner);
        if let Some(n) = sets.iter().find(|s| s.rtype == rtype::NSEC) {
            d.push(1, Owner::Name(Cow::Borrowed(owner)), rtype::NSEC, n.ttl, &n.rdatas);
            if let Some(sig) = sigs_in(sets, rtype::NSEC) {
                d.push(1, Owner::Name(Cow::Borrowed(owner)), rtype::RRSIG, sig.ttl, &sig.rdatas);
            }
        }
    }

    /// Adds `s` (which lives at the zone name `at`) to `section` as `owner`, with its RRSIGs
    /// if `dnssec`.
    fn push_signed<'a>(
        &'a self,
        d: &mut Draft<'a>,
        section: usize,
        owner: Owner<'a>,
        at: &[u8],
        s: &'a RRset,
        dnssec: bool,
    ) {
        d.push(section, owner.clone(), s.rtype, s.ttl, &s.rdatas);
        if dnssec {
            if let Some(sig) = self.z.sigs(at, s.rtype) {
                d.push(section, owner, rtype::RRSIG, sig.ttl, &sig.rdatas);
            }
        }
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
                return match self.z.nodes.get_key_value(wild) {
                    Some((k, sets)) => Found::Wild(k, sets),
                    // A wildcard with nothing but names below it: NODATA for any type.
                    None if self.exists.contains(wild) => Found::Wild(&[], &[]),
                    None => Found::Nx,
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
    /// message; `dnssec`: for a query with the DO bit.
    pub fn draft<'a>(&'a self, name: &[u8], owner: Owner<'a>, qtype: u16, dnssec: bool) -> Draft<'a> {
        let mut d = Draft { aa: true, rcode: rcode::NOERROR, ..Default::default() };
        let mut seen = Vec::with_capacity(MAX_CHAIN);
        let q = Query { qtype, dnssec };
        self.answer(&mut d, name, owner, q, 0, &mut seen);
        d
    }

    /// The draft of an NXDOMAIN for a name whose closest encloser is `ce`: the SOA and, with
    /// `dnssec`, the NSEC covering the wildcard `*.ce` (the NSEC covering the name itself
    /// is added per query).
    pub fn nxdomain<'a>(&'a self, ce: &[u8], dnssec: bool) -> Draft<'a> {
        let mut d = Draft { aa: true, ..Default::default() };
        self.negative(&mut d, rcode::NXDOMAIN, dnssec);
        if dnssec && !self.nsec.is_empty() {
            let mut w = b"\x01*".to_vec();
            w.extend_from_slice(ce);
            if let Some(o) = self.nsec_for(&w) {
                self.push_nsec(&mut d, o);
                d.cover = Some(Some(o.to_vec()));
            }
        }
        d
    }

    fn answer<'a>(
        &'a self,
        d: &mut Draft<'a>,
        name: &[u8],
        owner: Owner<'a>,
        q: Query,
        depth: usize,
        seen: &mut Vec<u64>,
    ) {
        let Query { qtype, dnssec } = q;
        seen.push(hash_wire(name));
        let (at, sets) = match self.find(name) {
            Found::Cut(c) if c == name && qtype == rtype::DS => {
                // The parent side is authoritative for DS (RFC 4035 section 3.1.4.1).
                match self.z.rrset(name, rtype::DS) {
                    Some(ds) => self.push_signed(d, 0, owner, c, ds, dnssec),
                    None => self.nodata(d, c, dnssec),
                }
                return;
            }
            Found::Cut(c) => {
                if depth == 0 {
                    d.aa = false;
                }
                self.referral(d, c, dnssec);
                return;
            }
            Found::Nx => {
                self.negative(d, rcode::NXDOMAIN, dnssec);
                if dnssec && !self.nsec.is_empty() {
                    // Known here (a chain's target in the zone): both proofs at load.
                    if let Some(o) = self.nsec_for(name) {
                        self.push_nsec(d, o);
                    }
                    let mut w = b"\x01*".to_vec();
                    w.extend_from_slice(self.closest_encloser(name));
                    if let Some(o) = self.nsec_for(&w) {
                        self.push_nsec(d, o);
                    }
                }
                return;
            }
            Found::Dname(o, dname) => {
                self.push_signed(d, 0, Owner::Name(Cow::Borrowed(o)), o, dname, dnssec);
                let Some(target) = substitute(name, o, &dname.rdatas[0]) else {
                    d.rcode = rcode::YXDOMAIN;
                    return;
                };
                // The synthesised CNAME (RFC 6672 section 3.3) carries the DNAME's TTL.
                let rdata = Cow::Owned(target.as_wire().to_vec());
                d.sections[0].push(Rec { owner, rtype: rtype::CNAME, ttl: dname.ttl, rdata });
                self.follow(d, target.as_wire(), q, depth, seen);
                return;
            }
            Found::Exact(s) => {
                if dnssec && depth == 0 && name.starts_with(b"\x01*") && !self.nsec.is_empty() {
                    // A wildcard's own answers are what it synthesises for every name it
                    // matches (the compiler drafts them here): they need the NSEC covering
                    // the query name, found per query (none when the name is `*` itself).
                    d.cover = Some(None);
                    d.no_additional = true;
                }
                (name, s)
            }
            Found::Wild(w, s) => {
                if dnssec && !self.nsec.is_empty() {
                    // The name the wildcard stands for does not exist: the NSEC covering it
                    // proves so. The query name's is added per query (additional data left
                    // out so that it can go last); a chain target's is known now.
                    if depth == 0 {
                        d.cover = Some(None);
                        d.no_additional = true;
                    } else if let Some(o) = self.nsec_for(name) {
                        self.push_nsec(d, o);
                    }
                }
                (w, s)
            }
        };
        // A CNAME's name may have its own NSEC and RRSIGs (RFC 4035 section 2.5): asked for,
        // they are answered, not the chain.
        let own = qtype == rtype::RRSIG || (qtype == rtype::NSEC && sets.iter().any(|s| s.rtype == rtype::NSEC));
        let cname = sets.iter().find(|s| s.rtype == rtype::CNAME);
        if let Some(c) = cname.filter(|_| qtype != rtype::CNAME && !own) {
            self.push_signed(d, 0, owner, at, c, dnssec);
            if let Ok(target) = Name::from_wire(&c.rdatas[0]) {
                if qtype != rtype::ANY {
                    self.follow(d, target.as_wire(), q, depth, seen);
                }
            }
            return;
        }
        if qtype == rtype::RRSIG {
            // Every signature at the name (they make one RRset per type they cover).
            let sigs: Vec<&RRset> = sets.iter().filter(|s| s.rtype == rtype::RRSIG).collect();
            if sigs.is_empty() {
                return self.nodata(d, at, dnssec);
            }
            for s in sigs {
                d.push(0, owner.clone(), s.rtype, s.ttl, &s.rdatas);
            }
            return;
        }
        let pick = if qtype == rtype::ANY { any_choice(sets) } else { sets.iter().find(|s| s.rtype == qtype) };
        match pick {
            Some(s) => {
                self.push_signed(d, 0, owner, at, s, dnssec);
                if !d.no_additional {
                    self.target_addresses(d, s, dnssec);
                }
            }
            None => self.nodata(d, at, dnssec),
        }
    }

    /// NODATA at the zone name `at`: the SOA and, with `dnssec`, the NSEC at the name (or,
    /// for an empty non-terminal, the NSEC covering it) showing the type is not there.
    fn nodata<'a>(&'a self, d: &mut Draft<'a>, at: &[u8], dnssec: bool) {
        self.negative(d, rcode::NOERROR, dnssec);
        if dnssec {
            if let Some(o) = self.nsec_for(at) {
                self.push_nsec(d, o);
                if d.cover.is_some() {
                    // A wildcard's NODATA: the per-query NSEC need not repeat this one.
                    d.cover = Some(Some(o.to_vec()));
                }
            }
        }
    }

    /// Continues a chain at `target` if it is in this zone and not a loop.
    fn follow<'a>(&'a self, d: &mut Draft<'a>, target: &[u8], q: Query, depth: usize, seen: &mut Vec<u64>) {
        if depth + 1 >= MAX_CHAIN || !wire_ends_with(target, self.apex) || seen.contains(&hash_wire(target)) {
            return;
        }
        let owner = match self.z.nodes.get_key_value(target) {
            Some((k, _)) => Owner::Name(Cow::Borrowed(k)),
            None => Owner::Name(Cow::Owned(target.to_vec())),
        };
        self.answer(d, target, owner, q, depth + 1, seen);
    }

    fn negative<'a>(&'a self, d: &mut Draft<'a>, rc: u8, dnssec: bool) {
        d.rcode = rc;
        d.push(1, Owner::Name(Cow::Borrowed(self.apex)), rtype::SOA, self.neg_soa.ttl, &self.neg_soa.rdatas);
        if dnssec {
            if let Some(sig) = self.z.sigs(self.apex, rtype::SOA) {
                // RFC 4035 section 3.1.3: the SOA's signatures; their TTL is the SOA's there.
                d.push(1, Owner::Name(Cow::Borrowed(self.apex)), rtype::RRSIG, self.neg_soa.ttl, &sig.rdatas);
            }
        }
    }

    /// A referral to the cut: its NS and, with `dnssec`, its signed DS or the NSEC proving
    /// there is none (RFC 4035 section 3.1.4).
    fn referral<'a>(&'a self, d: &mut Draft<'a>, cut: &'z [u8], dnssec: bool) {
        let ns = self.z.rrset(cut, rtype::NS).expect("a cut has NS");
        d.push(1, Owner::Name(Cow::Borrowed(cut)), rtype::NS, ns.ttl, &ns.rdatas);
        if dnssec {
            match self.z.rrset(cut, rtype::DS) {
                Some(ds) => self.push_signed(d, 1, Owner::Name(Cow::Borrowed(cut)), cut, ds, true),
                None if !self.nsec.is_empty() => self.push_nsec(d, cut),
                None => {}
            }
        }
        for r in &ns.rdatas {
            self.addresses(d, r, dnssec);
        }
    }

    /// RFC 1034 4.3.2 step 6: addresses of NS, MX and SRV targets that the zone has.
    fn target_addresses<'a>(&'a self, d: &mut Draft<'a>, s: &'a RRset, dnssec: bool) {
        let skip = match s.rtype {
            rtype::NS => 0,
            rtype::MX => 2,
            rtype::SRV => 6,
            _ => return,
        };
        for r in &s.rdatas {
            if let Some(target) = r.get(skip..) {
                self.addresses(d, target, dnssec);
            }
        }
    }

    /// The in-zone A and AAAA of `target` (as written in record data, any case), signed
    /// ones with their RRSIGs if `dnssec` (RFC 4035 section 3.1.1).
    fn addresses<'a>(&'a self, d: &mut Draft<'a>, target: &[u8], dnssec: bool) {
        let Ok(t) = Name::from_wire(target) else { return };
        let Some((key, sets)) = self.z.nodes.get_key_value(t.as_wire()) else { return };
        for ty in [rtype::A, rtype::AAAA] {
            if d.has(2, key, ty) {
                continue;
            }
            if let Some(a) = sets.iter().find(|s| s.rtype == ty) {
                self.push_signed(d, 2, Owner::Name(Cow::Borrowed(key)), key, a, dnssec);
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

/// What a draft answers.
#[derive(Clone, Copy)]
struct Query {
    qtype: u16,
    dnssec: bool,
}

/// RFC 8482 section 4.1: answer ANY with one RRset of the name. sirocco picks the smallest,
/// so ANY never amplifies more than an ordinary query would; never the signatures or an NSEC
/// (the DNSSEC records a client that does not ask for them must not get, RFC 4035 3.2.1).
pub fn any_choice(sets: &[RRset]) -> Option<&RRset> {
    sets.iter()
        .filter(|s| !matches!(s.rtype, rtype::RRSIG | rtype::NSEC))
        .min_by_key(|s| (s.rdatas.iter().map(|r| r.len() + 12).sum::<usize>(), s.rtype))
}
