//! Numbers in command tokens, read as memcached's `safe_strto*` read them: decimal, an
//! optional sign, the whole token; out of range is an error; an unsigned number may carry a
//! minus sign only if it is zero.

fn digits(t: &[u8]) -> Option<(bool, u64)> {
    let (neg, rest) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: u64 = 0;
    for &b in rest {
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some((neg, n))
}

/// A 64-bit unsigned token (deltas, CAS uniques).
pub fn u64_token(t: &[u8]) -> Option<u64> {
    match digits(t)? {
        (true, 0) => Some(0),
        (true, _) => None,
        (false, n) => Some(n),
    }
}

/// A 32-bit unsigned token (flags).
pub fn u32_token(t: &[u8]) -> Option<u32> {
    u32::try_from(u64_token(t)?).ok()
}

/// A 32-bit signed token (expiry times, lengths).
pub fn i32_token(t: &[u8]) -> Option<i32> {
    let (neg, n) = digits(t)?;
    let v = if neg { -i64::try_from(n).ok()? } else { i64::try_from(n).ok()? };
    i32::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert_eq!(u32_token(b"4294967295"), Some(u32::MAX));
        assert_eq!(u32_token(b"4294967296"), None);
        assert_eq!(u32_token(b"-1"), None);
        assert_eq!(u32_token(b"-0"), Some(0));
        assert_eq!(u32_token(b"abc"), None);
        assert_eq!(u32_token(b""), None);
        assert_eq!(i32_token(b"-1"), Some(-1));
        assert_eq!(i32_token(b"2147483648"), None);
        assert_eq!(i32_token(b"+5"), Some(5));
        assert_eq!(u64_token(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(u64_token(b"18446744073709551616"), None);
        assert_eq!(u64_token(b"1x"), None);
    }
}
