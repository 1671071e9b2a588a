//! Zone transfers out (AXFR, RFC 5936): a zone's records laid out once, at load, in transfer
//! order — its SOA, every other RRset (signatures and NSEC3 records included), its SOA
//! again — and cut into messages; a transfer copies them out as the peer takes them. Who may
//! transfer a zone is an address list per zone.

use crate::zone::Zone;
use dns::rtype;
use wire::IpAddr;

/// Record bytes per message, at most: well under the 64 KiB a message over TCP may carry.
const MESSAGE_RECORDS: usize = 16 * 1024;

/// Addresses allowed to transfer a zone: prefixes, IPv4 or IPv6.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acl(Vec<(IpAddr, u8)>);

impl Acl {
    /// Parses prefixes such as `198.18.0.0/24`, `2001:2::/48` or a lone address.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Acl, String> {
        let mut v = Vec::new();
        for e in entries {
            let e = e.as_ref();
            let (a, bits) = match e.split_once('/') {
                Some((a, b)) => (a, Some(b)),
                None => (e, None),
            };
            let addr: std::net::IpAddr = a.parse().map_err(|_| format!("{e:?} is not an address or prefix"))?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                Some(b) => {
                    b.parse::<u8>().ok().filter(|&b| b <= max).ok_or_else(|| format!("{e:?}: bad prefix length"))?
                }
                None => max,
            };
            v.push((IpAddr::from(addr), bits));
        }
        Ok(Acl(v))
    }

    /// True if `a` is in one of the prefixes.
    pub fn allows(&self, a: IpAddr) -> bool {
        self.0.iter().any(|&(p, bits)| {
            let (x, y) = (p.octets(), a.octets());
            x.len() == y.len() && {
                let full = usize::from(bits / 8);
                let rest = bits % 8;
                x[..full] == y[..full] && (rest == 0 || (x[full] ^ y[full]) >> (8 - rest) == 0)
            }
        })
    }

    /// No address is allowed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A zone's transfer, laid out.
#[derive(Debug, Clone, Default)]
pub struct Transfer {
    bytes: Vec<u8>,
    /// Per message: start and end in `bytes`, and how many records.
    messages: Vec<(usize, usize, u16)>,
    /// Records in all.
    pub records: usize,
}

/// Records kept by a journal: at most this many versions back.
const JOURNAL_VERSIONS: usize = 32;

/// One record in wire form (owner uncompressed, type, class, TTL, length, data).
type Rr = Vec<u8>;

/// The length of the record at the start of `b` (laid out as a transfer lays them out).
fn rr_len(b: &[u8]) -> usize {
    let mut i = 0;
    while b[i] != 0 {
        i += 1 + usize::from(b[i]);
    }
    let rd = i + 1 + 8;
    rd + 2 + usize::from(u16::from_be_bytes([b[rd], b[rd + 1]]))
}

/// The difference between two versions of a zone, as IXFR sends it (RFC 1995).
#[derive(Debug, Clone)]
struct Diff {
    from: u32,
    old_soa: Rr,
    new_soa: Rr,
    removed: Vec<Rr>,
    added: Vec<Rr>,
}

/// The differences between the versions a zone went through (reloads), oldest first, so an
/// IXFR from any of them is answered with what changed since (RFC 1995); bounded in versions
/// and in bytes (no larger than the zone itself: past that a whole transfer is as cheap).
#[derive(Debug, Clone, Default)]
pub struct Journal {
    diffs: Vec<Diff>,
    bytes: usize,
}

impl Journal {
    /// The journal of `old` (with its `journal`) followed by `new`, a later version; None
    /// when nothing can be kept (the serial did not move forward).
    pub fn extend(journal: Option<&Journal>, old: &Transfer, new: &Transfer) -> Option<Journal> {
        let (from, to) = (old.serial(), new.serial());
        // Serial arithmetic (RFC 1982): the new one must be ahead.
        if from == to || to.wrapping_sub(from) >= 1 << 31 {
            return None;
        }
        let set = |t: &Transfer| -> std::collections::HashSet<Rr> { t.records().skip(1).map(<[u8]>::to_vec).collect() };
        let (a, b) = (set(old), set(new));
        let soa = |t: &Transfer| t.records().next().expect("a SOA").to_vec();
        let mut removed: Vec<Rr> = a.difference(&b).filter(|r| !is_soa(r)).cloned().collect();
        let mut added: Vec<Rr> = b.difference(&a).filter(|r| !is_soa(r)).cloned().collect();
        removed.sort_unstable();
        added.sort_unstable();
        let d = Diff { from, old_soa: soa(old), new_soa: soa(new), removed, added };
        let mut j = journal.cloned().unwrap_or_default();
        // A chain only: the last version kept must be the old one.
        if j.diffs.last().is_some_and(|l| serial_of(&l.new_soa) != from) {
            j = Journal::default();
        }
        j.bytes += d.removed.iter().chain(&d.added).map(Vec::len).sum::<usize>();
        j.diffs.push(d);
        while j.diffs.len() > JOURNAL_VERSIONS || (j.bytes > new.bytes.len() && j.diffs.len() > 1) {
            let gone = j.diffs.remove(0);
            j.bytes -= gone.removed.iter().chain(&gone.added).map(Vec::len).sum::<usize>();
        }
        Some(j)
    }

    /// The IXFR answer for a client at `serial`: the changes since, as a transfer; None if
    /// the journal does not reach back to it (the client gets the whole zone).
    pub fn since(&self, serial: u32) -> Option<Transfer> {
        let i = self.diffs.iter().position(|d| d.from == serial)?;
        let last = &self.diffs.last()?.new_soa;
        let mut recs: Vec<&[u8]> = vec![last];
        for d in &self.diffs[i..] {
            recs.push(&d.old_soa);
            recs.extend(d.removed.iter().map(Vec::as_slice));
            recs.push(&d.new_soa);
            recs.extend(d.added.iter().map(Vec::as_slice));
        }
        recs.push(last);
        Some(Transfer::from_records(recs))
    }

    /// Versions kept.
    pub fn versions(&self) -> usize {
        self.diffs.len()
    }
}

fn rr_type(r: &[u8]) -> u16 {
    let mut i = 0;
    while r[i] != 0 {
        i += 1 + usize::from(r[i]);
    }
    u16::from_be_bytes([r[i + 1], r[i + 2]])
}

fn is_soa(r: &[u8]) -> bool {
    rr_type(r) == rtype::SOA
}

/// The serial in a SOA record.
fn serial_of(r: &[u8]) -> u32 {
    let n = r.len();
    u32::from_be_bytes([r[n - 20], r[n - 19], r[n - 18], r[n - 17]])
}

impl Transfer {
    /// A transfer of `records` (each in wire form, uncompressed), cut into messages.
    fn from_records<'a>(records: impl IntoIterator<Item = &'a [u8]>) -> Transfer {
        let mut t = Transfer::default();
        let (mut start, mut count) = (0, 0u16);
        for r in records {
            if t.bytes.len() - start + r.len() > MESSAGE_RECORDS && count > 0 {
                t.messages.push((start, t.bytes.len(), count));
                (start, count) = (t.bytes.len(), 0);
            }
            t.bytes.extend_from_slice(r);
            count += 1;
            t.records += 1;
        }
        if count > 0 {
            t.messages.push((start, t.bytes.len(), count));
        }
        t
    }

    /// The records, in order.
    fn records(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            (at < self.bytes.len()).then(|| {
                let n = rr_len(&self.bytes[at..]);
                at += n;
                &self.bytes[at - n..at]
            })
        })
    }

    /// The zone's serial (its first record is the SOA).
    pub fn serial(&self) -> u32 {
        self.records().next().map_or(0, serial_of)
    }

    /// The one-record answer to an IXFR from a client that is up to date: the SOA.
    pub fn soa_only(&self) -> Transfer {
        Transfer::from_records(self.records().take(1))
    }

    /// The transfer of `z`.
    pub fn build(z: &Zone) -> Transfer {
        let apex = z.origin.as_wire();
        let soa = z.soa().expect("the loader checks the SOA");
        let mut t = Transfer::default();
        let mut start = 0;
        let mut count = 0u16;
        let mut push = |t: &mut Transfer, owner: &[u8], rt: u16, ttl: u32, rdata: &[u8]| {
            if t.bytes.len() - start + owner.len() + 10 + rdata.len() > MESSAGE_RECORDS && count > 0 {
                t.messages.push((start, t.bytes.len(), count));
                (start, count) = (t.bytes.len(), 0);
            }
            t.bytes.extend_from_slice(owner);
            t.bytes.extend(rt.to_be_bytes());
            t.bytes.extend(1u16.to_be_bytes());
            t.bytes.extend(ttl.to_be_bytes());
            t.bytes.extend((rdata.len() as u16).to_be_bytes());
            t.bytes.extend_from_slice(rdata);
            count += 1;
            t.records += 1;
        };
        push(&mut t, apex, rtype::SOA, soa.ttl, &soa.rdatas[0]);
        // Sorted, so that a transfer is the same bytes every time for the same zone.
        let mut names: Vec<&[u8]> = z.nodes.keys().chain(z.nsec3.keys()).collect();
        names.sort_unstable();
        for name in names {
            let sets = z.nodes.get(name).or_else(|| z.nsec3.get(name)).expect("a name of the zone");
            for s in sets {
                if s.rtype == rtype::SOA && name == apex {
                    continue;
                }
                for r in &s.rdatas {
                    push(&mut t, name, s.rtype, s.ttl, r);
                }
            }
        }
        push(&mut t, apex, rtype::SOA, soa.ttl, &soa.rdatas[0]);
        if count > 0 {
            t.messages.push((start, t.bytes.len(), count));
        }
        t
    }

    /// Messages the transfer takes.
    pub fn messages(&self) -> usize {
        self.messages.len()
    }

    /// Writes message `i` of the transfer into `out` (cleared first), answering the query
    /// with `id` and `question` (echoed in the first message only).
    pub fn write(&self, i: usize, id: u16, question: &[u8], out: &mut Vec<u8>) {
        let (start, end, count) = self.messages[i];
        let q = if i == 0 { question } else { &[] };
        let id = id.to_be_bytes();
        let qd = u8::from(i == 0);
        let c = count.to_be_bytes();
        out.clear();
        // QR and AA; no error.
        out.extend([id[0], id[1], 0x84, 0, 0, qd, c[0], c[1], 0, 0, 0, 0]);
        out.extend_from_slice(q);
        out.extend_from_slice(&self.bytes[start..end]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4]) -> IpAddr {
        IpAddr::V4(wire::Ipv4Addr(a))
    }

    #[test]
    fn acl_prefixes() {
        let acl = Acl::parse(&["198.18.0.0/24", "198.19.1.1", "2001:2::/48", "198.18.128.0/17"]).unwrap();
        assert!(acl.allows(v4([198, 18, 0, 77])));
        assert!(!acl.allows(v4([198, 18, 1, 77])));
        assert!(acl.allows(v4([198, 19, 1, 1])) && !acl.allows(v4([198, 19, 1, 2])));
        assert!(acl.allows(v4([198, 18, 200, 1])) && !acl.allows(v4([198, 18, 127, 1])), "/17");
        let v6 = |last: u8, third: u8| {
            let mut o = [0u8; 16];
            o[..4].copy_from_slice(&[0x20, 0x01, 0, 2]);
            o[5] = third;
            o[15] = last;
            IpAddr::V6(wire::Ipv6Addr(o))
        };
        assert!(acl.allows(v6(1, 0)) && !acl.allows(v6(1, 1)));
        assert!(!Acl::default().allows(v4([198, 18, 0, 1])));
        for bad in ["198.18.0.0/33", "nonsense", "2001:2::/129", "198.18.0.0/x"] {
            assert!(Acl::parse(&[bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_journal_answers_ixfr_with_the_changes_since_a_serial() {
        let load = |serial: u32, www: &str| {
            let text = format!("$ORIGIN t.\n$TTL 60\n@ SOA ns h {serial} 2 3 4 5\n@ NS ns\nns A 198.18.0.1\n{www}");
            Transfer::build(&crate::zone::load_text(std::path::Path::new("t.zone"), text.as_bytes(), None).unwrap())
        };
        let (v1, v2, v3) = (load(1, "www A 198.18.0.2\n"), load(2, "www A 198.18.0.3\n"), load(3, ""));
        assert!(Journal::extend(None, &v2, &v1).is_none(), "a serial going back keeps nothing");
        let j = Journal::extend(None, &v1, &v2).unwrap();
        let j = Journal::extend(Some(&j), &v2, &v3).unwrap();
        assert_eq!(j.versions(), 2);
        let kinds = |t: &Transfer| t.records().map(|r| (rr_type(r), r.len())).collect::<Vec<_>>();
        let from1 = j.since(1).unwrap();
        let types: Vec<u16> = kinds(&from1).iter().map(|k| k.0).collect();
        // New SOA; old SOA 1, www .2 removed; SOA 2, www .3 added; SOA 2, www .3 removed;
        // SOA 3, nothing added; new SOA.
        assert_eq!(types, vec![6, 6, 1, 6, 1, 6, 1, 6, 6]);
        let serials: Vec<u32> = from1.records().filter(|r| is_soa(r)).map(serial_of).collect();
        assert_eq!(serials, vec![3, 1, 2, 2, 3, 3]);
        assert_eq!(j.since(2).unwrap().records().count(), 5);
        assert!(j.since(7).is_none(), "not in the journal: the whole zone instead");
        assert_eq!(v3.soa_only().records().count(), 1);
        assert_eq!(v3.serial(), 3);
    }

    #[test]
    fn a_transfer_starts_and_ends_with_the_soa_and_carries_every_record_once() {
        use std::fmt::Write as _;
        let mut text = String::from("$ORIGIN t.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.0.1\n");
        for i in 0..2000 {
            let _ = writeln!(text, "h{i} TXT \"{i:04} padding padding padding\"");
        }
        let z = crate::zone::load_text(std::path::Path::new("t.zone"), text.as_bytes(), None).unwrap();
        let t = Transfer::build(&z);
        assert!(t.messages() > 1, "{} messages", t.messages());
        assert_eq!(t.records, z.records + 1, "every record, the SOA twice");
        let mut m = Vec::new();
        let (mut records, mut soas) = (0, Vec::new());
        for i in 0..t.messages() {
            t.write(i, 0xabcd, b"\x01t\x00\x00\xfc\x00\x01", &mut m);
            assert!(m.len() <= 65_535 && m[..4] == [0xab, 0xcd, 0x84, 0]);
            let an = usize::from(u16::from_be_bytes([m[6], m[7]]));
            let mut p = if m[5] == 1 { 12 + 7 } else { 12 };
            for _ in 0..an {
                let (_, end) = dns::Name::read(&m, p).unwrap();
                let rt = u16::from_be_bytes([m[end], m[end + 1]]);
                if rt == rtype::SOA {
                    soas.push(records);
                }
                p = end + 10 + usize::from(u16::from_be_bytes([m[end + 8], m[end + 9]]));
                records += 1;
            }
            assert_eq!(p, m.len(), "the counts describe the message");
        }
        assert_eq!(records, t.records);
        assert_eq!(soas, vec![0, records - 1], "the SOA first and last, nowhere else");
    }
}
