//! KEYS, SCAN and RANDOMKEY: the keyspace walked a shard at a time (one lock held for one
//! shard, never the whole keyspace). SCAN's cursor is the next shard: each call returns every
//! matching key of one shard (COUNT is a hint, as in Redis, which also returns a small
//! encoding whole), so a key present from the first call to the last is returned exactly once.

use super::{glob, random, Argv, Ctx, Done, SYNTAX, WRONGTYPE};
use crate::keyspace::Value;
use resp::reply::{self, Sink};

/// The live keys of shard `i` that match `pattern` (and are of `type_name`, if given).
fn shard_keys(ctx: &Ctx<'_>, i: usize, pattern: Option<&[u8]>, type_name: Option<&[u8]>) -> Vec<Box<[u8]>> {
    let s = ctx.ks.lock(i);
    s.map
        .iter()
        .filter(|(k, e)| {
            !e.expired(ctx.now_ms)
                && pattern.is_none_or(|p| glob::matches(p, k, false))
                && type_name.is_none_or(|t| t.eq_ignore_ascii_case(e.value.type_name().as_bytes()))
        })
        .map(|(k, _)| k.clone())
        .collect()
}

pub(super) fn keys(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let pattern = a.get(1);
    let all = pattern == b"*";
    let mut found = Vec::new();
    for i in 0..ctx.ks.shards() {
        found.extend(shard_keys(ctx, i, (!all).then_some(pattern), None));
    }
    reply::array(out, found.len());
    for k in &found {
        reply::bulk(out, k);
    }
    Done::wait(ctx.journal.last())
}

/// A pattern and a type name a scan filters by.
type Filter<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// The scan options from argument `from` on: (MATCH pattern, TYPE name), or the error
/// written. TYPE only where `with_type` (SCAN; HSCAN and SSCAN refuse it, as Redis does).
fn options<'a>(a: Argv<'a>, from: usize, with_type: bool, out: &mut dyn Sink) -> Result<Filter<'a>, ()> {
    let (mut pattern, mut type_name) = (None, None);
    let mut j = from;
    while j < a.len() {
        let (o, has_arg) = (a.get(j), j + 1 < a.len());
        if o.eq_ignore_ascii_case(b"count") && has_arg {
            match resp::num::parse_i64(a.get(j + 1)) {
                Some(n) if n >= 1 => {}
                Some(_) => {
                    reply::error(out, SYNTAX);
                    return Err(());
                }
                None => {
                    reply::error(out, super::NOT_INT);
                    return Err(());
                }
            }
        } else if o.eq_ignore_ascii_case(b"match") && has_arg {
            let p = a.get(j + 1);
            pattern = (p != b"*").then_some(p);
        } else if with_type && o.eq_ignore_ascii_case(b"type") && has_arg {
            type_name = Some(a.get(j + 1));
        } else {
            reply::error(out, SYNTAX);
            return Err(());
        }
        j += 2;
    }
    Ok((pattern, type_name))
}

/// A cursor as C's strtoul reads it (Redis's parser): a leading minus wraps around.
fn cursor(c: &[u8], out: &mut dyn Sink) -> Option<u64> {
    let text = std::str::from_utf8(c).ok();
    let cursor = text.and_then(|c| match c.strip_prefix('-') {
        Some(rest) => rest.parse::<u64>().ok().map(u64::wrapping_neg),
        None => c.parse::<u64>().ok(),
    });
    if cursor.is_none() {
        reply::error(out, b"ERR invalid cursor");
    }
    cursor
}

pub(super) fn scan(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(cursor) = cursor(a.get(1), out) else { return Done::default() };
    let Ok((pattern, type_name)) = options(a, 2, true, out) else { return Done::default() };
    let shard = cursor as usize;
    let found = if shard < ctx.ks.shards() { shard_keys(ctx, shard, pattern, type_name) } else { Vec::new() };
    let next = if shard + 1 < ctx.ks.shards() { shard as u64 + 1 } else { 0 };
    reply::array(out, 2);
    reply::bulk(out, next.to_string().as_bytes());
    reply::array(out, found.len());
    for k in &found {
        reply::bulk(out, k);
    }
    Done::wait(ctx.journal.last())
}

/// HSCAN, SSCAN and ZSCAN: every matching element in one reply, with cursor 0 — as Redis
/// answers for a small value, and allowed for any (COUNT is a hint; each element comes once).
fn scan_value(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    if cursor(a.get(2), out).is_none() {
        return Done::default();
    }
    let Ok((pattern, _)) = options(a, 3, false, out) else { return Done::default() };
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    let hits = |m: &[u8]| pattern.is_none_or(|p| glob::matches(p, m, false));
    let mut items: Vec<Box<[u8]>> = Vec::new();
    let name = a.get(0);
    let (want_hash, want_zset) = (name.eq_ignore_ascii_case(b"hscan"), name.eq_ignore_ascii_case(b"zscan"));
    match s.live(key, ctx.now_ms).map(|e| &e.value) {
        Some(Value::ZSet(z)) if want_zset => {
            for (m, sc) in z.iter().filter(|(m, _)| hits(m)) {
                items.push(m.into());
                // As a small sorted set stores it: Redis's d2string.
                let mut text = Vec::new();
                resp::float::format_d2string(sc, &mut text);
                items.push(text.into());
            }
        }
        Some(Value::Hash(h)) if want_hash => {
            for (f, v) in h.iter().filter(|(f, _)| hits(f)) {
                items.push(f.into());
                items.push(v.into());
            }
        }
        Some(Value::Set(set)) if !want_hash && !want_zset => {
            items.extend(set.members().into_iter().filter(|m| hits(m)))
        }
        Some(_) => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
        None => {}
    }
    reply::array(out, 2);
    reply::bulk(out, b"0");
    reply::array(out, items.len());
    for i in &items {
        reply::bulk(out, i);
    }
    Done::wait(s.seq_of(key))
}

pub(super) fn hscan(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    scan_value(a, ctx, out)
}

pub(super) fn sscan(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    scan_value(a, ctx, out)
}

pub(super) fn zscan(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    scan_value(a, ctx, out)
}

pub(super) fn randomkey(_a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let n = ctx.ks.shards();
    // A shard chosen in proportion to its keys, then a key in it: every key about as likely
    // (starting at a random shard and taking the next one with keys favoured the key after
    // the longest run of empty shards — with two keys, one could go unseen for 100 calls).
    let sizes: Vec<usize> = (0..n).map(|i| ctx.ks.lock(i).map.len()).collect();
    let total: usize = sizes.iter().sum();
    for _ in 0..4.min(total) {
        let mut r = random() as usize % total;
        let Some(i) = sizes.iter().position(|&k| {
            let here = r < k;
            r = r.saturating_sub(k);
            here
        }) else {
            break;
        };
        let s = ctx.ks.lock(i);
        let live: Vec<&[u8]> = s.map.iter().filter(|(_, e)| !e.expired(ctx.now_ms)).map(|(k, _)| &**k).collect();
        if !live.is_empty() {
            reply::bulk(out, live[random() as usize % live.len()]);
            return Done::wait(ctx.journal.last());
        }
    }
    // Every key drawn had expired: the first live one from a random shard on.
    let first = random() as usize % n;
    for i in (0..n).map(|d| (first + d) % n) {
        let s = ctx.ks.lock(i);
        let live: Vec<&[u8]> = s.map.iter().filter(|(_, e)| !e.expired(ctx.now_ms)).map(|(k, _)| &**k).collect();
        if !live.is_empty() {
            reply::bulk(out, live[random() as usize % live.len()]);
            return Done::wait(ctx.journal.last());
        }
    }
    reply::null(out);
    Done::wait(ctx.journal.last())
}
