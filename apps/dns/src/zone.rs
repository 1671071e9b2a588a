//! Loading master files (RFC 1035 format) with NLnet Labs' `domain` scanner into sirocco's
//! own zone: owner names in lowercase wire form, record data in uncompressed wire form.

use crate::owners::{Appended, Owners};
use crate::rdatas::Rdatas;
use crate::sets::Sets;
use bytes::Bytes;
use dns::name::{wire_ends_with, Name};
use dns::rtype;
use domain::base::iana::Class;
use domain::base::name::ToName;
use domain::base::rdata::{ComposeRecordData, RecordData};
use domain::zonefile::inplace::{Entry, Zonefile};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// One RRset. The RRSIGs at a name make one RRset per type they cover (each with the TTL of
/// the RRset it signs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RRset {
    /// Type.
    pub rtype: u16,
    /// TTL (the lowest of the records', as RFC 2181 5.2 wants one TTL per RRset).
    pub ttl: u32,
    /// Record data, uncompressed wire form, in file order, duplicates removed.
    pub rdatas: Rdatas,
}

/// A zone: its origin and its names with their RRsets.
#[derive(Debug, Clone)]
pub struct Zone {
    /// The apex.
    pub origin: Name,
    /// Owner name (lowercase wire form) → RRsets.
    pub nodes: Owners,
    /// NSEC3 records and their RRSIGs, by owner: kept out of `nodes`, as their hashed owner
    /// names are not names of the zone (RFC 5155 section 7.2.8).
    pub nsec3: Owners,
    /// Records loaded.
    pub records: usize,
    /// RRSIG records were loaded: the zone is signed.
    pub signed: bool,
}

impl Zone {
    /// The RRset of `rtype` at `name`.
    pub fn rrset(&self, name: &[u8], rtype: u16) -> Option<&RRset> {
        self.nodes.get(name)?.iter().find(|r| r.rtype == rtype)
    }

    /// The RRSIGs at `name` that cover `rtype`.
    pub fn sigs(&self, name: &[u8], rtype: u16) -> Option<&RRset> {
        self.nodes.get(name).and_then(|sets| sigs_in(sets, rtype))
    }

    /// The SOA record data at the apex.
    pub fn soa(&self) -> Option<&RRset> {
        self.rrset(self.origin.as_wire(), rtype::SOA)
    }
}

/// The RRSIGs among `sets` that cover `rtype`.
pub fn sigs_in(sets: &[RRset], rtype: u16) -> Option<&RRset> {
    sets.iter().find(|s| s.rtype == rtype::RRSIG && s.rdatas[0].get(..2) == Some(&rtype.to_be_bytes()[..]))
}

/// A record as scanned or received: lowercase wire owner, type, TTL, uncompressed data.
pub type Record = (Box<[u8]>, u16, u32, Vec<u8>);

const MAX_INCLUDE_DEPTH: usize = 8;

/// Loads `path`. The origin is `origin` if given, else the file's `$ORIGIN` or SOA owner.
/// Errors name the file and line.
pub fn load(path: &Path, origin: Option<&str>) -> Result<Zone, String> {
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    load_text(path, &text, origin)
}

/// Loads zone text as if read from `path` (which names errors and anchors `$INCLUDE`).
pub fn load_text(path: &Path, text: &[u8], origin: Option<&str>) -> Result<Zone, String> {
    let zone = match origin {
        // The origin known, each record goes into the zone as it is scanned: a large zone's
        // records are not listed first, nor their owners boxed one by one.
        Some(o) => {
            let origin_name = parse_origin(o)?;
            let origin = dns_name(&origin_name)?;
            // At most a name per line: sized once, never rehashed while a large zone loads.
            let lines = text.iter().filter(|&&b| b == b'\n').count() + 1;
            let mut zone = Loading::new(origin, lines);
            scan(
                path,
                text,
                Some(origin_name),
                &mut |owner, t, ttl, rdata| zone.insert(path, owner, t, ttl, rdata),
                0,
            )?;
            let zone = zone.finish();
            zone.check_soa(path)?;
            zone
        }
        None => {
            let mut records: Vec<Record> = Vec::new();
            let mut list = |owner: &[u8], t, ttl, rdata: &[u8]| {
                records.push((owner.into(), t, ttl, rdata.to_vec()));
                Ok(())
            };
            scan(path, text, None, &mut list, 0)?;
            build(path, None, records)?
        }
    };
    zone.check_cname(path, Some(text))?;
    Ok(zone)
}

/// The zone of `records` (`path` names it in errors); its origin is `origin` if given, else
/// the SOA's owner.
pub fn from_records(path: &Path, origin: Option<Name>, records: Vec<Record>) -> Result<Zone, String> {
    let zone = build(path, origin, records)?;
    zone.check_cname(path, None)?;
    Ok(zone)
}

fn build(path: &Path, origin: Option<Name>, records: Vec<Record>) -> Result<Zone, String> {
    let origin = match origin {
        Some(o) => o,
        None => {
            records.iter().find(|r| r.1 == rtype::SOA).map(|r| Name::from_wire(&r.0).expect("valid")).ok_or_else(
                || format!("{}: no SOA record, and no origin given (use --zone NAME=FILE)", path.display()),
            )?
        }
    };
    let mut zone = Loading::new(origin, records.len());
    for (owner, t, ttl, rdata) in records {
        zone.insert(path, &owner, t, ttl, &rdata)?;
    }
    let zone = zone.finish();
    zone.check_soa(path)?;
    Ok(zone)
}

/// A zone being loaded: its names are indexed once all have come (see [`Appended`]).
struct Loading {
    zone: Zone,
    nodes: Appended,
}

impl Loading {
    /// Room for `names` names.
    fn new(origin: Name, names: usize) -> Loading {
        Loading { zone: Zone::empty(origin), nodes: Appended::with_capacity(names) }
    }

    /// As [`Zone::insert`].
    fn insert(&mut self, path: &Path, owner: &[u8], t: u16, ttl: u32, rdata: &[u8]) -> Result<(), String> {
        let (covered, nsec3) = self.zone.place(path, owner, t, rdata)?;
        let sets = if nsec3 { self.zone.nsec3.get_or_insert(owner) } else { self.nodes.run(owner) };
        self.zone.records += usize::from(add_record(sets, t, covered, ttl, rdata));
        Ok(())
    }

    /// The zone, a name's later runs of records merged into its first as if inserted there.
    fn finish(self) -> Zone {
        let Loading { mut zone, nodes } = self;
        let mut again = 0;
        zone.nodes = nodes.into_owners(|first, later| {
            for set in later {
                let covered = if set.rtype == rtype::RRSIG { covers(&set.rdatas[0]) } else { 0 };
                for r in &set.rdatas {
                    again += usize::from(!add_record(first, set.rtype, covered, set.ttl, r));
                }
            }
        });
        // Counted once as each run came, the records a later run repeats are not new.
        zone.records -= again;
        zone
    }
}

/// Adds a record to the RRsets of its owner; false if it is there already (an RRset keeps
/// its lowest TTL either way).
fn add_record(sets: &mut Sets, t: u16, covered: u16, ttl: u32, rdata: &[u8]) -> bool {
    match sets.iter_mut().find(|s| s.rtype == t && (t != rtype::RRSIG || covers(&s.rdatas[0]) == covered)) {
        Some(s) => {
            s.ttl = s.ttl.min(ttl);
            let new = !s.rdatas.contains(rdata);
            if new {
                s.rdatas.push(rdata);
            }
            new
        }
        None => {
            sets.push(RRset { rtype: t, ttl, rdatas: Rdatas::one(rdata) });
            true
        }
    }
}

/// The type a signature's data says it covers.
fn covers(r: &[u8]) -> u16 {
    if r.len() >= 2 {
        u16::from_be_bytes([r[0], r[1]])
    } else {
        0
    }
}

impl Zone {
    /// A zone of `origin` with no record.
    fn empty(origin: Name) -> Zone {
        Zone { origin, nodes: Owners::default(), nsec3: Owners::default(), records: 0, signed: false }
    }

    /// Where a record of `owner` and type `t` goes: the type its signature covers (for
    /// RRSIG) and whether it is kept with the NSEC3 records; an error if `owner` is outside
    /// the zone.
    fn place(&mut self, path: &Path, owner: &[u8], t: u16, rdata: &[u8]) -> Result<(u16, bool), String> {
        if !wire_ends_with(owner, self.origin.as_wire()) {
            let owner = Name::from_wire(owner).expect("valid");
            return Err(format!("{}: {owner} is outside the zone {}", path.display(), self.origin));
        }
        let covered = if t == rtype::RRSIG { covers(rdata) } else { 0 };
        self.signed |= t == rtype::RRSIG;
        Ok((covered, t == rtype::NSEC3 || (t == rtype::RRSIG && covered == rtype::NSEC3)))
    }

    /// Adds a record (one already there is not added twice; an RRset keeps its lowest TTL).
    fn insert(&mut self, path: &Path, owner: &[u8], t: u16, ttl: u32, rdata: &[u8]) -> Result<(), String> {
        let (covered, nsec3) = self.place(path, owner, t, rdata)?;
        let map = if nsec3 { &mut self.nsec3 } else { &mut self.nodes };
        self.records += usize::from(add_record(map.get_or_insert(owner), t, covered, ttl, rdata));
        Ok(())
    }

    /// Removes a record; false if the zone does not hold it.
    fn remove(&mut self, (owner, t, _ttl, rdata): &Record) -> bool {
        let covered = if *t == rtype::RRSIG { covers(rdata) } else { 0 };
        let nsec3 = *t == rtype::NSEC3 || (*t == rtype::RRSIG && covered == rtype::NSEC3);
        let map = if nsec3 { &mut self.nsec3 } else { &mut self.nodes };
        let Some(sets) = map.get_mut(owner) else { return false };
        let Some(i) =
            sets.iter().position(|s| s.rtype == *t && (*t != rtype::RRSIG || covers(&s.rdatas[0]) == covered))
        else {
            return false;
        };
        if !sets[i].rdatas.remove(rdata) {
            return false;
        }
        if sets[i].rdatas.is_empty() {
            sets.remove(i);
        }
        if sets.is_empty() {
            map.remove(owner);
        }
        self.records -= 1;
        true
    }

    /// A name with a CNAME has no other data but its DNSSEC records, and one CNAME (RFC
    /// 1034 §3.6.2, RFC 2181 §10.1, RFC 4035 §2.5): NSD refuses such a zone and Knot's
    /// checker calls it an error. `text`, when given, is searched for the CNAME's line.
    fn check_cname(&self, path: &Path, text: Option<&[u8]>) -> Result<(), String> {
        let mut bad: Vec<(&[u8], &'static str)> = Vec::new();
        for (owner, sets) in self.nodes.iter() {
            let Some(c) = sets.iter().find(|s| s.rtype == rtype::CNAME) else { continue };
            if c.rdatas.len() > 1 {
                bad.push((owner, "more than one CNAME"));
            } else if sets.iter().any(|s| !matches!(s.rtype, rtype::CNAME | rtype::RRSIG | rtype::NSEC)) {
                bad.push((owner, "a CNAME and other data"));
            }
        }
        bad.sort();
        let Some(&(owner, what)) = bad.first() else { return Ok(()) };
        let name = Name::from_wire(owner).map(|n| n.to_string()).unwrap_or_default();
        let line = text.and_then(|t| cname_line(t, &name, &self.origin.to_string()));
        let at = line.map_or(String::new(), |l| format!(":{l}"));
        Err(format!("{}{at}: {name} has {what} (RFC 1034 §3.6.2, RFC 2181 §10.1)", path.display()))
    }

    fn check_soa(&self, path: &Path) -> Result<(), String> {
        let soas = self.soa().map(|s| s.rdatas.len()).unwrap_or(0);
        if soas != 1 {
            return Err(format!(
                "{}: the zone {} needs exactly one SOA at its apex (found {soas})",
                path.display(),
                self.origin
            ));
        }
        Ok(())
    }

    /// The next version of the zone: `diffs` (records deleted, then added, per change, as
    /// IXFR brings them; RFC 1995) applied in order. A deletion of a record the zone does not
    /// hold is an error: the versions do not match.
    pub fn apply(&self, diffs: Vec<(Vec<Record>, Vec<Record>)>) -> Result<Zone, String> {
        let mut z = self.clone();
        let path = PathBuf::from(z.origin.to_string());
        for (deleted, added) in diffs {
            for r in &deleted {
                if !z.remove(r) {
                    let owner = Name::from_wire(&r.0).map(|n| n.to_string()).unwrap_or_default();
                    return Err(format!("the change deletes a record the zone does not hold ({owner} type {})", r.1));
                }
            }
            for (owner, t, ttl, rdata) in added {
                z.insert(&path, &owner, t, ttl, &rdata)?;
            }
        }
        z.check_cname(&path, None)?;
        z.signed = z.nodes.values().chain(z.nsec3.values()).flatten().any(|s| s.rtype == rtype::RRSIG);
        z.check_soa(&path)?;
        Ok(z)
    }
}

/// The line of a CNAME record of `name` (absolute, with the zone's `origin`) in zone text: a
/// line whose owner is the name (absolute, relative or `@`) and which has a CNAME token.
fn cname_line(text: &[u8], name: &str, origin: &str) -> Option<usize> {
    let name = name.to_ascii_lowercase();
    let origin = origin.to_ascii_lowercase();
    let relative = if name == origin {
        "@".to_string()
    } else {
        name.strip_suffix(&format!(".{origin}")).unwrap_or(&name).to_string()
    };
    text.split(|&b| b == b'\n').enumerate().find_map(|(n, line)| {
        if line.first().is_none_or(|c| c.is_ascii_whitespace()) {
            return None;
        }
        let toks = tokens(line);
        let owner = String::from_utf8_lossy(toks.first()?.text).to_ascii_lowercase();
        let is_cname = toks.iter().any(|t| !t.quoted && t.text.eq_ignore_ascii_case(b"CNAME"));
        (is_cname && (owner == name || owner == relative)).then_some(n + 1)
    })
}

/// The zone as master-file text: `$ORIGIN`, then every record, one per line, in the
/// presentation form NLnet Labs' `domain` writes for the types it knows and the RFC 3597
/// generic form for others (which every zone parser reads).
pub fn to_text(z: &Zone) -> String {
    use std::fmt::Write as _;
    let mut out = format!("; written by sirocco\n$ORIGIN {}\n", z.origin);
    let soa = z.soa().expect("a zone has its SOA");
    let mut write = |owner: &[u8], rtype: u16, ttl: u32, rdata: &[u8]| {
        let name = Name::from_wire(owner).map(|n| n.to_string()).unwrap_or_else(|_| ".".into());
        let _ = match presentation(rtype, rdata) {
            Some(text) => writeln!(out, "{name} {ttl} IN {} {text}", domain::base::iana::Rtype::from_int(rtype)),
            None => writeln!(out, "{name} {ttl} IN TYPE{rtype} \\# {} {}", rdata.len(), hex(rdata)),
        };
    };
    write(z.origin.as_wire(), rtype::SOA, soa.ttl, &soa.rdatas[0]);
    let mut names: Vec<&[u8]> = z.nodes.keys().chain(z.nsec3.keys()).collect();
    names.sort_unstable_by(|a, b| dns::name::canonical_cmp(a, b));
    for name in names {
        let sets = z.nodes.get(name).or_else(|| z.nsec3.get(name)).expect("a name of the zone");
        for set in sets {
            if set.rtype == rtype::SOA && name == z.origin.as_wire() {
                continue;
            }
            for r in &set.rdatas {
                write(name, set.rtype, set.ttl, r);
            }
        }
    }
    out
}

/// `rdata` of `rtype` in presentation form, if `domain` knows the type and the data parses
/// and reads back the same (else the generic form is written).
fn presentation(rtype: u16, rdata: &[u8]) -> Option<String> {
    use domain::base::rdata::ParseRecordData;
    use domain::rdata::ZoneRecordData;
    let mut parser = domain::dep::octseq::Parser::from_ref(rdata);
    let t = domain::base::iana::Rtype::from_int(rtype);
    let data = ZoneRecordData::<&[u8], domain::base::ParsedName<&[u8]>>::parse_rdata(t, &mut parser).ok()??;
    if parser.remaining() != 0 || matches!(data, ZoneRecordData::Unknown(_)) {
        return None;
    }
    Some(data.to_string())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The scanner reports the position after the entry it failed on, which is the start of the
/// next line when the entry ended with a newline; report the entry's own line instead.
fn entry_line(err: &str) -> String {
    let mut parts = err.splitn(3, ':');
    let (Some(l), Some(c), Some(rest)) = (parts.next(), parts.next(), parts.next()) else { return err.to_string() };
    match (l.trim().parse::<usize>(), c.trim().parse::<usize>()) {
        (Ok(line), Ok(1)) if line > 1 => format!("{}:{}", line - 1, rest),
        (Ok(line), Ok(_)) => format!("{line}:{rest}"),
        _ => err.to_string(),
    }
}

fn parse_origin(o: &str) -> Result<domain::base::Name<Bytes>, String> {
    let abs = if o.ends_with('.') { o.to_string() } else { format!("{o}.") };
    abs.parse::<domain::base::Name<Bytes>>().map_err(|e| format!("bad zone name {o:?}: {e}"))
}

/// The owner name `n` in lowercase wire form, into `w` (cleared first).
fn owner_wire(n: &impl ToName, w: &mut Vec<u8>) -> Result<(), String> {
    w.clear();
    n.compose(w).map_err(|_| "name too long".to_string())?;
    w.make_ascii_lowercase();
    // The scanner lets an empty label through (`a..example.com`); no name has one.
    if Name::scan(w, 0) != Ok(Some(w.len())) {
        return Err(format!("{} is not a valid name (an empty label?)", n.to_name::<Vec<u8>>()));
    }
    Ok(())
}

/// Where the scanner's records go: owner (lowercase wire form), type, TTL, record data.
type Sink<'a> = dyn FnMut(&[u8], u16, u32, &[u8]) -> Result<(), String> + 'a;

fn dns_name(n: &impl ToName) -> Result<Name, String> {
    let mut w = Vec::with_capacity(n.compose_len() as usize);
    n.compose(&mut w).map_err(|_| "name too long".to_string())?;
    Name::from_wire(&w).map_err(|e| format!("bad name {e:?}"))
}

fn scan(
    path: &Path,
    text: &[u8],
    origin: Option<domain::base::Name<Bytes>>,
    out: &mut Sink<'_>,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_INCLUDE_DEPTH {
        return Err(format!("{}: $INCLUDE nested more than {MAX_INCLUDE_DEPTH} deep", path.display()));
    }
    let mut text = spf_as_generic(path, text)?;
    // domain 0.12's scanner indexes past the end of a file whose last line is a quoted
    // string without a newline (a panic, found by fuzzing the catalog reader): end every
    // file with one.
    if text.last().is_some_and(|&b| b != b'\n') {
        text.to_mut().push(b'\n');
    }
    let mut reader = &text[..];
    let mut zf = Zonefile::load(&mut reader).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(o) = origin.clone() {
        zf.set_origin(o);
    }
    zf.set_default_class(Class::IN);
    let mut owner = Vec::new();
    let mut rdata = Vec::new();
    loop {
        let entry = match zf.next_entry() {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(e) => return Err(format!("{}:{}", path.display(), entry_line(&e.to_string()))),
        };
        match entry {
            Entry::Record(r) => {
                if r.class() != Class::IN {
                    return Err(format!("{}: only class IN zones are served (found {})", path.display(), r.class()));
                }
                owner_wire(r.owner(), &mut owner).map_err(|e| format!("{}: {e}", path.display()))?;
                let t = RecordData::rtype(r.data()).to_int();
                let ttl = r.ttl().as_secs();
                rdata.clear();
                r.data().compose_rdata(&mut rdata).map_err(|_| format!("{}: record data too long", path.display()))?;
                out(&owner, t, ttl, &rdata)?;
            }
            Entry::Include { path: inc, origin: inc_origin } => {
                let inc = PathBuf::from(std::str::from_utf8(inc.as_slice()).map_err(|_| "bad $INCLUDE path")?);
                let inc = if inc.is_relative() { path.parent().unwrap_or(Path::new(".")).join(inc) } else { inc };
                let o = inc_origin.or_else(|| zf.origin().ok());
                let inc_text =
                    std::fs::read(&inc).map_err(|e| format!("{}: $INCLUDE {}: {e}", path.display(), inc.display()))?;
                scan(&inc, &inc_text, o, out, depth + 1)?;
            }
        }
    }
    Ok(())
}

/// NLnet Labs' scanner knows SPF (type 99, RFC 7208) by name but not its presentation
/// form, which is TXT's. Single-line SPF records are rewritten to the RFC 3597 generic form
/// before scanning; line numbers stay as they were.
fn spf_as_generic<'t>(path: &Path, text: &'t [u8]) -> Result<Cow<'t, [u8]>, String> {
    // Letters ORed with 0x20 are lowercase (a cheaper test, on every byte of a large zone).
    if !text.windows(3).any(|w| [w[0] | 0x20, w[1] | 0x20, w[2] | 0x20] == *b"spf") {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = Vec::with_capacity(text.len() + 64);
    let mut depth = 0usize;
    for (n, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        let toks = tokens(line);
        // The type follows the owner (when the line does not start blank), TTL and class.
        let mut i = usize::from(!line.first().is_some_and(|c| c.is_ascii_whitespace()));
        while toks.get(i).is_some_and(|t| {
            !t.quoted
                && (t.text.first().is_some_and(u8::is_ascii_digit)
                    || [&b"in"[..], b"ch", b"hs", b"cs"].iter().any(|c| t.text.eq_ignore_ascii_case(c)))
        }) {
            i += 1;
        }
        let spf = toks.get(i).filter(|t| !t.quoted && t.text.eq_ignore_ascii_case(b"spf")).map(|_| i);
        match spf {
            Some(i) if depth == 0 && toks[..i].iter().all(|t| !t.quoted) => {
                let rest = &toks[i + 1..];
                if rest.iter().any(|t| !t.quoted && (t.text == b"(" || t.text == b")")) {
                    return Err(format!("{}:{}: write SPF records on one line", path.display(), n + 1));
                }
                let mut rdata = Vec::new();
                for t in rest {
                    let s = unescape(t.text);
                    if s.len() > 255 {
                        return Err(format!("{}:{}: SPF string longer than 255 bytes", path.display(), n + 1));
                    }
                    rdata.push(s.len() as u8);
                    rdata.extend(s);
                }
                let start = toks[i].start;
                out.extend_from_slice(&line[..start]);
                out.extend(format!("TYPE99 \\# {} ", rdata.len()).bytes());
                for b in rdata {
                    out.extend(format!("{b:02x}").bytes());
                }
                out.push(b'\n');
            }
            _ => out.extend_from_slice(line),
        }
        for t in toks.iter().filter(|t| !t.quoted) {
            match t.text {
                b"(" => depth += 1,
                b")" => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    Ok(Cow::Owned(out))
}

struct Token<'a> {
    start: usize,
    text: &'a [u8],
    quoted: bool,
}

/// The tokens of one line up to its comment: quoted strings (without the quotes), words,
/// and parentheses on their own.
fn tokens(line: &[u8]) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        let c = line[i];
        if c == b';' || c == b'\n' || c == b'\r' {
            break;
        } else if c == b' ' || c == b'\t' {
            i += 1;
        } else if c == b'(' || c == b')' {
            out.push(Token { start: i, text: &line[i..i + 1], quoted: false });
            i += 1;
        } else if c == b'"' {
            let mut j = i + 1;
            while j < line.len() && line[j] != b'"' {
                j += if line[j] == b'\\' { 2 } else { 1 };
            }
            out.push(Token { start: i, text: &line[i + 1..j.min(line.len())], quoted: true });
            i = j + 1;
        } else {
            let mut j = i;
            while j < line.len() && !b" \t\r\n;()\"".contains(&line[j]) {
                j += if line[j] == b'\\' { 2 } else { 1 };
            }
            let j = j.min(line.len());
            out.push(Token { start: i, text: &line[i..j], quoted: false });
            i = j;
        }
    }
    out
}

/// RFC 1035 5.1 escapes: `\X` is X, `\DDD` the byte with that decimal value.
fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\' && i + 1 < s.len() {
            let d = &s[i + 1..(i + 4).min(s.len())];
            if d.len() == 3 && d.iter().all(u8::is_ascii_digit) {
                let v = d.iter().fold(0u32, |a, &c| a * 10 + u32::from(c - b'0'));
                out.push(v.min(255) as u8);
                i += 4;
            } else {
                out.push(s[i + 1]);
                i += 2;
            }
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("sirocco-zone-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The lines of a zone in any order load as the same zone: an owner's records apart in
    /// the file, a record repeated, an RRset's TTLs differing (the lowest kept), signatures
    /// by the type they cover.
    #[test]
    fn records_in_any_order_load_as_the_same_zone() {
        let lines = [
            "@ 300 SOA ns1 h 1 2 3 4 5",
            "@ 300 NS ns1",
            "ns1 300 A 198.18.0.1",
            "a 300 A 198.18.0.2",
            "b 300 TXT \"x\"",
            "a 60 A 198.18.0.3",
            "a 300 A 198.18.0.2",
            "b 300 MX 10 ns1",
            "a 300 RRSIG A 13 3 300 20991231000000 20260101000000 1 example.com. AAAA",
            "c.a 300 A 198.18.0.4",
            "a 300 RRSIG TXT 13 3 300 20991231000000 20260101000000 1 example.com. AAAA",
            "a 300 TXT \"y\"",
            "b 600 TXT \"x\"",
        ];
        let zone_of = |order: &[usize], origin: Option<&str>| {
            let mut text = String::from("$ORIGIN example.com.\n");
            for &i in order {
                text.push_str(lines[i]);
                text.push('\n');
            }
            load_text(Path::new("t.zone"), text.as_bytes(), origin).unwrap()
        };
        let sorted: Vec<usize> = {
            let mut o: Vec<usize> = (0..lines.len()).collect();
            o.sort_by_key(|&i| lines[i].split(' ').next());
            o
        };
        // Each name's RRsets and their data, in an order of their own (the file's order is
        // kept, and differs).
        let held = |z: &Zone| {
            type Sets = Vec<(u16, u32, Vec<Vec<u8>>)>;
            let mut all: Vec<(Vec<u8>, Sets)> = z
                .nodes
                .iter()
                .map(|(n, sets)| {
                    let mut s: Vec<_> = sets
                        .iter()
                        .map(|s| {
                            let mut r = s.rdatas.to_vec();
                            r.sort();
                            (s.rtype, s.ttl, r)
                        })
                        .collect();
                    s.sort();
                    (n.to_vec(), s)
                })
                .collect();
            all.sort();
            (all, z.records)
        };
        let want = zone_of(&sorted, None);
        assert_eq!(want.records, 11, "two repeats not counted");
        assert_eq!(want.nodes.len(), 5);
        assert_eq!(want.rrset(b"\x01a\x07example\x03com\x00", rtype::A).unwrap().ttl, 60);
        let want = held(&want);
        let mut order: Vec<usize> = (0..lines.len()).collect();
        for round in 0..40usize {
            // A different order each round (the SOA anywhere).
            order.rotate_left(round % 5 + 1);
            order.swap(round % lines.len(), (round * 7 + 3) % lines.len());
            for origin in [None, Some("example.com")] {
                assert_eq!(held(&zone_of(&order, origin)), want, "order {order:?}");
            }
        }
    }

    #[test]
    fn a_last_line_without_its_newline_loads() {
        let text = b"$ORIGIN example.com.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns TXT \"2\"";
        let z = load_text(Path::new("t.zone"), text, None).unwrap();
        assert_eq!(z.rrset(b"\x02ns\x07example\x03com\x00", rtype::TXT).unwrap().rdatas.to_vec(), [b"\x012".to_vec()]);
    }

    #[test]
    fn loads_a_real_looking_zone() {
        let inc = write("inc.zone", "mail IN A 198.18.1.25\n");
        let p = write(
            "example.zone",
            &format!(
                "$ORIGIN example.com.\n$TTL 3600\n@ IN SOA ns1 hostmaster ( 2024010101 ; serial\n 7200 3600 1209600 300 )\n\
                 \tIN NS ns1\n\tIN NS ns2.example.net.\nns1 IN A 198.18.1.1\nwww 300 IN A 198.18.1.2\n\
                 WWW IN A 198.18.1.3\ntxt IN TXT \"hello world\" \"two\"\n\
                 gen IN TYPE65534 \\# 3 010203\nspf 60 IN SPF \"v=spf1 \\\"a\\\" -all\" x\\065 ; SPF\n$INCLUDE {}\n",
                inc.display()
            ),
        );
        let z = load(&p, None).unwrap();
        assert_eq!(z.origin.to_string(), "example.com.");
        let www = Name::from_wire(b"\x03www\x07example\x03com\x00").unwrap();
        let a = z.rrset(www.as_wire(), rtype::A).unwrap();
        assert_eq!(a.rdatas.to_vec(), vec![vec![198, 18, 1, 2], vec![198, 18, 1, 3]], "case-insensitive owners merge");
        assert_eq!(a.ttl, 300, "one TTL per RRset: the lowest");
        let mail = Name::from_wire(b"\x04mail\x07example\x03com\x00").unwrap();
        assert!(z.rrset(mail.as_wire(), rtype::A).is_some(), "$INCLUDE read");
        let gen = Name::from_wire(b"\x03gen\x07example\x03com\x00").unwrap();
        assert_eq!(z.rrset(gen.as_wire(), 65534).unwrap().rdatas[0], vec![1, 2, 3], "RFC 3597 generic form");
        assert_eq!(z.rrset(z.origin.as_wire(), rtype::NS).unwrap().rdatas.len(), 2);
        let spf = Name::from_wire(b"\x03spf\x07example\x03com\x00").unwrap();
        assert_eq!(z.rrset(spf.as_wire(), 99).unwrap().rdatas[0], b"\x0fv=spf1 \"a\" -all\x02xA".to_vec(), "SPF");
        let _ = std::fs::remove_file(p);
        let _ = std::fs::remove_file(inc);
    }

    #[test]
    fn a_cname_with_other_data_is_refused_at_its_line() {
        let head = "$ORIGIN example.com.\n@ 3600 IN SOA ns1 h 1 2 3 4 5\n@ NS ns1\nns1 A 198.18.0.1\n";
        for (body, line, what) in [
            ("www A 198.18.0.2\nwww CNAME ns1\n", 6, "a CNAME and other data"),
            ("www.example.com. CNAME ns1\nwww TXT \"x\"\n", 5, "a CNAME and other data"),
            ("alias CNAME ns1\nalias CNAME www\n", 5, "more than one CNAME"),
        ] {
            let e = load_text(Path::new("c.zone"), format!("{head}{body}").as_bytes(), None).unwrap_err();
            assert!(e.starts_with(&format!("c.zone:{line}: ")) && e.contains(what), "{e}");
        }
        // Its DNSSEC records may stand beside it.
        let ok = format!(
            "{head}www CNAME ns1\nwww RRSIG CNAME 13 3 60 20991231000000 20260101000000 1 example.com. AAAA\n\
             www NSEC xx.example.com. CNAME RRSIG NSEC\n"
        );
        load_text(Path::new("c.zone"), ok.as_bytes(), None).unwrap();
    }

    #[test]
    fn errors_name_file_and_line() {
        let p = write("bad.zone", "$ORIGIN example.com.\n@ 3600 IN SOA ns1 h 1 2 3 4 5\nwww IN A 300.1.1.1\n");
        let e = load(&p, None).unwrap_err();
        assert!(e.contains("bad.zone:3"), "{e}");
        let p2 = write("nosoa.zone", "$ORIGIN example.com.\nwww 60 IN A 198.18.0.1\n");
        assert!(load(&p2, None).unwrap_err().contains("SOA"));
        let p3 = write("empty-label.zone", "$ORIGIN example.com.\n@ 60 SOA ns1 h 1 2 3 4 5\na.. A 198.18.0.1\n");
        let e = load(&p3, None).unwrap_err();
        assert!(e.contains("empty-label.zone") && e.contains("not a valid name"), "{e}");
        let _ = std::fs::remove_file(p);
        let _ = std::fs::remove_file(p2);
        let _ = std::fs::remove_file(p3);
    }

    #[test]
    fn signatures_group_by_the_type_they_cover_and_nsec3_stays_apart() {
        let text = "$ORIGIN example.com.\n$TTL 60\n@ SOA ns1 h 1 2 3 4 5\n@ NS ns1\nns1 A 198.18.0.1\n\
            ns1 300 RRSIG A 13 3 300 20991231000000 20260101000000 1 example.com. AAAA\n\
            ns1 60 RRSIG NSEC 13 3 60 20991231000000 20260101000000 1 example.com. BBBB\n\
            ns1 60 NSEC example.com. A RRSIG NSEC\n\
            0p9mhaveqvm6t7vbl5lop2u3t2rp3tom 60 NSEC3 1 0 0 - 0p9mhaveqvm6t7vbl5lop2u3t2rp3tom A\n\
            0p9mhaveqvm6t7vbl5lop2u3t2rp3tom 60 RRSIG NSEC3 13 3 60 20991231000000 20260101000000 1 example.com. CCCC\n";
        let z = load_text(Path::new("s.zone"), text.as_bytes(), None).unwrap();
        assert!(z.signed);
        let ns1 = dns::name::wire_from_text("ns1.example.com.").unwrap();
        assert_eq!(z.sigs(&ns1, rtype::A).map(|s| (s.ttl, s.rdatas.len())), Some((300, 1)));
        assert_eq!(z.sigs(&ns1, rtype::NSEC).map(|s| (s.ttl, s.rdatas.len())), Some((60, 1)));
        assert!(z.sigs(&ns1, rtype::AAAA).is_none());
        assert_eq!(z.nsec3.len(), 1, "the hashed owner");
        assert_eq!(z.nsec3.values().next().unwrap().len(), 2, "its NSEC3 and its RRSIG");
        assert_eq!(z.nodes.len(), 2, "apex and ns1: the NSEC3 owner is not a name of the zone");
    }

    #[test]
    fn written_text_loads_back_as_the_same_zone() {
        let mut text = String::from(include_str!("../../../fuzz/data/signed-nsec3.zone"));
        text.push_str(
            "x 60 IN TYPE1234 \\# 3 010203\nm 60 IN MX 10 mail.example.com.\nt 60 IN TXT \"a b\" \"c\\\"d\"\n",
        );
        let z = load_text(Path::new("t.zone"), text.as_bytes(), Some("example.com.")).unwrap();
        let written = to_text(&z);
        let again =
            load_text(Path::new("again.zone"), written.as_bytes(), None).unwrap_or_else(|e| panic!("{e}\n{written}"));
        assert_eq!(again.origin.as_wire(), z.origin.as_wire());
        assert_eq!((again.records, again.signed), (z.records, z.signed));
        assert_eq!(again.nodes, z.nodes);
        assert_eq!(again.nsec3, z.nsec3);
        assert!(written.contains(" IN MX 10 mail.example.com."), "presentation form: {written}");
        assert!(written.contains(" IN TYPE1234 \\# 3 010203"), "generic form for an unknown type");
    }

    #[test]
    fn changes_apply_in_order_and_a_missing_record_is_an_error() {
        let text = "$ORIGIN t.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.0.1\nwww A 198.18.0.2\n";
        let z = load_text(Path::new("t.zone"), text.as_bytes(), None).unwrap();
        let soa = |serial: u8| {
            z.soa().unwrap().rdatas[0]
                .iter()
                .enumerate()
                .map(|(i, &b)| if i == 14 { serial } else { b })
                .collect::<Vec<u8>>()
        };
        let rec = |owner: &[u8], t: u16, data: Vec<u8>| -> Record { (owner.into(), t, 60, data) };
        let apex: &[u8] = b"\x01t\x00";
        let www: &[u8] = b"\x03www\x01t\x00";
        let changes = vec![
            (
                vec![rec(apex, rtype::SOA, soa(1)), rec(www, 1, vec![198, 18, 0, 2])],
                vec![rec(apex, rtype::SOA, soa(2))],
            ),
            (
                vec![rec(apex, rtype::SOA, soa(2))],
                vec![rec(apex, rtype::SOA, soa(3)), rec(b"\x03new\x01t\x00", 1, vec![198, 18, 0, 3])],
            ),
        ];
        let next = z.apply(changes.clone()).unwrap();
        assert!(!next.nodes.contains_key(www), "www deleted");
        assert_eq!(next.rrset(b"\x03new\x01t\x00", 1).unwrap().rdatas.to_vec(), [vec![198, 18, 0, 3]]);
        assert_eq!(next.soa().unwrap().rdatas.to_vec(), [soa(3)]);
        assert_eq!(next.records, z.records, "one record gone, one come");
        let err = next.apply(changes).unwrap_err();
        assert!(err.contains("does not hold"), "{err}");
    }
}
