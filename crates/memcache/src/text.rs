//! The text protocol's classic commands, parsed as memcached 1.6 parses them: a line split at
//! spaces, dispatched on the first token and the token count; a storage command's data block
//! follows its line. Meta commands (`mg`, `ms`, …) are parsed by [`crate::meta`].

use crate::meta::{self, Meta};
use crate::num::{i32_token, u64_token};

pub use crate::MAX_KEY;
/// A line without its end longer than this closes the connection (as memcached's does)…
pub const MAX_LINE: usize = 2048;
/// …except a `get`/`gets` line (many keys), which may run to this.
pub const MAX_GET_LINE: usize = 256 * 1024;

/// The command line at the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// The line without its `\r\n` (or `\n`), and the bytes it takes with its end.
    Found(&'a [u8], usize),
    /// No line end yet: more bytes are needed.
    Incomplete,
    /// No line end within the limit: memcached closes such a connection.
    TooLong,
}

/// Finds the first line of `buf`.
pub fn line(buf: &[u8]) -> Line<'_> {
    match buf.iter().position(|&b| b == b'\n') {
        Some(i) => {
            let l = if i > 0 && buf[i - 1] == b'\r' { &buf[..i - 1] } else { &buf[..i] };
            Line::Found(l, i + 1)
        }
        None => {
            let get = buf.starts_with(b"get ") || buf.starts_with(b"gets ");
            if buf.len() > if get { MAX_GET_LINE } else { MAX_LINE } {
                Line::TooLong
            } else {
                Line::Incomplete
            }
        }
    }
}

/// The storage commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOp {
    /// `set`
    Set,
    /// `add`
    Add,
    /// `replace`
    Replace,
    /// `append`
    Append,
    /// `prepend`
    Prepend,
    /// `cas`
    Cas,
}

/// The keys of a retrieval command, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys<'a>(&'a [u8]);

impl<'a> Keys<'a> {
    /// The keys (each at most [`MAX_KEY`] bytes? see [`Keys::too_long`]).
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> {
        self.0.split(|&b| b == b' ').filter(|t| !t.is_empty())
    }

    /// True if some key is longer than [`MAX_KEY`].
    pub fn too_long(&self) -> bool {
        self.iter().any(|k| k.len() > MAX_KEY)
    }
}

/// A parsed command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command<'a> {
    /// `get`, `gets`, `gat`, `gats`.
    Get {
        /// The keys.
        keys: Keys<'a>,
        /// Return CAS uniques (`gets`, `gats`).
        cas: bool,
        /// New expiry time (`gat`, `gats`).
        touch: Option<i64>,
    },
    /// A storage command; `bytes` of data and `\r\n` follow the line.
    Store {
        /// Which.
        op: StoreOp,
        /// The key.
        key: &'a [u8],
        /// Client flags.
        flags: u32,
        /// Expiry time as given.
        exptime: i64,
        /// Data length.
        bytes: usize,
        /// CAS unique (`cas` only).
        cas: u64,
        /// No reply wanted.
        noreply: bool,
    },
    /// `delete`
    Delete {
        /// The key.
        key: &'a [u8],
        /// No reply wanted.
        noreply: bool,
    },
    /// `incr`, `decr`
    Arith {
        /// The key.
        key: &'a [u8],
        /// `incr` (else `decr`).
        incr: bool,
        /// By how much.
        delta: u64,
        /// No reply wanted.
        noreply: bool,
    },
    /// `touch`
    Touch {
        /// The key.
        key: &'a [u8],
        /// New expiry time.
        exptime: i64,
        /// No reply wanted.
        noreply: bool,
    },
    /// `flush_all [delay]`
    FlushAll {
        /// Delay (an expiry time).
        delay: Option<i64>,
        /// No reply wanted.
        noreply: bool,
    },
    /// `version`
    Version,
    /// `verbosity`
    Verbosity {
        /// No reply wanted.
        noreply: bool,
    },
    /// `stats [group]`
    Stats {
        /// The group asked for (empty: the general stats).
        group: &'a [u8],
    },
    /// `quit`
    Quit,
    /// A meta command.
    Meta(Meta<'a>),
    /// A line memcached answers with this error (and nothing else).
    Error(&'static str),
    /// A command refused with `noreply`: memcached says nothing (its `set_noreply_maybe`
    /// comes before the checks, so the error is silent too).
    Silent,
    /// A line that looks like HTTP (its last token starts with `HTTP/`): memcached closes the
    /// connection without a word, rather than answer a web client `ERROR`.
    Hangup,
}

/// `ERROR`: an unknown command or a wrong number of tokens.
pub const ERROR: &str = "ERROR";
/// A malformed command line.
pub const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format";
/// An expiry time that is not a number.
pub const BAD_EXPTIME: &str = "CLIENT_ERROR invalid exptime argument";
/// An `incr`/`decr` delta that is not a number.
pub const BAD_DELTA: &str = "CLIENT_ERROR invalid numeric delta argument";
/// `delete` with a time other than 0.
pub const BAD_DELETE: &str = "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]";

/// Parses a command line (without its end).
pub fn parse(line: &[u8]) -> Command<'_> {
    let mut tokens = line.split(|&b| b == b' ').filter(|t| !t.is_empty());
    let Some(cmd) = tokens.next() else { return Command::Error(ERROR) };
    let rest_at = |t: &[u8]| (t.as_ptr() as usize - line.as_ptr() as usize) + t.len();
    let after_cmd = &line[rest_at(cmd)..];
    let mut t = [&b""[..]; 8];
    let mut n = 0;
    let mut last = cmd;
    for tok in tokens {
        if n < t.len() {
            t[n] = tok;
        }
        last = tok;
        n += 1;
    }
    let noreply = |n: usize| n > 0 && t.get(n - 1).is_some_and(|l| *l == b"noreply");
    let c = command(cmd, line, after_cmd, &t, n, noreply(n));
    match c {
        Command::Error(e) if e != ERROR && noreply(n) && REPLY_OPTIONAL.contains(&cmd) => Command::Silent,
        Command::Error(ERROR) if last.starts_with(b"HTTP/") => Command::Hangup,
        c => c,
    }
}

/// Commands whose `noreply` silences their errors too.
const REPLY_OPTIONAL: [&[u8]; 12] = [
    b"set",
    b"add",
    b"replace",
    b"append",
    b"prepend",
    b"cas",
    b"incr",
    b"decr",
    b"delete",
    b"touch",
    b"flush_all",
    b"verbosity",
];

fn command<'a>(
    cmd: &'a [u8],
    line: &'a [u8],
    after_cmd: &'a [u8],
    t: &[&'a [u8]; 8],
    n: usize,
    nr: bool,
) -> Command<'a> {
    let rest_at = |t: &[u8]| (t.as_ptr() as usize - line.as_ptr() as usize) + t.len();
    let noreply = |_: usize| nr;
    match cmd {
        b"get" | b"gets" if n >= 1 => get(after_cmd, cmd == b"gets", None),
        b"gat" | b"gats" if n >= 1 => match i32_token(t[0]) {
            None => Command::Error(BAD_EXPTIME),
            Some(e) => {
                let keys = &line[rest_at(t[0])..];
                // memcached answers `gat <exptime>` with no keys: END.
                get(keys, cmd == b"gats", Some(i64::from(e)))
            }
        },
        b"set" | b"add" | b"replace" | b"append" | b"prepend" if n == 4 || n == 5 => {
            let op = match cmd {
                b"set" => StoreOp::Set,
                b"add" => StoreOp::Add,
                b"replace" => StoreOp::Replace,
                b"append" => StoreOp::Append,
                _ => StoreOp::Prepend,
            };
            store(op, &t[..4], 0, noreply(n))
        }
        b"cas" if n == 5 || n == 6 => match u64_token(t[4]) {
            Some(cas) => store(StoreOp::Cas, &t[..4], cas, noreply(n)),
            None => Command::Error(BAD_FORMAT),
        },
        b"incr" | b"decr" if n == 2 || n == 3 => {
            if t[0].len() > MAX_KEY {
                return Command::Error(BAD_FORMAT);
            }
            match u64_token(t[1]) {
                Some(delta) => Command::Arith { key: t[0], incr: cmd == b"incr", delta, noreply: noreply(n) },
                None => Command::Error(BAD_DELTA),
            }
        }
        b"delete" if (1..=3).contains(&n) => {
            if t[0].len() > MAX_KEY {
                return Command::Error(BAD_FORMAT);
            }
            let zero = n > 1 && t[1] == b"0";
            let nr = noreply(n);
            let valid = n == 1 || (n == 2 && (zero || nr)) || (n == 3 && zero && nr);
            if valid {
                Command::Delete { key: t[0], noreply: nr }
            } else {
                Command::Error(BAD_DELETE)
            }
        }
        b"touch" if n == 2 || n == 3 => {
            if t[0].len() > MAX_KEY {
                return Command::Error(BAD_FORMAT);
            }
            match i32_token(t[1]) {
                Some(e) => Command::Touch { key: t[0], exptime: i64::from(e), noreply: noreply(n) },
                None => Command::Error(BAD_EXPTIME),
            }
        }
        b"flush_all" if n <= 2 => {
            let nr = noreply(n);
            let delay = if n == 0 || (n == 1 && nr) {
                None
            } else {
                match i32_token(t[0]) {
                    Some(d) => Some(i64::from(d)),
                    None => return Command::Error(BAD_EXPTIME),
                }
            };
            Command::FlushAll { delay, noreply: nr }
        }
        b"version" => Command::Version,
        b"quit" => Command::Quit,
        b"verbosity" if n == 1 || n == 2 => Command::Verbosity { noreply: noreply(n) },
        b"stats" => Command::Stats { group: trim(after_cmd) },
        b"mg" | b"ms" | b"md" | b"ma" | b"mn" | b"me" => Command::Meta(meta::parse(cmd, after_cmd)),
        _ => Command::Error(ERROR),
    }
}

fn trim(s: &[u8]) -> &[u8] {
    let a = s.iter().position(|&b| b != b' ').unwrap_or(s.len());
    let b = s.iter().rposition(|&b| b != b' ').map_or(a, |i| i + 1);
    &s[a..b.max(a)]
}

fn get(keys: &[u8], cas: bool, touch: Option<i64>) -> Command<'_> {
    let keys = Keys(keys);
    if keys.too_long() {
        return Command::Error(BAD_FORMAT);
    }
    Command::Get { keys, cas, touch }
}

fn store<'a>(op: StoreOp, t: &[&'a [u8]], cas: u64, noreply: bool) -> Command<'a> {
    let key = t[0];
    if key.len() > MAX_KEY {
        return Command::Error(BAD_FORMAT);
    }
    // Flags are read as 64 bits and kept as 32, as memcached keeps them.
    match (u64_token(t[1]).map(|f| f as u32), i32_token(t[2]), i32_token(t[3])) {
        (Some(flags), Some(exptime), Some(bytes)) if (0..=i32::MAX - 2).contains(&bytes) => {
            Command::Store { op, key, flags, exptime: i64::from(exptime), bytes: bytes as usize, cas, noreply }
        }
        _ => Command::Error(BAD_FORMAT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(line(b"get a\r\nrest"), Line::Found(b"get a", 7));
        assert_eq!(line(b"get a\n"), Line::Found(b"get a", 6));
        assert_eq!(line(b"get a"), Line::Incomplete);
        assert_eq!(line(&[b'x'; 3000]), Line::TooLong);
        let mut g = b"get ".to_vec();
        g.extend_from_slice(&[b'a'; 3000]);
        assert_eq!(line(&g), Line::Incomplete, "long get lines are allowed");
    }

    #[test]
    fn storage_commands() {
        assert_eq!(
            parse(b"set k 5 10 3 noreply"),
            Command::Store { op: StoreOp::Set, key: b"k", flags: 5, exptime: 10, bytes: 3, cas: 0, noreply: true }
        );
        assert!(matches!(parse(b"set  k  0 0 1 extra"), Command::Store { noreply: false, .. }));
        assert_eq!(parse(b"set a 0 0 1 2 3"), Command::Error(ERROR));
        assert_eq!(parse(b"set a 0 0 -1"), Command::Error(BAD_FORMAT));
        assert!(matches!(parse(b"set a 4294967297 0 1"), Command::Store { flags: 1, .. }));
        assert_eq!(parse(b"set a 99999999999999999999 0 1"), Command::Error(BAD_FORMAT));
        assert!(matches!(parse(b"cas a 0 0 1 99"), Command::Store { op: StoreOp::Cas, cas: 99, .. }));
        let long = [b"set ".to_vec(), vec![b'k'; 251], b" 0 0 1".to_vec()].concat();
        assert_eq!(parse(&long), Command::Error(BAD_FORMAT));
        assert_eq!(parse(b"SET a 0 0 1"), Command::Error(ERROR));
    }

    #[test]
    fn other_commands() {
        assert_eq!(parse(b"delete a 0"), Command::Delete { key: b"a", noreply: false });
        assert_eq!(parse(b"delete a 5"), Command::Error(BAD_DELETE));
        assert_eq!(parse(b"delete a noreply"), Command::Delete { key: b"a", noreply: true });
        assert_eq!(parse(b"incr n x"), Command::Error(BAD_DELTA));
        assert!(matches!(parse(b"incr n 1 2"), Command::Arith { noreply: false, delta: 1, .. }));
        assert_eq!(parse(b"incr n"), Command::Error(ERROR));
        assert_eq!(parse(b"touch n"), Command::Error(ERROR));
        assert_eq!(parse(b"gat abc n"), Command::Error(BAD_EXPTIME));
        assert_eq!(parse(b"gat"), Command::Error(ERROR));
        assert_eq!(parse(b"flush_all x"), Command::Error(BAD_EXPTIME));
        assert_eq!(parse(b"flush_all noreply"), Command::FlushAll { delay: None, noreply: true });
        assert_eq!(parse(b"flush_all 10 noreply"), Command::FlushAll { delay: Some(10), noreply: true });
        assert_eq!(parse(b"verbosity"), Command::Error(ERROR));
        assert_eq!(parse(b"verbosity 1 2 3"), Command::Error(ERROR));
        assert_eq!(parse(b""), Command::Error(ERROR));
        assert_eq!(parse(b"stats  settings "), Command::Stats { group: b"settings" });
        let Command::Get { keys, cas: true, touch: Some(0) } = parse(b"gats 0 a  b") else { panic!() };
        assert_eq!(keys.iter().collect::<Vec<_>>(), vec![&b"a"[..], b"b"]);
    }
}
