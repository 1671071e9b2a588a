//! Compiling zones into ready responses (Namestorm). Every name of a zone gets, per query
//! type that can make a difference, a prepared response drafted by the rules in
//! [`crate::resolve`]; names that do not exist are answered through their closest encloser
//! (NXDOMAIN, a wildcard, a referral or a DNAME). Identical responses — every NODATA of a
//! zone, every answer a wildcard synthesises — are stored once.
//!
//! A signed zone gets a second response per entry, for queries with the DO bit, and its NSEC
//! records ready to append: what proves a query name does not exist is the one record that
//! depends on the name, found per query by a binary search in canonical order.

use crate::hashed_ahead::{each_hashed_ahead, prefetch_slot};
use crate::message::{Cover, Draft, Encoded, Owner, Scratch, Staged};
use crate::nsec3;
use crate::resolve::{any_choice, next_closer, Chain, Found, View, MAX_CHAIN};
use crate::transfer::{Acl, Transfer};
use crate::zone::{sigs_in, RRset, Zone};
use dns::name::{canonical_cmp, hash_wire, hash_wire_ci, wire_ends_with, FnvBuild, Name};
use dns::{rcode, rtype};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use wire::IpAddr;

/// What answers for names below a node that do not exist themselves.
#[derive(Debug, Clone)]
enum Below {
    /// NXDOMAIN, unless a wildcard child `*.<node>` exists (found when encoding).
    Nx,
    /// The node is a delegation point: its referral (the node's `other`).
    Cut,
    /// DNAME substitution.
    Dname(Box<Dname>),
}

/// A DNAME owner's part of the answers for the names below it.
#[derive(Debug, Clone)]
pub struct Dname {
    /// The answer section's DNAME record (owner written as a suffix of the query name),
    /// encoded; then with its RRSIGs, for DO.
    record: Box<[u8]>,
    record_do: Box<[u8]>,
    /// Length of the owner in wire form.
    pub owner_len: usize,
    /// TTL of the synthesised CNAME.
    pub ttl: u32,
    /// The DNAME target, wire form.
    pub target: Box<[u8]>,
}

impl Dname {
    /// The DNAME record, ready to copy (with its signatures if `dnssec`).
    pub fn record(&self, dnssec: bool) -> Encoded<'_> {
        Encoded::at(if dnssec { &self.record_do } else { &self.record })
    }
}

/// One name of a compiled zone, while compiling (then encoded, see [`NodeView`]).
#[derive(Debug, Clone)]
struct Node<'z> {
    name: &'z [u8],
    /// Where its answers are in the part's list: query types with their own response (an
    /// index into the zone's responses; then the one for DO), sorted.
    answers: (u32, u32),
    /// The responses for every other query type.
    other: (u32, u32),
    /// NXDOMAIN with DO for names this node is the closest encloser of.
    nx_do: u32,
    below: Below,
}

/// A compiled zone. Nodes and responses are encoded back to back in two byte arenas, so a
/// lookup touches the hash table, one node record (name and answer list together) and one
/// response (patches and body together): few cache misses even for a million names.
#[derive(Debug, Clone)]
pub struct CompiledZone {
    /// The apex.
    pub origin: Name,
    /// Encoded nodes, see [`NodeView`].
    nodes: Vec<u8>,
    names: usize,
    /// Open addressing: (upper hash bits, node offset + 1; 0 empty).
    table: Box<[(u32, u32)]>,
    /// Encoded responses (see [`Encoded`]).
    responses: Vec<u8>,
    distinct: usize,
    dnames: Vec<Dname>,
    nxdomain: u32,
    /// The denial records (NSEC or NSEC3 and RRSIGs) ready to copy.
    denial: Denial,
    /// The zone laid out for AXFR, if any address may transfer it.
    transfer: Option<std::sync::Arc<Transfer>>,
    /// What changed between the versions before this one (IXFR), if it has a transfer.
    journal: Option<std::sync::Arc<crate::transfer::Journal>>,
    /// Who may transfer the zone.
    acl: Acl,
    /// Secondaries told of a new version (NOTIFY).
    notify: Vec<(IpAddr, u16)>,
    /// The key transfers must be signed with, and NOTIFYs are (TSIG).
    key: Option<dns::tsig::Key>,
    soa: Soa,
}

/// A zone's SOA, as NOTIFY carries it.
#[derive(Debug, Clone, Default)]
pub struct Soa {
    /// The serial.
    pub serial: u32,
    /// TTL.
    pub ttl: u32,
    /// Record data.
    pub rdata: Vec<u8>,
}

/// A signed zone's denial records (NSEC or NSEC3, each with its RRSIGs) ready to append,
/// and how to find the one a query name needs.
#[derive(Debug, Clone, Default)]
struct Denial {
    /// NSEC owners in canonical order (empty for NSEC3).
    owners: Vec<Box<[u8]>>,
    /// NSEC3 parameters and hashes in order (empty for NSEC).
    nsec3: nsec3::Chain,
    /// Per record (same order): offset in `blocks` of [records u16, sum u16, length u16,
    /// wire bytes].
    at: Vec<u32>,
    blocks: Vec<u8>,
}

/// Records ready to append to a message: how many, their sum (as at an even offset), bytes.
#[derive(Clone, Copy)]
pub struct Block<'a> {
    /// Index of the owner in the chain (to tell two apart).
    pub index: u32,
    /// Records.
    pub count: u16,
    /// One's-complement sum.
    pub sum: u16,
    /// Uncompressed records.
    pub bytes: &'a [u8],
}

/// Node record: name length (u8), below kind (u8), answer count (u16), other (u32), below
/// argument (u32), other for DO (u32), then the name and (type u16, response offset u32,
/// DO response offset u32) per answer. Below NX, the argument is the DO NXDOMAIN.
const NODE_HEAD: usize = 16;
const ANSWER_LEN: usize = 10;
const BELOW_NX: u8 = 0;
const BELOW_CUT: u8 = 1;
const BELOW_WILD: u8 = 2;
const BELOW_DNAME: u8 = 3;

/// An encoded node, read in place.
#[derive(Clone, Copy)]
struct NodeView<'a>(&'a [u8]);

impl<'a> NodeView<'a> {
    fn u32_at(&self, i: usize) -> u32 {
        u32::from_le_bytes([self.0[i], self.0[i + 1], self.0[i + 2], self.0[i + 3]])
    }
    fn name(&self) -> &'a [u8] {
        &self.0[NODE_HEAD..NODE_HEAD + usize::from(self.0[0])]
    }
    fn other(&self, dnssec: bool) -> u32 {
        self.u32_at(if dnssec { 12 } else { 4 })
    }
    fn below(&self) -> (u8, u32) {
        (self.0[1], self.u32_at(8))
    }
    /// The query types with a response of their own.
    fn types(&self) -> Vec<u16> {
        let start = NODE_HEAD + usize::from(self.0[0]);
        let count = usize::from(u16::from_le_bytes([self.0[2], self.0[3]]));
        self.0[start..start + count * ANSWER_LEN]
            .chunks_exact(ANSWER_LEN)
            .map(|a| u16::from_le_bytes([a[0], a[1]]))
            .collect()
    }
    /// Bytes of the encoded node.
    fn size(&self) -> usize {
        NODE_HEAD + usize::from(self.0[0]) + usize::from(u16::from_le_bytes([self.0[2], self.0[3]])) * ANSWER_LEN
    }
    /// The response offset for `qtype`.
    fn answer(&self, qtype: u16, dnssec: bool) -> u32 {
        let start = NODE_HEAD + usize::from(self.0[0]);
        let count = usize::from(u16::from_le_bytes([self.0[2], self.0[3]]));
        let pick = if dnssec { 6 } else { 2 };
        for a in self.0[start..start + count * ANSWER_LEN].chunks_exact(ANSWER_LEN) {
            if u16::from_le_bytes([a[0], a[1]]) == qtype {
                return u32::from_le_bytes([a[pick], a[pick + 1], a[pick + 2], a[pick + 3]]);
            }
        }
        self.other(dnssec)
    }
}

fn encode_node(out: &mut Vec<u8>, n: &Node<'_>, answers: &[Answer], offsets: &[u32], below: (u8, u32)) {
    let answers = &answers[n.answers.0 as usize..][..n.answers.1 as usize];
    out.push(n.name.len() as u8);
    out.push(below.0);
    // At most one answer per type: the count fits 16 bits.
    out.extend((answers.len() as u16).to_le_bytes());
    out.extend(offsets[n.other.0 as usize].to_le_bytes());
    out.extend(below.1.to_le_bytes());
    out.extend(offsets[n.other.1 as usize].to_le_bytes());
    out.extend_from_slice(n.name);
    for &(t, i, j) in answers {
        out.extend(t.to_le_bytes());
        out.extend(offsets[i as usize].to_le_bytes());
        out.extend(offsets[j as usize].to_le_bytes());
    }
}

impl Denial {
    /// The records of the chain `view` shows, owners uncompressed.
    fn build(view: &View<'_>) -> Denial {
        let mut c = Denial::default();
        let (owners, kind): (&[&[u8]], u16) = match view.chain() {
            Chain::None => return c,
            Chain::Nsec(o) => (o, rtype::NSEC),
            Chain::Nsec3(chain, o) => {
                c.nsec3 = chain.clone();
                (o, rtype::NSEC3)
            }
        };
        for &owner in owners {
            let sets = match kind {
                rtype::NSEC => view.sets(owner),
                _ => view.z.nsec3.get(owner).map(|v| v.as_slice()).unwrap_or(&[]),
            };
            let mut bytes = Vec::new();
            let mut count = 0u16;
            for set in sets.iter().filter(|s| s.rtype == kind).chain(sigs_in(sets, kind)) {
                for r in &set.rdatas {
                    bytes.extend_from_slice(owner);
                    bytes.extend(set.rtype.to_be_bytes());
                    bytes.extend(1u16.to_be_bytes());
                    bytes.extend(set.ttl.to_be_bytes());
                    bytes.extend((r.len() as u16).to_be_bytes());
                    bytes.extend_from_slice(r);
                    count += 1;
                }
            }
            c.at.push(c.blocks.len() as u32);
            let sum = wire::checksum::fold(wire::checksum::add(0, &bytes));
            c.blocks.extend(count.to_le_bytes());
            c.blocks.extend(sum.to_le_bytes());
            c.blocks.extend((bytes.len() as u16).to_le_bytes());
            c.blocks.extend_from_slice(&bytes);
            if kind == rtype::NSEC {
                c.owners.push(owner.into());
            }
        }
        c
    }

    /// The chain index of the record owned by `owner`.
    fn index_of(&self, owner: &[u8]) -> Option<u32> {
        if !self.owners.is_empty() {
            return self.owners.binary_search_by(|o| canonical_cmp(o, owner)).ok().map(|i| i as u32);
        }
        let h = nsec3::unbase32hex(owner.get(1..1 + usize::from(*owner.first()?))?)?;
        match self.nsec3.place(&h)? {
            nsec3::Place::Matches(i) => Some(i as u32),
            nsec3::Place::Covered(_) => None,
        }
    }

    fn block(&self, i: usize) -> Block<'_> {
        let b = &self.blocks[self.at[i] as usize..];
        let le = |k: usize| u16::from_le_bytes([b[k], b[k + 1]]);
        Block { index: i as u32, count: le(0), sum: le(2), bytes: &b[6..6 + usize::from(le(4))] }
    }

    /// The NSEC covering `name` (a name that does not exist, any letter case); None when
    /// an NSEC matches it (it exists after all) or the zone has none.
    fn covering(&self, name: &[u8]) -> Option<Block<'_>> {
        let i = self.owners.partition_point(|o| canonical_cmp(o, name).is_le());
        let i = match i.checked_sub(1) {
            Some(i) if self.owners[i].eq_ignore_ascii_case(name) => return None,
            Some(i) => i,
            // Before the first owner (the apex): the last NSEC wraps around.
            None => self.owners.len().checked_sub(1)?,
        };
        Some(self.block(i))
    }

    /// The NSEC3 covering the hash of `name`; None if one matches it or there is none.
    fn covering3(&self, name: &[u8]) -> Option<Block<'_>> {
        match self.nsec3.place(&self.nsec3.params.hash(name))? {
            nsec3::Place::Covered(i) => Some(self.block(i)),
            nsec3::Place::Matches(_) => None,
        }
    }
}

/// What answers the names below a name that do not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BelowKind {
    /// NXDOMAIN.
    Nx,
    /// The referral of a delegation.
    Cut,
    /// A wildcard, answering these types apart.
    Wild(Vec<u16>),
    /// DNAME substitution.
    Dname,
}

/// A name of a compiled zone, as [`CompiledZone::nodes`] lists it.
#[derive(Debug, Clone)]
pub struct NodeInfo<'a> {
    /// Wire form, as written in the zone.
    pub name: &'a [u8],
    /// Query types with a response of their own.
    pub types: Vec<u16>,
    /// What answers for names below it.
    pub below: BelowKind,
}

/// The outcome of looking a name up in a zone.
pub enum Step<'a> {
    /// A ready response.
    Answer(Encoded<'a>),
    /// The name is below a DNAME: the server synthesises the CNAME and looks again.
    Dname(&'a Dname),
}

/// Interns responses while compiling, in the encoded form they are served from, one after
/// another in one buffer (which becomes the compiled zone's): by a hash of those bytes, a
/// colliding one kept separately (interning only saves memory). A buffer of its own per
/// response cost two allocations each, and a second pass to encode them all.
struct Pool {
    bytes: Vec<u8>,
    /// Where each response starts in `bytes`, and last where the next one would.
    starts: Vec<u32>,
    /// Each response's hash (see [`hash_response`]), to grow the index with.
    hashes: Vec<u64>,
    /// Open addressing, linear probing, at most half full: a hash's high half and its
    /// response's number + 1 (0: empty) in one slot, so that a probe misses the cache once
    /// (a standard map's control bytes and entries missed twice: the pool's probes were a
    /// tenth of compiling a million names).
    index: Vec<(u32, u32)>,
    /// The response being added, encoded.
    scratch: Vec<u8>,
}

impl Pool {
    fn new() -> Pool {
        Pool { bytes: Vec::new(), starts: vec![0], hashes: Vec::new(), index: vec![(0, 0); 64], scratch: Vec::new() }
    }

    fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Response `i`, encoded.
    fn get(&self, i: usize) -> &[u8] {
        &self.bytes[self.starts[i] as usize..self.starts[i + 1] as usize]
    }

    /// The response's number in the pool, added if it is new.
    fn add(&mut self, p: Staged<'_>) -> u32 {
        let mut e = std::mem::take(&mut self.scratch);
        e.clear();
        p.encode(&mut e);
        let i = self.add_encoded(&e);
        self.scratch = e;
        i
    }

    /// [`Pool::add`] for a response already encoded.
    fn add_encoded(&mut self, e: &[u8]) -> u32 {
        self.add_hashed(e, hash_response(e))
    }

    /// Asks the cache for the index slot where a response of hash `h` would be looked for.
    fn prefetch(&self, h: u64) {
        prefetch_slot(self.index.as_ptr() as usize, self.index.len() - 1, h);
    }

    /// [`Pool::add_encoded`] for a response whose [`hash_response`] is `h`.
    fn add_hashed(&mut self, e: &[u8], h: u64) -> u32 {
        let tag = (h >> 32) as u32;
        let mask = self.index.len() - 1;
        let mut slot = h as usize & mask;
        loop {
            let (t, k) = self.index[slot];
            if k == 0 {
                break;
            }
            if t == tag && self.get(k as usize - 1) == e {
                return k - 1;
            }
            slot = (slot + 1) & mask;
        }
        let i = self.len() as u32;
        self.bytes.extend_from_slice(e);
        self.starts.push(u32::try_from(self.bytes.len()).expect("a zone's responses fit in 4 GiB"));
        self.hashes.push(h);
        if self.len() * 2 > self.index.len() {
            self.grow();
        } else {
            self.index[slot] = (tag, i + 1);
        }
        i
    }

    /// Twice the index, every response placed again.
    fn grow(&mut self) {
        let mut index = vec![(0, 0); self.index.len() * 2];
        let mask = index.len() - 1;
        for (i, &h) in self.hashes.iter().enumerate() {
            let mut slot = h as usize & mask;
            while index[slot].1 != 0 {
                slot = (slot + 1) & mask;
            }
            index[slot] = ((h >> 32) as u32, i as u32 + 1);
        }
        self.index = index;
    }
}

/// A hash of an encoded response, eight bytes at a time (FNV's byte at a time, a multiply
/// each, was 5 % of loading and compiling a million names), finished so every bit depends
/// on every byte.
fn hash_response(e: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = (e.len() as u64).wrapping_mul(K);
    let mut words = e.chunks_exact(8);
    for w in &mut words {
        h = (h ^ u64::from_le_bytes(w.try_into().expect("eight bytes"))).wrapping_mul(K).rotate_left(29);
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    h = (h ^ u64::from_le_bytes(last)).wrapping_mul(K);
    // MurmurHash3's 64-bit finalizer.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Zones with at least this many names are drafted by two threads.
pub const PARALLEL_NAMES: usize = 100_000;

/// The process may run on more than one CPU (its affinity, as the standard library reads it).
pub fn several_cpus() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

/// What drafting a zone's names reads: the zone's view, its denial chain, and the pool
/// positions every part shares.
struct Drafting<'a, 'z> {
    view: &'a View<'z>,
    /// Names with a wildcard child.
    wild_parents: HashSet<&'z [u8], FnvBuild>,
    denial: &'a Denial,
    signed: bool,
    apex: &'a [u8],
    nxdomain: u32,
    nodata: u32,
}

/// A query type with its own responses (without and with DO, pool indices).
type Answer = (u16, u32, u32);

/// The nodes drafted from some names, in name order.
#[derive(Default)]
struct Part<'z> {
    nodes: Vec<Node<'z>>,
    /// The nodes' answers, each node's together.
    answers: Vec<Answer>,
    /// (node index, the wildcard child's name) for nodes that may have one.
    wild_of: Vec<(usize, Vec<u8>)>,
    expansions: Vec<Node<'z>>,
}

impl<'z> Part<'z> {
    /// Appends `other`, drafted against another pool, whose response `i` is `map[i]` here.
    fn append(&mut self, other: Part<'z>, map: &[u32]) {
        let shift = self.answers.len() as u32;
        let remap = |mut n: Node<'z>| {
            n.answers.0 += shift;
            n.other = (map[n.other.0 as usize], map[n.other.1 as usize]);
            n.nx_do = map[n.nx_do as usize];
            n
        };
        self.answers.extend(other.answers.into_iter().map(|(t, i, j)| (t, map[i as usize], map[j as usize])));
        let base = self.nodes.len();
        self.nodes.extend(other.nodes.into_iter().map(remap));
        self.wild_of.extend(other.wild_of.into_iter().map(|(i, w)| (base + i, w)));
        self.expansions.extend(other.expansions.into_iter().map(remap));
    }
}

impl<'z> Drafting<'_, 'z> {
    fn prep<'s>(&self, d: &Draft<'_>, known: &[u8], scratch: &'s mut Scratch) -> Staged<'s> {
        let mut p = d.prepare_in(known, scratch);
        if let Some(c) = &d.cover {
            let mut exclude = [u32::MAX; 2];
            for (e, o) in exclude.iter_mut().zip(c.exclude.iter().filter_map(|o| self.denial.index_of(o))) {
                *e = o;
            }
            let mode = if c.nsec3 { Cover::NSEC3 } else { Cover::NSEC };
            p.cover = Cover { mode, ce_len: c.ce_len, exclude };
        }
        p
    }

    /// The nodes of `names` (name, its RRsets, whether it is a wildcard's expansion), their
    /// responses added to `pool`. Names are drafted a run at a time ([`RUN`]): each response
    /// is encoded and hashed as it is drafted and its pool slot prefetched, and the run's
    /// responses go into the pool once all are drafted, in the same order as one by one.
    /// Added as drafted, each waited for its slot (the pool's probes were an eighth of
    /// compiling ten million names, two thirds of that the first slot's miss).
    fn draft_names(&self, names: &[(&'z [u8], &'z [RRset], bool)], mut pool: Pool) -> (Pool, Part<'z>) {
        let (view, signed, apex) = (self.view, self.signed, self.apex);
        let mut part = Part { nodes: Vec::with_capacity(names.len()), ..Part::default() };
        let mut answers: Vec<Answer> = Vec::new();
        // One draft and one set of buffers serve every response in turn.
        let mut d = Draft::default();
        let mut scratch = Scratch::default();
        let mut batch = Batch::default();
        let mut plans: Vec<Plan<'z>> = Vec::with_capacity(RUN);
        // A plan's answers: (type, plain, with DO), the responses as the batch numbers them.
        let mut planned: Vec<Answer> = Vec::new();
        for run in names.chunks(RUN) {
            batch.clear();
            plans.clear();
            planned.clear();
            let (nxdomain, nodata) = (batch.known(self.nxdomain), batch.known(self.nodata));
            for &(name, sets, expand) in run {
                let found = view.found_in_zone(name, sets);
                let is_cut = matches!(found, Found::Cut(_));
                // A wildcard's answers are shared by every name it matches: compress only
                // against the part of the query name they all have.
                let known = if name.starts_with(b"\x01*") { &name[2..] } else { name };
                // Both drafts of a type: without and with DO (the same one for an unsigned zone).
                let mut draft = |t: u16| {
                    view.draft_into(&mut d, name, Some(found), Owner::Qname, t, false);
                    let plain = batch.stage(&pool, self.prep(&d, known, &mut scratch));
                    let with_do = match (signed, expand) {
                        (false, _) => plain,
                        (true, false) => {
                            view.draft_into(&mut d, name, Some(found), Owner::Qname, t, true);
                            batch.stage(&pool, self.prep(&d, known, &mut scratch))
                        }
                        (true, true) => {
                            view.draft_expansion_into(&mut d, name, t);
                            batch.stage(&pool, self.prep(&d, known, &mut scratch))
                        }
                    };
                    (t, plain, with_do)
                };
                let cname = sets.iter().any(|s| s.rtype == rtype::CNAME);
                let from = planned.len();
                let other = if is_cut {
                    planned.push(draft(rtype::DS));
                    draft(0)
                } else if cname {
                    for t in chain_types(view, sets) {
                        planned.push(draft(t));
                    }
                    let c = draft(rtype::CNAME);
                    planned.push(c);
                    planned.push((rtype::ANY, c.1, c.2));
                    draft(0)
                } else {
                    for s in sets {
                        planned.push(draft(s.rtype));
                    }
                    if let Some(s) = any_choice(sets) {
                        let chosen = *planned[from..].iter().find(|a| a.0 == s.rtype).expect("drafted");
                        planned.push((rtype::ANY, chosen.1, chosen.2));
                    }
                    if signed {
                        draft(0)
                    } else {
                        (0, nodata, nodata)
                    }
                };
                let nx_do = if signed {
                    batch.stage(&pool, self.prep(&view.nxdomain(name, true), apex, &mut scratch))
                } else {
                    nxdomain
                };
                plans.push(Plan {
                    name,
                    sets,
                    expand,
                    is_cut,
                    answers: from..planned.len(),
                    other: (other.1, other.2),
                    nx_do,
                });
            }
            batch.add_to(&mut pool);
            let id = |i: u32| batch.ids[i as usize];
            for plan in plans.drain(..) {
                let Plan { name, sets, expand, is_cut, .. } = plan;
                let other = (id(plan.other.0), id(plan.other.1));
                answers.clear();
                answers.extend(planned[plan.answers].iter().map(|&(t, p, d)| (t, id(p), id(d))));
                answers.retain(|a| (a.1, a.2) != other);
                answers.sort_unstable();
                answers.dedup_by_key(|a| a.0);
                let below = if is_cut {
                    Below::Cut
                } else if let Some(d) = sets.iter().find(|s| s.rtype == rtype::DNAME) {
                    let mut dd = Draft { aa: true, ..Default::default() };
                    dd.push(0, Owner::Name(Cow::Borrowed(name)), rtype::DNAME, d.ttl, &d.rdatas);
                    let record = dd.prepare(name).encoded();
                    if let Some(sig) = sigs_in(sets, rtype::DNAME) {
                        dd.push(0, Owner::Name(Cow::Borrowed(name)), rtype::RRSIG, sig.ttl, &sig.rdatas);
                    }
                    Below::Dname(Box::new(Dname {
                        record,
                        record_do: dd.prepare(name).encoded(),
                        owner_len: name.len(),
                        ttl: d.ttl,
                        target: d.rdatas[0].into(),
                    }))
                } else {
                    if !expand && self.wild_parents.contains(name) {
                        let mut w = b"\x01*".to_vec();
                        w.extend_from_slice(name);
                        part.wild_of.push((part.nodes.len(), w));
                    }
                    Below::Nx
                };
                let node = Node {
                    name,
                    answers: (part.answers.len() as u32, answers.len() as u32),
                    other,
                    nx_do: id(plan.nx_do),
                    below,
                };
                part.answers.extend_from_slice(&answers);
                if expand {
                    part.expansions.push(node);
                } else {
                    part.nodes.push(node);
                }
            }
        }
        (pool, part)
    }
}

/// Names drafted before their responses go into the pool: enough that the first response's
/// slot has come by the time it is added, few enough that all stay in the cache.
const RUN: usize = 16;

/// A name drafted, its responses numbered as its run's [`Batch`] holds them.
struct Plan<'z> {
    name: &'z [u8],
    sets: &'z [RRset],
    expand: bool,
    is_cut: bool,
    answers: std::ops::Range<usize>,
    other: (u32, u32),
    nx_do: u32,
}

/// The responses of a run of names, encoded one after another, each with its hash, its
/// pool slot prefetched; or a response the pool already numbered.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// Per response: where its bytes end in `bytes` and its hash; or (u32::MAX, its number).
    items: Vec<(u32, u64)>,
    /// Each response's number in the pool, once added.
    ids: Vec<u32>,
}

impl Batch {
    fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
        self.ids.clear();
    }

    /// A response the pool already holds as `id`; the batch's number for it.
    fn known(&mut self, id: u32) -> u32 {
        self.items.push((u32::MAX, u64::from(id)));
        self.items.len() as u32 - 1
    }

    /// `p`, encoded and hashed, its slot in `pool` prefetched; the batch's number for it.
    fn stage(&mut self, pool: &Pool, p: Staged<'_>) -> u32 {
        let start = self.bytes.len();
        p.encode(&mut self.bytes);
        let h = hash_response(&self.bytes[start..]);
        pool.prefetch(h);
        self.items.push((u32::try_from(self.bytes.len()).expect("a run's responses fit in 4 GiB"), h));
        self.items.len() as u32 - 1
    }

    /// Every response added to `pool` in order, its number there in `ids`.
    fn add_to(&mut self, pool: &mut Pool) {
        let mut start = 0;
        for &(end, h) in &self.items {
            let id = if end == u32::MAX {
                h as u32
            } else {
                let e = &self.bytes[start..end as usize];
                start = end as usize;
                pool.add_hashed(e, h)
            };
            self.ids.push(id);
        }
    }
}

/// The first eight bytes of `name`, zero-padded, as a number that orders as the bytes do
/// (a tie leaves the order to the whole names).
fn prefix_key(name: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let k = name.len().min(8);
    b[..k].copy_from_slice(&name[..k]);
    u64::from_be_bytes(b)
}

impl CompiledZone {
    /// Compiles a loaded zone (on two threads from [`PARALLEL_NAMES`] names, when the
    /// process may run on more than one CPU: confined to one, the threads would only take
    /// turns — measured slower).
    pub fn compile(z: &Zone) -> CompiledZone {
        let at = if several_cpus() { PARALLEL_NAMES } else { usize::MAX };
        CompiledZone::compile_split_from(z, at)
    }

    /// Compiles a loaded zone, drafting its names on two threads if it has at least
    /// `parallel_at` of them (0: always; the tests check both ways answer alike).
    pub fn compile_split_from(z: &Zone, parallel_at: usize) -> CompiledZone {
        let view = View::new(z);
        let apex = z.origin.as_wire();
        let denial = Denial::build(&view);
        let mut nx = Draft { aa: true, rcode: rcode::NXDOMAIN, ..Default::default() };
        let soa = view.negative_soa();
        nx.push(1, Owner::Name(Cow::Borrowed(apex)), rtype::SOA, soa.ttl, &soa.rdatas);
        let nx = nx.prepare(apex);
        // NODATA is the same for every name of the zone: the SOA, pointed at by the part of
        // the query name that is the apex (not so with DO: the NSEC at the name is in it).
        let nodata = view.draft(apex, Owner::Qname, 0, false).prepare(apex);
        // Every part's pool starts with these two, at 0 and 1.
        let seeded = || {
            let mut pool = Pool::new();
            pool.add(nx.staged());
            pool.add(nodata.staged());
            pool
        };
        let (nxdomain, nodata) = (0, 1);
        let signed = z.signed;

        let mut keyed: Vec<(u64, &[u8], &[RRset])> =
            view.names().filter(|(n, _)| !view.occluded(n)).map(|(n, s)| (prefix_key(n), n, s)).collect();
        // Byte order; most names differ in their first eight bytes, compared without
        // reaching the name itself (a cache miss each, in a large zone).
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        // Collected in the sort's own buffer (the same size): a million names' second copy
        // would be 40 MB of fresh pages to fault in.
        let mut all: Vec<(&[u8], &[RRset], bool)> = keyed.into_iter().map(|(_, n, s)| (n, s, false)).collect();
        // In a signed zone a wildcard answers differently for itself and for the names it
        // stands for (those need proofs they do not exist): the latter get a node of their
        // own, reached only through the wildcard's parent.
        let wildcards: Vec<_> =
            all.iter().filter(|(n, ..)| signed && n.starts_with(b"\x01*")).map(|&(n, s, _)| (n, s, true)).collect();
        let wild_parents = all.iter().filter(|(n, ..)| n.starts_with(b"\x01*")).map(|(n, ..)| &n[2..]).collect();
        all.extend(wildcards);
        let ctx = Drafting { view: &view, wild_parents, denial: &denial, signed, apex, nxdomain, nodata };
        // A large zone is drafted by two threads, each over half the names with a pool of its
        // own; the second's responses are then added to the first's (equal ones found again).
        let (pool, part) = if all.len() >= parallel_at.max(2) {
            let (a, b) = all.split_at(all.len() / 2);
            let (mut first, second) = std::thread::scope(|sc| {
                let other = sc.spawn(|| ctx.draft_names(b, seeded()));
                (ctx.draft_names(a, seeded()), other.join().expect("the drafting thread"))
            });
            let (pool2, part2) = second;
            let map: Vec<u32> = (0..pool2.len()).map(|i| first.0.add_encoded(pool2.get(i))).collect();
            first.1.append(part2, &map);
            first
        } else {
            ctx.draft_names(&all, seeded())
        };
        let Part { nodes, answers, wild_of, expansions } = part;
        // The responses are encoded already; their offsets go into the nodes.
        let Pool { bytes: responses, starts: mut offsets, .. } = pool;
        offsets.pop();
        let mut node_at = Vec::with_capacity(nodes.len());
        let mut end = 0u32;
        let size = |n: &Node| (NODE_HEAD + n.name.len() + n.answers.1 as usize * ANSWER_LEN) as u32;
        for n in &nodes {
            node_at.push(end);
            end += size(n);
        }
        // Wildcard expansion nodes go after the others, in no table (in name order, as the
        // names were drafted).
        let mut expansion_at = Vec::with_capacity(expansions.len());
        for n in &expansions {
            expansion_at.push(end);
            end += size(n);
        }
        let mut cz = CompiledZone {
            origin: z.origin.clone(),
            table: vec![(0, 0); (nodes.len() * 2).next_power_of_two().max(16)].into_boxed_slice(),
            nodes: Vec::with_capacity(end as usize),
            names: nodes.len(),
            responses,
            distinct: offsets.len(),
            dnames: Vec::new(),
            nxdomain: offsets[nxdomain as usize],
            denial,
            transfer: None,
            journal: None,
            acl: Acl::default(),
            notify: Vec::new(),
            key: None,
            soa: z
                .soa()
                .map(|s| {
                    let r = &s.rdatas[0];
                    let serial =
                        r.len().checked_sub(20).map_or(0, |i| u32::from_be_bytes([r[i], r[i + 1], r[i + 2], r[i + 3]]));
                    Soa { serial, ttl: s.ttl, rdata: r.to_vec() }
                })
                .unwrap_or_default(),
        };
        cz.index(nodes.iter().map(|n| n.name).zip(node_at.iter().copied()));
        // Nodes are sorted by name: find each wildcard child by binary search.
        let mut wild: HashMap<usize, u32> = HashMap::new();
        for (i, w) in wild_of {
            if let Ok(k) = nodes.binary_search_by(|n| n.name.cmp(&w[..])) {
                let expansion = expansions.binary_search_by(|n| n.name.cmp(&w[..])).ok().map(|e| expansion_at[e]);
                wild.insert(i, expansion.unwrap_or(node_at[k]));
            }
        }
        for (i, n) in nodes.into_iter().enumerate() {
            let below = match n.below {
                Below::Nx => match wild.get(&i) {
                    Some(&at) => (BELOW_WILD, at),
                    None => (BELOW_NX, offsets[n.nx_do as usize]),
                },
                Below::Cut => (BELOW_CUT, 0),
                Below::Dname(ref d) => {
                    cz.dnames.push((**d).clone());
                    (BELOW_DNAME, cz.dnames.len() as u32 - 1)
                }
            };
            encode_node(&mut cz.nodes, &n, &answers, &offsets, below);
        }
        for n in &expansions {
            encode_node(&mut cz.nodes, n, &answers, &offsets, (BELOW_NX, 0));
        }
        cz.responses.shrink_to_fit();
        cz
    }

    /// Puts the nodes (name, offset) into the table, the slots of those a few ahead fetched
    /// meanwhile (one by one, each insert waited for its cache miss: 5 % of compiling a
    /// million names).
    fn index<'n>(&mut self, nodes: impl Iterator<Item = (&'n [u8], u32)>) {
        let mask = self.table.len() - 1;
        let table = &mut self.table;
        let base = table.as_ptr() as usize;
        each_hashed_ahead(
            nodes,
            |&(name, _)| hash_wire(name),
            |h| prefetch_slot(base, mask, h),
            |h, (_, at)| {
                let mut slot = h as usize & mask;
                while table[slot].1 != 0 {
                    slot = (slot + 1) & mask;
                }
                table[slot] = ((h >> 32) as u32, at + 1);
            },
        );
    }

    fn node(&self, at: u32) -> NodeView<'_> {
        NodeView(&self.nodes[at as usize..])
    }

    /// The offset of the node named `wire` (any letter case).
    fn node_offset(&self, wire: &[u8]) -> Option<usize> {
        let h = hash_wire_ci(wire);
        let tag = (h >> 32) as u32;
        let mask = self.table.len() - 1;
        let mut slot = h as usize & mask;
        loop {
            let (t, i) = self.table[slot];
            if i == 0 {
                return None;
            }
            if t == tag && self.node(i - 1).name().eq_ignore_ascii_case(wire) {
                return Some(i as usize - 1);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Every name of the zone with the types it answers apart and what answers the names
    /// below it that do not exist.
    pub fn nodes(&self) -> Vec<NodeInfo<'_>> {
        let mut out = Vec::with_capacity(self.names);
        let mut at = 0;
        for _ in 0..self.names {
            let n = self.node(at as u32);
            let below = match n.below() {
                (BELOW_CUT, _) => BelowKind::Cut,
                (BELOW_WILD, w) => BelowKind::Wild(self.node(w).types()),
                (BELOW_DNAME, _) => BelowKind::Dname,
                _ => BelowKind::Nx,
            };
            out.push(NodeInfo { name: n.name(), types: n.types(), below });
            at += n.size();
        }
        out
    }

    /// Whether the zone has the name `w` (any letter case).
    pub fn has_name(&self, w: &[u8]) -> bool {
        self.node_offset(w).is_some()
    }

    /// Names with prepared answers (owners and empty non-terminals).
    pub fn names(&self) -> usize {
        self.names
    }

    /// Distinct prepared responses.
    pub fn responses(&self) -> usize {
        self.distinct
    }

    /// Memory held by the compiled zone.
    pub fn memory_bytes(&self) -> usize {
        let d = &self.denial;
        let nsec = d.blocks.capacity() + d.owners.iter().map(|o| o.len() + 16).sum::<usize>() + d.at.len() * 24;
        self.nodes.capacity() + self.responses.capacity() + self.table.len() * 8 + nsec
    }

    fn response(&self, at: u32) -> Encoded<'_> {
        Encoded::at(&self.responses[at as usize..])
    }

    /// Lets the addresses of `acl` transfer the zone `z` (this zone, as loaded): its
    /// records are laid out for AXFR now.
    pub fn with_transfers(mut self, z: &Zone, acl: Acl) -> CompiledZone {
        self.transfer = (!acl.is_empty()).then(|| std::sync::Arc::new(Transfer::build(z)));
        self.acl = acl;
        self
    }

    /// Tells `targets` (address, port) of every new version of the zone (NOTIFY).
    pub fn with_notify(mut self, targets: Vec<(IpAddr, u16)>) -> CompiledZone {
        self.notify = targets;
        self
    }

    /// Asks transfers of the zone to be signed with `key`, and signs its NOTIFYs with it.
    pub fn with_key(mut self, key: Option<dns::tsig::Key>) -> CompiledZone {
        self.key = key;
        self
    }

    /// The zone's TSIG key, if it has one.
    pub fn key(&self) -> Option<&dns::tsig::Key> {
        self.key.as_ref()
    }

    /// The secondaries to notify.
    pub fn notify_targets(&self) -> &[(IpAddr, u16)] {
        &self.notify
    }

    /// The zone's SOA.
    pub fn soa(&self) -> &Soa {
        &self.soa
    }

    /// The zone's transfer, if `client`, asking with a request signed by `signer` (TSIG
    /// verified), may have it: an allowed address, and the zone's key if it has one.
    pub fn transfer_for(&self, client: IpAddr, signer: Option<&str>) -> Option<&std::sync::Arc<Transfer>> {
        let key_ok = match &self.key {
            Some(k) => signer == Some(k.name()),
            None => true,
        };
        self.transfer.as_ref().filter(|_| key_ok && self.acl.allows(client))
    }

    /// The IXFR answer for a client at `serial` (RFC 1995): the SOA alone when it is up to
    /// date, the changes since from the journal, or None (the whole zone, as AXFR).
    pub fn ixfr_from(&self, serial: u32) -> Option<Transfer> {
        let t = self.transfer.as_ref()?;
        if serial == t.serial() {
            return Some(t.soa_only());
        }
        self.journal.as_ref()?.since(serial)
    }

    /// Versions of the zone the journal reaches back to.
    pub fn journal_versions(&self) -> usize {
        self.journal.as_ref().map_or(0, |j| j.versions())
    }

    /// The records `cover` says to append for the query name `name` (any letter case):
    /// the NSEC covering it, or the NSEC3 covering its next closer name; None if there is
    /// none to add.
    pub fn covering(&self, cover: &Cover, name: &[u8]) -> Option<Block<'_>> {
        let b = match cover.mode {
            Cover::NSEC => self.denial.covering(name)?,
            Cover::NSEC3 => self.denial.covering3(next_closer(name, usize::from(cover.ce_len))?)?,
            _ => return None,
        };
        (!cover.exclude.contains(&b.index)).then_some(b)
    }

    /// The response for the wire name `w` (in this zone, any letter case) and `qtype`, for a
    /// query with the DO bit if `dnssec`.
    pub fn lookup(&self, w: &[u8], qtype: u16, dnssec: bool) -> Step<'_> {
        if let Some(at) = self.node_offset(w) {
            return Step::Answer(self.response(self.node(at as u32).answer(qtype, dnssec)));
        }
        // The name does not exist: its closest encloser decides. Suffixes are tried longest
        // first, hashed in place.
        let apex_len = self.origin.as_wire().len();
        let mut i = 0;
        while w.len() - i > apex_len {
            i += 1 + usize::from(w[i]);
            let Some(at) = self.node_offset(&w[i..]) else { continue };
            let n = self.node(at as u32);
            return match n.below() {
                (BELOW_CUT, _) => Step::Answer(self.response(n.other(dnssec))),
                (BELOW_WILD, wild) => Step::Answer(self.response(self.node(wild).answer(qtype, dnssec))),
                (BELOW_DNAME, d) => Step::Dname(&self.dnames[d as usize]),
                (_, nx_do) if dnssec => Step::Answer(self.response(nx_do)),
                _ => Step::Answer(self.response(self.nxdomain)),
            };
        }
        Step::Answer(self.response(self.nxdomain))
    }
}

/// Query types whose answer at the CNAME `name` (with its RRsets `sets`) may differ from
/// that of an absent type: the types along its chain inside the zone.
fn chain_types(view: &View<'_>, sets: &[RRset]) -> Vec<u16> {
    // DS, and the types answered at the CNAME's own name in a signed zone.
    let mut out = vec![rtype::DS, rtype::RRSIG, rtype::NSEC];
    let mut cur: Vec<u8> = Vec::new();
    for step in 0..MAX_CHAIN {
        let sets = match step {
            // The name itself, known: no lookup.
            0 => sets,
            _ => match view.find(&cur) {
                Found::Exact(s) | Found::Wild(_, s) => s,
                _ => break,
            },
        };
        out.extend(sets.iter().map(|s| s.rtype));
        let next = sets.iter().find(|s| s.rtype == rtype::CNAME).and_then(|c| Name::from_wire(&c.rdatas[0]).ok());
        match next {
            Some(n) if n.ends_with(&view.z.origin) => cur = n.as_wire().to_vec(),
            _ => break,
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// All zones served.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    zones: Vec<CompiledZone>,
    /// The TSIG keys requests may be signed with.
    keys: dns::tsig::Keyring,
}

/// The result of a catalog lookup.
pub enum Lookup<'a> {
    /// The zone that answers.
    Zone(&'a CompiledZone),
    /// Not authoritative for the name: REFUSED.
    Refused,
}

impl Catalog {
    /// A catalog of compiled zones.
    pub fn new(zones: Vec<CompiledZone>) -> Catalog {
        let mut zones = zones;
        // Most specific origin first, so the first match is the closest enclosing zone.
        zones.sort_by_key(|z| std::cmp::Reverse(z.origin.label_count()));
        Catalog { zones, keys: dns::tsig::Keyring::default() }
    }

    /// Knows `keys` for signed requests (TSIG).
    pub fn with_keys(mut self, keys: dns::tsig::Keyring) -> Catalog {
        self.keys = keys;
        self
    }

    /// The TSIG keys.
    pub fn keys(&self) -> &dns::tsig::Keyring {
        &self.keys
    }

    /// The zones.
    pub fn zones(&self) -> &[CompiledZone] {
        &self.zones
    }

    /// Carries each zone's journal over from `old` (the catalog this one replaces), with
    /// what changed since when a zone's serial moved forward.
    pub fn with_journals(mut self, old: &Catalog) -> Catalog {
        for z in &mut self.zones {
            let Some(new) = z.transfer.clone() else { continue };
            let Some(prev) = old.zones.iter().find(|o| o.origin == z.origin) else { continue };
            let Some(before) = prev.transfer.as_ref() else { continue };
            z.journal = if before.serial() == new.serial() {
                prev.journal.clone()
            } else {
                crate::transfer::Journal::extend(prev.journal.as_deref(), before, &new).map(std::sync::Arc::new)
            };
        }
        self
    }

    /// The zone that answers a question. DS at the apex of a zone is answered by its
    /// parent zone when sirocco serves that too (RFC 4035 section 3.1.4.1).
    pub fn zone_for(&self, qname: &[u8], qtype: u16) -> Lookup<'_> {
        let mut found = None;
        for z in &self.zones {
            if !wire_ends_with(qname, z.origin.as_wire()) {
                continue;
            }
            if found.is_none() {
                found = Some(z);
                if !(qtype == rtype::DS && qname.len() == z.origin.as_wire().len()) {
                    break;
                }
            } else {
                found = Some(z);
                break;
            }
        }
        found.map(Lookup::Zone).unwrap_or(Lookup::Refused)
    }
}

#[cfg(test)]
mod tests {
    use super::{hash_response, prefix_key, Pool};
    use std::collections::HashSet;

    #[test]
    fn the_pool_keeps_one_of_equal_responses_and_each_different_one() {
        let mut pool = Pool::new();
        let a: &[u8] = b"\x80\x01\x00response a";
        let b: &[u8] = b"\x80\x01\x00response b";
        assert_eq!(pool.add_encoded(a), 0);
        assert_eq!(pool.add_encoded(b), 1);
        assert_eq!(pool.add_encoded(a), 0);
        assert_eq!((pool.len(), pool.get(0), pool.get(1)), (2, a, b));
        // A response equal to another but for zero bytes at its end is another response.
        let mut c = b.to_vec();
        c.push(0);
        assert_eq!(pool.add_encoded(&c), 2);
        // Through the index's growth: each found again under its first number.
        let many: Vec<Vec<u8>> = (0..10_000u32).map(|i| format!("response {i}").into_bytes()).collect();
        let numbers: Vec<u32> = many.iter().map(|m| pool.add_encoded(m)).collect();
        assert_eq!(numbers, (3..10_003).collect::<Vec<u32>>());
        assert!(many.iter().zip(&numbers).all(|(m, &n)| pool.add_encoded(m) == n && pool.get(n as usize) == &m[..]));
        assert_eq!((pool.len(), pool.add_encoded(a)), (10_003, 0));
    }

    #[test]
    fn response_hashes_differ_for_every_one_of_many_similar_responses() {
        // Lengths from 1 to 96 bytes, each one bit or one byte from its neighbours.
        let mut seen = HashSet::new();
        let mut n = 0;
        for len in 1..=96usize {
            for i in 0..2000u32 {
                let mut e = vec![0u8; len];
                let k = len.min(4);
                e[len - k..].copy_from_slice(&i.to_le_bytes()[..k]);
                if len > 4 || u64::from(i) < 1u64 << (8 * len) {
                    assert!(seen.insert(hash_response(&e)), "a collision at length {len}, {i}");
                    n += 1;
                }
            }
        }
        assert!(n > 180_000);
    }

    #[test]
    fn names_ordered_by_their_prefix_key_then_bytes_are_in_byte_order() {
        let names: [&[u8]; 9] = [
            b"\x02h1\x05bench\x04test\x00",
            b"\x02h1\x05bench\x04test",
            b"\x02h1",
            b"",
            b"\x07h123456\x05bench\x04test\x00",
            b"\x07h123456\x05bench\x04tesu\x00",
            b"\x07h123456\x04bench\x04test\x00",
            b"\xff",
            b"\x00",
        ];
        let mut keyed: Vec<(u64, &[u8])> = names.iter().map(|&n| (prefix_key(n), n)).collect();
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        let mut plain = names.to_vec();
        plain.sort_unstable();
        assert_eq!(keyed.into_iter().map(|(_, n)| n).collect::<Vec<_>>(), plain);
    }
}
