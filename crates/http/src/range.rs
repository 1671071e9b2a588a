//! The Range header (RFC 9110 §14.2): one byte range is served as 206; anything else this
//! server does not serve partially.

/// What a Range header asks of a representation of `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranged {
    /// Serve the whole representation (no Range, an unknown unit, several ranges, or a
    /// header that does not parse — RFC 9110 §14.2 lets a server ignore Range).
    Full,
    /// Serve bytes `first..=last`.
    Part {
        /// First byte.
        first: u64,
        /// Last byte (inclusive).
        last: u64,
    },
    /// No range overlaps the representation: 416.
    Unsatisfiable,
}

fn num(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |a, &c| a * 10 + u64::from(c - b'0')))
}

/// Evaluates `value` (a Range field value) against a representation of `len` bytes.
pub fn evaluate(value: &[u8], len: u64) -> Ranged {
    let v = value.trim_ascii();
    let Some(spec) =
        v.strip_prefix(b"bytes=").or_else(|| v.get(..6).filter(|p| p.eq_ignore_ascii_case(b"bytes=")).map(|_| &v[6..]))
    else {
        return Ranged::Full;
    };
    let spec = spec.trim_ascii();
    if spec.contains(&b',') {
        return Ranged::Full;
    }
    let Some(dash) = spec.iter().position(|&c| c == b'-') else {
        return Ranged::Full;
    };
    let (a, b) = (spec[..dash].trim_ascii(), spec[dash + 1..].trim_ascii());
    match (a.is_empty(), b.is_empty()) {
        // bytes=-N: the last N bytes
        (true, false) => match num(b) {
            Some(0) => Ranged::Unsatisfiable,
            Some(_) if len == 0 => Ranged::Unsatisfiable,
            Some(n) => Ranged::Part { first: len.saturating_sub(n), last: len - 1 },
            None => Ranged::Full,
        },
        // bytes=N-
        (false, true) => match num(a) {
            Some(f) if f < len => Ranged::Part { first: f, last: len - 1 },
            Some(_) => Ranged::Unsatisfiable,
            None => Ranged::Full,
        },
        (false, false) => match (num(a), num(b)) {
            (Some(f), Some(l)) if f <= l => {
                if f < len {
                    Ranged::Part { first: f, last: l.min(len - 1) }
                } else {
                    Ranged::Unsatisfiable
                }
            }
            _ => Ranged::Full, // last < first: invalid, ignored
        },
        (true, true) => Ranged::Full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_ranges() {
        assert_eq!(evaluate(b"bytes=0-99", 1000), Ranged::Part { first: 0, last: 99 });
        assert_eq!(evaluate(b"bytes=900-", 1000), Ranged::Part { first: 900, last: 999 });
        assert_eq!(evaluate(b"bytes=-100", 1000), Ranged::Part { first: 900, last: 999 });
        assert_eq!(evaluate(b"bytes=-5000", 1000), Ranged::Part { first: 0, last: 999 });
        assert_eq!(evaluate(b"bytes=990-5000", 1000), Ranged::Part { first: 990, last: 999 });
        assert_eq!(evaluate(b"Bytes = 1-1", 1000), Ranged::Full);
        assert_eq!(evaluate(b"BYTES=1-1", 1000), Ranged::Part { first: 1, last: 1 });
    }

    #[test]
    fn unsatisfiable_and_ignored() {
        assert_eq!(evaluate(b"bytes=1000-", 1000), Ranged::Unsatisfiable);
        assert_eq!(evaluate(b"bytes=2000-3000", 1000), Ranged::Unsatisfiable);
        assert_eq!(evaluate(b"bytes=-0", 1000), Ranged::Unsatisfiable);
        assert_eq!(evaluate(b"bytes=0-0", 0), Ranged::Unsatisfiable);
        assert_eq!(evaluate(b"bytes=5-1", 1000), Ranged::Full);
        assert_eq!(evaluate(b"bytes=0-1,5-6", 1000), Ranged::Full);
        assert_eq!(evaluate(b"items=0-1", 1000), Ranged::Full);
        assert_eq!(evaluate(b"bytes=x-1", 1000), Ranged::Full);
        assert_eq!(evaluate(b"bytes=99999999999999999999-", 1000), Ranged::Full);
    }
}
