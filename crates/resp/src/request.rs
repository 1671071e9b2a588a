//! Requests, read as Redis 7's `processMultibulkBuffer` and `processInlineBuffer` read them.
//!
//! A request starting with `*` is multibulk: a count line, then that many `$len` lines each
//! followed by `len` bytes and two more (which Redis skips without looking at them). Anything
//! else is an inline command: one line, split into words with Redis's quoting rules (`"..."`
//! with `\n \r \t \b \a \xHH` escapes, `'...'` with `\'`). A count or length line is at most
//! 64 KB long, a bulk at most the configured limit; beyond, or malformed, the request is a
//! protocol error that Redis answers with `-ERR Protocol error: ...` and then closes.
//!
//! The parser keeps its place between calls, so a request arriving in many pieces is read once,
//! not again from its start with every piece (a 1 MB `MSET` in 1460-byte segments).

use crate::num::parse_i64;
use std::ops::Range;

/// The longest count, length or inline line Redis reads (`PROTO_INLINE_MAX_SIZE`).
pub const MAX_LINE: usize = 64 * 1024;
/// The most arguments one multibulk request may declare (Redis: `INT_MAX`).
pub const MAX_ARGS: i64 = i32::MAX as i64;
/// Redis's default `proto-max-bulk-len`.
pub const REDIS_MAX_BULK: usize = 512 << 20;

/// What the bytes at the start of the buffer hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole request yet: call again with the same bytes and more after them.
    Incomplete,
    /// A request of `consumed` bytes; its arguments are in the [`Args`] (none for an empty
    /// one, which Redis skips without answering).
    Request {
        /// Bytes the request took.
        consumed: usize,
    },
    /// A protocol error: answer `-ERR Protocol error: <text>` and close the connection.
    Error(ProtocolError),
}

/// The protocol errors, worded as Redis words them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolError {
    /// A multibulk count line longer than [`MAX_LINE`].
    TooBigMbulkCount,
    /// A count that is not a number or too large.
    InvalidMultibulkLength,
    /// A bulk length line longer than [`MAX_LINE`].
    TooBigBulkCount,
    /// Something other than `$` where a bulk length should be (the byte found).
    ExpectedDollar(u8),
    /// A bulk length that is not a number, negative, or above the limit.
    InvalidBulkLength,
    /// An inline line longer than [`MAX_LINE`].
    TooBigInline,
    /// An inline line with an unterminated quote, or a closing quote not followed by a blank.
    UnbalancedQuotes,
}

impl ProtocolError {
    /// The error text after `Protocol error: `.
    pub fn text(&self) -> String {
        match self {
            ProtocolError::TooBigMbulkCount => "too big mbulk count string".into(),
            ProtocolError::InvalidMultibulkLength => "invalid multibulk length".into(),
            ProtocolError::TooBigBulkCount => "too big bulk count string".into(),
            ProtocolError::ExpectedDollar(b) => {
                // Redis prints the byte with %c; a NUL ends its C string there.
                let c = if *b == 0 { String::new() } else { String::from_utf8_lossy(&[*b]).into_owned() };
                format!("expected '$', got '{c}'")
            }
            ProtocolError::InvalidBulkLength => "invalid bulk length".into(),
            ProtocolError::TooBigInline => "too big inline request".into(),
            ProtocolError::UnbalancedQuotes => "unbalanced quotes in request".into(),
        }
    }
}

/// The arguments of the request last parsed: ranges into the request's bytes (multibulk), or
/// into the parser's own copy (inline, whose quoting changes the bytes).
#[derive(Debug, Default)]
pub struct Args {
    ranges: Vec<Range<usize>>,
    inline: bool,
    unquoted: Vec<u8>,
}

impl Args {
    /// How many arguments (the command name included).
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// True for an empty request.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Argument `i` of the request that `buf` starts with (the bytes given to
    /// [`Parser::parse`]).
    pub fn get<'a>(&'a self, buf: &'a [u8], i: usize) -> &'a [u8] {
        let r = self.ranges[i].clone();
        if self.inline {
            &self.unquoted[r]
        } else {
            &buf[r]
        }
    }

    /// Every argument, in order.
    pub fn iter<'a>(&'a self, buf: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        (0..self.len()).map(move |i| self.get(buf, i))
    }
}

/// Where the parser is in the current request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing read yet.
    Start,
    /// Multibulk: `left` arguments to go; `bulk` is the length of the next, once read.
    Multibulk { left: i64, bulk: Option<usize> },
}

/// A request parser for one connection.
#[derive(Debug)]
pub struct Parser {
    max_bulk: usize,
    state: State,
    /// Bytes of the current request already read.
    pos: usize,
    /// The arguments of the current (or last) request.
    pub args: Args,
}

/// The end of a `\r`-terminated line starting at `from`, as Redis's `strchr(.., '\r')` finds
/// it (a NUL byte ends the search), if the byte after the `\r` has arrived too.
fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    let rest = &buf[from..];
    let i = rest.iter().position(|&b| b == b'\r' || b == 0)?;
    (rest[i] == b'\r' && from + i + 2 <= buf.len()).then_some(from + i)
}

impl Parser {
    /// A parser whose bulks may be at most `max_bulk` bytes.
    pub fn new(max_bulk: usize) -> Parser {
        Parser { max_bulk, state: State::Start, pos: 0, args: Args::default() }
    }

    /// Forgets a request in progress (after the caller dropped its bytes).
    pub fn reset(&mut self) {
        self.state = State::Start;
        self.pos = 0;
        self.args.ranges.clear();
    }

    /// Bytes of the current request read so far (0 between requests).
    pub fn progress(&self) -> usize {
        self.pos
    }

    /// The bulk length being waited for, if the parser is in the middle of one: lets the
    /// caller make room for it at once.
    pub fn pending_bulk(&self) -> Option<usize> {
        match self.state {
            State::Multibulk { bulk: Some(n), .. } => Some(n),
            _ => None,
        }
    }

    /// Reads the request at the start of `buf`. After `Incomplete`, call again with the same
    /// bytes followed by more; after `Request`, drop the bytes consumed and the next call
    /// starts a new request.
    pub fn parse(&mut self, buf: &[u8]) -> Parsed {
        if self.state == State::Start {
            self.args.ranges.clear();
            self.args.unquoted.clear();
            self.pos = 0;
            match buf.first() {
                None => return Parsed::Incomplete,
                Some(b'*') => {}
                Some(_) => return self.inline(buf),
            }
            let Some(end) = line_end(buf, 0) else {
                return if buf.len() > MAX_LINE {
                    Parsed::Error(ProtocolError::TooBigMbulkCount)
                } else {
                    Parsed::Incomplete
                };
            };
            let n = match parse_i64(&buf[1..end]) {
                Some(n) if n <= MAX_ARGS => n,
                _ => return Parsed::Error(ProtocolError::InvalidMultibulkLength),
            };
            self.pos = end + 2;
            if n <= 0 {
                let consumed = self.pos;
                self.reset();
                return Parsed::Request { consumed };
            }
            self.args.inline = false;
            self.state = State::Multibulk { left: n, bulk: None };
        }
        let State::Multibulk { mut left, mut bulk } = self.state else { unreachable!() };
        while left > 0 {
            let len = match bulk {
                Some(len) => len,
                None => {
                    let Some(end) = line_end(buf, self.pos) else {
                        if buf.len() - self.pos > MAX_LINE {
                            return Parsed::Error(ProtocolError::TooBigBulkCount);
                        }
                        break;
                    };
                    if buf[self.pos] != b'$' {
                        return Parsed::Error(ProtocolError::ExpectedDollar(buf[self.pos]));
                    }
                    let len = match parse_i64(&buf[self.pos + 1..end]) {
                        Some(n) if n >= 0 && n as u64 <= self.max_bulk as u64 => n as usize,
                        _ => return Parsed::Error(ProtocolError::InvalidBulkLength),
                    };
                    self.pos = end + 2;
                    bulk = Some(len);
                    len
                }
            };
            if buf.len() - self.pos < len + 2 {
                break;
            }
            self.args.ranges.push(self.pos..self.pos + len);
            self.pos += len + 2;
            bulk = None;
            left -= 1;
        }
        if left > 0 {
            self.state = State::Multibulk { left, bulk };
            return Parsed::Incomplete;
        }
        let consumed = self.pos;
        self.state = State::Start;
        self.pos = 0;
        Parsed::Request { consumed }
    }

    fn inline(&mut self, buf: &[u8]) -> Parsed {
        // Redis looks for '\n' with strchr: a NUL byte before it hides it.
        let nl = match buf.iter().position(|&b| b == b'\n' || b == 0) {
            Some(i) if buf[i] == b'\n' => i,
            _ => {
                return if buf.len() > MAX_LINE {
                    Parsed::Error(ProtocolError::TooBigInline)
                } else {
                    Parsed::Incomplete
                };
            }
        };
        let line_len = if nl > 0 && buf[nl - 1] == b'\r' { nl - 1 } else { nl };
        self.args.inline = true;
        if split_args(&buf[..line_len], &mut self.args).is_err() {
            return Parsed::Error(ProtocolError::UnbalancedQuotes);
        }
        Parsed::Request { consumed: nl + 1 }
    }
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Redis's `sdssplitargs` over one line (which, as a C string, ends at a NUL byte).
fn split_args(line: &[u8], args: &mut Args) -> Result<(), ()> {
    let line = match line.iter().position(|&b| b == 0) {
        Some(i) => &line[..i],
        None => line,
    };
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    // isspace() in the C locale.
    let space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let out = &mut args.unquoted;
    let mut p = 0;
    loop {
        while p < line.len() && space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Ok(());
        }
        let start = out.len();
        // The quote the word is inside, if any.
        let mut quote: Option<u8> = None;
        loop {
            let c = at(p);
            if let Some(q) = quote {
                let dq = q == b'"';
                if dq && c == b'\\' && at(p + 1) == b'x' && hex(at(p + 2)).is_some() && hex(at(p + 3)).is_some() {
                    out.push(hex(at(p + 2)).unwrap_or(0) * 16 + hex(at(p + 3)).unwrap_or(0));
                    p += 3;
                } else if dq && c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    out.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if !dq && c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    out.push(b'\'');
                } else if c == q {
                    // A closing quote must be followed by a blank or the end.
                    if at(p + 1) != 0 && !space(at(p + 1)) {
                        return Err(());
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return Err(());
                } else {
                    out.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        if c != 0 {
                            p += 1;
                        }
                        break;
                    }
                    b'"' | b'\'' => quote = Some(c),
                    _ => out.push(c),
                }
            }
            p += 1;
        }
        args.ranges.push(start..out.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn args(p: &Parser, buf: &[u8]) -> Vec<Vec<u8>> {
        p.args.iter(buf).map(|a| a.to_vec()).collect()
    }

    fn one(input: &[u8]) -> (Parsed, Vec<Vec<u8>>) {
        let mut p = Parser::new(REDIS_MAX_BULK);
        let r = p.parse(input);
        let a = if matches!(r, Parsed::Request { .. }) { args(&p, input) } else { vec![] };
        (r, a)
    }

    #[test]
    fn multibulk() {
        let (r, a) = one(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nextra");
        assert_eq!(r, Parsed::Request { consumed: 20 });
        assert_eq!(a, vec![b"GET".to_vec(), b"k".to_vec()]);
        assert_eq!(one(b"*0\r\n").0, Parsed::Request { consumed: 4 });
        assert_eq!(one(b"*-5\r\n").0, Parsed::Request { consumed: 5 });
        assert_eq!(one(b"*x\r\n").0, Parsed::Error(ProtocolError::InvalidMultibulkLength));
        assert_eq!(one(b"*\r\n").0, Parsed::Error(ProtocolError::InvalidMultibulkLength));
        assert_eq!(one(b"*2147483648\r\n").0, Parsed::Error(ProtocolError::InvalidMultibulkLength));
        assert_eq!(one(b"*1\r\n:3\r\n").0, Parsed::Error(ProtocolError::ExpectedDollar(b':')));
        assert_eq!(one(b"*1\r\n$-1\r\n").0, Parsed::Error(ProtocolError::InvalidBulkLength));
        assert_eq!(one(b"*1\r\n$536870913\r\n").0, Parsed::Error(ProtocolError::InvalidBulkLength));
        // Redis skips the two bytes after a bulk without looking at them.
        assert_eq!(one(b"*1\r\n$1\r\nxAB").1, vec![b"x".to_vec()]);
        assert_eq!(one(b"*1\r\n$1\r\nx\r").0, Parsed::Incomplete);
        assert_eq!(one(b"*1\r").0, Parsed::Incomplete);
    }

    #[test]
    fn long_lines_are_errors_only_past_the_limit() {
        let mut star = b"*".to_vec();
        star.extend(std::iter::repeat_n(b'1', MAX_LINE - 1));
        assert_eq!(one(&star).0, Parsed::Incomplete);
        star.push(b'1');
        assert_eq!(one(&star).0, Parsed::Error(ProtocolError::TooBigMbulkCount));
        let mut inline = vec![b'a'; MAX_LINE + 1];
        assert_eq!(one(&inline).0, Parsed::Error(ProtocolError::TooBigInline));
        inline.truncate(MAX_LINE);
        assert_eq!(one(&inline).0, Parsed::Incomplete);
    }

    #[test]
    fn inline_quoting() {
        let (r, a) = one(b"SET  k \"a b\\n\\x41\"  'it\\'s'\r\n");
        assert_eq!(r, Parsed::Request { consumed: 29 });
        assert_eq!(a, vec![b"SET".to_vec(), b"k".to_vec(), b"a b\nA".to_vec(), b"it's".to_vec()]);
        assert_eq!(one(b"a\"b c\"d\n").0, Parsed::Error(ProtocolError::UnbalancedQuotes));
        assert_eq!(one(b"a \"b\n").0, Parsed::Error(ProtocolError::UnbalancedQuotes));
        assert_eq!(one(b"ab\"c d\" e\n").1, vec![b"abc d".to_vec(), b"e".to_vec()]);
        assert_eq!(one(b"\r\n"), (Parsed::Request { consumed: 2 }, vec![]));
        assert_eq!(one(b"   \n").1, Vec::<Vec<u8>>::new());
        assert_eq!(one(b"PING").0, Parsed::Incomplete);
        assert_eq!(one(b"PI\0NG\r\n").0, Parsed::Incomplete);
    }

    proptest! {
        /// However a request is cut into pieces, it parses as it does whole.
        #[test]
        fn pieces_parse_as_the_whole(
            parts in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6),
            cuts in proptest::collection::vec(1usize..9, 1..40),
        ) {
            let mut whole = format!("*{}\r\n", parts.len()).into_bytes();
            for p in &parts {
                whole.extend(format!("${}\r\n", p.len()).as_bytes());
                whole.extend(p);
                whole.extend(b"\r\n");
            }
            let mut p = Parser::new(REDIS_MAX_BULK);
            let mut end = 0;
            let mut cuts = cuts.into_iter().cycle();
            let got = loop {
                end = (end + cuts.next().unwrap_or(1)).min(whole.len());
                match p.parse(&whole[..end]) {
                    Parsed::Incomplete => prop_assert!(end < whole.len()),
                    r => break r,
                }
            };
            prop_assert_eq!(got, Parsed::Request { consumed: whole.len() });
            prop_assert_eq!(args(&p, &whole), parts);
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut p = Parser::new(1000);
            if let Parsed::Request { consumed } = p.parse(&data) {
                prop_assert!(consumed <= data.len());
                for a in p.args.iter(&data) {
                    prop_assert!(a.len() <= data.len());
                }
            }
        }
    }
}
