//! HTTP dates (RFC 9110 §5.6.7): IMF-fixdate out, and IMF-fixdate, RFC 850 and asctime in.

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]; // 1970-01-01 was a Thursday
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const LEN: usize = 29;

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, m, d)
}

fn two(out: &mut [u8], v: u32) {
    out[0] = b'0' + (v / 10 % 10) as u8;
    out[1] = b'0' + (v % 10) as u8;
}

/// Writes `secs` (since the Unix epoch, UTC) as an IMF-fixdate into `out[..LEN]`.
pub fn format(secs: u64, out: &mut [u8; LEN]) {
    let days = (secs / 86_400) as i64;
    let rem = (secs % 86_400) as u32;
    let (y, m, d) = civil_from_days(days);
    out[..3].copy_from_slice(DAYS[(days % 7) as usize].as_bytes());
    out[3..5].copy_from_slice(b", ");
    two(&mut out[5..7], d);
    out[7] = b' ';
    out[8..11].copy_from_slice(MONTHS[m as usize - 1].as_bytes());
    out[11] = b' ';
    let y = y.clamp(0, 9999) as u32;
    two(&mut out[12..14], y / 100);
    two(&mut out[14..16], y % 100);
    out[16] = b' ';
    two(&mut out[17..19], rem / 3600);
    out[19] = b':';
    two(&mut out[20..22], rem / 60 % 60);
    out[22] = b':';
    two(&mut out[23..25], rem % 60);
    out[25..29].copy_from_slice(b" GMT");
}

/// `secs` as an IMF-fixdate string.
pub fn to_string(secs: u64) -> String {
    let mut b = [0u8; LEN];
    format(secs, &mut b);
    String::from_utf8_lossy(&b).into_owned()
}

fn num(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 4 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |a, &c| a * 10 + u32::from(c - b'0')))
}

fn month(s: &[u8]) -> Option<u32> {
    MONTHS.iter().position(|m| m.as_bytes() == s).map(|i| i as u32 + 1)
}

fn hms(s: &[u8]) -> Option<u32> {
    let mut it = s.split(|&c| c == b':');
    let (h, m, sec) = (num(it.next()?)?, num(it.next()?)?, num(it.next()?)?);
    if it.next().is_some() || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    Some(h * 3600 + m * 60 + sec)
}

fn assemble(y: i64, m: u32, d: u32, t: u32) -> Option<u64> {
    if !(1..=31).contains(&d) || y < 1970 {
        return None;
    }
    let days = days_from_civil(y, m, d);
    Some(days as u64 * 86_400 + u64::from(t))
}

/// Parses an HTTP date in any of the three formats; None if it is none of them (a recipient
/// then ignores the field, RFC 9110 §13.1.3).
pub fn parse(s: &[u8]) -> Option<u64> {
    let s = s.trim_ascii();
    let parts: Vec<&[u8]> = s.split(|&c| c == b' ').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        [wd, d, mo, y, t, b"GMT"] if wd.len() == 4 && wd.ends_with(b",") => {
            assemble(i64::from(num(y)?), month(mo)?, num(d)?, hms(t)?)
        }
        // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        [wd, dmy, t, b"GMT"] if wd.ends_with(b",") => {
            let mut it = dmy.split(|&c| c == b'-');
            let (d, mo, y) = (num(it.next()?)?, month(it.next()?)?, num(it.next()?)?);
            // Two-digit years: RFC 9110 says read them as within 50 years of now; this reads
            // them as 1970-2069, which is the same for any date a server will meet.
            let y = if y < 70 {
                2000 + y
            } else if y < 100 {
                1900 + y
            } else {
                y
            };
            assemble(i64::from(y), mo, d, hms(t)?)
        }
        // asctime: Sun Nov  6 08:49:37 1994
        [_wd, mo, d, t, y] => assemble(i64::from(num(y)?), month(mo)?, num(d)?, hms(t)?),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_example_in_all_three_formats() {
        let t = 784_111_777; // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(to_string(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(parse(b"Sun, 06 Nov 1994 08:49:37 GMT"), Some(t));
        assert_eq!(parse(b"Sunday, 06-Nov-94 08:49:37 GMT"), Some(t));
        assert_eq!(parse(b"Sun Nov  6 08:49:37 1994"), Some(t));
    }

    #[test]
    fn epoch_and_leap_days() {
        assert_eq!(to_string(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(to_string(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(parse(b"Tue, 29 Feb 2000 00:00:00 GMT"), Some(951_782_400));
    }

    #[test]
    fn garbage_is_none() {
        for s in [
            &b""[..],
            b"yesterday",
            b"Sun, 06 Nov 1994 25:49:37 GMT",
            b"Sun, 06 Foo 1994 08:49:37 GMT",
            b"Sun, 99 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse(s), None, "{}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn round_trip_over_a_century() {
        let mut t = 0u64;
        while t < 4_102_444_800 {
            let s = to_string(t);
            assert_eq!(parse(s.as_bytes()), Some(t), "{s}");
            t += 86_400 * 13 + 3_601;
        }
    }
}
