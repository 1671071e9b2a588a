//! TSIG (RFC 8945): DNS messages signed with a shared secret (HMAC). A request's signature
//! is checked against the key it names; the answer is signed over the request's MAC; each
//! message of a transfer after the first over the MAC of the one before (section 5.3.1).
//!
//! Sans-IO: the caller says what time it is (seconds since the epoch).

use crate::name::Name;
use crate::{class, rtype, HEADER_LEN};
use ring::hmac;

/// Seconds of clock difference allowed (RFC 8945 section 10: 300 recommended).
pub const FUDGE: u16 = 300;
/// The longest MAC (HMAC-SHA512).
pub const MAX_MAC: usize = 64;

/// TSIG error codes (in the TSIG record; the message's rcode is NOTAUTH).
pub mod error {
    /// The MAC does not verify.
    pub const BADSIG: u16 = 16;
    /// The key is not known, or not with that algorithm.
    pub const BADKEY: u16 = 17;
    /// The time signed is outside the fudge.
    pub const BADTIME: u16 = 18;
    /// The MAC was truncated further than allowed.
    pub const BADTRUNC: u16 = 22;
}

/// The HMAC algorithms served (RFC 8945 section 6: SHA-256 mandatory; SHA-1 and MD5 are not
/// offered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// hmac-sha256.
    Sha256,
    /// hmac-sha384.
    Sha384,
    /// hmac-sha512.
    Sha512,
}

impl Algorithm {
    const ALL: [Algorithm; 3] = [Algorithm::Sha256, Algorithm::Sha384, Algorithm::Sha512];

    /// The name in configuration and in kdig's `-y`.
    pub fn text(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "hmac-sha256",
            Algorithm::Sha384 => "hmac-sha384",
            Algorithm::Sha512 => "hmac-sha512",
        }
    }

    /// The algorithm called `s` (any case).
    pub fn from_text(s: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.text().eq_ignore_ascii_case(s))
    }

    /// The algorithm name in wire form (lowercase, as the MAC covers it).
    pub fn wire(self) -> &'static [u8] {
        match self {
            Algorithm::Sha256 => b"\x0bhmac-sha256\x00",
            Algorithm::Sha384 => b"\x0bhmac-sha384\x00",
            Algorithm::Sha512 => b"\x0bhmac-sha512\x00",
        }
    }

    fn from_wire(w: &[u8]) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.wire() == w)
    }

    fn ring(self) -> hmac::Algorithm {
        match self {
            Algorithm::Sha256 => hmac::HMAC_SHA256,
            Algorithm::Sha384 => hmac::HMAC_SHA384,
            Algorithm::Sha512 => hmac::HMAC_SHA512,
        }
    }

    /// Length of the full MAC.
    pub fn mac_len(self) -> usize {
        self.ring().digest_algorithm().output_len()
    }
}

/// A shared secret with its name and algorithm.
#[derive(Clone)]
pub struct Key {
    name: Name,
    text: String,
    alg: Algorithm,
    key: hmac::Key,
}

impl std::fmt::Debug for Key {
    /// Never the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({} {})", self.alg.text(), self.text)
    }
}

impl Key {
    /// The key `name` (a domain name) of `alg` with the base64 `secret`.
    pub fn new(alg: &str, name: &str, secret: &str) -> Result<Key, String> {
        let a = Algorithm::from_text(alg).ok_or_else(|| {
            format!("key {name:?}: algorithm {alg:?} is not one of hmac-sha256, hmac-sha384, hmac-sha512")
        })?;
        let wire = crate::name::wire_from_text(name).map_err(|_| format!("key {name:?}: not a domain name"))?;
        let n = Name::from_wire(&wire).map_err(|_| format!("key {name:?}: not a domain name"))?;
        let secret = base64(secret).ok_or_else(|| format!("key {name:?}: the secret is not base64"))?;
        if secret.is_empty() {
            return Err(format!("key {name:?}: the secret is empty"));
        }
        let text = name.trim_end_matches('.').to_ascii_lowercase();
        Ok(Key { name: n, text, alg: a, key: hmac::Key::new(a.ring(), &secret) })
    }

    /// A key written as kdig's `-y` takes it: `[ALG:]NAME:SECRET` (hmac-sha256 if no ALG).
    pub fn parse(spec: &str) -> Result<Key, String> {
        let parts: Vec<&str> = spec.split(':').collect();
        match parts[..] {
            [name, secret] => Key::new("hmac-sha256", name, secret),
            [alg, name, secret] => Key::new(alg, name, secret),
            _ => Err(format!("key {spec:?}: not [ALGORITHM:]NAME:SECRET")),
        }
    }

    /// The key's name, as configured (lowercase, no trailing dot).
    pub fn name(&self) -> &str {
        &self.text
    }

    /// The key's name in wire form, lowercase.
    pub fn wire_name(&self) -> &[u8] {
        self.name.as_wire()
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// Bytes the TSIG record of this key adds to a message (a full MAC, `other` bytes of
    /// other data).
    pub fn record_len(&self, other: usize) -> usize {
        self.name.as_wire().len() + 10 + self.alg.wire().len() + 16 + self.alg.mac_len() + other
    }
}

/// The keys a server knows.
#[derive(Debug, Clone, Default)]
pub struct Keyring(Vec<Key>);

impl Keyring {
    /// The ring of `keys`; two keys of one name are an error.
    pub fn new(keys: Vec<Key>) -> Result<Keyring, String> {
        for (i, k) in keys.iter().enumerate() {
            if keys[..i].iter().any(|o| o.name.as_wire() == k.name.as_wire()) {
                return Err(format!("key {:?} is given twice", k.text));
            }
        }
        Ok(Keyring(keys))
    }

    /// The key called `name` (as configured).
    pub fn named(&self, name: &str) -> Option<&Key> {
        let name = name.trim_end_matches('.');
        self.0.iter().find(|k| k.text.eq_ignore_ascii_case(name))
    }

    /// No keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn by_wire(&self, wire: &[u8]) -> Option<&Key> {
        self.0.iter().find(|k| k.name.as_wire() == wire)
    }
}

/// A MAC, kept to sign what follows it.
#[derive(Clone, Copy)]
pub struct Mac {
    buf: [u8; MAX_MAC],
    len: u8,
}

impl Mac {
    fn of(tag: &[u8]) -> Mac {
        let mut buf = [0; MAX_MAC];
        buf[..tag.len()].copy_from_slice(tag);
        Mac { buf, len: tag.len() as u8 }
    }

    /// The MAC's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mac({} bytes)", self.len)
    }
}

/// What a message's MAC is computed over besides the message (RFC 8945 4.3.1–4.3.3).
#[derive(Debug, Clone, Copy)]
pub enum Chain<'a> {
    /// A request: the message and the TSIG variables.
    Request,
    /// The answer to (or first message after) a request with this MAC.
    Answer(&'a [u8]),
    /// A later message of a multi-message answer, over the MAC before it: only the timers
    /// among the variables (section 5.3.1).
    Next(&'a [u8]),
}

/// A TSIG record read out of a message.
#[derive(Clone)]
pub struct Record {
    /// Where the record starts in the message (the message without it ends there).
    pub at: usize,
    /// The key's name, lowercase.
    pub key_name: Name,
    /// The algorithm's name, lowercase.
    pub alg_name: Name,
    /// Time signed, seconds since the epoch.
    pub time: u64,
    /// Seconds of difference allowed.
    pub fudge: u16,
    mac: Mac,
    /// The MAC's length as sent (it may be longer than kept: then it does not verify).
    mac_size: usize,
    /// The ID the message had when it was signed.
    pub original_id: u16,
    /// The TSIG error.
    pub error: u16,
    other: [u8; 6],
    other_len: usize,
}

impl Record {
    /// The MAC.
    pub fn mac(&self) -> &[u8] {
        self.mac.as_bytes()
    }

    /// The MAC, kept (the next message of a transfer is checked against it).
    pub fn kept_mac(&self) -> Mac {
        self.mac
    }

    /// Other data (a BADTIME answer's server time), if short enough to be kept.
    pub fn other(&self) -> &[u8] {
        &self.other[..self.other_len.min(6)]
    }

    /// Reads the TSIG record starting at `at`, the last of message `m`.
    pub fn read(m: &[u8], at: usize) -> Option<Record> {
        let (key_name, p) = Name::read(m, at).ok()?;
        let be = |o: usize| -> Option<u16> { Some(u16::from_be_bytes([*m.get(o)?, *m.get(o + 1)?])) };
        if be(p)? != rtype::TSIG || be(p + 2)? != class::ANY {
            return None;
        }
        let end = p + 10 + usize::from(be(p + 8)?);
        if end != m.len() {
            return None;
        }
        let (alg_name, r) = Name::read(m, p + 10).ok()?;
        let time = (u64::from(be(r)?) << 32) | (u64::from(be(r + 2)?) << 16) | u64::from(be(r + 4)?);
        let fudge = be(r + 6)?;
        let mac_size = usize::from(be(r + 8)?);
        let mac_at = r + 10;
        let mac = m.get(mac_at..mac_at + mac_size)?;
        let t = mac_at + mac_size;
        let (original_id, error, other_len) = (be(t)?, be(t + 2)?, usize::from(be(t + 4)?));
        if t + 6 + other_len != end {
            return None;
        }
        let mut other = [0; 6];
        let keep = other_len.min(6);
        other[..keep].copy_from_slice(&m[t + 6..t + 6 + keep]);
        Some(Record {
            at,
            key_name,
            alg_name,
            time,
            fudge,
            mac: Mac::of(&mac[..mac_size.min(MAX_MAC)]),
            mac_size,
            original_id,
            error,
            other,
            other_len,
        })
    }
}

/// The outcome of checking a request's signature.
#[derive(Debug)]
// Names are kept in fixed buffers, as everywhere on the query path; one value per signed
// query, on the stack.
#[allow(clippy::large_enum_variant)]
pub enum Check<'k> {
    /// Signed by `key`: answer, signed over `mac`.
    Valid {
        /// The key.
        key: &'k Key,
        /// The request's MAC.
        mac: Mac,
    },
    /// Signed by `key` but at a time too far from ours: NOTAUTH, signed, with BADTIME and
    /// our time as other data.
    BadTime {
        /// The key.
        key: &'k Key,
        /// The request's MAC.
        mac: Mac,
        /// The request's time signed (the answer's, section 5.2.3).
        time: u64,
    },
    /// Not verified: NOTAUTH with an unsigned TSIG carrying `error` (BADKEY, BADSIG,
    /// BADTRUNC), the request's key and algorithm names echoed.
    Failed {
        /// The TSIG error.
        error: u16,
        /// The request's key name.
        key_name: Name,
        /// The request's algorithm name.
        alg_name: Name,
        /// The request's time signed.
        time: u64,
    },
    /// The record is malformed: FORMERR, unsigned.
    Malformed,
}

/// The TSIG variables of section 4.3.3, after the key name: class, TTL, algorithm, timers,
/// error, other data.
fn variables(ctx: &mut hmac::Context, key_name: &[u8], alg: &[u8], time: u64, fudge: u16, error: u16, other: &[u8]) {
    ctx.update(key_name);
    ctx.update(&class::ANY.to_be_bytes());
    ctx.update(&0u32.to_be_bytes());
    ctx.update(alg);
    timers(ctx, time, fudge);
    ctx.update(&error.to_be_bytes());
    ctx.update(&(other.len() as u16).to_be_bytes());
    ctx.update(other);
}

fn timers(ctx: &mut hmac::Context, time: u64, fudge: u16) {
    ctx.update(&time.to_be_bytes()[2..]);
    ctx.update(&fudge.to_be_bytes());
}

/// The MAC over `m[..rec.at]` as the signer saw it: its original ID, the TSIG not counted.
fn message_mac(key: &Key, m: &[u8], rec: &Record, chain: Chain<'_>) -> hmac::Tag {
    let mut ctx = hmac::Context::with_key(&key.key);
    let prior = match chain {
        Chain::Request => None,
        Chain::Answer(p) | Chain::Next(p) => Some(p),
    };
    if let Some(p) = prior {
        ctx.update(&(p.len() as u16).to_be_bytes());
        ctx.update(p);
    }
    let mut header = [0u8; HEADER_LEN];
    header.copy_from_slice(&m[..HEADER_LEN]);
    header[..2].copy_from_slice(&rec.original_id.to_be_bytes());
    let ar = u16::from_be_bytes([header[10], header[11]]).wrapping_sub(1);
    header[10..12].copy_from_slice(&ar.to_be_bytes());
    ctx.update(&header);
    ctx.update(&m[HEADER_LEN..rec.at]);
    match chain {
        Chain::Next(_) => timers(&mut ctx, rec.time, rec.fudge),
        _ => variables(
            &mut ctx,
            rec.key_name.as_wire(),
            rec.alg_name.as_wire(),
            rec.time,
            rec.fudge,
            rec.error,
            rec.other(),
        ),
    }
    ctx.sign()
}

/// Checks the signature of request `m` whose TSIG record starts at `at`, at time `now`.
pub fn verify<'k>(keys: &'k Keyring, m: &[u8], at: usize, now: u64) -> Check<'k> {
    let Some(rec) = Record::read(m, at) else { return Check::Malformed };
    let failed =
        |error| Check::Failed { error, key_name: rec.key_name.clone(), alg_name: rec.alg_name.clone(), time: rec.time };
    let key = match keys.by_wire(rec.key_name.as_wire()) {
        Some(k) if Algorithm::from_wire(rec.alg_name.as_wire()) == Some(k.alg) => k,
        _ => return failed(error::BADKEY),
    };
    let full = key.alg.mac_len();
    // Section 5.2.2.1: shorter than 10 bytes or half the hash, or longer than it, is
    // malformed; a truncated MAC in between is not accepted here (BADTRUNC).
    if rec.mac_size > full || rec.mac_size < (full / 2).max(10) {
        return Check::Malformed;
    }
    if rec.other_len > 6 {
        return failed(error::BADSIG); // longer than any other data defined; not kept
    }
    if rec.mac_size < full {
        return failed(error::BADTRUNC);
    }
    let tag = message_mac(key, m, &rec, Chain::Request);
    if !constant_eq(tag.as_ref(), rec.mac()) {
        return failed(error::BADSIG);
    }
    if now.abs_diff(rec.time) > u64::from(rec.fudge) {
        return Check::BadTime { key, mac: rec.mac, time: rec.time };
    }
    Check::Valid { key, mac: rec.mac }
}

/// Checks answer `m` (its TSIG record at `at`) to a request or message signed with `chain`'s
/// MAC; returns the record (its MAC chains the next message) if the signature holds.
pub fn verify_answer(key: &Key, m: &[u8], at: usize, chain: Chain<'_>, now: u64) -> Result<Record, String> {
    let rec = Record::read(m, at).ok_or("a malformed TSIG record")?;
    if rec.key_name.as_wire() != key.wire_name() || Algorithm::from_wire(rec.alg_name.as_wire()) != Some(key.alg) {
        return Err(format!("signed with another key, not {}", key.text));
    }
    if rec.error != 0 {
        let e = match rec.error {
            error::BADSIG => "BADSIG",
            error::BADKEY => "BADKEY",
            error::BADTIME => "BADTIME",
            error::BADTRUNC => "BADTRUNC",
            _ => "an unknown TSIG error",
        };
        return Err(format!("the peer answered {e}: it does not accept our signature with key {}", key.text));
    }
    if rec.mac_size != key.alg.mac_len() {
        return Err("a truncated MAC".into());
    }
    // Other data is covered by the MAC in full; only the empty case occurs without an error.
    if rec.other_len != 0 {
        return Err("other data in a signature without an error".into());
    }
    let tag = message_mac(key, m, &rec, chain);
    if !constant_eq(tag.as_ref(), rec.mac()) {
        return Err(format!("the signature with key {} does not verify", key.text));
    }
    if now.abs_diff(rec.time) > u64::from(rec.fudge) {
        return Err("the signature's time is outside the fudge".into());
    }
    Ok(rec)
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Signs the message `buf[..len]` with `key`: appends its TSIG record (time signed `time`,
/// `error`, `other` data) and counts it in ARCOUNT. Returns the new length and the MAC, or
/// None if the record does not fit in `buf`.
pub fn sign(
    key: &Key,
    buf: &mut [u8],
    len: usize,
    chain: Chain<'_>,
    time: u64,
    error: u16,
    other: &[u8],
) -> Option<(usize, Mac)> {
    let need = key.record_len(other.len());
    if len < HEADER_LEN || len + need > buf.len() {
        return None;
    }
    let mut ctx = hmac::Context::with_key(&key.key);
    match chain {
        Chain::Request => {}
        Chain::Answer(p) | Chain::Next(p) => {
            ctx.update(&(p.len() as u16).to_be_bytes());
            ctx.update(p);
        }
    }
    ctx.update(&buf[..len]);
    match chain {
        Chain::Next(_) => timers(&mut ctx, time, FUDGE),
        _ => variables(&mut ctx, key.wire_name(), key.alg.wire(), time, FUDGE, error, other),
    }
    let tag = ctx.sign();
    let id = [buf[0], buf[1]];
    let end = write_record(&mut buf[len..], key.wire_name(), key.alg.wire(), time, tag.as_ref(), id, error, other);
    bump_arcount(buf);
    Some((len + end, Mac::of(tag.as_ref())))
}

/// Appends an unsigned TSIG record (MAC size 0) carrying `error` to `buf[..len]`, naming
/// the request's key and algorithm (section 5.2: BADKEY, BADSIG answers). None if it does
/// not fit.
pub fn append_unsigned(
    buf: &mut [u8],
    len: usize,
    key_name: &[u8],
    alg: &[u8],
    time: u64,
    error: u16,
) -> Option<usize> {
    let need = key_name.len() + 10 + alg.len() + 16;
    if len < HEADER_LEN || len + need > buf.len() {
        return None;
    }
    let id = [buf[0], buf[1]];
    let end = write_record(&mut buf[len..], key_name, alg, time, &[], id, error, &[]);
    bump_arcount(buf);
    Some(len + end)
}

fn bump_arcount(buf: &mut [u8]) {
    let ar = u16::from_be_bytes([buf[10], buf[11]]).wrapping_add(1);
    buf[10..12].copy_from_slice(&ar.to_be_bytes());
}

#[allow(clippy::too_many_arguments)]
fn write_record(
    out: &mut [u8],
    key_name: &[u8],
    alg: &[u8],
    time: u64,
    mac: &[u8],
    id: [u8; 2],
    error: u16,
    other: &[u8],
) -> usize {
    let mut at = 0;
    let mut put = |b: &[u8]| {
        out[at..at + b.len()].copy_from_slice(b);
        at += b.len();
    };
    let rdlen = alg.len() + 16 + mac.len() + other.len();
    put(key_name);
    put(&rtype::TSIG.to_be_bytes());
    put(&class::ANY.to_be_bytes());
    put(&0u32.to_be_bytes());
    put(&(rdlen as u16).to_be_bytes());
    put(alg);
    put(&time.to_be_bytes()[2..]);
    put(&FUDGE.to_be_bytes());
    put(&(mac.len() as u16).to_be_bytes());
    put(mac);
    put(&id);
    put(&error.to_be_bytes());
    put(&(other.len() as u16).to_be_bytes());
    put(other);
    at
}

/// Where the last additional record of message `m` starts if it is a TSIG record (it must
/// be last, section 5.1); None if there is none or the message cannot be walked.
pub fn find(m: &[u8]) -> Option<usize> {
    if m.len() < HEADER_LEN {
        return None;
    }
    let be = |o: usize| -> Option<u16> { Some(u16::from_be_bytes([*m.get(o)?, *m.get(o + 1)?])) };
    let (qd, an, ns, ar) = (be(4)?, be(6)?, be(8)?, be(10)?);
    if ar == 0 {
        return None;
    }
    let mut at = HEADER_LEN;
    for _ in 0..qd {
        at = Name::read(m, at).ok()?.1 + 4;
    }
    let records = u32::from(an) + u32::from(ns) + u32::from(ar);
    let mut last = at;
    for _ in 0..records {
        last = at;
        let p = Name::read(m, at).ok()?.1;
        at = p + 10 + usize::from(be(p + 8)?);
        if at > m.len() {
            return None;
        }
    }
    let p = Name::read(m, last).ok()?.1;
    (be(p)? == rtype::TSIG).then_some(last)
}

/// Decodes standard base64 (padding optional, whitespace ignored); None if it is not.
pub fn base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    let mut padding = 0;
    for c in s.bytes().filter(|c| !c.is_ascii_whitespace()) {
        if c == b'=' {
            padding += 1;
            continue;
        }
        if padding > 0 {
            return None;
        }
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    // Left-over bits must be fewer than a byte, and padding no more than two.
    (bits < 6 && padding <= 2).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key::parse("hmac-sha256:xfr.test:c2lyb2NjbyB0c2lnIHRlc3Qga2V5IDAxMjM0NTY3ODk=").unwrap()
    }

    /// `t. SOA` query, id 0x1234.
    fn query() -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, b't', 0, 0, 6, 0, 1];
        m.resize(512, 0);
        m
    }

    #[test]
    fn base64_decodes_and_rejects() {
        assert_eq!(base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64("aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64("aGVs bG8h").unwrap(), b"hell\x6f!");
        assert!(base64("aGV$").is_none() && base64("a=b").is_none());
    }

    #[test]
    fn a_signed_request_verifies_and_any_change_breaks_it() {
        let k = key();
        let keys = Keyring::new(vec![k.clone()]).unwrap();
        let mut m = query();
        let (len, mac) = sign(&k, &mut m, 19, Chain::Request, 1_700_000_000, 0, &[]).unwrap();
        m.truncate(len);
        assert_eq!(find(&m), Some(19));
        assert_eq!(m[11], 1, "counted in ARCOUNT");
        match verify(&keys, &m, 19, 1_700_000_100) {
            Check::Valid { mac: got, .. } => assert_eq!(got.as_bytes(), mac.as_bytes()),
            other => panic!("{other:?}"),
        }
        assert!(matches!(verify(&keys, &m, 19, 1_700_000_400), Check::BadTime { time: 1_700_000_000, .. }));
        let mut changed = m.clone();
        changed[16] = 1; // the question's type
        assert!(matches!(verify(&keys, &changed, 19, 1_700_000_000), Check::Failed { error: error::BADSIG, .. }));
        let other = Keyring::new(vec![Key::parse("other.:c2VjcmV0").unwrap()]).unwrap();
        assert!(matches!(verify(&other, &m, 19, 1_700_000_000), Check::Failed { error: error::BADKEY, .. }));
        let wrong_secret = Keyring::new(vec![Key::parse("xfr.test:c2VjcmV0").unwrap()]).unwrap();
        assert!(matches!(verify(&wrong_secret, &m, 19, 1_700_000_000), Check::Failed { error: error::BADSIG, .. }));
    }

    #[test]
    fn the_original_id_is_what_was_signed() {
        let k = key();
        let keys = Keyring::new(vec![k.clone()]).unwrap();
        let mut m = query();
        let (len, _) = sign(&k, &mut m, 19, Chain::Request, 1_700_000_000, 0, &[]).unwrap();
        m.truncate(len);
        m[0] = 0x99; // a forwarder changed the ID: the record still says the original
        assert!(matches!(verify(&keys, &m, 19, 1_700_000_000), Check::Valid { .. }));
    }

    #[test]
    fn answers_chain_on_the_request_mac_then_on_each_other() {
        let k = key();
        let mut q = query();
        let (_, qmac) = sign(&k, &mut q, 19, Chain::Request, 1_700_000_000, 0, &[]).unwrap();
        let mut a1 = query();
        a1[2] = 0x84;
        let (l1, mac1) = sign(&k, &mut a1, 19, Chain::Answer(qmac.as_bytes()), 1_700_000_001, 0, &[]).unwrap();
        let mut a2 = vec![0x12, 0x34, 0x84, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        a2.resize(512, 0);
        let (l2, _) = sign(&k, &mut a2, 12, Chain::Next(mac1.as_bytes()), 1_700_000_002, 0, &[]).unwrap();
        let r1 = verify_answer(&k, &a1[..l1], 19, Chain::Answer(qmac.as_bytes()), 1_700_000_000).unwrap();
        verify_answer(&k, &a2[..l2], 12, Chain::Next(r1.mac()), 1_700_000_000).unwrap();
        assert!(verify_answer(&k, &a2[..l2], 12, Chain::Next(qmac.as_bytes()), 1_700_000_000).is_err());
        assert!(verify_answer(&k, &a1[..l1], 19, Chain::Request, 1_700_000_000).is_err());
    }

    #[test]
    fn unsigned_errors_and_malformed_records() {
        let mut m = query();
        let len = append_unsigned(&mut m, 19, b"\x01k\x00", Algorithm::Sha256.wire(), 5, error::BADKEY).unwrap();
        let rec = Record::read(&m[..len], 19).unwrap();
        assert_eq!((rec.error, rec.mac().len(), rec.time), (error::BADKEY, 0, 5));
        let keys = Keyring::new(vec![key()]).unwrap();
        for cut in 20..len {
            assert!(matches!(verify(&keys, &m[..cut], 19, 0), Check::Malformed), "cut at {cut}");
        }
    }

    #[test]
    fn keys_parse_as_kdig_takes_them() {
        let k = Key::parse("HMAC-SHA512:Xfr.Test.:c2VjcmV0").unwrap();
        assert_eq!((k.name(), k.algorithm()), ("xfr.test", Algorithm::Sha512));
        for bad in ["nocolon", "hmac-md5:k:c2VjcmV0", "k:not base64!", "a:b:c:d", "k:"] {
            assert!(Key::parse(bad).is_err(), "{bad}");
        }
        assert!(Keyring::new(vec![key(), key()]).is_err());
    }
}
