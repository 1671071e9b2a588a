//! The meta commands of the text protocol (memcached 1.6): `mg`, `ms`, `md`, `ma`, `mn`, `me`.
//! A command is its key (but `mn`), `ms`'s data length, and flags: single letters, some
//! carrying a token (`T30`, `Oabc`). Which flags a command takes, and what they mean, is
//! the server's business; the parser checks their shape.

use crate::num::i32_token;
use crate::MAX_KEY;

/// Most flags on one command (memcached's own bound).
pub const MAX_FLAGS: usize = 24;
/// Longest opaque (`O`) token.
pub const MAX_OPAQUE: usize = 32;

/// Which meta command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaCmd {
    /// `mg`: get.
    Get,
    /// `ms`: set; data follows.
    Set,
    /// `md`: delete.
    Delete,
    /// `ma`: arithmetic.
    Arith,
    /// `mn`: no-op (a pipeline marker).
    Noop,
    /// `me`: debug view of an item.
    Debug,
}

/// The flags of a meta command, in the order given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flags<'a> {
    raw: &'a [u8],
}

impl<'a> Flags<'a> {
    /// Each flag: its letter and its token (possibly empty).
    pub fn iter(&self) -> impl Iterator<Item = (u8, &'a [u8])> {
        self.raw.split(|&b| b == b' ').filter(|t| !t.is_empty()).map(|t| (t[0], &t[1..]))
    }

    /// The token of flag `f`, if given.
    pub fn get(&self, f: u8) -> Option<&'a [u8]> {
        self.iter().find(|&(l, _)| l == f).map(|(_, t)| t)
    }

    /// True if flag `f` is given.
    pub fn has(&self, f: u8) -> bool {
        self.get(f).is_some()
    }
}

/// A meta command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meta<'a> {
    /// A well-formed command.
    Cmd {
        /// Which.
        cmd: MetaCmd,
        /// The key (empty for `mn`; base64 when the `b` flag is given).
        key: &'a [u8],
        /// `ms`'s data length.
        datalen: usize,
        /// Its flags.
        flags: Flags<'a>,
    },
    /// One memcached answers `ERROR` (as an unknown command).
    Unknown,
    /// A malformed one: memcached answers `CLIENT_ERROR` with this text. `ms` errors that
    /// come after a valid length also carry it, for the data that follows is to be skipped.
    Error(&'static str, Option<usize>),
}

/// Parses the rest of a meta command line (`rest` follows the two-letter command).
pub fn parse<'a>(cmd: &[u8], rest: &'a [u8]) -> Meta<'a> {
    let cmd = match cmd {
        b"mg" => MetaCmd::Get,
        b"ms" => MetaCmd::Set,
        b"md" => MetaCmd::Delete,
        b"ma" => MetaCmd::Arith,
        b"mn" => MetaCmd::Noop,
        _ => MetaCmd::Debug,
    };
    if cmd == MetaCmd::Noop {
        return Meta::Cmd { cmd, key: b"", datalen: 0, flags: Flags { raw: b"" } };
    }
    let mut toks = rest.split(|&b| b == b' ').filter(|t| !t.is_empty());
    let Some(key) = toks.next() else {
        // memcached treats a meta command without a key as an unknown command, but for `ms`.
        return match cmd {
            MetaCmd::Set | MetaCmd::Debug => Meta::Error("bad command line format", None),
            _ => Meta::Unknown,
        };
    };
    if key.len() > MAX_KEY {
        return Meta::Error("bad command line format", None);
    }
    let after = |t: &[u8]| &rest[(t.as_ptr() as usize - rest.as_ptr() as usize) + t.len()..];
    let (datalen, flags_raw) = if cmd == MetaCmd::Set {
        let Some(len) = toks.next() else { return Meta::Error("bad command line format", None) };
        match i32_token(len) {
            Some(n) if n >= 0 => (n as usize, after(len)),
            _ => return Meta::Error("bad command line format", None),
        }
    } else {
        (0, after(key))
    };
    let flags = Flags { raw: flags_raw };
    let skip = (cmd == MetaCmd::Set).then_some(datalen);
    let mut n = 0;
    let mut seen = [false; 256];
    for (f, tok) in flags.iter() {
        n += 1;
        if n > MAX_FLAGS {
            return Meta::Error("options flags are too long", skip);
        }
        // Token by token as memcached's _meta_flag_preparse: a repeat, then a flag no meta
        // command knows; the command's own rules come later.
        if std::mem::replace(&mut seen[usize::from(f)], true) {
            return Meta::Error("duplicate flag", skip);
        }
        if !KNOWN_FLAGS.contains(&f) {
            return Meta::Error("invalid flag", skip);
        }
        if f == b'O' && tok.len() > MAX_OPAQUE {
            return Meta::Error("opaque token too long", skip);
        }
    }
    Meta::Cmd { cmd, key, datalen, flags }
}

/// The flags memcached 1.6.18 knows for any meta command (its `_meta_flag_preparse`).
const KNOWN_FLAGS: &[u8] = b"bNTRlOPLkstcfvhuqFCMJDI";

/// Decodes a base64 key (the `b` flag: standard alphabet, padded) into `out`; the decoded
/// length, or None if it is not base64 or does not fit.
pub fn decode_key(token: &[u8], out: &mut [u8]) -> Option<usize> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    if token.is_empty() || !token.len().is_multiple_of(4) {
        return None;
    }
    let mut n = 0;
    for (i, q) in token.chunks(4).enumerate() {
        let last = (i + 1) * 4 == token.len();
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut v = 0u32;
        for &c in &q[..4 - pad] {
            v = v << 6 | val(c)?;
        }
        v <<= 6 * pad as u32;
        let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
        let take = 3 - pad;
        out.get_mut(n..n + take)?.copy_from_slice(&bytes[..take]);
        n += take;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let Meta::Cmd { cmd: MetaCmd::Set, key, datalen: 5, flags } = parse(b"ms", b" k 5 T30 F7 q") else { panic!() };
        assert_eq!(key, b"k");
        assert_eq!(flags.get(b'T'), Some(&b"30"[..]));
        assert!(flags.has(b'q') && !flags.has(b'v'));
        assert_eq!(flags.iter().map(|(f, _)| f).collect::<Vec<_>>(), b"TFq");
        assert_eq!(parse(b"mg", b""), Meta::Unknown);
        assert_eq!(parse(b"ms", b""), Meta::Error("bad command line format", None));
        assert_eq!(parse(b"ms", b" k x"), Meta::Error("bad command line format", None));
        assert_eq!(parse(b"ms", b" k 3 !x"), Meta::Error("invalid flag", Some(3)));
        assert!(matches!(parse(b"mn", b""), Meta::Cmd { cmd: MetaCmd::Noop, .. }));
        assert_eq!(parse(b"mg", b" k v v"), Meta::Error("duplicate flag", None));
        assert!(matches!(parse(b"mg", b" k t T30"), Meta::Cmd { .. }), "flags are case-sensitive");
        // Token by token, as memcached: a flag no meta command knows before a later repeat.
        assert_eq!(parse(b"mg", b" k v V"), Meta::Error("invalid flag", None));
        assert_eq!(parse(b"mg", b" foo m o o o"), Meta::Error("invalid flag", None));
        assert_eq!(parse(b"mg", b" foo v v m"), Meta::Error("duplicate flag", None));
        let mut k = [0u8; 16];
        assert_eq!(decode_key(b"Zm9vYg==", &mut k).map(|n| &k[..n]), Some(&b"foob"[..]));
        assert_eq!(decode_key(b"Zm9vYmE=", &mut k).map(|n| &k[..n]), Some(&b"fooba"[..]));
        assert_eq!(decode_key(b"Zm9vYmFy", &mut k).map(|n| &k[..n]), Some(&b"foobar"[..]));
        assert_eq!(decode_key(b"Zm9v!mFy", &mut k), None);
        assert_eq!(decode_key(b"Zm9=YmFy", &mut k), None);
        assert_eq!(decode_key(b"Zm9", &mut k), None);
    }
}
