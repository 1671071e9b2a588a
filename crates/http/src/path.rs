//! Request targets to paths under the document root: origin-form or absolute-form, query
//! dropped, percent-decoded, `.` and `..` resolved — a `..` that would climb above the root is
//! refused, as are NUL bytes and bad escapes.

/// Why a target is refused (each answered 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathError {
    /// Neither `/path` nor `http://host/path`.
    Form,
    /// A `%` not followed by two hex digits.
    Escape,
    /// A NUL byte, decoded or not.
    Nul,
    /// `..` above the root.
    AboveRoot,
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The path part of a request target (no query), or why it is refused.
pub fn path_part(target: &[u8]) -> Result<&[u8], PathError> {
    let t = if target.first() == Some(&b'/') {
        target
    } else {
        // absolute-form (RFC 9112 §3.2.2): scheme "://" authority path
        let lower = |p: &[u8]| p.iter().map(u8::to_ascii_lowercase).collect::<Vec<u8>>();
        let rest = if lower(&target[..target.len().min(7)]) == b"http://" {
            &target[7..]
        } else if lower(&target[..target.len().min(8)]) == b"https://" {
            &target[8..]
        } else {
            return Err(PathError::Form);
        };
        match rest.iter().position(|&c| c == b'/' || c == b'?') {
            Some(i) if rest[i] == b'/' => &rest[i..],
            _ => b"/",
        }
    };
    let end = t.iter().position(|&c| c == b'?' || c == b'#').unwrap_or(t.len());
    Ok(&t[..end])
}

/// Decodes `target` into `out` as a relative path with `/` separators (empty for the root)
/// and returns whether it named a directory (ended in `/`, `/.` or `/..`). Escapes are
/// decoded before the dots are resolved, as nginx does, so `%2e%2e%2f` is a `../`.
pub fn decode(target: &[u8], out: &mut Vec<u8>) -> Result<bool, PathError> {
    out.clear();
    let p = path_part(target)?;
    let mut i = 0;
    while i < p.len() {
        let c = p[i];
        let b = if c == b'%' {
            let (Some(h), Some(l)) = (p.get(i + 1).copied().and_then(hex), p.get(i + 2).copied().and_then(hex)) else {
                return Err(PathError::Escape);
            };
            i += 3;
            (h << 4) | l
        } else {
            i += 1;
            c
        };
        if b == 0 {
            return Err(PathError::Nul);
        }
        out.push(b);
    }
    // Resolve the segments in place: the write cursor never passes the read cursor.
    let n = out.len();
    let (mut w, mut r) = (0, 0);
    let mut dir = false;
    while r <= n {
        let e = out[r..n].iter().position(|&c| c == b'/').map_or(n, |k| r + k);
        let seg = &out[r..e];
        dir = true;
        if seg.is_empty() || seg == b"." {
        } else if seg == b".." {
            if w == 0 {
                out.clear();
                return Err(PathError::AboveRoot);
            }
            w = out[..w].iter().rposition(|&c| c == b'/').unwrap_or(0);
        } else {
            dir = false;
            if w > 0 {
                out[w] = b'/';
                w += 1;
            }
            out.copy_within(r..e, w);
            w += e - r;
        }
        r = e + 1;
    }
    out.truncate(w);
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(t: &str) -> Result<(String, bool), PathError> {
        let mut v = Vec::new();
        let dir = decode(t.as_bytes(), &mut v)?;
        Ok((String::from_utf8(v).unwrap(), dir))
    }

    #[test]
    fn ordinary_paths() {
        assert_eq!(d("/"), Ok((String::new(), true)));
        assert_eq!(d("/index.html"), Ok(("index.html".into(), false)));
        assert_eq!(d("/a/b/"), Ok(("a/b".into(), true)));
        assert_eq!(d("/a//b?x=1"), Ok(("a/b".into(), false)));
        assert_eq!(d("/a%20b.txt"), Ok(("a b.txt".into(), false)));
        assert_eq!(d("http://example.com/x/y"), Ok(("x/y".into(), false)));
        assert_eq!(d("HTTP://example.com"), Ok((String::new(), true)));
    }

    #[test]
    fn dots() {
        assert_eq!(d("/a/./b"), Ok(("a/b".into(), false)));
        assert_eq!(d("/a/b/../c"), Ok(("a/c".into(), false)));
        assert_eq!(d("/a/.."), Ok((String::new(), true)));
        assert_eq!(d("/a/%2e%2e/b"), Ok(("b".into(), false)));
    }

    #[test]
    fn traversal_and_junk_refused() {
        assert_eq!(d("/.."), Err(PathError::AboveRoot));
        assert_eq!(d("/../etc/passwd"), Err(PathError::AboveRoot));
        assert_eq!(d("/a/../../etc/passwd"), Err(PathError::AboveRoot));
        assert_eq!(d("/%2e%2e/%2e%2e/etc/passwd"), Err(PathError::AboveRoot));
        assert_eq!(d("/a%00b"), Err(PathError::Nul));
        assert_eq!(d("/a%zz"), Err(PathError::Escape));
        assert_eq!(d("/a%4"), Err(PathError::Escape));
        assert_eq!(d("index.html"), Err(PathError::Form));
        assert_eq!(d("*"), Err(PathError::Form));
    }

    #[test]
    fn encoded_slash_is_a_separator() {
        assert_eq!(d("/a%2fb"), Ok(("a/b".into(), false)));
        assert_eq!(d("/x/a%2f..%2f..%2fy"), Ok(("y".into(), false)));
        assert_eq!(d("/%2e%2e%2fetc"), Err(PathError::AboveRoot));
    }
}
