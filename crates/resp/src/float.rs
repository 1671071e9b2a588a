//! Floating-point numbers as Redis 7.0 reads and writes them: C's `strtod` for reading (two
//! flavours: the strict one of `getDoubleFromObject` and the lenient one of score ranges) and
//! `%.17g` for writing, which round-trips every double exactly.
//! Hexadecimal floats ("0x1p3", "0x.8") are read as glibc reads them.

/// C's `isspace` in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `s` read whole as a number (Rust's grammar: sign, digits, point, exponent, inf, infinity,
/// nan, any case; or C's hexadecimal float), with whether its digits were all zero.
fn read(s: &[u8]) -> Option<(f64, bool)> {
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.len() > 1 && body[0] == b'0' && body[1].eq_ignore_ascii_case(&b'x') {
        let (v, zero) = read_hex(&body[2..])?;
        return Some((if neg { -v } else { v }, zero));
    }
    let text = std::str::from_utf8(s).ok()?;
    if text.is_empty() || text.contains('_') {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    let body = text.trim_start_matches(['+', '-']);
    let mantissa = body.split(['e', 'E']).next().unwrap_or("");
    let zero_digits = mantissa.bytes().all(|b| b == b'0' || b == b'.');
    Some((v, zero_digits))
}

/// The part of a hexadecimal float after "0x": hex digits with an optional point, at least
/// one digit, then an optional binary exponent `p[+-]digits`.
fn read_hex(b: &[u8]) -> Option<(f64, bool)> {
    let (mut mant, mut exp, mut digits, mut point, mut i) = (0u128, 0i64, 0, false, 0);
    while i < b.len() {
        let c = b[i];
        if c == b'.' && !point {
            point = true;
        } else if let Some(d) = (c as char).to_digit(16) {
            digits += 1;
            if mant >> 120 == 0 {
                mant = mant << 4 | u128::from(d);
                if point {
                    exp -= 4;
                }
            } else if !point {
                // Beyond 30 digits only the magnitude counts.
                exp += 4;
            }
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() {
        if !b[i].eq_ignore_ascii_case(&b'p') {
            return None;
        }
        let e = std::str::from_utf8(&b[i + 1..]).ok()?;
        if e.is_empty() || e.contains('_') || e.starts_with("+-") {
            return None;
        }
        exp = exp.saturating_add(e.parse::<i64>().ok().or_else(|| {
            // Too long for 64 bits: as far out as any exponent gets.
            let digits = e.trim_start_matches(['+', '-']);
            digits.bytes().all(|d| d.is_ascii_digit()).then_some(if e.starts_with('-') { -100_000 } else { 100_000 })
        })?);
    }
    let zero = mant == 0;
    // Scaled in steps small enough to stay exact until the result itself rounds.
    let mut v = mant as f64;
    let mut e = exp.clamp(-3000, 3000) as i32;
    while e != 0 && v != 0.0 && v.is_finite() {
        let step = e.clamp(-1000, 1000);
        v *= 2f64.powi(step);
        e -= step;
    }
    Some((v, zero))
}

/// A double as `getDoubleFromObject` reads one (scores, weights, increments): the whole
/// argument, no leading blank, not NaN, not out of range (overflow to infinity from a finite
/// literal, or underflow to zero from a non-zero one, as strtod's ERANGE).
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.first().is_some_and(|&b| is_c_space(b)) {
        return None;
    }
    let (v, zero_digits) = read(s)?;
    let literal_inf = s.iter().any(|b| b.eq_ignore_ascii_case(&b'i'));
    if v.is_nan() || (v.is_infinite() && !literal_inf) || (v == 0.0 && !zero_digits) {
        return None;
    }
    Some(v)
}

/// A double as a bare `strtod(s, &end)` followed by `*end == '\0'` reads one (the bounds of
/// a score range): leading blanks skipped, no range check, NaN refused — and an empty string
/// reads as 0, as strtod leaves `end` on its terminating NUL.
pub fn parse_f64_lenient(s: &[u8]) -> Option<f64> {
    // Bytes after a NUL are not seen by C.
    let s = s.iter().position(|&b| b == 0).map_or(s, |i| &s[..i]);
    if s.is_empty() {
        return Some(0.0);
    }
    let start = s.iter().position(|&b| !is_c_space(b))?;
    let (v, _) = read(&s[start..])?;
    (!v.is_nan()).then_some(v)
}

/// `d` as C's `printf("%.17g")` writes it (finite `d`; Redis writes infinities itself).
pub fn format_g17(d: f64, out: &mut Vec<u8>) {
    if d == 0.0 {
        out.extend_from_slice(if d.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    // 17 significant digits, correctly rounded, as d.ddddddddddddddddeX.
    let sci = format!("{:.16e}", d);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mantissa.starts_with('-');
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    if neg {
        out.push(b'-');
    }
    if !(-4..17).contains(&exp) {
        let kept = trim_zeros(&digits[1..]);
        out.push(digits[0]);
        if !kept.is_empty() {
            out.push(b'.');
            out.extend_from_slice(kept);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(e.to_string().as_bytes());
    } else if exp >= 0 {
        let point = exp as usize + 1;
        out.extend_from_slice(&digits[..point]);
        let frac = trim_zeros(&digits[point..]);
        if !frac.is_empty() {
            out.push(b'.');
            out.extend_from_slice(frac);
        }
    } else {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-exp - 1) as usize));
        out.extend_from_slice(trim_zeros(&digits));
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let end = d.iter().rposition(|&b| b != b'0').map_or(0, |i| i + 1);
    &d[..end]
}

/// `d` as Redis's `d2string` writes it (a small sorted set's stored score, as ZSCAN shows
/// it): "inf", "-inf", an integer where `d` is one within ±2^62, else `%.17g`.
pub fn format_d2string(d: f64, out: &mut Vec<u8>) {
    if d.is_nan() {
        out.extend_from_slice(b"nan");
    } else if d.is_infinite() {
        out.extend_from_slice(if d < 0.0 { b"-inf" } else { b"inf" });
    } else if d == 0.0 {
        out.extend_from_slice(if d.is_sign_negative() { b"-0" } else { b"0" });
    } else if d.fract() == 0.0 && d.abs() <= (i64::MAX / 2) as f64 {
        out.extend_from_slice((d as i64).to_string().as_bytes());
    } else {
        format_g17(d, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn g(d: f64) -> String {
        let mut v = Vec::new();
        format_g17(d, &mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn g17_as_printf() {
        for (d, s) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (0.1, "0.10000000000000001"),
            (100.0, "100"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (1.5e20, "1.5e+20"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (3.0e-300, "3.0000000000000002e-300"),
            (-0.0, "-0"),
            (123456789.123, "123456789.123"),
            (f64::MAX, "1.7976931348623157e+308"),
        ] {
            assert_eq!(g(d), s, "{d}");
        }
    }

    #[test]
    fn strict_and_lenient_reading() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"+Infinity"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"1e400"), None, "overflow");
        assert_eq!(parse_f64(b"1e-400"), None, "underflow");
        assert_eq!(parse_f64(b"0e5"), Some(0.0));
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b"-0x1.8p1"), Some(-3.0));
        assert_eq!(parse_f64(b"0x.8"), Some(0.5));
        assert_eq!(parse_f64(b"0x1p-1074"), Some(5e-324));
        assert_eq!(parse_f64(b"0x1p-2000"), None, "underflow");
        assert_eq!(parse_f64(b"0x1p2000"), None, "overflow");
        assert_eq!(parse_f64(b"0x"), None);
        assert_eq!(parse_f64(b"0xg"), None);
        for bad in [&b""[..], b" 1", b"1 ", b"nan", b"abc", b"1_0", b"1e"] {
            assert_eq!(parse_f64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parse_f64_lenient(b""), Some(0.0));
        assert_eq!(parse_f64_lenient(b"  2"), Some(2.0));
        assert_eq!(parse_f64_lenient(b"1e400"), Some(f64::INFINITY));
        assert_eq!(parse_f64_lenient(b"  "), None);
        assert_eq!(parse_f64_lenient(b"nan"), None);
        assert_eq!(parse_f64_lenient(b"2 "), None);
    }

    #[test]
    fn d2string_as_redis() {
        let d = |x: f64| {
            let mut v = Vec::new();
            format_d2string(x, &mut v);
            String::from_utf8(v).unwrap()
        };
        assert_eq!(d(1e17), "100000000000000000");
        assert_eq!(d(2.5), "2.5");
        assert_eq!(d(f64::NEG_INFINITY), "-inf");
        assert_eq!(d(1e19), "1e+19");
    }

    proptest! {
        #[test]
        fn g17_round_trips(bits in any::<u64>()) {
            let d = f64::from_bits(bits);
            prop_assume!(d.is_finite());
            let s = g(d);
            prop_assert_eq!(s.parse::<f64>().unwrap().to_bits(), d.to_bits());
            prop_assert_eq!(parse_f64(s.as_bytes()).map(f64::to_bits), Some(d.to_bits()));
        }
    }
}
