//! Domain names in wire format.

/// Longest name in wire format (RFC 1035 2.3.4).
pub const MAX_NAME: usize = 255;
/// Most compression pointers followed while reading one name; a loop runs into this.
pub const MAX_POINTERS: usize = 64;

/// Why a name could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameError {
    /// The message ends inside the name.
    Truncated,
    /// Longer than 255 bytes.
    TooLong,
    /// A label type other than a plain label or a pointer (0x40, 0x80).
    BadLabel,
    /// A pointer that does not point backwards, or too many pointers (a loop).
    BadPointer,
}

/// The wire form of a name written as text (`www.example.` or `www.example`), letter case
/// kept; no escapes. Empty labels (but the root's) and labels over 63 bytes are refused.
pub fn wire_from_text(text: &str) -> Result<Vec<u8>, NameError> {
    let mut w = Vec::with_capacity(text.len() + 2);
    let body = text.strip_suffix('.').unwrap_or(text);
    if !body.is_empty() {
        for label in body.split('.') {
            if label.is_empty() || label.len() > 63 {
                return Err(NameError::BadLabel);
            }
            w.push(label.len() as u8);
            w.extend_from_slice(label.as_bytes());
        }
    }
    w.push(0);
    if w.len() > MAX_NAME {
        return Err(NameError::TooLong);
    }
    Ok(w)
}

/// A name copied out of a message, decompressed and lowercased, in a fixed buffer.
#[derive(Clone)]
pub struct Name {
    buf: [u8; MAX_NAME],
    len: u8,
    labels: u8,
}

impl Name {
    /// The root name.
    pub fn root() -> Name {
        Name { buf: [0; MAX_NAME], len: 1, labels: 0 }
    }

    /// The wire bytes (lowercase, ending with the root label).
    pub fn as_wire(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }

    /// Number of labels, the root not counted.
    pub fn label_count(&self) -> usize {
        usize::from(self.labels)
    }

    /// Reads the name at `pos` in `msg`. Returns it and the offset just after it in the
    /// message (after the first pointer if the name is compressed).
    pub fn read(msg: &[u8], mut pos: usize) -> Result<(Name, usize), NameError> {
        let mut n = Name { buf: [0; MAX_NAME], len: 0, labels: 0 };
        let mut end = None;
        let mut pointers = 0;
        let mut len = 0usize;
        loop {
            let b = *msg.get(pos).ok_or(NameError::Truncated)?;
            match b & 0xc0 {
                0x00 => {
                    let l = usize::from(b);
                    if len + 1 + l > MAX_NAME {
                        return Err(NameError::TooLong);
                    }
                    let label = msg.get(pos + 1..pos + 1 + l).ok_or(NameError::Truncated)?;
                    n.buf[len] = b;
                    for (i, c) in label.iter().enumerate() {
                        n.buf[len + 1 + i] = c.to_ascii_lowercase();
                    }
                    len += 1 + l;
                    pos += 1 + l;
                    if l == 0 {
                        n.len = len as u8;
                        return Ok((n, end.unwrap_or(pos)));
                    }
                    n.labels += 1;
                }
                0xc0 => {
                    let lo = *msg.get(pos + 1).ok_or(NameError::Truncated)?;
                    let target = (usize::from(b & 0x3f) << 8) | usize::from(lo);
                    pointers += 1;
                    // Only backwards pointers: every target is earlier than the pointer, so the
                    // walk cannot cycle; the count bounds the work regardless.
                    if target >= pos || pointers > MAX_POINTERS {
                        return Err(NameError::BadPointer);
                    }
                    end.get_or_insert(pos + 2);
                    pos = target;
                }
                _ => return Err(NameError::BadLabel),
            }
        }
    }

    /// Checks the name at `pos` in `msg` in place, without copying it: Ok(Some(length)) for
    /// a name of plain labels, Ok(None) if it uses compression (read it with [`Name::read`]).
    pub fn scan(msg: &[u8], mut pos: usize) -> Result<Option<usize>, NameError> {
        let start = pos;
        loop {
            let b = *msg.get(pos).ok_or(NameError::Truncated)?;
            match b & 0xc0 {
                0x00 => {
                    pos += 1 + usize::from(b);
                    if pos - start > MAX_NAME {
                        return Err(NameError::TooLong);
                    }
                    if pos > msg.len() {
                        return Err(NameError::Truncated);
                    }
                    if b == 0 {
                        return Ok(Some(pos - start));
                    }
                }
                0xc0 => return Ok(None),
                _ => return Err(NameError::BadLabel),
            }
        }
    }

    /// The uncompressed name `wire` (all of it) lowercased into `buf`, without building a
    /// [`Name`] (whose every move copies its 255-byte buffer: millions of them when a large
    /// zone is compiled); None if `wire` is not one such name.
    pub fn lower_into<'b>(wire: &[u8], buf: &'b mut [u8; MAX_NAME]) -> Option<&'b [u8]> {
        if Name::scan(wire, 0) != Ok(Some(wire.len())) {
            return None;
        }
        let out = &mut buf[..wire.len()];
        out.copy_from_slice(wire);
        out.make_ascii_lowercase();
        Some(out)
    }

    /// Builds a name from wire bytes (uncompressed), lowercasing it.
    pub fn from_wire(wire: &[u8]) -> Result<Name, NameError> {
        let (n, end) = Name::read(wire, 0)?;
        if end != wire.len() {
            return Err(NameError::BadLabel);
        }
        Ok(n)
    }

    /// The parent name (one label fewer); None for the root.
    pub fn parent(&self) -> Option<Name> {
        if self.labels == 0 {
            return None;
        }
        let skip = usize::from(self.buf[0]) + 1;
        let mut p = Name { buf: [0; MAX_NAME], len: self.len - skip as u8, labels: self.labels - 1 };
        p.buf[..usize::from(p.len)].copy_from_slice(&self.buf[skip..usize::from(self.len)]);
        Some(p)
    }

    /// True if `self` is `other` or below it.
    pub fn ends_with(&self, other: &Name) -> bool {
        other.labels <= self.labels && wire_ends_with(self.as_wire(), other.as_wire())
    }

    /// A 64-bit FNV-1a hash of the lowercase wire form.
    pub fn hash(&self) -> u64 {
        hash_wire(self.as_wire())
    }
}

/// True if the wire name `a` is `b` or below it (both uncompressed; letter case ignored).
pub fn wire_ends_with(a: &[u8], b: &[u8]) -> bool {
    if b.len() > a.len() {
        return false;
    }
    // Compare at a label boundary: walk labels until the remaining suffix has b's length.
    let mut i = 0;
    while a.len() - i > b.len() {
        i += 1 + usize::from(a[i]);
    }
    // Mostly both are lowercase already: the plain comparison first.
    a.len() - i == b.len() && (a[i..] == *b || a[i..].eq_ignore_ascii_case(b))
}

/// Offsets where the labels of the wire name `w` start, the root's included (so the last
/// is `w.len() - 1`); at most 128 fit, as many as a 255-byte name can have.
pub fn label_starts(w: &[u8], out: &mut [u8; 128]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < w.len() && n < out.len() {
        out[n] = i as u8;
        n += 1;
        if w[i] == 0 {
            break;
        }
        i += 1 + usize::from(w[i]);
    }
    n
}

/// RFC 4034 section 6.1 canonical order of two wire names (any letter case): label by label
/// from the root, each compared as lowercase octets, a name before the names below it.
pub fn canonical_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let (mut sa, mut sb) = ([0u8; 128], [0u8; 128]);
    // Both counts include the root label, which compares equal.
    let (ka, kb) = (label_starts(a, &mut sa), label_starts(b, &mut sb));
    for i in 1..ka.min(kb) {
        let (x, y) = (usize::from(sa[ka - 1 - i]), usize::from(sb[kb - 1 - i]));
        let la = &a[x + 1..x + 1 + usize::from(a[x])];
        let lb = &b[y + 1..y + 1 + usize::from(b[y])];
        let o = la.iter().map(u8::to_ascii_lowercase).cmp(lb.iter().map(u8::to_ascii_lowercase));
        if o.is_ne() {
            return o;
        }
    }
    ka.cmp(&kb)
}

/// FNV-1a as a `Hasher`, for tables keyed by names (the std default, SipHash, costs more
/// than the rest of a lookup; keys are zone data, not attacker-chosen per query).
#[derive(Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Builds [`Fnv`] hashers.
pub type FnvBuild = std::hash::BuildHasherDefault<Fnv>;

/// FNV-1a over bytes, lowercased on the way: the same hash for a name in any letter case,
/// computed on the query bytes in place (the thesis's wire-format key).
pub fn hash_wire_ci(w: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in w {
        h ^= u64::from(b.to_ascii_lowercase());
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// FNV-1a over bytes (names are already lowercase).
pub fn hash_wire(w: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in w {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl PartialEq for Name {
    fn eq(&self, o: &Name) -> bool {
        self.as_wire() == o.as_wire()
    }
}
impl Eq for Name {}

impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_wire().hash(h)
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let w = self.as_wire();
        if w.len() == 1 {
            return f.write_str(".");
        }
        let mut i = 0;
        while w[i] != 0 {
            let l = usize::from(w[i]);
            for &c in &w[i + 1..i + 1 + l] {
                if c.is_ascii_graphic() && c != b'.' && c != b'\\' {
                    write!(f, "{}", c as char)?;
                } else {
                    write!(f, "\\{c:03}")?;
                }
            }
            f.write_str(".")?;
            i += 1 + l;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_text_keep_their_case_and_respect_the_limits() {
        assert_eq!(wire_from_text("WwW.example.").unwrap(), b"\x03WwW\x07example\x00");
        assert_eq!(wire_from_text("www.example").unwrap(), b"\x03www\x07example\x00");
        assert_eq!(wire_from_text(".").unwrap(), b"\x00");
        assert_eq!(wire_from_text("").unwrap(), b"\x00");
        assert_eq!(wire_from_text("a..b"), Err(NameError::BadLabel));
        assert_eq!(wire_from_text(&"x".repeat(64)), Err(NameError::BadLabel));
        let long = vec!["x".repeat(63); 4].join(".");
        assert_eq!(wire_from_text(&long), Err(NameError::TooLong));
    }

    fn wire(s: &str) -> Vec<u8> {
        let mut v = vec![];
        for l in s.split('.').filter(|l| !l.is_empty()) {
            v.push(l.len() as u8);
            v.extend_from_slice(l.as_bytes());
        }
        v.push(0);
        v
    }

    #[test]
    fn reads_and_lowercases() {
        let mut m = vec![0u8; 12];
        m.extend(wire("WWW.Example.COM"));
        let (n, end) = Name::read(&m, 12).unwrap();
        assert_eq!(n.as_wire(), &wire("www.example.com")[..]);
        assert_eq!(end, m.len());
        assert_eq!(n.label_count(), 3);
        assert_eq!(n.to_string(), "www.example.com.");
    }

    #[test]
    fn lowers_an_uncompressed_name_in_place_as_from_wire_would() {
        let mut buf = [0u8; MAX_NAME];
        let w = b"\x03WwW\x07Example\x00";
        assert_eq!(Name::lower_into(w, &mut buf), Some(Name::from_wire(w).unwrap().as_wire()));
        let long =
            [&[63u8][..], &[b'a'; 63], &[63], &[b'a'; 63], &[63], &[b'a'; 63], &[61], &[b'a'; 61], &[0]].concat();
        assert_eq!(long.len(), MAX_NAME);
        assert_eq!(Name::lower_into(&long, &mut buf), Some(&long[..]));
        let too_long =
            [&[63u8][..], &[b'a'; 63], &[63], &[b'a'; 63], &[63], &[b'a'; 63], &[63], &[b'a'; 63], &[0]].concat();
        for bad in [&b"\x03www\x00\x00"[..], b"\x03www", b"\x03www\xc0\x00", b"\x03ww", b"", &too_long] {
            assert_eq!(Name::lower_into(bad, &mut buf), None, "{bad:?}");
        }
    }

    #[test]
    fn follows_backward_pointers() {
        let mut m = vec![0u8; 12];
        m.extend(wire("example.com"));
        let at = m.len();
        m.extend([3, b'w', b'w', b'w', 0xc0, 12]);
        let (n, end) = Name::read(&m, at).unwrap();
        assert_eq!(n.to_string(), "www.example.com.");
        assert_eq!(end, at + 6);
    }

    #[test]
    fn refuses_loops_forward_pointers_and_bad_labels() {
        let mut m = vec![0u8; 12];
        m.extend([0xc0, 12]); // points at itself
        assert_eq!(Name::read(&m, 12).unwrap_err(), NameError::BadPointer);
        let mut m = vec![0u8; 12];
        m.extend([0xc0, 20, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(Name::read(&m, 12).unwrap_err(), NameError::BadPointer);
        let mut m = vec![0u8; 12];
        m.extend([0x41, 0]);
        assert_eq!(Name::read(&m, 12).unwrap_err(), NameError::BadLabel);
        let mut m = vec![0u8; 12];
        m.extend([5, b'a', b'b']);
        assert_eq!(Name::read(&m, 12).unwrap_err(), NameError::Truncated);
        let mut long = vec![0u8; 12];
        for _ in 0..5 {
            long.push(63);
            long.extend([b'a'; 63]);
        }
        long.push(0);
        assert_eq!(Name::read(&long, 12).unwrap_err(), NameError::TooLong);
    }

    #[test]
    fn a_pointer_chain_cannot_exceed_the_name_limit() {
        // Each pointer adds a label; the 255-byte limit stops the walk.
        let mut m = vec![0u8; 12];
        m.extend([1, b'a', 0]);
        for i in 0..200 {
            let prev = 12 + if i == 0 { 0 } else { 3 + (i - 1) * 4 };
            m.extend([1, b'a', 0xc0 | (prev >> 8) as u8, prev as u8]);
        }
        let last = m.len() - 4;
        assert!(Name::read(&m, last).is_err());
    }

    #[test]
    fn parent_and_suffix() {
        let n = Name::from_wire(&wire("a.b.example.com")).unwrap();
        let z = Name::from_wire(&wire("example.com")).unwrap();
        assert!(n.ends_with(&z));
        assert!(!z.ends_with(&n));
        let other = Name::from_wire(&wire("xample.com")).unwrap();
        assert!(!n.ends_with(&other), "suffix only at label boundaries");
        assert_eq!(n.parent().unwrap().to_string(), "b.example.com.");
        assert!(Name::root().parent().is_none());
        assert!(n.ends_with(&Name::root()));
    }

    #[test]
    fn canonical_order_is_rfc_4034s() {
        // The example of RFC 4034 section 6.1, in order.
        let names = [
            "example.",
            "a.example.",
            "yljkjljk.a.example.",
            "Z.a.example.",
            "zABC.a.EXAMPLE.",
            "z.example.",
            "\\001.z.example.",
            "*.z.example.",
            "\\200.z.example.",
        ];
        let wire: Vec<Vec<u8>> = names
            .iter()
            .map(|n| match *n {
                "\\001.z.example." => b"\x01\x01\x01z\x07example\x00".to_vec(),
                "\\200.z.example." => b"\x01\xc8\x01z\x07example\x00".to_vec(),
                n => wire_from_text(n).unwrap(),
            })
            .collect();
        for i in 0..wire.len() {
            for j in 0..wire.len() {
                assert_eq!(canonical_cmp(&wire[i], &wire[j]), i.cmp(&j), "{} vs {}", names[i], names[j]);
            }
        }
        assert!(canonical_cmp(b"\x00", b"\x03com\x00").is_lt(), "the root first");
    }
}
