//! Where a session writes its responses, and a small formatter for response lines.

/// A connection's output: bytes go out in the order put.
pub trait Out {
    /// Appends `b` to the response stream.
    fn put(&mut self, b: &[u8]);
    /// Bytes put and not yet taken by the network: a session stops reading commands while
    /// this is above its limit, as memcached stops reading a socket it cannot write to.
    fn backlog(&self) -> usize;
}

/// A response line (`s` and CRLF), unless the command asked for none (`noreply`).
pub fn reply(out: &mut dyn Out, noreply: bool, s: &[u8]) {
    if !noreply {
        out.put(s);
        out.put(b"\r\n");
    }
}

/// Counts a hit (`hit`) or a miss on its counter and answers with its line: memcached's
/// `DELETED`/`NOT_FOUND`, `TOUCHED`/`NOT_FOUND`, ...
pub fn hit_or_miss(
    out: &mut dyn Out,
    noreply: bool,
    hit: bool,
    (hits, misses): (&crate::stats::Counter, &crate::stats::Counter),
    (yes, no): (&[u8], &[u8]),
) {
    let (counter, line) = if hit { (hits, yes) } else { (misses, no) };
    counter.inc();
    reply(out, noreply, line);
}

impl Out for Vec<u8> {
    fn put(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
    fn backlog(&self) -> usize {
        0
    }
}

/// A response line built on the stack (numbers formatted without allocating); longer input
/// than it holds is cut (keys are at most 250 bytes, so no line of ours is).
pub struct Line {
    buf: [u8; 512],
    len: usize,
}

impl Line {
    /// An empty line.
    pub fn new() -> Line {
        Line { buf: [0; 512], len: 0 }
    }

    /// Appends bytes.
    pub fn s(&mut self, b: &[u8]) -> &mut Line {
        let n = b.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
        self
    }

    /// Appends a number in decimal.
    pub fn n(&mut self, v: u64) -> &mut Line {
        let mut d = [0u8; 20];
        self.s(crate::cache::format_u64(v, &mut d))
    }

    /// Appends a signed number in decimal.
    pub fn i(&mut self, v: i64) -> &mut Line {
        if v < 0 {
            self.s(b"-");
        }
        self.n(v.unsigned_abs())
    }

    /// The line so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Default for Line {
    fn default() -> Self {
        Line::new()
    }
}
