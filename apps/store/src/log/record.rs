//! Log records, sans-IO. Every change to the keyspace is one record; a record holds the
//! state it leaves behind (the whole new value, not "append these bytes"), so replaying a
//! record never depends on reading another one right.
//!
//! ```text
//! 0   u32  CRC-32C of bytes 4..24+len
//! 4   u32  len: payload bytes
//! 8   u64  seq: the change's place in the store's one global order (from 1)
//! 16  u8   kind
//! 17  u8   database (SELECT's number); 6 bytes zero
//! 24  payload
//!     Sets:   u32 n, then n × (u32 klen, u32 vlen, i64 expire-at ms (0: none), key, value)
//!     Del:    u32 n, then n × (u32 klen, key)
//!     Expire: i64 at ms (0: persist), u32 klen, key
//!     Flush:  nothing (every database)
//!     FlushDb: nothing (the record's database)
//!     SwapDb: u32 a, u32 b — databases a and b swapped
//!     Commit: u64 bytes, u64 generation, u64 last change of the log's previous commit (0: none)
//!             (seq: the commit's first record's)
//!     HashSet: u8 fresh, i64 expire-at ms, u32 klen, key, u32 n, then n × (u32 flen, u32 vlen, field, value)
//!             fresh 1: the key is now a hash of exactly these fields with that expiry
//!             (whatever it held is gone); 0: these fields set in the hash it is
//!     HashDel: u32 klen, key, u32 n, then n × (u32 flen, field); a hash left empty is removed
//!     List:   u8 flags (1: fresh, a new list expiring at `expire-at`, replacing what the key
//!             held; 2: gone, the list is empty after this change and the key removed),
//!             i64 expire-at ms, u32 klen, key, u8 op, then the op's arguments:
//!             1/2 push left/right: u32 n, n × (u32 len, value)
//!             3/4 pop left/right: u64 count
//!             5 set: i64 index, u32 len, value
//!             6/7 insert before/after: u32 plen, pivot, u32 len, value
//!             8 remove: i64 count, u32 len, value
//!             9 trim: i64 start, i64 stop
//!     Members: u8 flags (as List's), i64 expire-at ms, u32 klen, key, u8 op (1: added,
//!             2: removed), u32 n, n × (u32 len, member) — a set's members
//!     Scores: u8 flags (as List's), i64 expire-at ms, u32 klen, key, u32 n, n × (u32 len,
//!             member, u64 score's bits), u32 m, m × (u32 len, member) — a sorted set's
//!             members given these scores, then those removed
//! ```
//!
//! A list record is a change to apply to the list as the change before it left it; replay
//! skips it where the key already carries it or a later change (a snapshot is copied while
//! changes go on, so it may hold changes the replay meets again).
//!
//! A group commit starts on a block boundary with a Commit record giving its length, and is
//! padded to the next one, so a block once made durable is never written again. A header of
//! zeros is padding: the rest of the block is empty. The Commit record is what tells a torn
//! write (only ever the last commit of a log: one is in flight at a time) from damage to data
//! that was once whole (a good commit follows it).

use crate::keyspace::Value;

/// Bytes of a record header.
pub const HDR: usize = 24;
/// The log's block: each commit is padded to it (O_DIRECT's alignment too).
pub const BLOCK: usize = 4096;

/// Record kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Keys set to values (SET, MSET, INCR, APPEND, ...).
    Sets = 1,
    /// Keys removed.
    Del = 2,
    /// A key's expiry changed.
    Expire = 3,
    /// Every key removed.
    Flush = 4,
    /// The start of a group commit.
    Commit = 5,
    /// Fields of a hash set.
    HashSet = 6,
    /// Fields of a hash removed.
    HashDel = 7,
    /// A change to a list.
    List = 8,
    /// Members of a set added or removed.
    Members = 9,
    /// Members of a sorted set given scores or removed.
    Scores = 10,
    /// Every key of the record's database removed (FLUSHDB).
    FlushDb = 11,
    /// Two databases swapped (SWAPDB).
    SwapDb = 12,
}

/// What a List record does to its list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListOp<'a> {
    /// Values pushed at the head (left) or tail, in order.
    Push {
        /// At the head.
        left: bool,
        /// The values.
        values: Vec<&'a [u8]>,
    },
    /// Values popped from the head or tail.
    Pop {
        /// From the head.
        left: bool,
        /// How many (fewer if the list is shorter).
        count: u64,
    },
    /// The element at `index` (negative: from the tail) replaced.
    Set {
        /// The index.
        index: i64,
        /// The new value.
        value: &'a [u8],
    },
    /// A value inserted before or after the first element equal to `pivot`.
    Insert {
        /// Before it (else after).
        before: bool,
        /// The element looked for.
        pivot: &'a [u8],
        /// The value inserted.
        value: &'a [u8],
    },
    /// Elements equal to `value` removed: `count` from the head (negative: from the tail;
    /// 0: all).
    Remove {
        /// How many, and from which end.
        count: i64,
        /// The value.
        value: &'a [u8],
    },
    /// Only the elements from `start` to `stop` (inclusive, negatives from the tail) kept.
    Trim {
        /// First kept.
        start: i64,
        /// Last kept.
        stop: i64,
    },
}

/// One change, borrowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change<'a> {
    /// `(key, value, expire_at_ms)` set.
    Sets(Vec<(&'a [u8], &'a [u8], i64)>),
    /// Keys removed.
    Del(Vec<&'a [u8]>),
    /// `key` now expires at `at_ms` (0: never).
    Expire(&'a [u8], i64),
    /// Every key of every database removed (FLUSHALL).
    Flush,
    /// Every key of the record's database removed (FLUSHDB).
    FlushDb,
    /// Databases `.0` and `.1` swapped (SWAPDB).
    SwapDb(u32, u32),
    /// Fields of the hash at `key` set.
    HashSet {
        /// The key.
        key: &'a [u8],
        /// The key is now a new hash of only these fields, expiring at `expire_ms`
        /// (0: never); otherwise the fields are set in the hash it holds.
        fresh: bool,
        /// The new hash's expiry (0 when not fresh).
        expire_ms: i64,
        /// The fields and their values.
        fields: Vec<(&'a [u8], &'a [u8])>,
    },
    /// A change to the list at `key`.
    List {
        /// The key.
        key: &'a [u8],
        /// The key is now a new list (expiring at `expire_ms`) that this change starts.
        fresh: bool,
        /// The list is empty after this change: the key is removed.
        gone: bool,
        /// The new list's expiry (0 when not fresh).
        expire_ms: i64,
        /// What happens to it.
        op: ListOp<'a>,
    },
    /// Members of the set at `key` added or removed.
    Members {
        /// The key.
        key: &'a [u8],
        /// The key is now a new set (expiring at `expire_ms`) that this change starts.
        fresh: bool,
        /// The set is empty after this change: the key is removed.
        gone: bool,
        /// The new set's expiry (0 when not fresh).
        expire_ms: i64,
        /// Added (else removed).
        add: bool,
        /// The members.
        members: Vec<&'a [u8]>,
    },
    /// Members of the sorted set at `key` given scores, then others removed.
    Scores {
        /// The key.
        key: &'a [u8],
        /// The key is now a new sorted set (expiring at `expire_ms`) that this change starts.
        fresh: bool,
        /// The sorted set is empty after this change: the key is removed.
        gone: bool,
        /// The new sorted set's expiry (0 when not fresh).
        expire_ms: i64,
        /// Members and their new scores (`f64::to_bits`: a record compares bit for bit).
        set: Vec<(&'a [u8], u64)>,
        /// Members removed.
        removed: Vec<&'a [u8]>,
    },
    /// Fields of the hash at `key` removed (the key too, if none is left).
    HashDel {
        /// The key.
        key: &'a [u8],
        /// The fields.
        fields: Vec<&'a [u8]>,
    },
    /// A group commit of `len` bytes (padding included) of log generation `gen` starts here.
    Commit {
        /// Its length.
        len: u64,
        /// The generation of the log it was written to (a recycled segment holds commits of
        /// older ones: they are not this log's).
        gen: u64,
        /// The last change of the previous commit in the same log (0 for the first): a
        /// commit missing from the middle of a log breaks the chain.
        prev: u64,
    },
}

/// Calls `f` with the one change that makes `key` hold `value` whole, expiring at
/// `expire_ms` (what a snapshot holds for a key, and what RENAME and COPY log).
pub fn with_whole<R>(key: &[u8], value: &Value, expire_ms: i64, f: impl FnOnce(&Change<'_>) -> R) -> R {
    match value {
        Value::Str(v) => f(&Change::Sets(vec![(key, v, expire_ms)])),
        Value::Hash(h) => f(&Change::HashSet { key, fresh: true, expire_ms, fields: h.iter().collect() }),
        Value::List(l) => {
            let op = ListOp::Push { left: false, values: l.iter().map(|v| &**v).collect() };
            f(&Change::List { key, fresh: true, gone: false, expire_ms, op })
        }
        Value::Set(s) => {
            let members = s.members();
            let members = members.iter().map(|m| &**m).collect();
            f(&Change::Members { key, fresh: true, gone: false, expire_ms, add: true, members })
        }
        Value::ZSet(z) => {
            let set = z.iter().map(|(m, s)| (m, s.to_bits())).collect();
            f(&Change::Scores { key, fresh: true, gone: false, expire_ms, set, removed: Vec::new() })
        }
    }
}

/// Writes records into a byte buffer.
pub struct Encoder<'a> {
    buf: &'a mut Vec<u8>,
    start: usize,
}

impl<'a> Encoder<'a> {
    /// Starts a record of `kind` with sequence number `seq` at the end of `buf`.
    pub fn new(buf: &'a mut Vec<u8>, kind: Kind, seq: u64) -> Encoder<'a> {
        let start = buf.len();
        buf.extend_from_slice(&[0u8; 8]);
        buf.extend_from_slice(&seq.to_le_bytes());
        buf.push(kind as u8);
        buf.extend_from_slice(&[0u8; 7]);
        Encoder { buf, start }
    }

    /// Appends a u32.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends an i64.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends bytes.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }

    /// Finishes the record: its length and checksum. Returns its size.
    pub fn finish(self) -> usize {
        let len = self.buf.len() - self.start - HDR;
        self.buf[self.start + 4..self.start + 8].copy_from_slice(&(len as u32).to_le_bytes());
        let crc = crc32c::crc32c(&self.buf[self.start + 4..]);
        self.buf[self.start..self.start + 4].copy_from_slice(&crc.to_le_bytes());
        self.buf.len() - self.start
    }
}

/// Appends a Sets record of `items` (key, value, expiry) as record `seq`; returns its size.
pub fn encode_sets(buf: &mut Vec<u8>, seq: u64, items: &[(&[u8], &[u8], i64)]) -> usize {
    let mut e = Encoder::new(buf, Kind::Sets, seq);
    e.u32(items.len() as u32);
    for (k, v, exp) in items {
        e.u32(k.len() as u32).u32(v.len() as u32).i64(*exp).bytes(k).bytes(v);
    }
    e.finish()
}

/// Appends a Del record of `keys` as record `seq`; returns its size.
pub fn encode_del(buf: &mut Vec<u8>, seq: u64, keys: &[&[u8]]) -> usize {
    let mut e = Encoder::new(buf, Kind::Del, seq);
    e.u32(keys.len() as u32);
    for k in keys {
        e.u32(k.len() as u32).bytes(k);
    }
    e.finish()
}

/// Appends a HashSet record as record `seq`; returns its size.
pub fn encode_hash_set(
    buf: &mut Vec<u8>,
    seq: u64,
    key: &[u8],
    fresh: bool,
    expire_ms: i64,
    fields: &[(&[u8], &[u8])],
) -> usize {
    let mut e = Encoder::new(buf, Kind::HashSet, seq);
    e.bytes(&[fresh as u8]).i64(expire_ms).u32(key.len() as u32).bytes(key).u32(fields.len() as u32);
    for (f, v) in fields {
        e.u32(f.len() as u32).u32(v.len() as u32).bytes(f).bytes(v);
    }
    e.finish()
}

/// Appends `change` as record `seq`; returns its size.
pub fn encode(buf: &mut Vec<u8>, seq: u64, change: &Change<'_>) -> usize {
    match change {
        Change::Sets(sets) => encode_sets(buf, seq, sets),
        Change::Del(keys) => encode_del(buf, seq, keys),
        Change::Expire(k, at) => {
            let mut e = Encoder::new(buf, Kind::Expire, seq);
            e.i64(*at).u32(k.len() as u32).bytes(k);
            e.finish()
        }
        Change::Flush => Encoder::new(buf, Kind::Flush, seq).finish(),
        Change::FlushDb => Encoder::new(buf, Kind::FlushDb, seq).finish(),
        Change::SwapDb(a, b) => {
            let mut e = Encoder::new(buf, Kind::SwapDb, seq);
            e.u32(*a).u32(*b);
            e.finish()
        }
        Change::HashSet { key, fresh, expire_ms, fields } => encode_hash_set(buf, seq, key, *fresh, *expire_ms, fields),
        Change::List { key, fresh, gone, expire_ms, op } => {
            let mut e = Encoder::new(buf, Kind::List, seq);
            e.bytes(&[u8::from(*fresh) | u8::from(*gone) << 1]).i64(*expire_ms).u32(key.len() as u32).bytes(key);
            match op {
                ListOp::Push { left, values } => {
                    e.bytes(&[if *left { 1 } else { 2 }]).u32(values.len() as u32);
                    for v in values {
                        e.u32(v.len() as u32).bytes(v);
                    }
                }
                ListOp::Pop { left, count } => {
                    e.bytes(&[if *left { 3 } else { 4 }]).bytes(&count.to_le_bytes());
                }
                ListOp::Set { index, value } => {
                    e.bytes(&[5]).i64(*index).u32(value.len() as u32).bytes(value);
                }
                ListOp::Insert { before, pivot, value } => {
                    e.bytes(&[if *before { 6 } else { 7 }]).u32(pivot.len() as u32).bytes(pivot);
                    e.u32(value.len() as u32).bytes(value);
                }
                ListOp::Remove { count, value } => {
                    e.bytes(&[8]).i64(*count).u32(value.len() as u32).bytes(value);
                }
                ListOp::Trim { start, stop } => {
                    e.bytes(&[9]).i64(*start).i64(*stop);
                }
            }
            e.finish()
        }
        Change::Members { key, fresh, gone, expire_ms, add, members } => {
            let mut e = Encoder::new(buf, Kind::Members, seq);
            e.bytes(&[u8::from(*fresh) | u8::from(*gone) << 1]).i64(*expire_ms).u32(key.len() as u32).bytes(key);
            e.bytes(&[if *add { 1 } else { 2 }]).u32(members.len() as u32);
            for m in members {
                e.u32(m.len() as u32).bytes(m);
            }
            e.finish()
        }
        Change::Scores { key, fresh, gone, expire_ms, set, removed } => {
            let mut e = Encoder::new(buf, Kind::Scores, seq);
            e.bytes(&[u8::from(*fresh) | u8::from(*gone) << 1]).i64(*expire_ms).u32(key.len() as u32).bytes(key);
            e.u32(set.len() as u32);
            for (m, s) in set {
                e.u32(m.len() as u32).bytes(m).bytes(&s.to_le_bytes());
            }
            e.u32(removed.len() as u32);
            for m in removed {
                e.u32(m.len() as u32).bytes(m);
            }
            e.finish()
        }
        Change::HashDel { key, fields } => {
            let mut e = Encoder::new(buf, Kind::HashDel, seq);
            e.u32(key.len() as u32).bytes(key).u32(fields.len() as u32);
            for f in fields {
                e.u32(f.len() as u32).bytes(f);
            }
            e.finish()
        }
        Change::Commit { len, gen, prev } => {
            let mut e = Encoder::new(buf, Kind::Commit, seq);
            e.bytes(&len.to_le_bytes()).bytes(&gen.to_le_bytes()).bytes(&prev.to_le_bytes());
            e.finish()
        }
    }
}

/// What is at a place in the log.
#[derive(Debug, PartialEq, Eq)]
pub enum Read<'a> {
    /// A whole, intact record of `size` bytes.
    Record {
        /// Its sequence number.
        seq: u64,
        /// The change.
        change: Change<'a>,
        /// Bytes it takes.
        size: usize,
    },
    /// Padding: go on at the next block boundary.
    Pad,
    /// The bytes here do not hold a record: a torn write, corruption, or never written.
    Bad(&'static str),
    /// The record runs past the bytes given.
    Short {
        /// Bytes it needs in all.
        need: usize,
    },
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn i64_at(b: &[u8], at: usize) -> Option<i64> {
    Some(i64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Reads the record at the start of `b` (the bytes from there to as far as known).
pub fn read(b: &[u8], max_len: usize) -> Read<'_> {
    if b.len() < HDR {
        return if b.iter().all(|&x| x == 0) { Read::Pad } else { Read::Short { need: HDR } };
    }
    if b[..HDR].iter().all(|&x| x == 0) {
        return Read::Pad;
    }
    let len = u32_at(b, 4).unwrap_or(0) as usize;
    if len > max_len {
        return Read::Bad("record length beyond any record's");
    }
    if b.len() < HDR + len {
        return Read::Short { need: HDR + len };
    }
    let crc = u32_at(b, 0).unwrap_or(0);
    if crc32c::crc32c(&b[4..HDR + len]) != crc {
        return Read::Bad("checksum mismatch");
    }
    let seq = u64::from_le_bytes(b[8..16].try_into().unwrap_or_default());
    if seq == 0 || b[18..24].iter().any(|&x| x != 0) {
        return Read::Bad("malformed header");
    }
    let p = &b[HDR..HDR + len];
    let change = match b[16] {
        1 => parse_sets(p),
        2 => parse_del(p),
        3 => parse_expire(p),
        4 if p.is_empty() => Some(Change::Flush),
        11 if p.is_empty() => Some(Change::FlushDb),
        12 if p.len() == 8 => u32_at(p, 0).zip(u32_at(p, 4)).map(|(a, b)| Change::SwapDb(a, b)),
        5 if p.len() == 24 => Some(Change::Commit {
            len: u64::from_le_bytes(p[..8].try_into().unwrap_or_default()),
            gen: u64::from_le_bytes(p[8..16].try_into().unwrap_or_default()),
            prev: u64::from_le_bytes(p[16..].try_into().unwrap_or_default()),
        }),
        6 => parse_hash_set(p),
        7 => parse_hash_del(p),
        8 => parse_list(p),
        9 => parse_members(p),
        10 => parse_scores(p),
        _ => None,
    };
    match change {
        Some(change) => Read::Record { seq, change, size: HDR + len },
        None => Read::Bad("malformed payload"),
    }
}

fn parse_sets(p: &[u8]) -> Option<Change<'_>> {
    let n = u32_at(p, 0)? as usize;
    let mut at = 4;
    // Each set takes at least 16 bytes: a count beyond that is a lie, not an allocation.
    let mut sets = Vec::with_capacity(n.min(p.len() / 16));
    for _ in 0..n {
        let kl = u32_at(p, at)? as usize;
        let vl = u32_at(p, at + 4)? as usize;
        let exp = i64_at(p, at + 8)?;
        let k = p.get(at + 16..(at + 16).checked_add(kl)?)?;
        let v_at = at + 16 + kl;
        let v = p.get(v_at..v_at.checked_add(vl)?)?;
        sets.push((k, v, exp));
        at = v_at + vl;
    }
    (at == p.len()).then_some(Change::Sets(sets))
}

fn parse_del(p: &[u8]) -> Option<Change<'_>> {
    let n = u32_at(p, 0)? as usize;
    let mut at = 4;
    let mut keys = Vec::with_capacity(n.min(p.len() / 4));
    for _ in 0..n {
        let kl = u32_at(p, at)? as usize;
        keys.push(p.get(at + 4..(at + 4).checked_add(kl)?)?);
        at += 4 + kl;
    }
    (at == p.len()).then_some(Change::Del(keys))
}

fn parse_expire(p: &[u8]) -> Option<Change<'_>> {
    let at = i64_at(p, 0)?;
    let kl = u32_at(p, 8)? as usize;
    let k = p.get(12..12usize.checked_add(kl)?)?;
    (12 + kl == p.len()).then_some(Change::Expire(k, at))
}

/// A key of `u32 klen, key` at `at`: the key and where what follows starts.
fn key_at(p: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let kl = u32_at(p, at)? as usize;
    let k = p.get(at + 4..(at + 4).checked_add(kl)?)?;
    Some((k, at + 4 + kl))
}

fn parse_hash_set(p: &[u8]) -> Option<Change<'_>> {
    let fresh = match *p.first()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let expire_ms = i64_at(p, 1)?;
    let (key, mut at) = key_at(p, 9)?;
    let n = u32_at(p, at)? as usize;
    at += 4;
    // Each field takes at least 8 bytes: a count beyond that is a lie, not an allocation.
    let mut fields = Vec::with_capacity(n.min(p.len() / 8));
    for _ in 0..n {
        let fl = u32_at(p, at)? as usize;
        let vl = u32_at(p, at + 4)? as usize;
        let f = p.get(at + 8..(at + 8).checked_add(fl)?)?;
        let v_at = at + 8 + fl;
        let v = p.get(v_at..v_at.checked_add(vl)?)?;
        fields.push((f, v));
        at = v_at + vl;
    }
    (at == p.len()).then_some(Change::HashSet { key, fresh, expire_ms, fields })
}

fn parse_list(p: &[u8]) -> Option<Change<'_>> {
    let flags = *p.first()?;
    if flags > 3 {
        return None;
    }
    let expire_ms = i64_at(p, 1)?;
    let (key, at) = key_at(p, 9)?;
    let code = *p.get(at)?;
    let at = at + 1;
    let (op, end) = match code {
        1 | 2 => {
            let n = u32_at(p, at)? as usize;
            let mut values = Vec::with_capacity(n.min(p.len() / 4));
            let mut i = at + 4;
            for _ in 0..n {
                let (v, next) = key_at(p, i)?;
                values.push(v);
                i = next;
            }
            (ListOp::Push { left: code == 1, values }, i)
        }
        3 | 4 => {
            let count = u64::from_le_bytes(p.get(at..at + 8)?.try_into().ok()?);
            (ListOp::Pop { left: code == 3, count }, at + 8)
        }
        5 => {
            let index = i64_at(p, at)?;
            let (value, end) = key_at(p, at + 8)?;
            (ListOp::Set { index, value }, end)
        }
        6 | 7 => {
            let (pivot, i) = key_at(p, at)?;
            let (value, end) = key_at(p, i)?;
            (ListOp::Insert { before: code == 6, pivot, value }, end)
        }
        8 => {
            let count = i64_at(p, at)?;
            let (value, end) = key_at(p, at + 8)?;
            (ListOp::Remove { count, value }, end)
        }
        9 => (ListOp::Trim { start: i64_at(p, at)?, stop: i64_at(p, at + 8)? }, at + 16),
        _ => return None,
    };
    let change = Change::List { key, fresh: flags & 1 != 0, gone: flags & 2 != 0, expire_ms, op };
    (end == p.len()).then_some(change)
}

fn parse_members(p: &[u8]) -> Option<Change<'_>> {
    let flags = *p.first()?;
    if flags > 3 {
        return None;
    }
    let expire_ms = i64_at(p, 1)?;
    let (key, at) = key_at(p, 9)?;
    let add = match *p.get(at)? {
        1 => true,
        2 => false,
        _ => return None,
    };
    let n = u32_at(p, at + 1)? as usize;
    let mut i = at + 5;
    let mut members = Vec::with_capacity(n.min(p.len() / 4));
    for _ in 0..n {
        let (m, next) = key_at(p, i)?;
        members.push(m);
        i = next;
    }
    let change = Change::Members { key, fresh: flags & 1 != 0, gone: flags & 2 != 0, expire_ms, add, members };
    (i == p.len()).then_some(change)
}

fn parse_scores(p: &[u8]) -> Option<Change<'_>> {
    let flags = *p.first()?;
    if flags > 3 {
        return None;
    }
    let expire_ms = i64_at(p, 1)?;
    let (key, at) = key_at(p, 9)?;
    let n = u32_at(p, at)? as usize;
    let mut i = at + 4;
    // Each scored member takes at least 12 bytes: a count beyond that is a lie.
    let mut set = Vec::with_capacity(n.min(p.len() / 12));
    for _ in 0..n {
        let (m, next) = key_at(p, i)?;
        let bits = u64::from_le_bytes(p.get(next..next + 8)?.try_into().ok()?);
        set.push((m, bits));
        i = next + 8;
    }
    let n = u32_at(p, i)? as usize;
    i += 4;
    let mut removed = Vec::with_capacity(n.min(p.len() / 4));
    for _ in 0..n {
        let (m, next) = key_at(p, i)?;
        removed.push(m);
        i = next;
    }
    let change = Change::Scores { key, fresh: flags & 1 != 0, gone: flags & 2 != 0, expire_ms, set, removed };
    (i == p.len()).then_some(change)
}

fn parse_hash_del(p: &[u8]) -> Option<Change<'_>> {
    let (key, mut at) = key_at(p, 0)?;
    let n = u32_at(p, at)? as usize;
    at += 4;
    let mut fields = Vec::with_capacity(n.min(p.len() / 4));
    for _ in 0..n {
        let (f, next) = key_at(p, at)?;
        fields.push(f);
        at = next;
    }
    (at == p.len()).then_some(Change::HashDel { key, fields })
}

/// The database of the record at the start of `b` (a whole record's header).
pub fn db_of(b: &[u8]) -> usize {
    usize::from(b.get(17).copied().unwrap_or(0))
}

/// Marks the whole record at the start of `rec` as a change in database `db` (its checksum
/// made again).
pub fn set_db(rec: &mut [u8], db: u8) {
    rec[17] = db;
    let len = u32_at(rec, 4).unwrap_or(0) as usize;
    let crc = crc32c::crc32c(&rec[4..HDR + len]);
    rec[..4].copy_from_slice(&crc.to_le_bytes());
}

/// Bytes of a Commit record.
pub const COMMIT_SIZE: usize = HDR + 24;

/// A commit's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitHead {
    /// Its first change.
    pub first: u64,
    /// Its length.
    pub len: u64,
    /// The last change of the log's previous commit.
    pub prev: u64,
}

/// The commit of generation `gen` that starts at the beginning of `b`, if a whole Commit
/// record of that generation is there.
pub fn commit_at(b: &[u8], gen: u64) -> Option<CommitHead> {
    match read(b.get(..COMMIT_SIZE)?, 24) {
        Read::Record { seq, change: Change::Commit { len, gen: g, prev }, .. } if g == gen => {
            Some(CommitHead { first: seq, len, prev })
        }
        _ => None,
    }
}

/// Pads `buf` with zeros to the next block boundary.
pub fn pad(buf: &mut Vec<u8>) {
    let to = buf.len().next_multiple_of(BLOCK);
    buf.resize(to, 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Sets, keys, and which kind of change to build of them.
    type Parts = (Vec<(Vec<u8>, Vec<u8>, i64)>, Vec<Vec<u8>>, u8);

    fn change() -> impl Strategy<Value = Parts> {
        (
            proptest::collection::vec(
                (
                    proptest::collection::vec(any::<u8>(), 0..20),
                    proptest::collection::vec(any::<u8>(), 0..300),
                    any::<i64>(),
                ),
                0..5,
            ),
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 0..5),
            0u8..14,
        )
    }

    proptest! {
        /// Records read back as written, one after another, and padding reads as padding.
        #[test]
        fn round_trip((sets, keys, k) in change(), seq in 1u64..u64::MAX) {
            let c = match k {
                0 => Change::Sets(sets.iter().map(|(a, b, e)| (&a[..], &b[..], *e)).collect()),
                1 => Change::Del(keys.iter().map(|a| &a[..]).collect()),
                2 => Change::Expire(keys.first().map_or(&b""[..], |a| &a[..]), sets.len() as i64),
                3 => Change::Commit { len: seq / 3, gen: seq / 5, prev: seq / 7 },
                4 => Change::HashSet {
                    key: keys.first().map_or(&b""[..], |a| &a[..]),
                    fresh: seq % 2 == 0,
                    expire_ms: sets.first().map_or(0, |s| s.2),
                    fields: sets.iter().map(|(a, b, _)| (&a[..], &b[..])).collect(),
                },
                6 => Change::List {
                    key: keys.first().map_or(&b"l"[..], |a| &a[..]),
                    fresh: seq % 2 == 0,
                    gone: seq % 3 == 0,
                    expire_ms: sets.len() as i64,
                    op: ListOp::Push { left: seq % 5 == 0, values: keys.iter().map(|a| &a[..]).collect() },
                },
                7 => Change::List {
                    key: b"l",
                    fresh: false,
                    gone: seq % 2 == 0,
                    expire_ms: 0,
                    op: match seq % 5 {
                        0 => ListOp::Pop { left: true, count: seq / 7 },
                        1 => ListOp::Set { index: -(seq as i64 / 9), value: keys.first().map_or(&b""[..], |a| &a[..]) },
                        2 => ListOp::Insert { before: true, pivot: b"p", value: keys.last().map_or(&b"v"[..], |a| &a[..]) },
                        3 => ListOp::Remove { count: seq as i64 / 11 - 3, value: b"x" },
                        _ => ListOp::Trim { start: seq as i64 / 13, stop: -(seq as i64 / 17) },
                    },
                },
                8 => Change::Members {
                    key: keys.first().map_or(&b"s"[..], |a| &a[..]),
                    fresh: seq % 2 == 0,
                    gone: seq % 3 == 0,
                    expire_ms: sets.len() as i64,
                    add: seq % 5 == 0,
                    members: keys.iter().map(|a| &a[..]).collect(),
                },
                9 => Change::Scores {
                    key: keys.first().map_or(&b"z"[..], |a| &a[..]),
                    fresh: seq % 2 == 0,
                    gone: seq % 3 == 0,
                    expire_ms: sets.len() as i64,
                    set: keys.iter().map(|a| (&a[..], seq.rotate_left(a.len() as u32))).collect(),
                    removed: sets.iter().map(|(a, ..)| &a[..]).collect(),
                },
                10 => Change::SwapDb((seq % 16) as u32, (seq / 16 % 16) as u32),
                11 => Change::FlushDb,
                5 => Change::HashDel {
                    key: keys.last().map_or(&b"k"[..], |a| &a[..]),
                    fields: keys.iter().map(|a| &a[..]).collect(),
                },
                _ => Change::Flush,
            };
            let mut buf = Vec::new();
            let n = encode(&mut buf, seq, &c);
            let m = encode(&mut buf, seq + 1, &Change::Flush);
            pad(&mut buf);
            prop_assert_eq!(buf.len() % BLOCK, 0);
            let first = Read::Record { seq, change: c.clone(), size: n };
            let second = Read::Record { seq: seq + 1, change: Change::Flush, size: m };
            prop_assert_eq!(read(&buf, 1 << 20), first);
            prop_assert_eq!(read(&buf[n..], 1 << 20), second);
            prop_assert_eq!(read(&buf[n + m..], 1 << 20), Read::Pad);
            // Any one flipped bit is caught.
            let bit = (seq as usize) % (n * 8);
            buf[bit / 8] ^= 1 << (bit % 8);
            let intact = matches!(read(&buf, 1 << 20), Read::Record { .. });
            prop_assert!(!intact, "a flipped bit went unnoticed");
            // A record cut short asks for the rest.
            buf[bit / 8] ^= 1 << (bit % 8);
            let short = Read::Short { need: n };
            prop_assert_eq!(read(&buf[..n - 1], 1 << 20), short);
        }
    }

    #[test]
    fn junk_is_bad_not_a_panic() {
        assert_eq!(read(&[0xff; 30], 1 << 20), Read::Bad("record length beyond any record's"));
        assert_eq!(read(&[1; 10], 1 << 20), Read::Short { need: HDR });
        let mut b = vec![0u8; 24];
        b[4] = 3;
        assert_eq!(read(&b, 1 << 20), Read::Short { need: 27 });
    }
}
