//! Compiling zones into ready responses (Namestorm). Every name of a zone gets, per query
//! type that can make a difference, a prepared response drafted by the rules in
//! [`crate::resolve`]; names that do not exist are answered through their closest encloser
//! (NXDOMAIN, a wildcard, a referral or a DNAME). Identical responses — every NODATA of a
//! zone, every answer a wildcard synthesises — are stored once.

use crate::message::{Draft, Owner, Prepared};
use crate::resolve::{any_choice, Found, View, MAX_CHAIN};
use crate::zone::Zone;
use dns::name::{hash_wire, hash_wire_ci, wire_ends_with, FnvBuild, Name};
use dns::{rcode, rtype};
use std::borrow::Cow;
use std::collections::HashMap;

/// What answers for names below a node that do not exist themselves.
#[derive(Debug, Clone)]
enum Below {
    /// NXDOMAIN.
    Nx,
    /// The node is a delegation point: its referral (the node's `other`).
    Cut,
    /// The wildcard child `*.<node>` (a node index) synthesises the answer.
    Wild(u32),
    /// DNAME substitution.
    Dname(Box<Dname>),
}

/// A DNAME owner's part of the answers for the names below it.
#[derive(Debug, Clone)]
pub struct Dname {
    /// The answer section's DNAME record (owner written as a suffix of the query name).
    pub record: Prepared,
    /// Length of the owner in wire form.
    pub owner_len: usize,
    /// TTL of the synthesised CNAME.
    pub ttl: u32,
    /// The DNAME target, wire form.
    pub target: Box<[u8]>,
}

/// One name of a compiled zone.
#[derive(Debug, Clone)]
struct Node {
    name: Box<[u8]>,
    /// Query types with their own response (an index into the zone's responses), sorted.
    answers: Box<[(u16, u32)]>,
    /// The response for every other query type.
    other: u32,
    below: Below,
}

/// A compiled zone.
#[derive(Debug, Clone)]
pub struct CompiledZone {
    /// The apex.
    pub origin: Name,
    nodes: Vec<Node>,
    /// Open addressing: (upper hash bits, node index + 1; 0 empty).
    table: Box<[(u32, u32)]>,
    responses: Vec<Prepared>,
    nxdomain: u32,
}

/// The outcome of looking a name up in a zone.
pub enum Step<'a> {
    /// A ready response.
    Answer(&'a Prepared),
    /// The name is below a DNAME: the server synthesises the CNAME and looks again.
    Dname(&'a Dname),
}

/// Interns responses while compiling: by a hash of their bytes, keeping a colliding one
/// separately (interning only saves memory).
struct Pool {
    responses: Vec<Prepared>,
    index: HashMap<u64, u32, FnvBuild>,
}

impl Pool {
    fn add(&mut self, p: Prepared) -> u32 {
        let h = p.fingerprint();
        if let Some(&i) = self.index.get(&h) {
            if self.responses[i as usize] == p {
                return i;
            }
        }
        let i = self.responses.len() as u32;
        self.responses.push(p);
        self.index.entry(h).or_insert(i);
        i
    }
}

impl CompiledZone {
    /// Compiles a loaded zone.
    pub fn compile(z: &Zone) -> CompiledZone {
        let view = View::new(z);
        let apex = z.origin.as_wire();
        let mut pool = Pool { responses: Vec::new(), index: HashMap::default() };
        let mut nx = Draft { aa: true, rcode: rcode::NXDOMAIN, ..Default::default() };
        let soa = view.negative_soa();
        nx.push(1, Owner::Name(Cow::Borrowed(apex)), rtype::SOA, soa.ttl, &soa.rdatas);
        let nxdomain = pool.add(nx.prepare(apex));
        // NODATA is the same for every name of the zone: the SOA, pointed at by the part of
        // the query name that is the apex.
        let nodata = pool.add(view.draft(apex, Owner::Qname, 0).prepare(apex));

        let mut names: Vec<&[u8]> = view.names().filter(|n| !view.occluded(n)).collect();
        names.sort_unstable();
        let mut nodes = Vec::with_capacity(names.len());
        let mut wild_of: Vec<(usize, Vec<u8>)> = Vec::new();
        for name in names {
            let sets = view.sets(name);
            // A wildcard's answers are shared by every name it matches: compress only
            // against the part of the query name they all have.
            let known = if name.starts_with(b"\x01*") { &name[2..] } else { name };
            let mut draft = |t: u16| pool.add(view.draft(name, Owner::Qname, t).prepare(known));
            let is_cut = view.is_cut(name);
            let cname = sets.iter().any(|s| s.rtype == rtype::CNAME);
            let mut answers = Vec::new();
            let other = if is_cut {
                answers.push((rtype::DS, draft(rtype::DS)));
                draft(0)
            } else if cname {
                for t in chain_types(&view, name) {
                    answers.push((t, draft(t)));
                }
                let c = draft(rtype::CNAME);
                answers.push((rtype::CNAME, c));
                answers.push((rtype::ANY, c));
                draft(0)
            } else {
                for s in sets {
                    answers.push((s.rtype, draft(s.rtype)));
                }
                if let Some(s) = any_choice(sets) {
                    let chosen = answers.iter().find(|a| a.0 == s.rtype).expect("drafted").1;
                    answers.push((rtype::ANY, chosen));
                }
                nodata
            };
            answers.retain(|a| a.1 != other);
            answers.sort_unstable();
            answers.dedup_by_key(|a| a.0);
            let below = if is_cut {
                Below::Cut
            } else if let Some(d) = sets.iter().find(|s| s.rtype == rtype::DNAME) {
                let mut dd = Draft { aa: true, ..Default::default() };
                dd.push(0, Owner::Name(Cow::Borrowed(name)), rtype::DNAME, d.ttl, &d.rdatas);
                Below::Dname(Box::new(Dname {
                    record: dd.prepare(name),
                    owner_len: name.len(),
                    ttl: d.ttl,
                    target: d.rdatas[0].clone().into_boxed_slice(),
                }))
            } else {
                let mut w = b"\x01*".to_vec();
                w.extend_from_slice(name);
                wild_of.push((nodes.len(), w));
                Below::Nx
            };
            nodes.push(Node { name: name.into(), answers: answers.into_boxed_slice(), other, below });
        }
        let mut cz = CompiledZone {
            origin: z.origin.clone(),
            table: vec![(0, 0); (nodes.len() * 2).next_power_of_two().max(16)].into_boxed_slice(),
            nodes,
            responses: Vec::new(),
            nxdomain,
        };
        for i in 0..cz.nodes.len() {
            cz.insert(i);
        }
        for (i, w) in wild_of {
            if let Some(wi) = cz.node_index(&w) {
                cz.nodes[i].below = Below::Wild(wi as u32);
            }
        }
        cz.responses = pool.responses;
        cz.responses.shrink_to_fit();
        cz
    }

    fn insert(&mut self, i: usize) {
        let h = hash_wire(&self.nodes[i].name);
        let mask = self.table.len() - 1;
        let mut slot = h as usize & mask;
        while self.table[slot].1 != 0 {
            slot = (slot + 1) & mask;
        }
        self.table[slot] = ((h >> 32) as u32, i as u32 + 1);
    }

    /// The node named `wire` (any letter case).
    fn node_index(&self, wire: &[u8]) -> Option<usize> {
        let h = hash_wire_ci(wire);
        let tag = (h >> 32) as u32;
        let mask = self.table.len() - 1;
        let mut slot = h as usize & mask;
        loop {
            let (t, i) = self.table[slot];
            if i == 0 {
                return None;
            }
            if t == tag && self.nodes[i as usize - 1].name.eq_ignore_ascii_case(wire) {
                return Some(i as usize - 1);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Names with prepared answers (owners and empty non-terminals).
    pub fn names(&self) -> usize {
        self.nodes.len()
    }

    /// Distinct prepared responses.
    pub fn responses(&self) -> usize {
        self.responses.len()
    }

    /// Approximate memory held by the compiled zone.
    pub fn memory_bytes(&self) -> usize {
        let node = std::mem::size_of::<Node>();
        let nodes: usize = self.nodes.iter().map(|n| node + n.name.len() + n.answers.len() * 8).sum();
        let responses: usize =
            self.responses.iter().map(|p| std::mem::size_of::<Prepared>() + p.heap_bytes()).sum::<usize>();
        nodes + responses + self.table.len() * 8
    }

    fn answer(&self, n: &Node, qtype: u16) -> &Prepared {
        let i = match n.answers.binary_search_by_key(&qtype, |a| a.0) {
            Ok(k) => n.answers[k].1,
            Err(_) => n.other,
        };
        &self.responses[i as usize]
    }

    /// The response for the wire name `w` (in this zone, any letter case) and `qtype`.
    pub fn lookup(&self, w: &[u8], qtype: u16) -> Step<'_> {
        if let Some(i) = self.node_index(w) {
            return Step::Answer(self.answer(&self.nodes[i], qtype));
        }
        // The name does not exist: its closest encloser decides. Suffixes are tried longest
        // first, hashed in place.
        let apex_len = self.origin.as_wire().len();
        let mut at = 0;
        while w.len() - at > apex_len {
            at += 1 + usize::from(w[at]);
            let Some(i) = self.node_index(&w[at..]) else { continue };
            let n = &self.nodes[i];
            return match &n.below {
                Below::Nx => Step::Answer(&self.responses[self.nxdomain as usize]),
                Below::Cut => Step::Answer(&self.responses[n.other as usize]),
                Below::Wild(wi) => Step::Answer(self.answer(&self.nodes[*wi as usize], qtype)),
                Below::Dname(d) => Step::Dname(d),
            };
        }
        Step::Answer(&self.responses[self.nxdomain as usize])
    }
}

/// Query types whose answer at the CNAME `name` may differ from that of an absent type:
/// the types along its chain inside the zone.
fn chain_types(view: &View<'_>, name: &[u8]) -> Vec<u16> {
    let mut out = vec![rtype::DS];
    let mut cur: Vec<u8> = name.to_vec();
    for _ in 0..MAX_CHAIN {
        let sets = match view.find(&cur) {
            Found::Exact(s) | Found::Wild(s) => s,
            _ => break,
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
        Catalog { zones }
    }

    /// The zones.
    pub fn zones(&self) -> &[CompiledZone] {
        &self.zones
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
