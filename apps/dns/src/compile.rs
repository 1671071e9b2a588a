//! Compiling zones into ready responses (Namestorm): every answer, negative answer and
//! referral is built once, at load time, as the bytes that follow the question. Per query the
//! server copies them behind the client's header and question and patches the few name
//! pointers that depend on the query name's length.

use crate::zone::{RRset, Zone};
use dns::name::{hash_wire, Name};
use dns::{rcode, rtype};
use std::collections::HashMap;

/// A response, minus header and question.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    /// Authoritative answer flag.
    pub aa: bool,
    /// Response code.
    pub rcode: u8,
    /// Answer, authority and additional counts.
    pub counts: [u16; 3],
    /// The sections' bytes.
    pub body: Vec<u8>,
    /// Name pointers to patch: (offset in body, length of the suffix of the query name the
    /// pointer must reach). The pointer is `12 + qname_len - suffix_len`.
    pub patches: Vec<(u16, u8)>,
}

impl Prepared {
    fn push_rr(&mut self, owner: Owner<'_>, t: u16, ttl: u32, rdata: &[u8]) {
        match owner {
            Owner::QnameSuffix(len) => {
                self.patches.push((self.body.len() as u16, len as u8));
                self.body.extend([0xc0, 0x00]);
            }
            Owner::Full(w) => self.body.extend_from_slice(w),
        }
        self.body.extend(t.to_be_bytes());
        self.body.extend(1u16.to_be_bytes());
        self.body.extend(ttl.to_be_bytes());
        self.body.extend((rdata.len() as u16).to_be_bytes());
        self.body.extend_from_slice(rdata);
    }

    fn push_rrset(&mut self, section: usize, owner: Owner<'_>, s: &RRset) {
        for r in &s.rdatas {
            self.push_rr(owner, s.rtype, s.ttl, r);
            self.counts[section] += 1;
        }
    }
}

/// How an owner name is written.
#[derive(Clone, Copy)]
enum Owner<'a> {
    /// As a pointer to the suffix of the query name of this length.
    QnameSuffix(usize),
    /// In full (uncompressed wire form).
    Full(&'a [u8]),
}

/// What is prepared for one name.
#[derive(Debug, Clone)]
pub struct Node {
    name: Name,
    /// Positive answers by type.
    types: Vec<(u16, Prepared)>,
    /// Answer for a type the name does not have: its CNAME if it has one, else NODATA.
    other: Prepared,
}

/// A compiled zone.
#[derive(Debug, Clone)]
pub struct CompiledZone {
    /// The apex.
    pub origin: Name,
    nodes: Vec<Node>,
    index: HashMap<u64, Vec<u32>>,
    /// Referrals by cut name (delegations below the apex).
    cuts: HashMap<u64, Vec<(Name, Prepared)>>,
    nxdomain: Prepared,
}

/// The result of a lookup.
pub enum Lookup<'a> {
    /// A ready response.
    Answer(&'a Prepared),
    /// Not authoritative for the name: REFUSED.
    Refused,
}

impl CompiledZone {
    /// Compiles a loaded zone.
    pub fn compile(z: &Zone) -> CompiledZone {
        let apex_len = z.origin.as_wire().len();
        let soa = z.soa().expect("loader checks the SOA");
        let minimum =
            soa.rdatas[0].len().checked_sub(4).map(|i| u32::from_be_bytes(soa.rdatas[0][i..i + 4].try_into().unwrap()));
        // RFC 2308: the negative TTL is the lesser of the SOA's TTL and its MINIMUM field.
        let neg_soa =
            RRset { rtype: rtype::SOA, ttl: soa.ttl.min(minimum.unwrap_or(soa.ttl)), rdatas: soa.rdatas.clone() };
        let negative = |rc: u8| {
            let mut p = Prepared { aa: true, rcode: rc, ..Default::default() };
            p.push_rrset(1, Owner::QnameSuffix(apex_len), &neg_soa);
            p
        };

        // Delegation points: NS RRsets below the apex.
        let mut cuts: HashMap<u64, Vec<(Name, Prepared)>> = HashMap::new();
        for (name, sets) in &z.nodes {
            if name == &z.origin {
                continue;
            }
            if let Some(ns) = sets.iter().find(|s| s.rtype == rtype::NS) {
                let mut p = Prepared { aa: false, rcode: rcode::NOERROR, ..Default::default() };
                let cut_len = name.as_wire().len();
                p.push_rrset(1, Owner::QnameSuffix(cut_len), ns);
                for target in ns.rdatas.iter().filter_map(|r| Name::from_wire(r).ok()) {
                    for t in [rtype::A, rtype::AAAA] {
                        if let Some(glue) = z.rrset(&target, t) {
                            p.push_rrset(2, Owner::Full(target.as_wire()), glue);
                        }
                    }
                }
                cuts.entry(name.hash()).or_default().push((name.clone(), p));
            }
        }
        let below_cut = |name: &Name| -> bool {
            let mut n = name.clone();
            while n.label_count() > z.origin.label_count() {
                if cuts.get(&n.hash()).is_some_and(|v| v.iter().any(|(c, _)| c == &n)) && &n != name {
                    return true;
                }
                n = n.parent().expect("below the apex");
            }
            false
        };

        // Every owner, plus every empty non-terminal between an owner and the apex (those
        // names exist: NODATA, not NXDOMAIN).
        let mut names: Vec<Name> = z.nodes.keys().cloned().collect();
        for n in z.nodes.keys() {
            let mut p = n.parent();
            while let Some(a) = p {
                if a.label_count() <= z.origin.label_count() || z.nodes.contains_key(&a) {
                    break;
                }
                names.push(a.clone());
                p = a.parent();
            }
        }
        names.sort_by(|a, b| a.as_wire().cmp(b.as_wire()));
        names.dedup();

        let empty = Vec::new();
        let mut nodes = Vec::new();
        let mut index: HashMap<u64, Vec<u32>> = HashMap::new();
        for name in names {
            if below_cut(&name) {
                continue; // occluded by a delegation: answered by the referral
            }
            let sets = z.nodes.get(&name).unwrap_or(&empty);
            let qlen = name.as_wire().len();
            let mut types = Vec::new();
            for s in sets {
                let mut p = Prepared { aa: true, rcode: rcode::NOERROR, ..Default::default() };
                p.push_rrset(0, Owner::QnameSuffix(qlen), s);
                add_target_addresses(&mut p, z, s);
                types.push((s.rtype, p));
            }
            let other = match sets.iter().find(|s| s.rtype == rtype::CNAME) {
                Some(c) => {
                    let mut p = Prepared { aa: true, rcode: rcode::NOERROR, ..Default::default() };
                    p.push_rrset(0, Owner::QnameSuffix(qlen), c);
                    p
                }
                None => negative(rcode::NOERROR),
            };
            index.entry(name.hash()).or_default().push(nodes.len() as u32);
            nodes.push(Node { name, types, other });
        }
        CompiledZone { origin: z.origin.clone(), nodes, index, cuts, nxdomain: negative(rcode::NXDOMAIN) }
    }

    /// Names with prepared answers (owners and empty non-terminals).
    pub fn names(&self) -> usize {
        self.nodes.len()
    }

    /// Bytes of prepared responses.
    pub fn prepared_bytes(&self) -> usize {
        self.nodes.iter().map(|n| n.types.iter().map(|t| t.1.body.len()).sum::<usize>() + n.other.body.len()).sum()
    }

    fn node(&self, wire: &[u8]) -> Option<&Node> {
        let cands = self.index.get(&hash_wire(wire))?;
        cands.iter().map(|&i| &self.nodes[i as usize]).find(|n| n.name.as_wire() == wire)
    }

    /// The response for `qname` (in this zone) and `qtype`.
    pub fn lookup(&self, qname: &Name, qtype: u16) -> &Prepared {
        let w = qname.as_wire();
        if !self.cuts.is_empty() {
            // Walk the suffixes of the name from the top: the highest cut wins. The walk
            // hashes slices of the query name in place; nothing is copied.
            let apex_len = self.origin.as_wire().len();
            let mut starts = [0usize; 128];
            let mut n = 0;
            let mut i = 0;
            while w.len() - i > apex_len && n < starts.len() {
                starts[n] = i;
                n += 1;
                i += 1 + usize::from(w[i]);
            }
            for &s in starts[..n].iter().rev() {
                let suffix = &w[s..];
                if let Some(v) = self.cuts.get(&hash_wire(suffix)) {
                    if let Some((_, p)) = v.iter().find(|(c, _)| c.as_wire() == suffix) {
                        // The parent side answers DS itself; that is for a later revision.
                        return p;
                    }
                }
            }
        }
        match self.node(w) {
            Some(node) => node.types.iter().find(|t| t.0 == qtype).map(|t| &t.1).unwrap_or(&node.other),
            None => &self.nxdomain,
        }
    }
}

/// RFC 1034 4.3.2 step 6: the addresses of the targets of NS, MX and SRV records that the
/// zone has go in the additional section.
fn add_target_addresses(p: &mut Prepared, z: &Zone, s: &RRset) {
    let skip = match s.rtype {
        rtype::NS => 0,
        rtype::MX => 2,
        rtype::SRV => 6,
        _ => return,
    };
    let mut seen: Vec<Name> = Vec::new();
    for r in &s.rdatas {
        let Some(target) = r.get(skip..).and_then(|w| Name::from_wire(w).ok()) else { continue };
        if seen.contains(&target) {
            continue;
        }
        for t in [rtype::A, rtype::AAAA] {
            if let Some(addr) = z.rrset(&target, t) {
                p.push_rrset(2, Owner::Full(target.as_wire()), addr);
            }
        }
        seen.push(target);
    }
}

/// All zones served.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    zones: Vec<CompiledZone>,
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

    /// The response for a question.
    pub fn lookup(&self, qname: &Name, qtype: u16) -> Lookup<'_> {
        match self.zones.iter().find(|z| qname.ends_with(&z.origin)) {
            Some(z) => Lookup::Answer(z.lookup(qname, qtype)),
            None => Lookup::Refused,
        }
    }
}
