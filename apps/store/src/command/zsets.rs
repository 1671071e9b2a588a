//! Sorted set commands, as Redis 7.0 answers them (RESP2: scores as bulk strings of `%.17g`).
//! A change is logged as the members it gave a score and those it removed, with whether it
//! started the sorted set or emptied it; the STORE forms log the destination's whole value.

use super::{int_arg, random, store_or_remove, Argv, Ctx, Done, NOT_INT, SYNTAX, WRONGTYPE};
use crate::keyspace::{Entry, Locked, Shard, Value};
use crate::log::record::Change;
use crate::set::Set;
use crate::zset::{LexBound, LexRange, ScoreBound, ScoreRange, ZSet};
use resp::float::{parse_f64, parse_f64_lenient};
use resp::num::parse_i64;
use resp::reply::{self, Sink};

const NOT_FLOAT: &[u8] = b"ERR value is not a valid float";
const BAD_SCORE_RANGE: &[u8] = b"ERR min or max is not a float";
const BAD_LEX_RANGE: &[u8] = b"ERR min or max not valid string range item";
const NOT_POSITIVE: &[u8] = b"ERR value is out of range, must be positive";

/// What a key holds, for a sorted set command.
pub(super) enum Found<'a> {
    ZSet(&'a mut ZSet),
    Missing,
    Wrong,
}

pub(super) fn find<'s>(s: &'s mut Shard, key: &[u8], now_ms: i64) -> Found<'s> {
    match s.live(key, now_ms) {
        Some(Entry { value: Value::ZSet(z), .. }) => Found::ZSet(z),
        Some(_) => Found::Wrong,
        None => Found::Missing,
    }
}

/// Members with their scores, owned.
pub(super) type Scored = Vec<(Box<[u8]>, f64)>;

/// What a write did to a sorted set: members given scores, members removed.
#[derive(Default)]
struct Delta {
    set: Scored,
    removed: Vec<Box<[u8]>>,
}

impl Delta {
    fn is_empty(&self) -> bool {
        self.set.is_empty() && self.removed.is_empty()
    }
}

/// Runs `f` on the sorted set at `key` (which holds one, or nothing: then an empty one is
/// made for `f`), logs what `f` says it changed, and removes the key if it is left empty.
/// Returns what `f` returned and the change a reply waits for.
fn write<R>(s: &mut Shard, key: &[u8], ctx: &mut Ctx<'_>, f: impl FnOnce(&mut ZSet, &mut Delta) -> R) -> (R, u64) {
    let fresh = !matches!(s.live(key, ctx.now_ms), Some(Entry { value: Value::ZSet(_), .. }));
    if fresh {
        s.map.insert(key.into(), Entry { value: Value::ZSet(ZSet::default()), expire_ms: 0, seq: 0 });
    }
    let e = s.map.get_mut(key).expect("a sorted set now");
    let Value::ZSet(z) = &mut e.value else { unreachable!("a sorted set") };
    let mut delta = Delta::default();
    let r = f(z, &mut delta);
    let gone = z.is_empty();
    if delta.is_empty() {
        if fresh {
            s.map.remove(key);
        }
        return (r, s.seq_of(key));
    }
    let set = delta.set.iter().map(|(m, sc)| (&**m, sc.to_bits())).collect();
    let removed = delta.removed.iter().map(|m| &**m).collect();
    let seq = ctx.journal.record(&Change::Scores { key, fresh, gone, expire_ms: 0, set, removed });
    e.seq = seq;
    if gone {
        s.map.remove(key);
        s.removed_seq = seq;
    }
    (r, seq)
}

/// A read of the sorted set at `key`: `f` answers from it (None: no such key).
fn read(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, f: impl FnOnce(Option<&ZSet>, &mut dyn Sink)) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match find(&mut s, key, ctx.now_ms) {
        Found::ZSet(z) => f(Some(z), out),
        Found::Missing => f(None, out),
        Found::Wrong => reply::error(out, WRONGTYPE),
    }
    Done::wait(s.seq_of(key))
}

/// `(member, score)` pairs as RESP2 answers them: flat, the score after its member when
/// `scores`.
fn put_pairs(out: &mut dyn Sink, items: &[(&[u8], f64)], scores: bool) {
    if scores {
        // Flat in RESP2, a pair each in RESP3.
        reply::pairs(out, items.len());
    } else {
        reply::array(out, items.len());
    }
    for &(m, s) in items {
        if scores {
            reply::pair(out);
        }
        reply::bulk(out, m);
        if scores {
            reply::double(out, s);
        }
    }
}

#[derive(Clone, Copy, Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// ZADD and ZINCRBY (`incr`).
fn add(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, incr: bool) -> Done {
    let mut f = AddFlags { incr, ..AddFlags::default() };
    let mut at = 2;
    while at < a.len() {
        let o = a.get(at);
        let flag = match () {
            _ if o.eq_ignore_ascii_case(b"nx") => &mut f.nx,
            _ if o.eq_ignore_ascii_case(b"xx") => &mut f.xx,
            _ if o.eq_ignore_ascii_case(b"ch") => &mut f.ch,
            _ if o.eq_ignore_ascii_case(b"incr") => &mut f.incr,
            _ if o.eq_ignore_ascii_case(b"gt") => &mut f.gt,
            _ if o.eq_ignore_ascii_case(b"lt") => &mut f.lt,
            _ => break,
        };
        *flag = true;
        at += 1;
    }
    let elements = a.len() - at;
    if elements % 2 == 1 || elements == 0 {
        reply::error(out, SYNTAX);
        return Done::default();
    }
    if f.nx && f.xx {
        reply::error(out, b"ERR XX and NX options at the same time are not compatible");
        return Done::default();
    }
    if ((f.gt || f.lt) && f.nx) || (f.gt && f.lt) {
        reply::error(out, b"ERR GT, LT, and/or NX options at the same time are not compatible");
        return Done::default();
    }
    if f.incr && elements > 2 {
        reply::error(out, b"ERR INCR option supports a single increment-element pair");
        return Done::default();
    }
    let mut pairs = Vec::with_capacity(elements / 2);
    for i in (at..a.len()).step_by(2) {
        let Some(score) = parse_f64(a.get(i)) else {
            reply::error(out, NOT_FLOAT);
            return Done::default();
        };
        pairs.push((score, a.get(i + 1)));
    }
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match find(&mut s, key, ctx.now_ms) {
        Found::Wrong => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
        Found::Missing if f.xx => {
            if f.incr {
                reply::null(out);
            } else {
                reply::int(out, 0);
            }
            return Done::wait(s.seq_of(key));
        }
        _ => {}
    }
    let ((added, updated, last, nan), wait) = write(&mut s, key, ctx, |z, delta| {
        let (mut added, mut updated, mut last) = (0, 0, None);
        for &(score, m) in &pairs {
            match z.score(m) {
                Some(_) if f.nx => {}
                Some(cur) => {
                    let new = if f.incr { score + cur } else { score };
                    if new.is_nan() {
                        return (added, updated, last, true);
                    }
                    if (f.lt && new >= cur) || (f.gt && new <= cur) {
                        continue;
                    }
                    last = Some(new);
                    if new != cur {
                        z.insert(m, new);
                        delta.set.push((m.into(), new));
                        updated += 1;
                    }
                }
                None if f.xx => {}
                None => {
                    z.insert(m, score);
                    delta.set.push((m.into(), score));
                    last = Some(score);
                    added += 1;
                }
            }
        }
        (added, updated, last, false)
    });
    if nan {
        reply::error(out, b"ERR resulting score is not a number (NaN)");
    } else if f.incr {
        match last {
            Some(sc) => reply::double(out, sc),
            None => reply::null(out),
        }
    } else {
        reply::int(out, if f.ch { added + updated } else { added });
    }
    Done::wait(wait)
}

pub(super) fn zadd(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    add(a, ctx, out, false)
}

pub(super) fn zincrby(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    add(a, ctx, out, true)
}

/// For a removal, which answers 0 on a missing key: the answer (0 or WRONGTYPE) unless `key`
/// holds a sorted set.
fn zero_unless_zset(s: &mut Shard, key: &[u8], now_ms: i64, out: &mut dyn Sink) -> Option<Done> {
    match find(s, key, now_ms) {
        Found::ZSet(_) => return None,
        Found::Missing => reply::int(out, 0),
        Found::Wrong => reply::error(out, WRONGTYPE),
    }
    Some(Done::wait(s.seq_of(key)))
}

pub(super) fn zrem(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    if let Some(done) = zero_unless_zset(&mut s, key, ctx.now_ms, out) {
        return done;
    }
    let (n, wait) = write(&mut s, key, ctx, |z, delta| {
        for i in 2..a.len() {
            if z.remove(a.get(i)).is_some() {
                delta.removed.push(a.get(i).into());
            }
            if z.is_empty() {
                break;
            }
        }
        delta.removed.len()
    });
    reply::int(out, n as i64);
    Done::wait(wait)
}

pub(super) fn zcard(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    read(a, ctx, out, |z, out| reply::int(out, z.map_or(0, ZSet::len) as i64))
}

pub(super) fn zscore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let m = a.get(2);
    read(a, ctx, out, |z, out| match z.and_then(|z| z.score(m)) {
        Some(sc) => reply::double(out, sc),
        None => reply::null(out),
    })
}

pub(super) fn zmscore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    read(a, ctx, out, |z, out| {
        reply::array(out, a.len() - 2);
        for i in 2..a.len() {
            match z.and_then(|z| z.score(a.get(i))) {
                Some(sc) => reply::double(out, sc),
                None => reply::null(out),
            }
        }
    })
}

fn rank(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, rev: bool) -> Done {
    let m = a.get(2);
    read(a, ctx, out, |z, out| match z.and_then(|z| z.rank(m, rev)) {
        Some(r) => reply::int(out, r as i64),
        None => reply::null(out),
    })
}

pub(super) fn zrank(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    rank(a, ctx, out, false)
}

pub(super) fn zrevrank(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    rank(a, ctx, out, true)
}

/// A score range from its two bounds, `(` marking an open one.
fn score_range(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
    let bound = |b: &[u8]| match b.strip_prefix(b"(") {
        Some(rest) => parse_f64_lenient(rest).map(|at| ScoreBound { at, open: true }),
        None => parse_f64_lenient(b).map(|at| ScoreBound { at, open: false }),
    };
    Some(ScoreRange { min: bound(min)?, max: bound(max)? })
}

fn lex_range(min: &[u8], max: &[u8]) -> Option<LexRange> {
    Some(LexRange { min: LexBound::parse(min)?, max: LexBound::parse(max)? })
}

/// What a range command selects by.
enum By {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// A range request: ZRANGE's arguments and options.
struct Range {
    by: By,
    rev: bool,
    /// LIMIT's offset and count (a negative count: no limit).
    limit: (i64, i64),
    scores: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Auto,
    Rank,
    Score,
    Lex,
}

/// Reads a range request whose key is argument `at` (Redis's `zrangeGenericCommand`):
/// `kind` and `rev` given by the command's name, or chosen by its options (`Auto`, None).
fn parse_range(
    a: Argv<'_>,
    at: usize,
    store: bool,
    kind: Kind,
    rev: Option<bool>,
    out: &mut dyn Sink,
) -> Option<Range> {
    let (mut kind, mut dir) = (kind, rev);
    let (mut scores, mut limit) = (false, None);
    let mut j = at + 3;
    while j < a.len() {
        let o = a.get(j);
        let left = a.len() - j - 1;
        if !store && o.eq_ignore_ascii_case(b"withscores") {
            scores = true;
        } else if o.eq_ignore_ascii_case(b"limit") && left >= 2 {
            let offset = int_arg(a.get(j + 1), out)?;
            let count = int_arg(a.get(j + 2), out)?;
            limit = Some((offset, count));
            j += 2;
        } else if dir.is_none() && o.eq_ignore_ascii_case(b"rev") {
            dir = Some(true);
        } else if kind == Kind::Auto && o.eq_ignore_ascii_case(b"bylex") {
            kind = Kind::Lex;
        } else if kind == Kind::Auto && o.eq_ignore_ascii_case(b"byscore") {
            kind = Kind::Score;
        } else {
            reply::error(out, SYNTAX);
            return None;
        }
        j += 1;
    }
    let rev = dir.unwrap_or(false);
    if kind == Kind::Auto {
        kind = Kind::Rank;
    }
    if limit.is_some() && kind == Kind::Rank {
        reply::error(out, b"ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
        return None;
    }
    if scores && kind == Kind::Lex {
        reply::error(out, b"ERR syntax error, WITHSCORES not supported in combination with BYLEX");
        return None;
    }
    let (mut lo, mut hi) = (a.get(at + 1), a.get(at + 2));
    if rev && kind != Kind::Rank {
        // The range is given as max, min.
        std::mem::swap(&mut lo, &mut hi);
    }
    let by = match kind {
        Kind::Score => match score_range(lo, hi) {
            Some(r) => By::Score(r),
            None => {
                reply::error(out, BAD_SCORE_RANGE);
                return None;
            }
        },
        Kind::Lex => match lex_range(lo, hi) {
            Some(r) => By::Lex(r),
            None => {
                reply::error(out, BAD_LEX_RANGE);
                return None;
            }
        },
        _ => By::Rank(int_arg(lo, out)?, int_arg(hi, out)?),
    };
    Some(Range { by, rev, limit: limit.unwrap_or((0, -1)), scores })
}

/// Ranks `start..=end` of `len` (negatives from the end) as Redis clamps them: None if empty.
fn rank_span(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return None;
    }
    Some((start as usize, end.min(len - 1) as usize))
}

/// The members `r` selects from `z`, in its order.
fn select<'z>(z: &'z ZSet, r: &'z Range) -> Vec<(&'z [u8], f64)> {
    let (offset, count) = r.limit;
    let page = |it: Box<dyn Iterator<Item = (&'z [u8], f64)> + 'z>| -> Vec<(&'z [u8], f64)> {
        // A negative offset walks past the end, as Redis's `while (offset--)` does.
        if offset < 0 || (offset > 0 && offset as usize >= z.len()) {
            return Vec::new();
        }
        let it = it.skip(offset as usize);
        if count < 0 {
            it.collect()
        } else {
            it.take(count as usize).collect()
        }
    };
    match &r.by {
        By::Rank(start, end) => match rank_span(*start, *end, z.len()) {
            None => Vec::new(),
            Some((s, e)) if r.rev => z.iter().rev().skip(s).take(e - s + 1).collect(),
            Some((s, e)) => z.iter().skip(s).take(e - s + 1).collect(),
        },
        By::Score(range) => {
            let range = *range;
            if r.rev {
                page(Box::new(z.to_score(range.max).take_while(move |&(_, s)| range.above_min(s))))
            } else {
                page(Box::new(z.from_score(range.min).take_while(move |&(_, s)| range.below_max(s))))
            }
        }
        By::Lex(range) => {
            if range.empty() {
                return Vec::new();
            }
            if r.rev {
                page(Box::new(
                    z.iter().rev().skip_while(|&(m, _)| !range.below_max(m)).take_while(|&(m, _)| range.above_min(m)),
                ))
            } else {
                page(Box::new(
                    z.iter().skip_while(|&(m, _)| !range.above_min(m)).take_while(|&(m, _)| range.below_max(m)),
                ))
            }
        }
    }
}

fn range_cmd(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, kind: Kind, rev: Option<bool>) -> Done {
    let Some(r) = parse_range(a, 1, false, kind, rev, out) else { return Done::default() };
    read(a, ctx, out, |z, out| match z {
        Some(z) => put_pairs(out, &select(z, &r), r.scores),
        None => reply::array(out, 0),
    })
}

pub(super) fn zrange(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    range_cmd(a, ctx, out, Kind::Auto, None)
}

pub(super) fn zrevrange(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    range_cmd(a, ctx, out, Kind::Rank, Some(true))
}

pub(super) fn zrangebyscore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    range_cmd(a, ctx, out, Kind::Score, Some(false))
}

pub(super) fn zrevrangebyscore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    range_cmd(a, ctx, out, Kind::Score, Some(true))
}

pub(super) fn zrangebylex(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    range_cmd(a, ctx, out, Kind::Lex, Some(false))
}

pub(super) fn zrevrangebylex(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    range_cmd(a, ctx, out, Kind::Lex, Some(true))
}

pub(super) fn zrangestore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(r) = parse_range(a, 2, true, Kind::Auto, None, out) else { return Done::default() };
    let (dst, src) = (a.get(1), a.get(2));
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of([src, dst].into_iter()));
    let ss = locked.shard(ctx.ks.shard_of(src));
    let wait = ss.seq_of(src);
    let result = match find(ss, src, ctx.now_ms) {
        Found::ZSet(z) => {
            let mut made = ZSet::default();
            for (m, sc) in select(z, &r) {
                made.insert(m, sc);
            }
            made
        }
        Found::Missing => ZSet::default(),
        Found::Wrong => {
            reply::error(out, WRONGTYPE);
            return Done::wait(wait);
        }
    };
    let n = result.len();
    let value = (n > 0).then_some(Value::ZSet(result));
    let seq = store_or_remove(locked.shard(ctx.ks.shard_of(dst)), dst, value, ctx);
    reply::int(out, n as i64);
    Done::wait(seq.max(wait))
}

pub(super) fn zcount(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(range) = score_range(a.get(2), a.get(3)) else {
        reply::error(out, BAD_SCORE_RANGE);
        return Done::default();
    };
    read(a, ctx, out, |z, out| {
        let n = z.map_or(0, |z| z.from_score(range.min).take_while(|&(_, s)| range.below_max(s)).count());
        reply::int(out, n as i64)
    })
}

pub(super) fn zlexcount(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(range) = lex_range(a.get(2), a.get(3)) else {
        reply::error(out, BAD_LEX_RANGE);
        return Done::default();
    };
    let r = Range { by: By::Lex(range), rev: false, limit: (0, -1), scores: false };
    read(a, ctx, out, |z, out| reply::int(out, z.map_or(0, |z| select(z, &r).len()) as i64))
}

fn remrange(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, kind: Kind) -> Done {
    let (lo, hi) = (a.get(2), a.get(3));
    let by = match kind {
        Kind::Rank => match (parse_i64(lo), parse_i64(hi)) {
            (Some(s), Some(e)) => By::Rank(s, e),
            _ => {
                reply::error(out, NOT_INT);
                return Done::default();
            }
        },
        Kind::Score => match score_range(lo, hi) {
            Some(r) => By::Score(r),
            None => {
                reply::error(out, BAD_SCORE_RANGE);
                return Done::default();
            }
        },
        _ => match lex_range(lo, hi) {
            Some(r) => By::Lex(r),
            None => {
                reply::error(out, BAD_LEX_RANGE);
                return Done::default();
            }
        },
    };
    let r = Range { by, rev: false, limit: (0, -1), scores: false };
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    if let Some(done) = zero_unless_zset(&mut s, key, ctx.now_ms, out) {
        return done;
    }
    let (n, wait) = write(&mut s, key, ctx, |z, delta| {
        let gone: Vec<Box<[u8]>> = select(z, &r).into_iter().map(|(m, _)| Box::from(m)).collect();
        for m in &gone {
            z.remove(m);
        }
        delta.removed = gone;
        delta.removed.len()
    });
    reply::int(out, n as i64);
    Done::wait(wait)
}

pub(super) fn zremrangebyrank(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    remrange(a, ctx, out, Kind::Rank)
}

pub(super) fn zremrangebyscore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    remrange(a, ctx, out, Kind::Score)
}

pub(super) fn zremrangebylex(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    remrange(a, ctx, out, Kind::Lex)
}

/// Pops `count` members from the low (or high, `max`) end of the sorted set at `key`, which
/// holds one; returns them with their scores, and the change.
pub(super) fn pop(s: &mut Shard, key: &[u8], count: usize, max: bool, ctx: &mut Ctx<'_>) -> (Scored, u64) {
    write(s, key, ctx, |z, delta| {
        let picked: Scored = if max {
            z.iter().rev().take(count).map(|(m, sc)| (Box::from(m), sc)).collect()
        } else {
            z.iter().take(count).map(|(m, sc)| (Box::from(m), sc)).collect()
        };
        for (m, _) in &picked {
            z.remove(m);
            delta.removed.push(m.clone());
        }
        picked
    })
}

fn popminmax(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, max: bool) -> Done {
    if a.len() > 3 {
        reply::error(out, SYNTAX);
        return Done::default();
    }
    let count = if a.len() == 3 {
        match parse_i64(a.get(2)) {
            Some(n) if n >= 0 => n as usize,
            _ => {
                reply::error(out, NOT_POSITIVE);
                return Done::default();
            }
        }
    } else {
        1
    };
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match find(&mut s, key, ctx.now_ms) {
        Found::ZSet(_) if count > 0 => {}
        Found::Wrong => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
        _ => {
            reply::array(out, 0);
            return Done::wait(s.seq_of(key));
        }
    }
    let (popped, wait) = pop(&mut s, key, count, max, ctx);
    let items: Vec<(&[u8], f64)> = popped.iter().map(|(m, sc)| (&**m, *sc)).collect();
    if a.len() == 3 {
        put_pairs(out, &items, true);
    } else {
        // Without a count: member and score flat, in RESP3 too.
        reply::array(out, 2);
        reply::bulk(out, items[0].0);
        reply::double(out, items[0].1);
    }
    Done::wait(wait)
}

pub(super) fn zpopmin(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    popminmax(a, ctx, out, false)
}

pub(super) fn zpopmax(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    popminmax(a, ctx, out, true)
}

/// A positive count as ZMPOP reads numkeys and COUNT: the error `msg` for anything else.
fn positive(v: &[u8], msg: &[u8], out: &mut dyn Sink) -> Option<usize> {
    match parse_i64(v) {
        Some(n) if n >= 1 => Some(n as usize),
        _ => {
            reply::error(out, msg);
            None
        }
    }
}

pub(super) fn zmpop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(numkeys) = positive(a.get(1), b"ERR numkeys should be greater than 0", out) else {
        return Done::default();
    };
    let where_at = 2 + numkeys;
    if where_at >= a.len() {
        reply::error(out, SYNTAX);
        return Done::default();
    }
    let max = match a.get(where_at) {
        w if w.eq_ignore_ascii_case(b"min") => false,
        w if w.eq_ignore_ascii_case(b"max") => true,
        _ => {
            reply::error(out, SYNTAX);
            return Done::default();
        }
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < a.len() {
        if count.is_none() && a.get(j).eq_ignore_ascii_case(b"count") && j + 1 < a.len() {
            count = Some(positive(a.get(j + 1), b"ERR count should be greater than 0", out));
            if count == Some(None) {
                return Done::default();
            }
            j += 2;
        } else {
            reply::error(out, SYNTAX);
            return Done::default();
        }
    }
    let count = count.flatten().unwrap_or(1);
    let keys: Vec<&[u8]> = (2..where_at).map(|i| a.get(i)).collect();
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of(keys.iter().copied()));
    let mut wait = 0;
    for &k in &keys {
        let s = locked.shard(ctx.ks.shard_of(k));
        wait = wait.max(s.seq_of(k));
        match find(s, k, ctx.now_ms) {
            Found::Missing => continue,
            Found::Wrong => {
                reply::error(out, WRONGTYPE);
                return Done::wait(wait);
            }
            Found::ZSet(_) => {}
        }
        let (popped, seq) = pop(s, k, count, max, ctx);
        reply::array(out, 2);
        reply::bulk(out, k);
        reply::array(out, popped.len());
        for (m, sc) in &popped {
            reply::array(out, 2);
            reply::bulk(out, m);
            reply::double(out, *sc);
        }
        return Done::wait(wait.max(seq));
    }
    reply::null_array(out);
    Done::wait(wait)
}

pub(super) fn zrandmember(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let mut count = None;
    let mut scores = false;
    if a.len() >= 3 {
        let Some(n) = int_arg(a.get(2), out) else { return Done::default() };
        if n == i64::MIN {
            reply::error(
                out,
                b"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            );
            return Done::default();
        }
        if a.len() > 4 || (a.len() == 4 && !a.get(3).eq_ignore_ascii_case(b"withscores")) {
            reply::error(out, SYNTAX);
            return Done::default();
        }
        if a.len() == 4 {
            scores = true;
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&n) {
                reply::error(out, b"ERR value is out of range");
                return Done::default();
            }
        }
        count = Some(n);
    }
    read(a, ctx, out, |z, out| {
        let all: Vec<(&[u8], f64)> = z.map(|z| z.iter().collect()).unwrap_or_default();
        match count {
            None if all.is_empty() => reply::null(out),
            None => reply::bulk(out, all[random() as usize % all.len()].0),
            Some(0) => reply::array(out, 0),
            Some(_) if all.is_empty() => reply::array(out, 0),
            Some(n) if n < 0 => {
                // Repeats allowed: exactly |count| picks.
                let picks: Vec<(&[u8], f64)> =
                    (0..n.unsigned_abs()).map(|_| all[random() as usize % all.len()]).collect();
                put_pairs(out, &picks, scores);
            }
            Some(n) => {
                let mut all = all;
                let n = (n as usize).min(all.len());
                if n < all.len() {
                    for i in 0..n {
                        let j = i + random() as usize % (all.len() - i);
                        all.swap(i, j);
                    }
                    all.truncate(n);
                }
                put_pairs(out, &all, scores);
            }
        }
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Algebra {
    Inter,
    Union,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

fn aggregate(target: &mut f64, v: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += v;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => *target = if v < *target { v } else { *target },
        Aggregate::Max => *target = if v > *target { v } else { *target },
    }
}

/// An input of ZUNION and friends: a sorted set, a set (every member scored 1), or nothing.
enum Source {
    ZSet(ZSet),
    Set(Set),
    None,
}

impl Source {
    fn len(&self) -> usize {
        match self {
            Source::ZSet(z) => z.len(),
            Source::Set(s) => s.len(),
            Source::None => 0,
        }
    }

    fn members(&self) -> Scored {
        match self {
            Source::ZSet(z) => z.iter().map(|(m, s)| (Box::from(m), s)).collect(),
            Source::Set(s) => s.members().into_iter().map(|m| (m, 1.0)).collect(),
            Source::None => Vec::new(),
        }
    }

    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Source::ZSet(z) => z.score(m),
            Source::Set(s) => s.contains(m).then_some(1.0),
            Source::None => None,
        }
    }
}

/// ZUNION, ZINTER, ZDIFF, ZINTERCARD and the STORE forms (`dst`): numkeys at argument
/// `at`.
fn algebra(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, how: Algebra, dst: Option<&[u8]>, card: bool) -> Done {
    let at = if dst.is_some() { 2 } else { 1 };
    let Some(n) = int_arg(a.get(at), out) else { return Done::default() };
    if n < 1 {
        let name = String::from_utf8_lossy(a.get(0)).to_ascii_lowercase();
        reply::error(out, format!("ERR at least 1 input key is needed for '{name}' command").as_bytes());
        return Done::default();
    }
    if n as u64 > (a.len() - at - 1) as u64 {
        reply::error(out, SYNTAX);
        return Done::default();
    }
    let n = n as usize;
    let keys: Vec<&[u8]> = (at + 1..at + 1 + n).map(|i| a.get(i)).collect();
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of(keys.iter().copied().chain(dst)));
    let Ok((mut sources, wait)) = sources(&mut locked, &keys, ctx) else {
        reply::error(out, WRONGTYPE);
        return Done::default();
    };
    let mut weights = vec![1.0; n];
    let mut how_agg = Aggregate::Sum;
    let (mut scores, mut limit) = (false, 0usize);
    let mut j = at + 1 + n;
    while j < a.len() {
        let o = a.get(j);
        let left = a.len() - j;
        if how != Algebra::Diff && !card && left > n && o.eq_ignore_ascii_case(b"weights") {
            for (i, w) in weights.iter_mut().enumerate() {
                match parse_f64(a.get(j + 1 + i)) {
                    Some(v) => *w = v,
                    None => {
                        reply::error(out, b"ERR weight value is not a float");
                        return Done::default();
                    }
                }
            }
            j += 1 + n;
        } else if how != Algebra::Diff && !card && left >= 2 && o.eq_ignore_ascii_case(b"aggregate") {
            how_agg = match a.get(j + 1) {
                v if v.eq_ignore_ascii_case(b"sum") => Aggregate::Sum,
                v if v.eq_ignore_ascii_case(b"min") => Aggregate::Min,
                v if v.eq_ignore_ascii_case(b"max") => Aggregate::Max,
                _ => {
                    reply::error(out, SYNTAX);
                    return Done::default();
                }
            };
            j += 2;
        } else if dst.is_none() && !card && o.eq_ignore_ascii_case(b"withscores") {
            scores = true;
            j += 1;
        } else if card && left >= 2 && o.eq_ignore_ascii_case(b"limit") {
            match parse_i64(a.get(j + 1)) {
                Some(l) if l >= 0 => limit = l as usize,
                _ => {
                    reply::error(out, b"ERR LIMIT can't be negative");
                    return Done::default();
                }
            }
            j += 2;
        } else {
            reply::error(out, SYNTAX);
            return Done::default();
        }
    }
    let mut inputs: Vec<(Source, f64)> = sources.drain(..).zip(weights).collect();
    if how != Algebra::Diff {
        // Smallest first, as Redis orders them (which also fixes the order of the sums).
        inputs.sort_by_key(|(s, _)| s.len());
    }
    let mut result = ZSet::default();
    let mut found = 0usize;
    match how {
        Algebra::Inter => {
            if inputs[0].0.len() > 0 {
                for (m, s0) in inputs[0].0.members() {
                    let mut score = inputs[0].1 * s0;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    let mut all = true;
                    for (src, w) in &inputs[1..] {
                        match src.score(&m) {
                            Some(v) => aggregate(&mut score, v * w, how_agg),
                            None => {
                                all = false;
                                break;
                            }
                        }
                    }
                    if !all {
                        continue;
                    }
                    if card {
                        found += 1;
                        if limit > 0 && found >= limit {
                            break;
                        }
                    } else {
                        result.insert(&m, score);
                    }
                }
            }
        }
        Algebra::Union => {
            let mut acc: std::collections::HashMap<Box<[u8]>, f64> = std::collections::HashMap::new();
            for (src, w) in &inputs {
                for (m, s) in src.members() {
                    let mut score = w * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get_mut(&m) {
                        Some(t) => aggregate(t, score, how_agg),
                        None => {
                            acc.insert(m, score);
                        }
                    }
                }
            }
            for (m, s) in acc {
                result.insert(&m, s);
            }
        }
        Algebra::Diff => {
            for (m, s) in inputs[0].0.members() {
                if !inputs[1..].iter().any(|(src, _)| src.score(&m).is_some()) {
                    result.insert(&m, s);
                }
            }
        }
    }
    if card {
        reply::int(out, found as i64);
        return Done::wait(wait);
    }
    let Some(dst) = dst else {
        let items: Vec<(&[u8], f64)> = result.iter().collect();
        put_pairs(out, &items, scores);
        return Done::wait(wait);
    };
    let len = result.len();
    let value = (len > 0).then_some(Value::ZSet(result));
    let seq = store_or_remove(locked.shard(ctx.ks.shard_of(dst)), dst, value, ctx);
    reply::int(out, len as i64);
    Done::wait(seq.max(wait))
}

/// The inputs at `keys` (copied: one key may be named twice), or Err on a key of another
/// type; and the highest change they show.
fn sources(locked: &mut Locked<'_>, keys: &[&[u8]], ctx: &Ctx<'_>) -> Result<(Vec<Source>, u64), ()> {
    let mut out = Vec::with_capacity(keys.len());
    let mut wait = 0;
    for &k in keys {
        let s = locked.shard(ctx.ks.shard_of(k));
        wait = wait.max(s.seq_of(k));
        out.push(match s.live(k, ctx.now_ms).map(|e| &e.value) {
            Some(Value::ZSet(z)) => Source::ZSet(z.clone()),
            Some(Value::Set(set)) => Source::Set(set.clone()),
            Some(_) => return Err(()),
            None => Source::None,
        });
    }
    Ok((out, wait))
}

pub(super) fn zunionstore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra(a, ctx, out, Algebra::Union, Some(a.get(1)), false)
}

pub(super) fn zinterstore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra(a, ctx, out, Algebra::Inter, Some(a.get(1)), false)
}

pub(super) fn zdiffstore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra(a, ctx, out, Algebra::Diff, Some(a.get(1)), false)
}

pub(super) fn zunion(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra(a, ctx, out, Algebra::Union, None, false)
}

pub(super) fn zinter(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra(a, ctx, out, Algebra::Inter, None, false)
}

pub(super) fn zdiff(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra(a, ctx, out, Algebra::Diff, None, false)
}

pub(super) fn zintercard(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra(a, ctx, out, Algebra::Inter, None, true)
}
