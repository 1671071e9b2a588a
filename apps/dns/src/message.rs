//! Prepared responses: the sections of a response as bytes, built once with name
//! compression, plus the few pointers that depend on where the query name sits and how long
//! it is. Writing one out is a copy and a handful of two-byte stores.

use crate::rdatas::Rdatas;
use dns::name::Name;
use dns::rtype;
use std::borrow::Cow;

/// Pointer targets at or above this are relative to the query name, below it to the body.
const QNAME: u16 = 0x8000;
/// Compression targets are recorded only this early in a body (pointers reach 0x3fff and the
/// body starts after the header and question).
const MAX_TARGET: usize = 0x3000;

/// A compression pointer to fill in when the response is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Patch {
    /// Offset of the pointer in the body.
    at: u16,
    /// `QNAME | n`: the suffix of the query name n bytes long (n = 0: the whole name);
    /// otherwise an offset in the body.
    to: u16,
}

/// A response, minus header and question.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Prepared {
    /// Authoritative answer flag.
    pub aa: bool,
    /// Response code (4 bits; YXDOMAIN at most).
    pub rcode: u8,
    /// Answer, authority and additional counts.
    pub counts: [u16; 3],
    /// The sections' bytes.
    pub body: Box<[u8]>,
    patches: Box<[Patch]>,
    /// One's-complement sum of `body` (pointers left zero), as if it started at an even
    /// offset: the UDP checksum of a response is then summed from parts.
    sum: u16,
    /// What is appended per query, if anything.
    pub cover: Cover,
}

/// The record that depends on the query name, appended to a prepared response per query
/// (signed zones, DO): last in the authority section, unless the body already has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cover {
    /// [`Cover::NONE`], [`Cover::NSEC`] (the NSEC covering the query name) or
    /// [`Cover::NSEC3`] (the NSEC3 covering its next closer name).
    pub mode: u8,
    /// NSEC3: the length of the closest encloser the next closer name is one label below.
    pub ce_len: u8,
    /// Chain indices of the records already in the body (`u32::MAX`: none).
    pub exclude: [u32; 2],
}

impl Cover {
    /// Nothing depends on the query name.
    pub const NONE: u8 = 0;
    /// The NSEC covering the query name.
    pub const NSEC: u8 = 1;
    /// The NSEC3 covering the next closer name.
    pub const NSEC3: u8 = 2;
}

impl Default for Cover {
    fn default() -> Cover {
        Cover { mode: Cover::NONE, ce_len: 0, exclude: [u32::MAX; 2] }
    }
}

/// A 16-bit one's-complement sum of bytes that start at message offset `at`: bytes at odd
/// offsets land in the low half, so an odd start swaps the sum's bytes.
pub fn sum_at(sum: u16, at: usize) -> u64 {
    u64::from(if at & 1 == 1 { sum.swap_bytes() } else { sum })
}

impl Prepared {
    /// Appends the response to `out` in its encoded form (see [`Staged::encode`]).
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.staged().encode(out);
    }

    /// The encoded form, as a separate buffer.
    pub fn encoded(&self) -> Box<[u8]> {
        let mut v = Vec::with_capacity(ENCODED_HEAD + self.patches.len() * 4 + self.body.len());
        self.encode(&mut v);
        v.into_boxed_slice()
    }

    /// The response as a [`Staged`] one.
    pub fn staged(&self) -> Staged<'_> {
        Staged {
            aa: self.aa,
            rcode: self.rcode,
            counts: self.counts,
            body: &self.body,
            patches: &self.patches,
            sum: self.sum,
            cover: self.cover,
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.body.len() + self.patches.len() * std::mem::size_of::<Patch>()
    }
}

/// A prepared response still in a [`Scratch`]'s buffers: compiling a zone hashes each one
/// and keeps it only if it is new (most are not), so duplicates cost no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Staged<'s> {
    /// See [`Prepared`].
    pub aa: bool,
    /// Response code.
    pub rcode: u8,
    /// Answer, authority and additional counts.
    pub counts: [u16; 3],
    body: &'s [u8],
    patches: &'s [Patch],
    sum: u16,
    /// What is appended per query, if anything.
    pub cover: Cover,
}

impl Staged<'_> {
    /// Appends the response to `out` in the compact form [`Encoded`] reads: flags, counts,
    /// sum, lengths, the patches, then the body, contiguous, so that answering touches one
    /// short run of memory.
    pub fn encode(&self, out: &mut Vec<u8>) {
        if self.body.len() > usize::from(u16::MAX) {
            // Larger than any DNS message: kept only as "does not fit" (TC over UDP).
            out.push(u8::from(self.aa) << 7 | OVERSIZE | (self.rcode & 0x3f));
            out.extend([0; ENCODED_HEAD - 1]);
            return;
        }
        out.push(u8::from(self.aa) << 7 | (self.rcode & 0x3f));
        for c in self.counts {
            out.extend(c.to_le_bytes());
        }
        out.extend(self.sum.to_le_bytes());
        out.push(self.cover.mode);
        out.push(self.cover.ce_len);
        for e in self.cover.exclude {
            out.extend(e.to_le_bytes());
        }
        out.extend((self.body.len() as u16).to_le_bytes());
        out.extend((self.patches.len() as u16).to_le_bytes());
        for p in self.patches.iter() {
            out.extend(p.at.to_le_bytes());
            out.extend(p.to.to_le_bytes());
        }
        out.extend_from_slice(self.body);
    }

    /// The response in buffers of its own.
    pub fn to_prepared(&self) -> Prepared {
        Prepared {
            aa: self.aa,
            rcode: self.rcode,
            counts: self.counts,
            body: self.body.into(),
            patches: self.patches.into(),
            sum: self.sum,
            cover: self.cover,
        }
    }
}

/// Buffers reused from one prepared draft to the next.
#[derive(Debug, Default)]
pub struct Scratch {
    body: Vec<u8>,
    patches: Vec<Patch>,
}

/// Bytes before the patches in the encoded form.
const ENCODED_HEAD: usize = 1 + 6 + 2 + 10 + 2 + 2;
/// Flag bit of an encoded response whose sections exceed 64 KiB.
const OVERSIZE: u8 = 0x40;

/// A prepared response in its encoded form, read in place.
#[derive(Clone, Copy)]
pub struct Encoded<'a> {
    /// Authoritative answer flag.
    pub aa: bool,
    /// Response code.
    pub rcode: u8,
    /// The sections exceed what any message can carry (the body is then empty).
    pub oversize: bool,
    /// Answer, authority and additional counts.
    pub counts: [u16; 3],
    sum: u16,
    /// See [`Prepared::cover`].
    pub cover: Cover,
    patches: &'a [u8],
    /// The sections' bytes.
    pub body: &'a [u8],
}

impl<'a> Encoded<'a> {
    /// Reads the response encoded at the start of `b`.
    pub fn at(b: &'a [u8]) -> Encoded<'a> {
        let le = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let le32 = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let body_len = usize::from(le(19));
        let patches_end = ENCODED_HEAD + usize::from(le(21)) * 4;
        Encoded {
            aa: b[0] & 0x80 != 0,
            rcode: b[0] & 0x3f,
            oversize: b[0] & OVERSIZE != 0,
            counts: [le(1), le(3), le(5)],
            sum: le(7),
            cover: Cover { mode: b[9], ce_len: b[10], exclude: [le32(11), le32(15)] },
            patches: &b[ENCODED_HEAD..patches_end],
            body: &b[patches_end..patches_end + body_len],
        }
    }

    /// Copies the body to `out` (which must be `body.len()` long and start at message offset
    /// `at`), pointing name pointers at the query name found at message offset `qname_at`,
    /// `qname_len` bytes long. Returns the sum of what it wrote, for the checksum (see
    /// [`sum_at`]).
    pub fn write(&self, out: &mut [u8], at: usize, qname_at: usize, qname_len: usize) -> u64 {
        out.copy_from_slice(self.body);
        let mut sum = sum_at(self.sum, at);
        for p in self.patches.chunks_exact(4) {
            let (pat, to) = (u16::from_le_bytes([p[0], p[1]]), u16::from_le_bytes([p[2], p[3]]));
            let target = if to >= QNAME {
                let suffix = usize::from(to & 0xff);
                if suffix == 0 {
                    qname_at
                } else {
                    qname_at + qname_len - suffix
                }
            } else {
                at + usize::from(to)
            };
            let ptr = 0xc000 | (target as u16 & 0x3fff);
            let i = usize::from(pat);
            out[i..i + 2].copy_from_slice(&ptr.to_be_bytes());
            sum += sum_at(ptr, at + i);
        }
        sum
    }
}

/// A draft's [`Cover`], with owner names where the compiled form has chain indices.
#[derive(Debug, Clone, Default)]
pub struct DraftCover {
    /// NSEC3 (else NSEC).
    pub nsec3: bool,
    /// NSEC3: the closest encloser's length.
    pub ce_len: u8,
    /// Owners of the NSEC or NSEC3 records the draft already has that the per-query one
    /// may repeat.
    pub exclude: Vec<Vec<u8>>,
}

/// Who owns a record in a draft.
#[derive(Debug, Clone)]
pub enum Owner<'a> {
    /// The query name, whatever it is (wildcard answers are shared by all names they match).
    Qname,
    /// A name of the zone, lowercase wire form.
    Name(Cow<'a, [u8]>),
}

/// One record of a draft.
#[derive(Debug, Clone)]
pub struct Rec<'a> {
    /// Owner.
    pub owner: Owner<'a>,
    /// Type.
    pub rtype: u16,
    /// TTL.
    pub ttl: u32,
    /// Uncompressed record data.
    pub rdata: Cow<'a, [u8]>,
}

/// A response under construction: what goes in each section.
#[derive(Debug, Clone, Default)]
pub struct Draft<'a> {
    /// AA flag.
    pub aa: bool,
    /// Response code.
    pub rcode: u8,
    /// Answer, authority, additional.
    pub sections: [Vec<Rec<'a>>; 3],
    /// Signed answers about a name that does not exist (wildcards, NXDOMAIN): the record
    /// proving it (see [`Cover`]) goes in the authority section per query.
    pub cover: Option<DraftCover>,
    /// Nothing in the additional section (the per-query records come last).
    pub no_additional: bool,
}

impl<'a> Draft<'a> {
    /// Empties the draft for another response, keeping its buffers.
    pub fn reset(&mut self, aa: bool, rcode: u8) {
        self.aa = aa;
        self.rcode = rcode;
        self.sections.iter_mut().for_each(Vec::clear);
        self.cover = None;
        self.no_additional = false;
    }

    /// Adds every record of an RRset to `section`.
    pub fn push(&mut self, section: usize, owner: Owner<'a>, t: u16, ttl: u32, rdatas: &'a Rdatas) {
        for r in rdatas {
            self.sections[section].push(Rec { owner: owner.clone(), rtype: t, ttl, rdata: Cow::Borrowed(r) });
        }
    }

    /// True if `section` already holds a record of this owner and type.
    pub fn has(&self, section: usize, owner: &[u8], t: u16) -> bool {
        self.sections[section].iter().any(|r| r.rtype == t && matches!(&r.owner, Owner::Name(n) if &**n == owner))
    }

    /// Serialises the draft with name compression. `known` is a name the query name always
    /// ends with (the node's own name, or a wildcard's closest encloser): its suffixes are
    /// in the question and can be pointed at.
    pub fn prepare(&self, known: &[u8]) -> Prepared {
        self.prepare_in(known, &mut Scratch::default()).to_prepared()
    }

    /// [`Draft::prepare`] into `scratch`'s buffers.
    pub fn prepare_in<'s>(&self, known: &[u8], scratch: &'s mut Scratch) -> Staged<'s> {
        scratch.body.clear();
        scratch.patches.clear();
        let mut w = Writer { body: &mut scratch.body, patches: &mut scratch.patches, table: Suffixes::default() };
        let k = known;
        let mut i = 0;
        while k[i] != 0 {
            w.table.push((&k[i..], QNAME | (k.len() - i) as u16));
            i += 1 + usize::from(k[i]);
        }
        let mut counts = [0u16; 3];
        for (s, recs) in self.sections.iter().enumerate() {
            for r in recs {
                match &r.owner {
                    Owner::Qname => w.pointer(QNAME),
                    Owner::Name(n) => w.name(n),
                }
                w.body.extend(r.rtype.to_be_bytes());
                w.body.extend(1u16.to_be_bytes());
                w.body.extend(r.ttl.to_be_bytes());
                let len_at = w.body.len();
                w.body.extend([0, 0]);
                w.rdata(r.rtype, &r.rdata);
                let rdlen = (w.body.len() - len_at - 2) as u16;
                w.body[len_at..len_at + 2].copy_from_slice(&rdlen.to_be_bytes());
                counts[s] += 1;
            }
        }
        // The sum with the pointer placeholders (0xc000 each) taken out again.
        let mut sum = wire::checksum::add(0, w.body);
        for p in w.patches.iter() {
            sum += u64::from(!(sum_at(0xc000, usize::from(p.at)) as u16));
        }
        let sum = wire::checksum::fold(sum);
        Staged {
            aa: self.aa,
            rcode: self.rcode,
            counts,
            sum,
            body: &scratch.body,
            patches: &scratch.patches,
            cover: Cover::default(),
        }
    }
}

/// Names (suffixes) already in a message and where: the first few in place, so that a
/// typical response is written without allocating.
#[derive(Default)]
struct Suffixes<'s> {
    first: [(&'s [u8], u16); 24],
    n: usize,
    more: Vec<(&'s [u8], u16)>,
}

impl<'s> Suffixes<'s> {
    fn push(&mut self, e: (&'s [u8], u16)) {
        if self.n < self.first.len() {
            self.first[self.n] = e;
            self.n += 1;
        } else {
            self.more.push(e);
        }
    }

    fn find(&self, suffix: &[u8]) -> Option<u16> {
        self.first[..self.n].iter().chain(&self.more).find(|(s, _)| *s == suffix).map(|&(_, to)| to)
    }
}

struct Writer<'s, 'b> {
    body: &'b mut Vec<u8>,
    patches: &'b mut Vec<Patch>,
    table: Suffixes<'s>,
}

impl<'s> Writer<'s, '_> {
    fn pointer(&mut self, to: u16) {
        self.patches.push(Patch { at: self.body.len() as u16, to });
        self.body.extend([0xc0, 0]);
    }

    /// Writes a name, pointing at the longest suffix already present.
    fn name(&mut self, wire: &'s [u8]) {
        let mut i = 0;
        while wire[i] != 0 {
            let suffix = &wire[i..];
            if let Some(to) = self.table.find(suffix) {
                self.pointer(to);
                return;
            }
            if self.body.len() < MAX_TARGET {
                self.table.push((suffix, self.body.len() as u16));
            }
            let l = 1 + usize::from(wire[i]);
            self.body.extend_from_slice(&wire[i..i + l]);
            i += l;
        }
        self.body.push(0);
    }

    /// Record data, with the names of RFC 1035's own types compressed (RFC 3597 section 4
    /// forbids it for any other type).
    fn rdata(&mut self, t: u16, rdata: &'s [u8]) {
        // Zone data holds names uncompressed.
        let name_end = |from: usize| Name::scan(rdata, from).ok().flatten().map(|len| from + len);
        match t {
            rtype::NS | rtype::CNAME | rtype::PTR if name_end(0) == Some(rdata.len()) => self.name(rdata),
            rtype::MX if rdata.len() > 2 && name_end(2) == Some(rdata.len()) => {
                self.body.extend_from_slice(&rdata[..2]);
                self.name(&rdata[2..]);
            }
            rtype::SOA => match name_end(0).and_then(|m| Some((m, name_end(m)?))) {
                Some((m, r)) if rdata.len() == r + 20 => {
                    self.name(&rdata[..m]);
                    self.name(&rdata[m..r]);
                    self.body.extend_from_slice(&rdata[r..]);
                }
                _ => self.body.extend_from_slice(rdata),
            },
            _ => self.body.extend_from_slice(rdata),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Name {
        let mut w = Vec::new();
        for l in s.split('.').filter(|l| !l.is_empty()) {
            w.push(l.len() as u8);
            w.extend_from_slice(l.as_bytes());
        }
        w.push(0);
        Name::from_wire(&w).unwrap()
    }

    #[test]
    fn compresses_against_the_question_and_the_body() {
        let mut ns = Rdatas::one(name("ns1.example.com").as_wire());
        ns.push(name("ns.other.net").as_wire());
        let mut d = Draft { aa: true, ..Default::default() };
        d.push(0, Owner::Qname, rtype::NS, 60, &ns);
        let a = Rdatas::one(&[198, 18, 0, 1]);
        let ns1 = name("ns1.example.com");
        d.push(2, Owner::Name(Cow::Borrowed(ns1.as_wire())), rtype::A, 60, &a);
        let p = d.prepare(name("example.com").as_wire());
        assert_eq!(p.counts, [2, 0, 1]);
        // Message: header, question "example.com" (13 bytes) at 12, qtype/qclass: body at 29.
        let q = name("example.com");
        let mut msg = vec![0u8; 29 + p.body.len()];
        msg[12..25].copy_from_slice(q.as_wire());
        let mut out = vec![0; p.body.len()];
        let enc = p.encoded();
        Encoded::at(&enc).write(&mut out, 29, 12, 13);
        msg[29..].copy_from_slice(&out);
        // First owner points at the question.
        assert_eq!(&msg[29..31], &[0xc0, 12]);
        // ns1 + pointer to example.com in the question.
        let rd = 29 + 2 + 8 + 2;
        assert_eq!(&msg[rd..rd + 6], &[3, b'n', b's', b'1', 0xc0, 12]);
        // The additional record's owner points at "ns1..." in the first record.
        let (n, _) = Name::read(&msg, msg.len() - 16).unwrap();
        assert_eq!(n, name("ns1.example.com"));
    }
}
