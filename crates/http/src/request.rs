//! Request heads (RFC 9112 §2–§3, §5–§6, §9.3): the request line by hand, header fields with
//! `httparse`, then the semantics a static server needs, with limits. Total: any input gives
//! a request, "need more", or the status to refuse it with.

/// Longest request line (method, target, version): beyond it, 414.
pub const MAX_LINE: usize = 8192;
/// Longest request head (line and fields): beyond it, 431.
pub const MAX_HEAD: usize = 16 * 1024;
/// Most header fields: beyond it, 431.
pub const MAX_FIELDS: usize = 64;

/// The methods a static server tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// HEAD
    Head,
    /// Any other token: answered 405 with `Allow: GET, HEAD`.
    Other,
}

/// Why a request is refused; each is answered with its status, then the connection closes
/// (after a framing error nothing after it can be trusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// 400: malformed line or fields, missing or repeated Host, bad or conflicting framing.
    BadRequest,
    /// 414: the request line is longer than [`MAX_LINE`].
    UriTooLong,
    /// 431: the head is longer than [`MAX_HEAD`] or has more than [`MAX_FIELDS`] fields.
    FieldsTooLarge,
    /// 501: a Transfer-Encoding (this server takes no request bodies but Content-Length ones).
    NotImplemented,
    /// 505: an HTTP major version other than 1.
    Version,
}

impl Reject {
    /// The status code.
    pub fn status(self) -> u16 {
        match self {
            Reject::BadRequest => 400,
            Reject::UriTooLong => 414,
            Reject::FieldsTooLarge => 431,
            Reject::NotImplemented => 501,
            Reject::Version => 505,
        }
    }
}

/// A parsed request head; the slices point into the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// The method.
    pub method: Method,
    /// The request target as sent.
    pub target: &'a [u8],
    /// HTTP/1.x minor version: 0 or 1 (1.2 and later are answered as 1.1).
    pub minor: u8,
    /// The connection persists after the response (version default and Connection tokens).
    pub keep_alive: bool,
    /// Bytes of body that follow the head (Content-Length).
    pub body_len: u64,
    /// If-None-Match value.
    pub if_none_match: Option<&'a [u8]>,
    /// If-Modified-Since value.
    pub if_modified_since: Option<&'a [u8]>,
    /// Range value.
    pub range: Option<&'a [u8]>,
    /// If-Range value.
    pub if_range: Option<&'a [u8]>,
    /// Length of the head, the blank line included.
    pub head_len: usize,
}

/// The outcome of parsing the start of a byte stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A complete head.
    Complete(Request<'a>),
    /// The head is not complete yet (and within the limits).
    Partial,
}

fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

fn line_end(buf: &[u8], from: usize) -> Option<(usize, usize)> {
    let i = buf[from..].iter().position(|&c| c == b'\n')? + from;
    let end = if i > from && buf[i - 1] == b'\r' { i - 1 } else { i };
    Some((end, i + 1))
}

/// The version token: Ok(minor) for HTTP/1.x.
fn version(v: &[u8]) -> Result<u8, Reject> {
    match v {
        [b'H', b'T', b'T', b'P', b'/', maj, b'.', min] if maj.is_ascii_digit() && min.is_ascii_digit() => {
            if *maj != b'1' {
                Err(Reject::Version)
            } else {
                Ok(if *min == b'0' { 0 } else { 1 })
            }
        }
        _ => Err(Reject::BadRequest),
    }
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    value.split(|&c| c == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

fn content_length(v: &[u8]) -> Option<u64> {
    // A list of identical values is allowed (RFC 9110 §8.6); anything else is not.
    let mut out: Option<u64> = None;
    for part in v.split(|&c| c == b',') {
        let p = part.trim_ascii();
        if p.is_empty() || p.len() > 18 || !p.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n = p.iter().fold(0u64, |a, &c| a * 10 + u64::from(c - b'0'));
        if out.is_some_and(|o| o != n) {
            return None;
        }
        out = Some(n);
    }
    out
}

/// Parses the request head at the start of `buf`.
pub fn parse(buf: &[u8]) -> Result<Parsed<'_>, Reject> {
    // RFC 9112 §2.2: ignore empty lines before the request line.
    let mut start = 0;
    while start < buf.len() && (buf[start] == b'\r' || buf[start] == b'\n') {
        start += 1;
        if start > 64 {
            return Err(Reject::BadRequest);
        }
    }
    let Some((end, next)) = line_end(buf, start) else {
        if buf.len() - start > MAX_LINE {
            return Err(Reject::UriTooLong);
        }
        return Ok(Parsed::Partial);
    };
    let line = &buf[start..end];
    if line.len() > MAX_LINE {
        return Err(Reject::UriTooLong);
    }
    let mut parts = line.split(|&c| c == b' ');
    let (Some(m), Some(target), Some(v), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(Reject::BadRequest);
    };
    if m.is_empty() || !m.iter().all(|&c| is_tchar(c)) {
        return Err(Reject::BadRequest);
    }
    if target.is_empty() || target.iter().any(|&c| c <= b' ' || c == 0x7f) {
        return Err(Reject::BadRequest);
    }
    let minor = version(v)?;
    let method = match m {
        b"GET" => Method::Get,
        b"HEAD" => Method::Head,
        _ => Method::Other,
    };

    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let rest = &buf[next..];
    let (flen, fields) = match httparse::parse_headers(rest, &mut fields) {
        Ok(httparse::Status::Complete((n, f))) => (n, f),
        Ok(httparse::Status::Partial) => {
            if buf.len() > MAX_HEAD {
                return Err(Reject::FieldsTooLarge);
            }
            return Ok(Parsed::Partial);
        }
        Err(httparse::Error::TooManyHeaders) => return Err(Reject::FieldsTooLarge),
        Err(_) => {
            // A malformed field in a head longer than the limit is still "too large".
            if buf.len() > MAX_HEAD {
                return Err(Reject::FieldsTooLarge);
            }
            return Err(Reject::BadRequest);
        }
    };
    let head_len = next + flen;
    if head_len > MAX_HEAD {
        return Err(Reject::FieldsTooLarge);
    }
    let mut req = Request {
        method,
        target,
        minor,
        keep_alive: minor == 1,
        body_len: 0,
        if_none_match: None,
        if_modified_since: None,
        range: None,
        if_range: None,
        head_len,
    };
    let (mut hosts, mut cl, mut te) = (0, None::<u64>, false);
    for f in fields.iter() {
        let n = f.name.as_bytes();
        let v = f.value.trim_ascii();
        if n.eq_ignore_ascii_case(b"host") {
            hosts += 1;
            if v.iter().any(|&c| c == b' ' || c == b'/' || c == b'\\') {
                return Err(Reject::BadRequest);
            }
        } else if n.eq_ignore_ascii_case(b"content-length") {
            let Some(len) = content_length(v) else {
                return Err(Reject::BadRequest);
            };
            if cl.is_some_and(|c| c != len) {
                return Err(Reject::BadRequest);
            }
            cl = Some(len);
        } else if n.eq_ignore_ascii_case(b"transfer-encoding") {
            te = true;
        } else if n.eq_ignore_ascii_case(b"connection") {
            if has_token(v, b"close") {
                req.keep_alive = false;
            } else if has_token(v, b"keep-alive") {
                req.keep_alive = true;
            }
        } else if n.eq_ignore_ascii_case(b"if-none-match") {
            req.if_none_match = Some(v);
        } else if n.eq_ignore_ascii_case(b"if-modified-since") {
            req.if_modified_since = Some(v);
        } else if n.eq_ignore_ascii_case(b"range") {
            req.range = Some(v);
        } else if n.eq_ignore_ascii_case(b"if-range") {
            req.if_range = Some(v);
        }
    }
    // A close token wins over keep-alive whatever their order.
    if fields.iter().any(|f| f.name.eq_ignore_ascii_case("connection") && has_token(f.value, b"close")) {
        req.keep_alive = false;
    }
    if minor == 1 && hosts != 1 || hosts > 1 {
        return Err(Reject::BadRequest);
    }
    // Request smuggling (RFC 9112 §6.1, §6.3): both framings, or chunked in 1.0, is an error.
    if te {
        return Err(if cl.is_some() || minor == 0 { Reject::BadRequest } else { Reject::NotImplemented });
    }
    req.body_len = cl.unwrap_or(0);
    Ok(Parsed::Complete(req))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Request<'_> {
        match parse(s.as_bytes()) {
            Ok(Parsed::Complete(r)) => r,
            other => panic!("{s:?}: {other:?}"),
        }
    }
    fn err(s: &[u8]) -> Reject {
        match parse(s) {
            Err(e) => e,
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(s)),
        }
    }

    #[test]
    fn simple_get() {
        let r = ok("GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(r.method, Method::Get);
        assert_eq!(r.target, b"/index.html");
        assert_eq!(r.minor, 1);
        assert!(r.keep_alive);
        assert_eq!(r.head_len, 37);
    }

    #[test]
    fn versions_and_connection() {
        assert!(!ok("GET / HTTP/1.0\r\n\r\n").keep_alive);
        assert!(ok("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
        assert!(!ok("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").keep_alive);
        assert!(!ok("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n").keep_alive);
        assert_eq!(ok("GET / HTTP/1.2\r\nHost: a\r\n\r\n").minor, 1);
        assert_eq!(err(b"GET / HTTP/2.0\r\nHost: a\r\n\r\n"), Reject::Version);
        assert_eq!(err(b"GET / HTTP/0.9\r\n\r\n"), Reject::Version);
        assert_eq!(err(b"GET / HTTX/1.1\r\n\r\n"), Reject::BadRequest);
        assert_eq!(err(b"GET /\r\n\r\n"), Reject::BadRequest);
    }

    #[test]
    fn bare_lf_and_leading_blank_lines() {
        let r = ok("\r\n\r\nHEAD /a HTTP/1.1\nHost: a\n\n");
        assert_eq!(r.method, Method::Head);
        assert_eq!(r.head_len, 4 + 17 + 8 + 1);
    }

    #[test]
    fn partial_until_complete() {
        let full = b"GET /x HTTP/1.1\r\nHost: a\r\nRange: bytes=0-1\r\n\r\n";
        for n in 0..full.len() {
            assert_eq!(parse(&full[..n]), Ok(Parsed::Partial), "at {n}");
        }
        assert_eq!(ok(std::str::from_utf8(full).unwrap()).range, Some(&b"bytes=0-1"[..]));
    }

    #[test]
    fn host_rules() {
        assert_eq!(err(b"GET / HTTP/1.1\r\n\r\n"), Reject::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), Reject::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"), Reject::BadRequest);
    }

    #[test]
    fn framing_and_smuggling() {
        assert_eq!(ok("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n").body_len, 5);
        assert_eq!(ok("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n").body_len, 5);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n"), Reject::BadRequest);
        assert_eq!(
            err(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
            Reject::BadRequest
        );
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"), Reject::BadRequest);
        assert_eq!(
            err(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Reject::BadRequest
        );
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"), Reject::NotImplemented);
        assert_eq!(err(b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), Reject::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n"), Reject::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"), Reject::BadRequest);
    }

    #[test]
    fn limits() {
        let long = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(MAX_LINE));
        assert_eq!(err(long.as_bytes()), Reject::UriTooLong);
        assert_eq!(err(format!("GET /{}", "a".repeat(MAX_LINE + 10)).as_bytes()), Reject::UriTooLong);
        let many: String = (0..MAX_FIELDS + 1).map(|i| format!("X-{i}: y\r\n")).collect();
        assert_eq!(err(format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n").as_bytes()), Reject::FieldsTooLarge);
        let big = format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n", "b".repeat(MAX_HEAD));
        assert_eq!(err(big.as_bytes()), Reject::FieldsTooLarge);
        assert_eq!(err(b"GET /a b HTTP/1.1\r\n\r\n"), Reject::BadRequest);
        assert_eq!(err(b"G(T / HTTP/1.1\r\n\r\n"), Reject::BadRequest);
        assert_eq!(ok("DELETE / HTTP/1.1\r\nHost: a\r\n\r\n").method, Method::Other);
    }
}
