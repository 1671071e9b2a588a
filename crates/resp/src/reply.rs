//! Replies: the types Redis answers with, written into any byte sink — RESP2, or RESP3 where
//! the sink says its client asked for it (HELLO 3): nulls, doubles, maps, sets and verbatim
//! strings then have types of their own.

use crate::num::format_i64;

/// Somewhere replies are written (a connection's output buffer).
pub trait Sink {
    /// Appends bytes.
    fn put(&mut self, b: &[u8]);
    /// True if the client speaks RESP3.
    fn resp3(&self) -> bool {
        false
    }
}

/// A connection's output in RESP3.
pub struct Resp3<'a>(pub &'a mut Vec<u8>);

impl Sink for Resp3<'_> {
    fn put(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    fn resp3(&self) -> bool {
        true
    }
}

/// The header of a map of `n` pairs (RESP2: an array of `2n`).
pub fn map(s: &mut dyn Sink, n: usize) {
    if s.resp3() {
        tagged(s, b"%", n as i64);
    } else {
        tagged(s, b"*", 2 * n as i64);
    }
}

/// The header of a set of `n` members (RESP2: an array).
pub fn set(s: &mut dyn Sink, n: usize) {
    let tag: &[u8] = if s.resp3() { b"~" } else { b"*" };
    tagged(s, tag, n as i64);
}

/// Text as Redis's verbatim string (RESP2: a bulk string).
pub fn verbatim(s: &mut dyn Sink, text: &[u8]) {
    if s.resp3() {
        tagged(s, b"=", text.len() as i64 + 4);
        s.put(b"txt:");
        s.put(text);
        s.put(b"\r\n");
    } else {
        bulk(s, text);
    }
}

/// The header of `n` pairs that RESP2 writes flat and RESP3 as `n` arrays of two (a score
/// after its member): the caller writes each pair after [`pair`].
pub fn pairs(s: &mut dyn Sink, n: usize) {
    let len = if s.resp3() { n } else { 2 * n };
    tagged(s, b"*", len as i64);
}

/// Before each pair of [`pairs`].
pub fn pair(s: &mut dyn Sink) {
    if s.resp3() {
        s.put(b"*2\r\n");
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
}

/// `+OK`.
pub fn ok(s: &mut dyn Sink) {
    s.put(b"+OK\r\n");
}

/// A simple string, `+text`.
pub fn simple(s: &mut dyn Sink, text: &[u8]) {
    s.put(b"+");
    s.put(text);
    s.put(b"\r\n");
}

/// An error, `-text` (the text starts with its code: `ERR ...`, `WRONGTYPE ...`). Line breaks
/// in it would end the reply early: Redis replaces them with blanks, and so does this.
pub fn error(s: &mut dyn Sink, text: &[u8]) {
    s.put(b"-");
    if text.iter().any(|&b| b == b'\r' || b == b'\n') {
        for &b in text {
            s.put(if b == b'\r' || b == b'\n' { b" " } else { std::slice::from_ref(&b) });
        }
    } else {
        s.put(text);
    }
    s.put(b"\r\n");
}

/// An integer, `:n`.
pub fn int(s: &mut dyn Sink, n: i64) {
    tagged(s, b":", n);
}

/// `tag`, a decimal number and a line end: the shape of integers and of bulk and array
/// headers.
fn tagged(s: &mut dyn Sink, tag: &[u8], n: i64) {
    let mut b = [0u8; 20];
    s.put(tag);
    s.put(format_i64(n, &mut b));
    s.put(b"\r\n");
}

/// The header of a bulk string of `len` bytes (the caller writes the bytes, then [`crlf`]).
pub fn bulk_header(s: &mut dyn Sink, len: usize) {
    tagged(s, b"$", len as i64);
}

/// A bulk string.
pub fn bulk(s: &mut dyn Sink, v: &[u8]) {
    bulk_header(s, v.len());
    s.put(v);
    s.put(b"\r\n");
}

/// The end of a bulk string written in parts.
pub fn crlf(s: &mut dyn Sink) {
    s.put(b"\r\n");
}

/// The null bulk string, `$-1` (a missing key); RESP3's null.
pub fn null(s: &mut dyn Sink) {
    s.put(if s.resp3() { b"_\r\n" } else { b"$-1\r\n" });
}

/// The null array, `*-1` (ZMPOP, BLPOP on a timeout); RESP3's null.
pub fn null_array(s: &mut dyn Sink) {
    s.put(if s.resp3() { b"_\r\n" } else { b"*-1\r\n" });
}

/// A double as Redis 7.0 answers one: RESP2 a bulk string of `%.17g` ("inf"/"-inf"), RESP3 a
/// double.
pub fn double(s: &mut dyn Sink, d: f64) {
    let mut text = Vec::with_capacity(24);
    if d.is_infinite() {
        text.extend_from_slice(if d > 0.0 { b"inf" } else { b"-inf" });
    } else {
        crate::float::format_g17(d, &mut text);
    }
    if s.resp3() {
        s.put(b",");
        s.put(&text);
        s.put(b"\r\n");
    } else {
        bulk(s, &text);
    }
}

/// The header of an array of `n` elements.
pub fn array(s: &mut dyn Sink, n: usize) {
    tagged(s, b"*", n as i64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings() {
        let mut v = Vec::new();
        ok(&mut v);
        int(&mut v, -7);
        bulk(&mut v, b"a\r\nb");
        null(&mut v);
        array(&mut v, 2);
        error(&mut v, b"ERR bad\r\nthing");
        simple(&mut v, b"PONG");
        assert_eq!(v, b"+OK\r\n:-7\r\n$4\r\na\r\nb\r\n$-1\r\n*2\r\n-ERR bad  thing\r\n+PONG\r\n");
    }
}
