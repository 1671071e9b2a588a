//! The x87 80-bit `long double` that Redis's INCRBYFLOAT and HINCRBYFLOAT compute in (on
//! x86-64 Linux, where Redis runs): reading a decimal or hexadecimal string as `strtold` does,
//! adding two values, and writing the sum as Redis does (`%.17Lf`, trailing zeros removed).
//! Every step is exact arithmetic on integers followed by one rounding to a 64-bit mantissa
//! (to nearest, ties to even), as the hardware and glibc round — so the text that comes out
//! is Redis's, digit for digit.

use std::cmp::Ordering;

/// An unsigned integer of any size: little-endian 32-bit limbs, no trailing zero limb.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Big(Vec<u32>);

impl Big {
    fn from_u64(v: u64) -> Big {
        let mut b = Big(vec![v as u32, (v >> 32) as u32]);
        b.trim();
        b
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn bits(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(&top) => (self.0.len() as u64 - 1) * 32 + u64::from(32 - top.leading_zeros()),
        }
    }

    fn bit(&self, i: u64) -> bool {
        self.0.get((i / 32) as usize).is_some_and(|l| l >> (i % 32) & 1 == 1)
    }

    /// True if any bit below `i` is set.
    fn any_below(&self, i: u64) -> bool {
        let whole = (i / 32) as usize;
        self.0.iter().take(whole).any(|&l| l != 0)
            || (!i.is_multiple_of(32) && self.0.get(whole).is_some_and(|&l| l & ((1 << (i % 32)) - 1) != 0))
    }

    fn mul_add_small(&mut self, m: u32, a: u32) {
        let mut carry = u64::from(a);
        for l in &mut self.0 {
            let v = u64::from(*l) * u64::from(m) + carry;
            *l = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
        self.trim();
    }

    fn shl(&self, n: u64) -> Big {
        if self.is_zero() {
            return Big::default();
        }
        let (limbs, bits) = ((n / 32) as usize, (n % 32) as u32);
        let mut out = vec![0u32; limbs];
        let mut carry = 0u32;
        for &l in &self.0 {
            if bits == 0 {
                out.push(l);
            } else {
                out.push(l << bits | carry);
                carry = l >> (32 - bits);
            }
        }
        if carry != 0 {
            out.push(carry);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    fn shr(&self, n: u64) -> Big {
        let (limbs, bits) = ((n / 32) as usize, (n % 32) as u32);
        if limbs >= self.0.len() {
            return Big::default();
        }
        let src = &self.0[limbs..];
        let mut out = Vec::with_capacity(src.len());
        for i in 0..src.len() {
            let lo = src[i] >> bits;
            let hi = if bits == 0 { 0 } else { src.get(i + 1).map_or(0, |&h| h << (32 - bits)) };
            out.push(lo | hi);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    fn cmp(&self, o: &Big) -> Ordering {
        self.0.len().cmp(&o.0.len()).then_with(|| self.0.iter().rev().cmp(o.0.iter().rev()))
    }

    fn add(&self, o: &Big) -> Big {
        let mut out = Vec::with_capacity(self.0.len().max(o.0.len()) + 1);
        let mut carry = 0u64;
        for i in 0..self.0.len().max(o.0.len()) {
            let v = u64::from(*self.0.get(i).unwrap_or(&0)) + u64::from(*o.0.get(i).unwrap_or(&0)) + carry;
            out.push(v as u32);
            carry = v >> 32;
        }
        out.push(carry as u32);
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `self - o` (self ≥ o).
    fn sub(&self, o: &Big) -> Big {
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = 0i64;
        for i in 0..self.0.len() {
            let v = i64::from(self.0[i]) - i64::from(*o.0.get(i).unwrap_or(&0)) - borrow;
            borrow = i64::from(v < 0);
            out.push((v + (borrow << 32)) as u32);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    /// Quotient and remainder (`d` not zero), by shifting and subtracting.
    fn divrem(&self, d: &Big) -> (Big, Big) {
        if self.cmp(d) == Ordering::Less {
            return (Big::default(), self.clone());
        }
        let shift = self.bits() - d.bits();
        let mut r = self.clone();
        let mut q = vec![0u32; (shift / 32 + 1) as usize];
        for i in (0..=shift).rev() {
            let t = d.shl(i);
            if r.cmp(&t) != Ordering::Less {
                r = r.sub(&t);
                q[(i / 32) as usize] |= 1 << (i % 32);
            }
        }
        let mut q = Big(q);
        q.trim();
        (q, r)
    }

    fn pow10(n: u32) -> Big {
        let mut b = Big::from_u64(1);
        for _ in 0..n {
            b.mul_add_small(10, 0);
        }
        b
    }

    fn to_u64(&self) -> u64 {
        u64::from(*self.0.first().unwrap_or(&0)) | u64::from(*self.0.get(1).unwrap_or(&0)) << 32
    }

    fn decimal(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut digits = Vec::new();
        let mut v = self.clone();
        let billion = Big::from_u64(1_000_000_000);
        while !v.is_zero() {
            let (q, r) = v.divrem(&billion);
            let mut chunk = r.to_u64();
            for _ in 0..9 {
                digits.push(b'0' + (chunk % 10) as u8);
                chunk /= 10;
            }
            v = q;
        }
        while digits.len() > 1 && digits.last() == Some(&b'0') {
            digits.pop();
        }
        digits.reverse();
        String::from_utf8(digits).unwrap_or_default()
    }
}

/// An x87 extended value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ld {
    /// `(-1)^neg × m × 2^e` (m = 0: a zero).
    Finite {
        /// Negative.
        neg: bool,
        /// The mantissa (at most 64 bits).
        m: u64,
        /// The binary exponent.
        e: i64,
    },
    /// An infinity.
    Inf {
        /// Negative.
        neg: bool,
    },
    /// Not a number.
    Nan,
}

/// The largest binary exponent of a 64-bit mantissa's lowest bit (x87: 2^16383 × (2 - ε)).
const MAX_E: i64 = 16383 - 63;
/// Below this the value is smaller than the least subnormal (2^-16445).
const MIN_E: i64 = -16445;

/// `n × 2^e` rounded to a 64-bit mantissa (to nearest, ties to even; `sticky`: a non-zero
/// part below `n` was cut off already).
fn round(neg: bool, n: &Big, e: i64, sticky: bool) -> Ld {
    if n.is_zero() {
        return Ld::Finite { neg, m: 0, e: 0 };
    }
    let bits = n.bits();
    let (mut m, mut e) = if bits <= 64 {
        (n.to_u64(), e)
    } else {
        let cut = bits - 64;
        let mut m = n.shr(cut).to_u64();
        let half = n.bit(cut - 1);
        let rest = sticky || n.any_below(cut - 1);
        if half && (rest || m & 1 == 1) {
            m = m.wrapping_add(1);
            if m == 0 {
                return finish(neg, 1 << 63, e + cut as i64 + 1);
            }
        }
        (m, e + cut as i64)
    };
    // Keep the mantissa in 64 bits at its lowest exponent, for comparison-free formatting.
    while m & 1 == 0 && m != 0 {
        m >>= 1;
        e += 1;
    }
    finish(neg, m, e)
}

fn finish(neg: bool, m: u64, e: i64) -> Ld {
    let top = e + 63 - i64::from(m.leading_zeros());
    if top > MAX_E + 63 {
        Ld::Inf { neg }
    } else if e < MIN_E {
        // Subnormal territory: far below anything INCRBYFLOAT meets; taken as zero, as an
        // underflow (which strtold reports, and Redis refuses).
        Ld::Finite { neg, m: 0, e: 0 }
    } else {
        Ld::Finite { neg, m, e }
    }
}

/// Reads `s` as glibc's `strtold` followed by Redis's checks (`string2ld`): the whole string
/// a number, no leading blank, not NaN, no overflow to infinity or underflow to zero from
/// digits that are not all zero. None where Redis answers "not a valid float".
pub fn parse(s: &[u8]) -> Option<Ld> {
    if s.is_empty() || s.len() >= 5 * 1024 || matches!(s[0], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        return None;
    }
    let (neg, body) = match s[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    if lower == b"inf" || lower == b"infinity" {
        return Some(Ld::Inf { neg });
    }
    if lower.starts_with(b"nan") {
        return None;
    }
    let (v, zero_digits) = if lower.starts_with(b"0x") { hex(&lower[2..], neg)? } else { decimal(&lower, neg)? };
    match v {
        Ld::Inf { .. } => None,
        Ld::Finite { m: 0, .. } if !zero_digits => None,
        v => Some(v),
    }
}

/// Digits, an optional point, an optional exponent: the value and whether every digit was
/// zero.
fn decimal(b: &[u8], neg: bool) -> Option<(Ld, bool)> {
    let mut d = Big::default();
    let (mut frac, mut any, mut point, mut zero) = (0i64, false, false, true);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                d.mul_add_small(10, u32::from(c - b'0'));
                any = true;
                zero &= c == b'0';
                if point {
                    frac += 1;
                }
            }
            b'.' if !point => point = true,
            _ => break,
        }
        i += 1;
    }
    if !any {
        return None;
    }
    let exp = exponent(&b[i..], b'e')?;
    let e10 = exp - frac;
    if d.is_zero() {
        return Some((Ld::Finite { neg, m: 0, e: 0 }, true));
    }
    let digits = d.bits() as i64 * 3 / 10 + 1;
    if e10 + digits > 5000 {
        return Some((Ld::Inf { neg }, zero));
    }
    if e10 + digits < -5000 {
        return Some((Ld::Finite { neg, m: 0, e: 0 }, zero));
    }
    if e10 >= 0 {
        let mut n = d;
        for _ in 0..e10 {
            n.mul_add_small(10, 0);
        }
        return Some((round(neg, &n, 0, false), zero));
    }
    let p = Big::pow10(e10.unsigned_abs() as u32);
    // Enough quotient bits for the mantissa, a rounding bit and more.
    let k = (p.bits() as i64 - d.bits() as i64 + 70).max(0) as u64;
    let (q, r) = d.shl(k).divrem(&p);
    Some((round(neg, &q, -(k as i64), !r.is_zero()), zero))
}

/// What is left after the digits: nothing (0), or `mark` and a signed decimal exponent.
fn exponent(rest: &[u8], mark: u8) -> Option<i64> {
    let Some((&first, t)) = rest.split_first() else { return Some(0) };
    if first != mark {
        return None;
    }
    let t = std::str::from_utf8(t).ok()?;
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    // Beyond any exponent that matters: the value is infinite or zero either way.
    let v: i64 = digits.parse().unwrap_or(i64::MAX / 4).min(100_000);
    Some(if t.starts_with('-') { -v } else { v })
}

/// A hexadecimal float after "0x".
fn hex(b: &[u8], neg: bool) -> Option<(Ld, bool)> {
    let mut n = Big::default();
    let (mut e, mut any, mut point) = (0i64, false, false);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'.' if !point => point = true,
            c if c.is_ascii_hexdigit() => {
                n.mul_add_small(16, (c as char).to_digit(16)?);
                any = true;
                if point {
                    e -= 4;
                }
            }
            _ => break,
        }
        i += 1;
    }
    if !any {
        return None;
    }
    e += exponent(&b[i..], b'p')?;
    let zero = n.is_zero();
    Some((round(neg, &n, e, false), zero))
}

/// `a + b`, rounded once.
pub fn add(a: Ld, b: Ld) -> Ld {
    match (a, b) {
        (Ld::Nan, _) | (_, Ld::Nan) => Ld::Nan,
        (Ld::Inf { neg: x }, Ld::Inf { neg: y }) if x != y => Ld::Nan,
        (Ld::Inf { neg }, _) | (_, Ld::Inf { neg }) => Ld::Inf { neg },
        (Ld::Finite { neg: na, m: ma, e: ea }, Ld::Finite { neg: nb, m: mb, e: eb }) => {
            if ma == 0 && mb == 0 {
                return Ld::Finite { neg: na && nb, m: 0, e: 0 };
            }
            if ma == 0 {
                return b;
            }
            if mb == 0 {
                return a;
            }
            let low = ea.min(eb);
            let x = Big::from_u64(ma).shl((ea - low) as u64);
            let y = Big::from_u64(mb).shl((eb - low) as u64);
            if na == nb {
                return round(na, &x.add(&y), low, false);
            }
            match x.cmp(&y) {
                Ordering::Equal => Ld::Finite { neg: false, m: 0, e: 0 },
                Ordering::Greater => round(na, &x.sub(&y), low, false),
                Ordering::Less => round(nb, &y.sub(&x), low, false),
            }
        }
    }
}

/// A finite value as Redis writes it (`%.17Lf`, then trailing zeros and a bare point
/// removed, "-0" as "0").
pub fn format(v: Ld) -> String {
    let Ld::Finite { neg, m, e } = v else { return String::new() };
    let digits = if e >= 0 {
        Big::from_u64(m).shl(e as u64).mul10s(17)
    } else {
        let scaled = Big::from_u64(m).mul10s(17);
        let cut = e.unsigned_abs();
        let q = scaled.shr(cut);
        let half = cut > 0 && scaled.bit(cut - 1);
        let rest = cut > 1 && scaled.any_below(cut - 1);
        if half && (rest || q.bit(0)) {
            q.add(&Big::from_u64(1))
        } else {
            q
        }
    };
    let text = digits.decimal();
    let text = format!("{text:0>18}");
    let (int, frac) = text.split_at(text.len() - 17);
    let frac = frac.trim_end_matches('0');
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(int);
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    if out == "-0" {
        out = "0".into();
    }
    out
}

impl Big {
    fn mul10s(mut self, n: u32) -> Big {
        for _ in 0..n {
            self.mul_add_small(10, 0);
        }
        self
    }
}

/// INCRBYFLOAT's arithmetic: `current + incr` as Redis writes it, or the error Redis answers.
pub fn incr(current: &[u8], incr: &[u8]) -> Result<String, &'static str> {
    let (Some(a), Some(b)) = (parse(current), parse(incr)) else { return Err("ERR value is not a valid float") };
    match add(a, b) {
        v @ Ld::Finite { .. } => Ok(format(v)),
        _ => Err("ERR increment would produce NaN or Infinity"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(a: &str, b: &str) -> String {
        incr(a.as_bytes(), b.as_bytes()).unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn as_redis_writes_them() {
        // Each checked against glibc: strtold, an x87 add, printf("%.17Lf"), Redis's trim.
        for (a, b, want) in [
            ("10.5", "0.1", "10.6"),
            ("10.6", "5.0e3", "5010.60000000000000009"),
            ("5010.6", "-5010.6", "0"),
            ("0", "3.0e-300", "0"),
            ("-1", "0.25", "-0.75"),
            ("0", "0x10", "16"),
            ("0", "1e20", "100000000000000000000"),
            ("0", "0.1", "0.1"),
            ("0", "1.23456789012345678901", "1.23456789012345679"),
            ("0.0", "-0", "0"),
            // 2^-18 × 10^17 ends in exactly one half: to even.
            ("0", "0x1p-18", "0.00000381469726562"),
            ("1.1", "2.2", "3.3"),
            ("0.1", "0.2", "0.3"),
            ("123456789.987654321", "0.000000001", "123456789.98765432199434144"),
            ("-0.5", "0.25", "-0.25"),
            ("3", "-3.0000000000000000001", "0"),
        ] {
            assert_eq!(sum(a, b), want, "{a} + {b}");
        }
        assert_eq!(sum("0", "inf"), "ERR increment would produce NaN or Infinity");
        assert_eq!(sum("abc", "1"), "ERR value is not a valid float");
        assert_eq!(sum(" 1", "1"), "ERR value is not a valid float");
        assert_eq!(sum("1e5000", "1"), "ERR value is not a valid float");
        assert_eq!(sum("1e-5000", "1"), "ERR value is not a valid float");
        assert_eq!(sum("0", "1e4000").len(), 4000);
    }
}
