//! KEYS, SCAN and RANDOMKEY: the keyspace walked a shard at a time (one lock held for one
//! shard, never the whole keyspace). SCAN's cursor is the next shard: each call returns every
//! matching key of one shard (COUNT is a hint, as in Redis, which also returns a small
//! encoding whole), so a key present from the first call to the last is returned exactly once.

use super::{glob, random, Argv, Ctx, Done, SYNTAX};
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

pub(super) fn scan(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    // As C's strtoul reads it (Redis's parser): a leading minus wraps around.
    let text = std::str::from_utf8(a.get(1)).ok();
    let cursor = text.and_then(|c| match c.strip_prefix('-') {
        Some(rest) => rest.parse::<u64>().ok().map(u64::wrapping_neg),
        None => c.parse::<u64>().ok(),
    });
    let Some(cursor) = cursor else {
        reply::error(out, b"ERR invalid cursor");
        return Done::default();
    };
    let (mut pattern, mut type_name) = (None, None);
    let mut j = 2;
    while j < a.len() {
        let (o, has_arg) = (a.get(j), j + 1 < a.len());
        if o.eq_ignore_ascii_case(b"count") && has_arg {
            match resp::num::parse_i64(a.get(j + 1)) {
                Some(n) if n >= 1 => {}
                Some(_) => {
                    reply::error(out, SYNTAX);
                    return Done::default();
                }
                None => {
                    reply::error(out, super::NOT_INT);
                    return Done::default();
                }
            }
        } else if o.eq_ignore_ascii_case(b"match") && has_arg {
            let p = a.get(j + 1);
            pattern = (p != b"*").then_some(p);
        } else if o.eq_ignore_ascii_case(b"type") && has_arg {
            type_name = Some(a.get(j + 1));
        } else {
            reply::error(out, SYNTAX);
            return Done::default();
        }
        j += 2;
    }
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

pub(super) fn randomkey(_a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let n = ctx.ks.shards();
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
