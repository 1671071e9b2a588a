//! Response heads (RFC 9110 §15, RFC 9112 §4) and the small bodies of error responses.

use crate::date;
use std::io::Write;

/// The reason phrase of a status this server sends.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        301 => "Moved Permanently",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        414 => "URI Too Long",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// Content-Range of a 206 or a 416.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentRange {
    /// `bytes first-last/total`
    Part {
        /// First byte.
        first: u64,
        /// Last byte (inclusive).
        last: u64,
        /// Representation length.
        total: u64,
    },
    /// `bytes */total`
    Unsatisfied(u64),
}

/// `Connection: close` padded to the length of `Connection: keep-alive`, so that a prepared
/// response is the same length either way and its body frames can be shared (trailing
/// whitespace is not part of a field value, RFC 9110 §5.5).
pub const CONNECTION_CLOSE_PADDED: &str = "Connection: close     \r\n";
/// See [`CONNECTION_CLOSE_PADDED`].
pub const CONNECTION_KEEP_ALIVE: &str = "Connection: keep-alive\r\n";

/// What goes in a response head.
#[derive(Debug, Clone, Copy)]
pub struct Head<'a> {
    /// Status code.
    pub status: u16,
    /// Date field (seconds since the epoch).
    pub date: u64,
    /// Content-Type.
    pub content_type: Option<&'a str>,
    /// Content-Length.
    pub content_length: u64,
    /// Last-Modified (seconds since the epoch).
    pub last_modified: Option<u64>,
    /// ETag, quoted.
    pub etag: Option<&'a str>,
    /// Content-Range.
    pub content_range: Option<ContentRange>,
    /// Location (redirects).
    pub location: Option<&'a [u8]>,
    /// `Allow: GET, HEAD` (405).
    pub allow: bool,
    /// Accept-Ranges: bytes.
    pub accept_ranges: bool,
    /// The connection stays open.
    pub keep_alive: bool,
}

impl<'a> Head<'a> {
    /// A head for `status` with nothing else set.
    pub fn new(status: u16, date: u64, keep_alive: bool) -> Head<'a> {
        Head {
            status,
            date,
            content_type: None,
            content_length: 0,
            last_modified: None,
            etag: None,
            content_range: None,
            location: None,
            allow: false,
            accept_ranges: false,
            keep_alive,
        }
    }

    /// Appends the head (ending with the blank line) to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        let mut d = [0u8; date::LEN];
        date::format(self.date, &mut d);
        let _ = write!(out, "HTTP/1.1 {} {}\r\nServer: sirocco\r\nDate: ", self.status, reason(self.status));
        out.extend_from_slice(&d);
        out.extend_from_slice(b"\r\n");
        if let Some(t) = self.content_type {
            let _ = write!(out, "Content-Type: {t}\r\n");
        }
        // 304 carries no Content-Length (it would describe the selected representation,
        // which a cache does not need here).
        if self.status != 304 {
            let _ = write!(out, "Content-Length: {}\r\n", self.content_length);
        }
        if let Some(lm) = self.last_modified {
            date::format(lm, &mut d);
            out.extend_from_slice(b"Last-Modified: ");
            out.extend_from_slice(&d);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(if self.keep_alive { CONNECTION_KEEP_ALIVE } else { CONNECTION_CLOSE_PADDED }.as_bytes());
        if let Some(e) = self.etag {
            let _ = write!(out, "ETag: {e}\r\n");
        }
        if let Some(l) = self.location {
            out.extend_from_slice(b"Location: ");
            out.extend_from_slice(l);
            out.extend_from_slice(b"\r\n");
        }
        match self.content_range {
            Some(ContentRange::Part { first, last, total }) => {
                let _ = write!(out, "Content-Range: bytes {first}-{last}/{total}\r\n");
            }
            Some(ContentRange::Unsatisfied(total)) => {
                let _ = write!(out, "Content-Range: bytes */{total}\r\n");
            }
            None => {}
        }
        if self.allow {
            out.extend_from_slice(b"Allow: GET, HEAD\r\n");
        }
        if self.accept_ranges {
            out.extend_from_slice(b"Accept-Ranges: bytes\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }
}

/// The HTML body of an error response.
pub fn error_body(status: u16, out: &mut Vec<u8>) {
    let r = reason(status);
    let _ = write!(
        out,
        "<html>\r\n<head><title>{status} {r}</title></head>\r\n<body>\r\n<center><h1>{status} {r}</h1></center>\r\n<hr><center>sirocco</center>\r\n</body>\r\n</html>\r\n"
    );
}

/// Length of [`error_body`] for `status`.
pub fn error_body_len(status: u16) -> usize {
    let mut v = Vec::new();
    error_body(status, &mut v);
    v.len()
}

/// An entity tag in nginx's form: `"<mtime hex>-<size hex>"`.
pub fn etag(mtime: u64, size: u64) -> String {
    format!("\"{mtime:x}-{size:x}\"")
}

/// Whether an If-None-Match value matches `etag` (weak comparison, RFC 9110 §13.1.2).
pub fn none_match(value: &[u8], etag: &str) -> bool {
    let value = value.trim_ascii();
    if value == b"*" {
        return true;
    }
    let strip = |t: &[u8]| -> Vec<u8> { t.strip_prefix(b"W/").unwrap_or(t).to_vec() };
    let mine = strip(etag.as_bytes());
    value.split(|&c| c == b',').any(|t| strip(t.trim_ascii()) == mine)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_layout() {
        let mut h = Head::new(200, 784_111_777, true);
        h.content_type = Some("text/html");
        h.content_length = 12;
        h.last_modified = Some(0);
        h.etag = Some("\"0-c\"");
        h.accept_ranges = true;
        let mut out = Vec::new();
        h.write(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 200 OK\r\nServer: sirocco\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Type: text/html\r\n\
             Content-Length: 12\r\nLast-Modified: Thu, 01 Jan 1970 00:00:00 GMT\r\nConnection: keep-alive\r\n\
             ETag: \"0-c\"\r\nAccept-Ranges: bytes\r\n\r\n"
        );
    }

    #[test]
    fn keep_alive_and_close_heads_have_one_length() {
        assert_eq!(CONNECTION_CLOSE_PADDED.len(), CONNECTION_KEEP_ALIVE.len());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        Head::new(200, 1, true).write(&mut a);
        Head::new(200, 1, false).write(&mut b);
        assert_eq!(a.len(), b.len());
    }

    #[test]
    fn etags() {
        assert_eq!(etag(0x5f00, 0x1a), "\"5f00-1a\"");
        assert!(none_match(b"\"5f00-1a\"", "\"5f00-1a\""));
        assert!(none_match(b"W/\"5f00-1a\", \"x\"", "\"5f00-1a\""));
        assert!(none_match(b" * ", "\"5f00-1a\""));
        assert!(!none_match(b"\"5f00-1b\"", "\"5f00-1a\""));
        assert_eq!(error_body_len(404), {
            let mut v = Vec::new();
            error_body(404, &mut v);
            v.len()
        });
    }
}
