//! The blocking pops (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP) and
//! LMPOP, as Redis 7.0 answers them. A blocking command that finds something to take answers
//! as Redis does at once; one that finds nothing answers nothing and returns its deadline
//! ([`Done::block`]): the session runs it again as changes come (each batch) until it takes
//! something or the deadline passes, and holds the connection's later requests meanwhile, as
//! Redis blocks a client. What it takes is logged as the plain pop it is.

use super::lists::{self, change, lmove_generic, side};
use super::zsets;
use super::{Argv, Ctx, Done, SYNTAX, WRONGTYPE};
use crate::log::record::ListOp;
use resp::reply::{self, Sink};

/// A timeout in seconds (a float) as a deadline in Unix ms (0: none); None with the error
/// written.
fn deadline(v: &[u8], now_ms: i64, out: &mut dyn Sink) -> Option<i64> {
    let Some(secs) = resp::float::parse_f64(v) else {
        reply::error(out, b"ERR timeout is not a float or out of range");
        return None;
    };
    let ms = (secs * 1000.0) as i64;
    if ms < 0 {
        reply::error(out, b"ERR timeout is negative");
        return None;
    }
    if ms == 0 {
        return Some(0);
    }
    match now_ms.checked_add(ms) {
        Some(d) => Some(d),
        None => {
            reply::error(out, b"ERR timeout is out of range");
            None
        }
    }
}

fn blocked(at: i64) -> Done {
    Done { block: Some(at), ..Done::default() }
}

/// Pops up to `count` values from the first non-empty list of `keys`: (key, values) and the
/// change; Err(()) with WRONGTYPE written if a key before it holds another type; Ok(None)
/// if every list is empty.
#[allow(clippy::type_complexity)]
fn pop_first(
    keys: &[&[u8]],
    left: bool,
    count: usize,
    ctx: &mut Ctx<'_>,
    out: &mut dyn Sink,
) -> Result<Option<(usize, Vec<Box<[u8]>>, u64)>, u64> {
    let mut wait = 0;
    for (i, &k) in keys.iter().enumerate() {
        let mut s = ctx.ks.lock_key(k);
        wait = wait.max(s.seq_of(k));
        let values: Vec<Box<[u8]>> = match lists::find(&mut s, k, ctx.now_ms) {
            lists::Found::Missing => continue,
            lists::Found::Wrong => {
                reply::error(out, WRONGTYPE);
                return Err(wait);
            }
            lists::Found::List(l) => {
                let n = count.min(l.len());
                (0..n).map(|j| l[if left { j } else { l.len() - 1 - j }].clone()).collect()
            }
        };
        let (_, seq, _) = change(&mut s, k, ListOp::Pop { left, count: values.len() as u64 }, ctx);
        return Ok(Some((i, values, seq.max(wait))));
    }
    Ok(None)
}

fn bpop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, left: bool) -> Done {
    let Some(at) = deadline(a.get(a.len() - 1), ctx.now_ms, out) else { return Done::default() };
    let keys: Vec<&[u8]> = (1..a.len() - 1).map(|i| a.get(i)).collect();
    match pop_first(&keys, left, 1, ctx, out) {
        Ok(Some((i, values, seq))) => {
            reply::array(out, 2);
            reply::bulk(out, keys[i]);
            reply::bulk(out, &values[0]);
            Done::wait(seq)
        }
        Ok(None) => blocked(at),
        Err(wait) => Done::wait(wait),
    }
}

pub(super) fn blpop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    bpop(a, ctx, out, true)
}

pub(super) fn brpop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    bpop(a, ctx, out, false)
}

fn bmove(src: &[u8], dst: &[u8], from: bool, to: bool, at: i64, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    {
        let mut s = ctx.ks.lock_key(src);
        match lists::find(&mut s, src, ctx.now_ms) {
            lists::Found::Wrong => {
                reply::error(out, WRONGTYPE);
                return Done::wait(s.seq_of(src));
            }
            lists::Found::Missing => return blocked(at),
            lists::Found::List(_) => {}
        }
    }
    lmove_generic(src, dst, from, to, ctx, out)
}

pub(super) fn blmove(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let (Some(from), Some(to)) = (side(a.get(3)), side(a.get(4))) else {
        reply::error(out, SYNTAX);
        return Done::default();
    };
    let Some(at) = deadline(a.get(5), ctx.now_ms, out) else { return Done::default() };
    bmove(a.get(1), a.get(2), from, to, at, ctx, out)
}

pub(super) fn brpoplpush(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(at) = deadline(a.get(3), ctx.now_ms, out) else { return Done::default() };
    bmove(a.get(1), a.get(2), false, true, at, ctx, out)
}

/// A count of at least 1 (numkeys, COUNT): the error `msg` for anything else.
fn positive(v: &[u8], msg: &[u8], out: &mut dyn Sink) -> Option<usize> {
    match resp::num::parse_i64(v) {
        Some(n) if n >= 1 => Some(n as usize),
        _ => {
            reply::error(out, msg);
            None
        }
    }
}

/// LMPOP's and ZMPOP's arguments from numkeys at `at`: the keys, the side (`sides` reads it),
/// the count; None with the error written.
fn mpop_args<'a>(
    a: Argv<'a>,
    at: usize,
    sides: impl Fn(&[u8]) -> Option<bool>,
    out: &mut dyn Sink,
) -> Option<(Vec<&'a [u8]>, bool, usize)> {
    let numkeys = positive(a.get(at), b"ERR numkeys should be greater than 0", out)?;
    let where_at = at.checked_add(numkeys)?.checked_add(1)?;
    if where_at >= a.len() {
        reply::error(out, SYNTAX);
        return None;
    }
    let Some(side) = sides(a.get(where_at)) else {
        reply::error(out, SYNTAX);
        return None;
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < a.len() {
        if count.is_none() && a.get(j).eq_ignore_ascii_case(b"count") && j + 1 < a.len() {
            count = Some(positive(a.get(j + 1), b"ERR count should be greater than 0", out)?);
            j += 2;
        } else {
            reply::error(out, SYNTAX);
            return None;
        }
    }
    Some(((at + 1..where_at).map(|i| a.get(i)).collect(), side, count.unwrap_or(1)))
}

fn put_key_and_values(out: &mut dyn Sink, key: &[u8], values: &[Box<[u8]>]) {
    reply::array(out, 2);
    reply::bulk(out, key);
    reply::array(out, values.len());
    for v in values {
        reply::bulk(out, v);
    }
}

fn list_mpop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, block: bool) -> Done {
    let Some((keys, left, count)) = mpop_args(a, if block { 2 } else { 1 }, side, out) else {
        return Done::default();
    };
    let at = if block {
        match deadline(a.get(1), ctx.now_ms, out) {
            Some(at) => Some(at),
            None => return Done::default(),
        }
    } else {
        None
    };
    match pop_first(&keys, left, count, ctx, out) {
        Ok(Some((i, values, seq))) => {
            put_key_and_values(out, keys[i], &values);
            Done::wait(seq)
        }
        Ok(None) => match at {
            Some(at) => blocked(at),
            None => {
                reply::null_array(out);
                Done::wait(ctx.journal.last())
            }
        },
        Err(wait) => Done::wait(wait),
    }
}

pub(super) fn lmpop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    list_mpop(a, ctx, out, false)
}

pub(super) fn blmpop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    list_mpop(a, ctx, out, true)
}

/// Pops from the first non-empty sorted set of `keys`; writes the reply (`nested`: ZMPOP's
/// shape, else BZPOPMIN's). None if all are empty.
fn zpop_first(
    keys: &[&[u8]],
    max: bool,
    count: usize,
    nested: bool,
    ctx: &mut Ctx<'_>,
    out: &mut dyn Sink,
) -> Option<Done> {
    let mut wait = 0;
    for &k in keys {
        let mut s = ctx.ks.lock_key(k);
        wait = wait.max(s.seq_of(k));
        match zsets::find(&mut s, k, ctx.now_ms) {
            zsets::Found::Missing => continue,
            zsets::Found::Wrong => {
                reply::error(out, WRONGTYPE);
                return Some(Done::wait(wait));
            }
            zsets::Found::ZSet(_) => {}
        }
        let (popped, seq) = zsets::pop(&mut s, k, count, max, ctx);
        if nested {
            reply::array(out, 2);
            reply::bulk(out, k);
            reply::array(out, popped.len());
        } else {
            reply::array(out, popped.len() * 2 + 1);
            reply::bulk(out, k);
        }
        for (m, sc) in &popped {
            if nested {
                reply::array(out, 2);
            }
            reply::bulk(out, m);
            reply::double(out, *sc);
        }
        return Some(Done::wait(seq.max(wait)));
    }
    None
}

fn bzpop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, max: bool) -> Done {
    let Some(at) = deadline(a.get(a.len() - 1), ctx.now_ms, out) else { return Done::default() };
    let keys: Vec<&[u8]> = (1..a.len() - 1).map(|i| a.get(i)).collect();
    zpop_first(&keys, max, 1, false, ctx, out).unwrap_or_else(|| blocked(at))
}

pub(super) fn bzpopmin(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    bzpop(a, ctx, out, false)
}

pub(super) fn bzpopmax(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    bzpop(a, ctx, out, true)
}

pub(super) fn bzmpop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let minmax = |w: &[u8]| {
        if w.eq_ignore_ascii_case(b"min") {
            Some(false)
        } else if w.eq_ignore_ascii_case(b"max") {
            Some(true)
        } else {
            None
        }
    };
    let Some((keys, max, count)) = mpop_args(a, 2, minmax, out) else { return Done::default() };
    let Some(at) = deadline(a.get(1), ctx.now_ms, out) else { return Done::default() };
    zpop_first(&keys, max, count, true, ctx, out).unwrap_or_else(|| blocked(at))
}
