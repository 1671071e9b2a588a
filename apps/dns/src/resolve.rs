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

use crate::message::{Draft, DraftCover, Owner, Rec};
use crate::nsec3;
use crate::zone::{sigs_in, RRset, Zone};
use dns::name::{canonical_cmp, hash_wire, label_starts, wire_ends_with, FnvBuild, Name, MAX_NAME};
use dns::{rcode, rtype};
use std::borrow::Cow;
use std::collections::HashSet;

/// Longest CNAME/DNAME chain followed inside a zone (the answer stops there, as it would at
/// a loop).
pub const MAX_CHAIN: usize = 8;

/// What a name is in a zone.
#[derive(Clone, Copy)]
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
    /// The names that exist without being owners: empty non-terminals, suffixes of owners
    /// (the owners are the zone's own table).
    empty: HashSet<&'z [u8], FnvBuild>,
    /// The apex has a DNAME (hiding every name below it).
    apex_dname: bool,
    neg_soa: RRset,
    /// How the zone proves names and types do not exist, if it is signed.
    chain: Chain<'z>,
}

/// A signed zone's chain of denial records.
pub enum Chain<'z> {
    /// Not signed (or neither NSEC nor a usable NSEC3 chain).
    None,
    /// NSEC owners in canonical order.
    Nsec(Vec<&'z [u8]>),
    /// NSEC3: the parameters and hashes, and the owners in the same (hash) order.
    Nsec3(nsec3::Chain, Vec<&'z [u8]>),
}

impl<'z> View<'z> {
    /// Indexes `z`.
    pub fn new(z: &'z Zone) -> View<'z> {
        let apex = z.origin.as_wire();
        let mut empty: HashSet<&'z [u8], FnvBuild> = HashSet::default();
        let mut starts = [0u8; 128];
        for n in z.nodes.keys() {
            // Up from the owner to the first suffix known to exist (an owner's own walk
            // covers the names above it; the apex, which every owner ends in, exists).
            let k = label_starts(n, &mut starts);
            for &s in &starts[1..k] {
                let suffix = &n[usize::from(s)..];
                if suffix.len() <= apex.len() || z.nodes.contains_key(suffix) || !empty.insert(suffix) {
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
        let apex_dname = z.rrset(apex, rtype::DNAME).is_some();
        View { z, apex, empty, apex_dname, neg_soa, chain: Chain::of(z) }
    }

    /// The zone's denial chain.
    pub fn chain(&self) -> &Chain<'z> {
        &self.chain
    }

    /// The owner of the NSEC that matches or covers `name` (the last one not after it).
    pub fn nsec_for(&self, name: &[u8]) -> Option<&'z [u8]> {
        let Chain::Nsec(nsec) = &self.chain else { return None };
        let i = nsec.partition_point(|o| canonical_cmp(o, name).is_le());
        i.checked_sub(1).map(|i| nsec[i]).or(nsec.last().copied())
    }

    /// Where `name` hashes in the NSEC3 chain.
    fn n3_place(&self, name: &[u8]) -> Option<nsec3::Place> {
        let Chain::Nsec3(c, _) = &self.chain else { return None };
        c.place(&c.params.hash(name))
    }

    /// Adds the NSEC3 at chain index `i` and its RRSIGs to the authority section, once;
    /// returns its owner.
    fn push_nsec3<'a>(&'a self, d: &mut Draft<'a>, i: usize) -> Vec<u8> {
        let Chain::Nsec3(_, owners) = &self.chain else { return Vec::new() };
        let owner = owners[i];
        if !d.has(1, owner, rtype::NSEC3) {
            let sets = self.z.nsec3.get(owner).map(|v| v.as_slice()).unwrap_or(&[]);
            for set in sets.iter().filter(|s| s.rtype == rtype::NSEC3).chain(sigs_in(sets, rtype::NSEC3)) {
                d.push(1, Owner::Name(Cow::Borrowed(owner)), set.rtype, set.ttl, &set.rdatas);
            }
        }
        owner.to_vec()
    }

    /// Adds the NSEC3 matching (`Some(true)`), covering (`Some(false)`) or either (`None`)
    /// `name`; returns its owner, or None if `name` does not fall as asked.
    fn push_nsec3_for<'a>(&'a self, d: &mut Draft<'a>, name: &[u8], matching: Option<bool>) -> Option<Vec<u8>> {
        match (self.n3_place(name)?, matching) {
            (nsec3::Place::Matches(i), None | Some(true)) | (nsec3::Place::Covered(i), None | Some(false)) => {
                Some(self.push_nsec3(d, i))
            }
            _ => None,
        }
    }

    /// RFC 5155 section 7.2.1: the closest provable encloser of `name` (the longest suffix
    /// with a matching NSEC3) and the NSEC3 covering the next closer name; the matching one
    /// alone if `name` has one. Returns the encloser's owner NSEC3 and the covering one.
    fn closest_encloser_proof<'a>(&'a self, d: &mut Draft<'a>, name: &[u8]) -> Vec<Vec<u8>> {
        let mut i = 0;
        let mut below: Option<usize> = None;
        loop {
            if let Some(m) = self.push_nsec3_for(d, &name[i..], Some(true)) {
                let mut owners = vec![m];
                if let Some(b) = below {
                    owners.extend(self.push_nsec3_for(d, &name[b..], Some(false)));
                }
                return owners;
            }
            if name.len() - i <= self.apex.len() {
                return Vec::new();
            }
            below = Some(i);
            i += 1 + usize::from(name[i]);
        }
    }

    /// The longest suffix of `name` that exists (its closest encloser, RFC 4592).
    pub fn closest_encloser<'n>(&self, name: &'n [u8]) -> &'n [u8] {
        let mut i = 0;
        while name.len() - i > self.apex.len() && !self.exists(&name[i..]) {
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

    /// Every name that exists in the zone with its RRsets, empty non-terminals included
    /// (with none).
    pub fn names(&self) -> impl Iterator<Item = (&'z [u8], &'z [RRset])> + '_ {
        let owners = self.z.nodes.iter().map(|(n, sets)| (n, sets.as_slice()));
        owners.chain(self.empty.iter().map(|&n| (n, &[][..])))
    }

    /// True if the name is an owner or an empty non-terminal.
    fn exists(&self, n: &[u8]) -> bool {
        self.z.nodes.contains_key(n) || self.empty.contains(n)
    }

    /// The RRsets at a name (none for an empty non-terminal).
    pub fn sets(&self, n: &[u8]) -> &'z [RRset] {
        self.z.nodes.get(n).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// True for a delegation point (NS below the apex).
    pub fn is_cut(&self, n: &[u8]) -> bool {
        n.len() > self.apex.len() && self.cut_at(n, self.sets(n))
    }

    /// True if `n`, with these RRsets, is a delegation point.
    fn cut_at(&self, n: &[u8], sets: &[RRset]) -> bool {
        n.len() > self.apex.len() && sets.iter().any(|s| s.rtype == rtype::NS)
    }

    /// True if the name is hidden by a cut or a DNAME above it (RFC 6672 section 2.3), so
    /// the query path must never find it directly.
    pub fn occluded(&self, n: &[u8]) -> bool {
        let mut starts = [0u8; 128];
        let k = label_starts(n, &mut starts);
        // The apex hides only with a DNAME (known once): most names need no lookup at all.
        (self.apex_dname && n.len() > self.apex.len())
            || starts[1..k].iter().map(|&s| &n[usize::from(s)..]).take_while(|a| a.len() > self.apex.len()).any(|a| {
                let sets = self.sets(a);
                self.cut_at(a, sets) || sets.iter().any(|s| s.rtype == rtype::DNAME)
            })
    }

    /// Classifies a name of the zone, walking down from the apex.
    pub fn find(&self, name: &[u8]) -> Found<'z> {
        let mut starts = [0u8; 128];
        let k = label_starts(name, &mut starts);
        let mut above: Option<&[u8]> = None;
        let mut last: &'z [RRset] = &[];
        for &s in starts[..k].iter().rev() {
            let a = &name[usize::from(s)..];
            if a.len() < self.apex.len() {
                continue;
            }
            // One lookup per name on the way down (a cache miss each in a large zone).
            let held = self.z.nodes.get_key_value(a);
            if let Some((key, sets)) = held {
                if self.cut_at(a, sets) {
                    return Found::Cut(key);
                }
            }
            if held.is_none() && !self.empty.contains(a) {
                let encloser = above.expect("the apex exists");
                let mut w = [0u8; 257];
                w[..2].copy_from_slice(b"\x01*");
                w[2..2 + encloser.len()].copy_from_slice(encloser);
                let wild = &w[..2 + encloser.len()];
                return match self.z.nodes.get_key_value(wild) {
                    Some((k, sets)) => Found::Wild(k, sets),
                    // A wildcard with nothing but names below it: NODATA for any type.
                    None if self.exists(wild) => Found::Wild(&[], &[]),
                    None => Found::Nx,
                };
            }
            if let Some((key, sets)) = held {
                if a.len() < name.len() {
                    if let Some(d) = sets.iter().find(|s| s.rtype == rtype::DNAME) {
                        return Found::Dname(key, d);
                    }
                }
            }
            // This name's own RRsets (none for an empty non-terminal), should it be the last.
            last = held.map_or(&[], |(_, sets)| sets.as_slice());
            above = Some(a);
        }
        Found::Exact(last)
    }

    /// Drafts the response to (`name`, `qtype`), with `owner` standing for `name` in the
    /// message; `dnssec`: for a query with the DO bit.
    pub fn draft<'a>(&'a self, name: &[u8], owner: Owner<'a>, qtype: u16, dnssec: bool) -> Draft<'a> {
        let mut d = Draft::default();
        self.draft_into(&mut d, name, None, owner, qtype, dnssec);
        d
    }

    /// [`View::draft`] into `d` (emptied first, its buffers kept), for a name already
    /// classified as `found` if given (see [`View::found_in_zone`]).
    pub fn draft_into<'a>(
        &'a self,
        d: &mut Draft<'a>,
        name: &[u8],
        found: Option<Found<'z>>,
        owner: Owner<'a>,
        qtype: u16,
        dnssec: bool,
    ) {
        d.reset(true, rcode::NOERROR);
        let q = Query { qtype, dnssec, expand: false };
        let found = found.unwrap_or_else(|| self.find(name));
        self.answer_found(d, name, found, owner, q, 0, &mut Seen::default());
    }

    /// Drafts into `d`, with DO, what the wildcard `wild` answers for `qtype` when it stands
    /// for a query name (which then does not exist, and that is proved).
    pub fn draft_expansion_into<'a>(&'a self, d: &mut Draft<'a>, wild: &[u8], qtype: u16) {
        d.reset(true, rcode::NOERROR);
        let q = Query { qtype, dnssec: true, expand: true };
        self.answer(d, wild, Owner::Qname, q, 0, &mut Seen::default());
    }

    /// What [`View::find`] says of `name`, a name of the zone that no cut or DNAME above it
    /// hides (see [`View::occluded`]): every suffix exists and none stops the walk, so only
    /// the name itself decides. Saves the walk when every name of a zone is drafted.
    pub fn found_in_zone(&self, name: &'z [u8], sets: &'z [RRset]) -> Found<'z> {
        if self.cut_at(name, sets) {
            Found::Cut(name)
        } else {
            Found::Exact(sets)
        }
    }

    /// The draft of an NXDOMAIN for a name whose closest encloser is `ce`: the SOA and, with
    /// `dnssec`, what proves there is no wildcard `*.ce` (and with NSEC3, that `ce` exists);
    /// the record proving the name itself does not exist is added per query.
    pub fn nxdomain<'a>(&'a self, ce: &[u8], dnssec: bool) -> Draft<'a> {
        let mut d = Draft { aa: true, ..Default::default() };
        self.negative(&mut d, rcode::NXDOMAIN, dnssec);
        if !dnssec {
            return d;
        }
        let mut w = b"\x01*".to_vec();
        w.extend_from_slice(ce);
        match &self.chain {
            Chain::None => {}
            Chain::Nsec(_) => {
                if let Some(o) = self.nsec_for(&w) {
                    self.push_nsec(&mut d, o);
                    d.cover = Some(DraftCover { nsec3: false, ce_len: 0, exclude: vec![o.to_vec()] });
                }
            }
            Chain::Nsec3(..) => {
                // RFC 5155 section 7.2.2: the closest encloser's NSEC3, the one covering the
                // wildcard, and (per query) the one covering the next closer name.
                let exclude =
                    [self.push_nsec3_for(&mut d, ce, Some(true)), self.push_nsec3_for(&mut d, &w, Some(false))];
                d.cover = Some(DraftCover {
                    nsec3: true,
                    ce_len: ce.len() as u8,
                    exclude: exclude.into_iter().flatten().collect(),
                });
            }
        }
        d
    }

    /// Proves that `name`, a chain's target in the zone, does not exist: both NSECs, or the
    /// three NSEC3s of RFC 5155 section 7.2.2 (all known at load).
    fn deny_known<'a>(&'a self, d: &mut Draft<'a>, name: &[u8]) {
        let ce = self.closest_encloser(name);
        let mut w = b"\x01*".to_vec();
        w.extend_from_slice(ce);
        match &self.chain {
            Chain::None => {}
            Chain::Nsec(_) => {
                for n in [name, &w[..]] {
                    if let Some(o) = self.nsec_for(n) {
                        self.push_nsec(d, o);
                    }
                }
            }
            Chain::Nsec3(..) => {
                self.closest_encloser_proof(d, name);
                self.push_nsec3_for(d, &w, Some(false));
            }
        }
    }

    /// The answer for a name that a wildcard `*.<parent>` stands for: with NSEC3 the next
    /// closer name's NSEC3 proves it does not exist, with NSEC the name's NSEC; the query
    /// name's is added per query (`depth` 0), a chain target's now.
    fn wildcard_proof<'a>(&'a self, d: &mut Draft<'a>, name: &[u8], parent_len: usize, depth: usize) {
        let nsec3 = match &self.chain {
            Chain::None => return,
            Chain::Nsec(_) => false,
            Chain::Nsec3(..) => true,
        };
        if depth == 0 {
            // Additional data is left out so that the per-query record can go last.
            d.cover = Some(DraftCover { nsec3, ce_len: parent_len as u8, exclude: Vec::new() });
            d.no_additional = true;
        } else if nsec3 {
            if let Some(nc) = next_closer(name, parent_len) {
                self.push_nsec3_for(d, nc, Some(false));
            }
        } else if let Some(o) = self.nsec_for(name) {
            self.push_nsec(d, o);
        }
    }

    fn answer<'a>(&'a self, d: &mut Draft<'a>, name: &[u8], owner: Owner<'a>, q: Query, depth: usize, seen: &mut Seen) {
        let found = self.find(name);
        self.answer_found(d, name, found, owner, q, depth, seen)
    }

    #[allow(clippy::too_many_arguments)]
    fn answer_found<'a>(
        &'a self,
        d: &mut Draft<'a>,
        name: &[u8],
        found: Found<'z>,
        owner: Owner<'a>,
        q: Query,
        depth: usize,
        seen: &mut Seen,
    ) {
        let Query { qtype, dnssec, .. } = q;
        let (at, sets, wild) = match found {
            Found::Cut(c) if c == name && qtype == rtype::DS => {
                // The parent side is authoritative for DS (RFC 4035 section 3.1.4.1).
                match self.z.rrset(name, rtype::DS) {
                    Some(ds) => self.push_signed(d, 0, owner, c, ds, dnssec),
                    None => self.nodata(d, c, dnssec, false),
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
                if dnssec {
                    self.deny_known(d, name);
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
                self.follow(d, name, target.as_wire(), q, depth, seen);
                return;
            }
            Found::Exact(s) => {
                let expand = q.expand && depth == 0;
                if expand {
                    // What the wildcard synthesises for every name it stands for: the proof
                    // for the query name is found per query.
                    self.wildcard_proof(d, name, name.len() - 2, 0);
                }
                (name, s, expand)
            }
            Found::Wild(w, s) => {
                if dnssec {
                    self.wildcard_proof(d, name, w.len().saturating_sub(2), depth);
                }
                (w, s, true)
            }
        };
        // A CNAME's name may have its own NSEC and RRSIGs (RFC 4035 section 2.5): asked for,
        // they are answered, not the chain.
        let own = qtype == rtype::RRSIG || (qtype == rtype::NSEC && sets.iter().any(|s| s.rtype == rtype::NSEC));
        let cname = sets.iter().find(|s| s.rtype == rtype::CNAME);
        if let Some(c) = cname.filter(|_| qtype != rtype::CNAME && !own) {
            self.push_signed(d, 0, owner, at, c, dnssec);
            let mut buf = [0u8; MAX_NAME];
            if let Some(target) = Name::lower_into(&c.rdatas[0], &mut buf) {
                if qtype != rtype::ANY {
                    self.follow(d, name, target, q, depth, seen);
                }
            }
            return;
        }
        if qtype == rtype::RRSIG {
            // Every signature at the name (they make one RRset per type they cover).
            let sigs: Vec<&RRset> = sets.iter().filter(|s| s.rtype == rtype::RRSIG).collect();
            if sigs.is_empty() {
                return self.nodata(d, at, dnssec, wild);
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
            None => self.nodata(d, at, dnssec, wild),
        }
    }

    /// NODATA at the zone name `at`: the SOA and, with `dnssec`, the NSEC at the name (or,
    /// for an empty non-terminal, the NSEC covering it) showing the type is not there.
    /// `wild`: `at` is a wildcard standing for the query name.
    fn nodata<'a>(&'a self, d: &mut Draft<'a>, at: &[u8], dnssec: bool, wild: bool) {
        self.negative(d, rcode::NOERROR, dnssec);
        if !dnssec {
            return;
        }
        let mut shown = Vec::new();
        match &self.chain {
            Chain::None => {}
            Chain::Nsec(_) => {
                if let Some(o) = self.nsec_for(at) {
                    self.push_nsec(d, o);
                    shown.push(o.to_vec());
                }
            }
            Chain::Nsec3(..) => {
                // RFC 5155 7.2.3: the NSEC3 matching the name; 7.2.4 (a DS at an opt-out
                // delegation without one): the closest provable encloser proof; 7.2.5 (a
                // wildcard's NODATA): also the closest encloser's, the wildcard's parent.
                match self.push_nsec3_for(d, at, Some(true)) {
                    Some(o) => shown.push(o),
                    None => shown = self.closest_encloser_proof(d, at),
                }
                if wild && at.starts_with(b"\x01*") {
                    shown.extend(self.push_nsec3_for(d, &at[2..], Some(true)));
                }
            }
        }
        if let Some(c) = d.cover.as_mut() {
            // A wildcard's NODATA: the per-query record need not repeat these.
            c.exclude = shown;
        }
    }

    /// Continues a chain from `name` at `target` if it is in this zone and not a loop. (The
    /// names a chain leaves are hashed here, not each name drafted: most chains are none.)
    fn follow<'a>(&'a self, d: &mut Draft<'a>, name: &[u8], target: &[u8], q: Query, depth: usize, seen: &mut Seen) {
        seen.push(hash_wire(name));
        if depth + 1 >= MAX_CHAIN || !wire_ends_with(target, self.apex) || seen.contains(hash_wire(target)) {
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
            match (self.z.rrset(cut, rtype::DS), &self.chain) {
                (Some(ds), _) => self.push_signed(d, 1, Owner::Name(Cow::Borrowed(cut)), cut, ds, true),
                (None, Chain::Nsec(_)) => self.push_nsec(d, cut),
                // RFC 5155 7.2.7: the cut's NSEC3, or with opt-out the closest provable
                // encloser proof.
                (None, Chain::Nsec3(..)) => drop(self.closest_encloser_proof(d, cut)),
                (None, Chain::None) => {}
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
        let mut buf = [0u8; MAX_NAME];
        let Some(t) = Name::lower_into(target, &mut buf) else { return };
        let Some((key, sets)) = self.z.nodes.get_key_value(t) else { return };
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

/// The suffix of `name` one label longer than its suffix of `ce_len` bytes (RFC 5155's
/// next closer name); None if `name` is not longer.
pub fn next_closer(name: &[u8], ce_len: usize) -> Option<&[u8]> {
    let mut i = 0;
    while i < name.len() && name[i] != 0 {
        let j = i + 1 + usize::from(name[i]);
        if name.len().checked_sub(j)? == ce_len {
            return Some(&name[i..]);
        }
        i = j;
    }
    None
}

impl<'z> Chain<'z> {
    /// The chain `z` is signed with: NSEC if it has NSEC records, else NSEC3 if the apex has
    /// an NSEC3PARAM of a known algorithm.
    fn of(z: &'z Zone) -> Chain<'z> {
        if !z.signed {
            return Chain::None;
        }
        let mut nsec: Vec<&'z [u8]> =
            z.nodes.iter().filter(|(_, sets)| sets.iter().any(|s| s.rtype == rtype::NSEC)).map(|(n, _)| n).collect();
        if !nsec.is_empty() {
            nsec.sort_unstable_by(|a, b| canonical_cmp(a, b));
            return Chain::Nsec(nsec);
        }
        let params =
            z.rrset(z.origin.as_wire(), rtype::NSEC3PARAM).and_then(|p| nsec3::Params::from_rdata(&p.rdatas[0]));
        let Some(params) = params else { return Chain::None };
        let mut hashed: Vec<([u8; nsec3::HASH_LEN], &'z [u8])> = z
            .nsec3
            .keys()
            .filter_map(|o| {
                let label = o.get(1..1 + usize::from(*o.first()?))?;
                Some((nsec3::unbase32hex(label)?, o))
            })
            .collect();
        hashed.sort_unstable();
        let chain = nsec3::Chain::new(params, hashed.iter().map(|h| h.0).collect());
        Chain::Nsec3(chain, hashed.into_iter().map(|h| h.1).collect())
    }
}

/// What a draft answers.
#[derive(Clone, Copy)]
/// Hashes of the names a chain has passed (one per step, so at most [`MAX_CHAIN`]).
#[derive(Default)]
struct Seen {
    hashes: [u64; MAX_CHAIN],
    n: usize,
}

impl Seen {
    fn push(&mut self, h: u64) {
        if let Some(slot) = self.hashes.get_mut(self.n) {
            *slot = h;
            self.n += 1;
        }
    }

    fn contains(&self, h: u64) -> bool {
        self.hashes[..self.n].contains(&h)
    }
}

struct Query {
    qtype: u16,
    dnssec: bool,
    /// Drafting a wildcard's answers for the names it stands for.
    expand: bool,
}

/// RFC 8482 section 4.1: answer ANY with one RRset of the name. sirocco picks the smallest,
/// so ANY never amplifies more than an ordinary query would; never the signatures or an NSEC
/// (the DNSSEC records a client that does not ask for them must not get, RFC 4035 3.2.1).
pub fn any_choice(sets: &[RRset]) -> Option<&RRset> {
    sets.iter()
        .filter(|s| !matches!(s.rtype, rtype::RRSIG | rtype::NSEC))
        .min_by_key(|s| (s.rdatas.iter().map(|r| r.len() + 12).sum::<usize>(), s.rtype))
}

#[cfg(test)]
mod tests {
    use super::next_closer;

    #[test]
    fn the_next_closer_name_is_one_label_below_the_encloser() {
        let w = |s: &str| dns::name::wire_from_text(s).unwrap();
        let (q, ce) = (w("a.b.c.example."), w("c.example."));
        assert_eq!(next_closer(&q, ce.len()), Some(&w("b.c.example.")[..]));
        assert_eq!(next_closer(&w("b.c.example."), ce.len()), Some(&w("b.c.example.")[..]));
        assert_eq!(next_closer(&ce, ce.len()), None, "the encloser itself");
        assert_eq!(next_closer(&w("example."), ce.len()), None, "shorter");
    }
}
