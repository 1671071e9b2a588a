//! Glob patterns as KEYS, SCAN's MATCH and CONFIG GET read them: `*` any run of bytes, `?`
//! one byte, `[abc]`, `[^abc]` and `[a-z]` classes, `\x` the byte x itself; ASCII case
//! folded where asked (CONFIG GET's names).
//! A `*` remembers where it stood and is retried one byte further on a mismatch, so a match
//! costs at most pattern × subject steps (no blow-up on long runs of stars).

/// True if `subject` matches `pattern`.
pub fn matches(pattern: &[u8], subject: &[u8], nocase: bool) -> bool {
    let same = |a: u8, b: u8| a == b || (nocase && a.eq_ignore_ascii_case(&b));
    let (mut p, mut s) = (0, 0);
    // Where the last `*` was, and the subject position it is now tried from.
    let mut star: Option<(usize, usize)> = None;
    while s < subject.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    // Several stars are one.
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, s));
                    continue;
                }
                b'?' => {
                    p += 1;
                    s += 1;
                    continue;
                }
                b'[' => {
                    if let Some((hit, next)) = class(pattern, p, subject[s], nocase) {
                        if hit {
                            p = next;
                            s += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if same(pattern[p + 1], subject[s]) {
                        p += 2;
                        s += 1;
                        continue;
                    }
                }
                c => {
                    if same(c, subject[s]) {
                        p += 1;
                        s += 1;
                        continue;
                    }
                }
            }
        }
        // A mismatch: let the last star take one more byte, or fail.
        match star {
            Some((sp, ss)) => {
                p = sp;
                s = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// The class at `pattern[at]` (a `[`) against byte `c`: whether it matches and where the
/// pattern goes on. An unclosed class runs to the end of the pattern (as in Redis).
fn class(pattern: &[u8], at: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let c = if nocase { c.to_ascii_lowercase() } else { c };
    let fold = |x: u8| if nocase { x.to_ascii_lowercase() } else { x };
    let mut i = at + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut hit = false;
    loop {
        match pattern.get(i) {
            None => break,
            Some(b']') => {
                i += 1;
                break;
            }
            Some(b'\\') if i + 1 < pattern.len() => {
                hit |= fold(pattern[i + 1]) == c;
                i += 2;
            }
            Some(&lo) if pattern.get(i + 1) == Some(&b'-') && i + 2 < pattern.len() && pattern[i + 2] != b']' => {
                let (lo, hi) = (fold(lo), fold(pattern[i + 2]));
                let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                hit |= (lo..=hi).contains(&c);
                i += 3;
            }
            Some(&x) => {
                hit |= fold(x) == c;
                i += 1;
            }
        }
    }
    Some((hit != negate, i))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn redis_globs() {
        let yes = |p: &str, s: &str| assert!(matches(p.as_bytes(), s.as_bytes(), false), "{p} ~ {s}");
        let no = |p: &str, s: &str| assert!(!matches(p.as_bytes(), s.as_bytes(), false), "{p} !~ {s}");
        yes("*", "");
        yes("*", "anything");
        yes("h?llo", "hello");
        no("h?llo", "hllo");
        yes("h*llo", "hllo");
        yes("h*llo", "heeeello");
        yes("h[ae]llo", "hallo");
        no("h[ae]llo", "hillo");
        yes("h[^e]llo", "hallo");
        no("h[^e]llo", "hello");
        yes("h[a-b]llo", "hbllo");
        yes("h[b-a]llo", "hallo");
        no("h[a-b]llo", "hcllo");
        yes("a\\*b", "a*b");
        no("a\\*b", "axb");
        yes("[\\]]", "]");
        yes("key:*:x", "key:1:2:x");
        no("key:*:x", "key:1:2:y");
        yes("*a*b*c*", "xxaxxbxxcxx");
        no("abc", "abcd");
        no("abcd", "abc");
        no("a[", "a");
        yes("a[b", "ab");
        // Long runs of stars against a long near-miss stay fast.
        let p = "a*".repeat(30) + "b";
        no(&p, &"a".repeat(200));
        no("SAVE", "save");
    }

    #[test]
    fn config_names_fold_case() {
        assert!(matches(b"*", b"save", true));
        assert!(matches(b"append*", b"appendfsync", true));
        assert!(matches(b"SAVE", b"save", true));
        assert!(matches(b"s?ve", b"save", true));
        assert!(!matches(b"save", b"saves", true));
        assert!(matches(b"*f*c", b"appendfsync", true));
        assert!(matches(b"[A-B]ppend*", b"appendonly", true));
        assert!(matches(&[b'*'; 5000], b"", true));
        assert!(!matches(&[&[b'*'; 5000][..], b"x"].concat(), b"appendfsync", true));
    }
}
