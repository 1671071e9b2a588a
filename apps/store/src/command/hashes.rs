//! Hash commands, as Redis 7.0 answers them. A change is logged as the fields it set (or
//! removed), with whether it made the key a new hash: replay then needs nothing but the
//! records before it.

use super::{int_arg, random, Argv, Ctx, Done, NOT_INT, SYNTAX, WRONGTYPE};
use crate::hash::Hash;
use crate::keyspace::{Entry, Shard, Value};
use resp::num::{format_i64, parse_i64};
use resp::reply::{self, Sink};

/// What a key holds, for a hash command.
enum Found<'a> {
    Hash(&'a mut Entry),
    Missing,
    Wrong,
}

fn find<'s>(s: &'s mut Shard, key: &[u8], now_ms: i64) -> Found<'s> {
    match s.live(key, now_ms) {
        Some(e) if matches!(e.value, Value::Hash(_)) => Found::Hash(e),
        Some(_) => Found::Wrong,
        None => Found::Missing,
    }
}

fn hash_mut(e: &mut Entry) -> &mut Hash {
    match &mut e.value {
        Value::Hash(h) => h,
        _ => unreachable!("found as a hash"),
    }
}

fn hash_ref(e: &Entry) -> &Hash {
    match &e.value {
        Value::Hash(h) => h,
        _ => unreachable!("found as a hash"),
    }
}

/// A read of the hash at `key`: `f` answers from it (None: no such key); a key of another
/// type gets WRONGTYPE.
fn read(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, f: impl FnOnce(Option<&Hash>, &mut dyn Sink)) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match find(&mut s, key, ctx.now_ms) {
        Found::Hash(e) => f(Some(hash_mut(e)), out),
        Found::Missing => f(None, out),
        Found::Wrong => reply::error(out, WRONGTYPE),
    }
    Done::wait(s.seq_of(key))
}

/// Sets `fields` in the hash at `key` (made if missing: the caller checked it is no other
/// type), logged as one change; returns how many fields are new and the change.
fn put_fields(s: &mut Shard, key: &[u8], fields: &[(&[u8], &[u8])], ctx: &mut Ctx<'_>) -> (i64, u64) {
    let mut new = 0;
    let seq = match find(s, key, ctx.now_ms) {
        Found::Hash(e) => {
            let seq = ctx.journal.hash_set(key, false, 0, fields);
            let h = hash_mut(e);
            for (f, v) in fields {
                new += i64::from(h.set(f, v));
            }
            e.seq = seq;
            seq
        }
        _ => {
            let seq = ctx.journal.hash_set(key, true, 0, fields);
            let mut h = Hash::default();
            for (f, v) in fields {
                new += i64::from(h.set(f, v));
            }
            s.map.insert(key.into(), Entry { value: Value::Hash(h), expire_ms: 0, seq });
            seq
        }
    };
    (new, seq)
}

fn pairs(a: Argv<'_>) -> Vec<(&[u8], &[u8])> {
    (2..a.len()).step_by(2).map(|i| (a.get(i), a.get(i + 1))).collect()
}

pub(super) fn hset(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    hset_generic(a, ctx, out, "hset")
}

pub(super) fn hmset(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    hset_generic(a, ctx, out, "hmset")
}

fn hset_generic(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, name: &str) -> Done {
    // HSET key field value [field value ...]: an even count, the name included.
    if !a.len().is_multiple_of(2) {
        super::arity_error(out, name);
        return Done::default();
    }
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    if let Found::Wrong = find(&mut s, key, ctx.now_ms) {
        reply::error(out, WRONGTYPE);
        return Done::wait(s.seq_of(key));
    }
    let (new, seq) = put_fields(&mut s, key, &pairs(a), ctx);
    if name == "hset" {
        reply::int(out, new);
    } else {
        reply::ok(out);
    }
    Done::wait(seq)
}

pub(super) fn hsetnx(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let (key, field) = (a.get(1), a.get(2));
    let mut s = ctx.ks.lock_key(key);
    match find(&mut s, key, ctx.now_ms) {
        Found::Wrong => reply::error(out, WRONGTYPE),
        Found::Hash(e) if hash_ref(e).get(field).is_some() => reply::int(out, 0),
        _ => {
            let (new, seq) = put_fields(&mut s, key, &[(field, a.get(3))], ctx);
            reply::int(out, new);
            return Done::wait(seq);
        }
    }
    Done::wait(s.seq_of(key))
}

pub(super) fn hget(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let field = a.get(2);
    read(a, ctx, out, |h, out| match h.and_then(|h| h.get(field)) {
        Some(v) => reply::bulk(out, v),
        None => reply::null(out),
    })
}

pub(super) fn hmget(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    read(a, ctx, out, |h, out| {
        reply::array(out, a.len() - 2);
        for i in 2..a.len() {
            match h.and_then(|h| h.get(a.get(i))) {
                Some(v) => reply::bulk(out, v),
                None => reply::null(out),
            }
        }
    })
}

pub(super) fn hlen(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    read(a, ctx, out, |h, out| reply::int(out, h.map_or(0, Hash::len) as i64))
}

pub(super) fn hstrlen(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let field = a.get(2);
    read(a, ctx, out, |h, out| reply::int(out, h.and_then(|h| h.get(field)).map_or(0, <[u8]>::len) as i64))
}

pub(super) fn hexists(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let field = a.get(2);
    read(a, ctx, out, |h, out| reply::int(out, i64::from(h.is_some_and(|h| h.get(field).is_some()))))
}

/// HKEYS, HVALS and HGETALL: the fields, values or both, in the hash's order.
fn all(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, fields: bool, values: bool) -> Done {
    read(a, ctx, out, |h, out| {
        let n = h.map_or(0, Hash::len);
        if fields && values {
            // HGETALL: a map in RESP3.
            reply::map(out, n);
        } else {
            reply::array(out, n);
        }
        for (f, v) in h.into_iter().flat_map(Hash::iter) {
            if fields {
                reply::bulk(out, f);
            }
            if values {
                reply::bulk(out, v);
            }
        }
    })
}

pub(super) fn hkeys(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    all(a, ctx, out, true, false)
}

pub(super) fn hvals(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    all(a, ctx, out, false, true)
}

pub(super) fn hgetall(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    all(a, ctx, out, true, true)
}

pub(super) fn hdel(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    let e = match find(&mut s, key, ctx.now_ms) {
        Found::Hash(e) => e,
        Found::Missing => {
            reply::int(out, 0);
            return Done::wait(s.seq_of(key));
        }
        Found::Wrong => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
    };
    let h = hash_mut(e);
    let mut gone: Vec<&[u8]> = Vec::new();
    for i in 2..a.len() {
        let f = a.get(i);
        if h.get(f).is_some() && !gone.contains(&f) {
            gone.push(f);
        }
    }
    if gone.is_empty() {
        reply::int(out, 0);
        return Done::wait(e.seq);
    }
    let seq = ctx.journal.hash_del(key, &gone);
    for f in &gone {
        h.remove(f);
    }
    let emptied = h.is_empty();
    e.seq = seq;
    if emptied {
        s.map.remove(key);
        s.removed_seq = seq;
    }
    reply::int(out, gone.len() as i64);
    Done::wait(seq)
}

pub(super) fn hincrby(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    // Redis reads the increment before it looks at the key.
    let Some(by) = int_arg(a.get(3), out) else { return Done::default() };
    let (key, field) = (a.get(1), a.get(2));
    let mut s = ctx.ks.lock_key(key);
    let old = match find(&mut s, key, ctx.now_ms) {
        Found::Wrong => Err(WRONGTYPE),
        Found::Missing => Ok(0),
        Found::Hash(e) => match hash_mut(e).get(field) {
            None => Ok(0),
            Some(v) => parse_i64(v).ok_or(&b"ERR hash value is not an integer"[..]),
        },
    };
    let new = match old.and_then(|o| o.checked_add(by).ok_or(&b"ERR increment or decrement would overflow"[..])) {
        Ok(new) => new,
        Err(why) => {
            reply::error(out, why);
            return Done::wait(s.seq_of(key));
        }
    };
    let mut b = [0u8; 20];
    let text = format_i64(new, &mut b);
    let (_, seq) = put_fields(&mut s, key, &[(field, text)], ctx);
    reply::int(out, new);
    Done::wait(seq)
}

/// HINCRBYFLOAT: in Redis's 80-bit long double, written as Redis writes it.
pub(super) fn hincrbyfloat(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    use resp::long_double::{add, format, parse, Ld};
    // The increment first, as Redis reads it.
    let incr = match parse(a.get(3)) {
        None => {
            reply::error(out, b"ERR value is not a valid float");
            return Done::default();
        }
        Some(Ld::Finite { neg, m, e }) => Ld::Finite { neg, m, e },
        Some(_) => {
            reply::error(out, b"ERR value is NaN or Infinity");
            return Done::default();
        }
    };
    let (key, field) = (a.get(1), a.get(2));
    let mut s = ctx.ks.lock_key(key);
    let old = match find(&mut s, key, ctx.now_ms) {
        Found::Wrong => Err(WRONGTYPE),
        Found::Missing => Ok(Ld::Finite { neg: false, m: 0, e: 0 }),
        Found::Hash(e) => match hash_mut(e).get(field) {
            None => Ok(Ld::Finite { neg: false, m: 0, e: 0 }),
            Some(v) => parse(v).ok_or(&b"ERR hash value is not a float"[..]),
        },
    };
    let text = match old.map(|o| add(o, incr)) {
        Ok(v @ Ld::Finite { .. }) => format(v),
        Ok(_) => {
            reply::error(out, b"ERR increment would produce NaN or Infinity");
            return Done::wait(s.seq_of(key));
        }
        Err(why) => {
            reply::error(out, why);
            return Done::wait(s.seq_of(key));
        }
    };
    let (_, seq) = put_fields(&mut s, key, &[(field, text.as_bytes())], ctx);
    reply::bulk(out, text.as_bytes());
    Done::wait(seq)
}

pub(super) fn hrandfield(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let mut count = None;
    let mut withvalues = false;
    if a.len() >= 3 {
        let Some(c) = resp::num::parse_i64(a.get(2)) else {
            reply::error(out, NOT_INT);
            return Done::default();
        };
        if c == i64::MIN {
            reply::error(
                out,
                b"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            );
            return Done::default();
        }
        if a.len() > 4 || (a.len() == 4 && !a.get(3).eq_ignore_ascii_case(b"withvalues")) {
            reply::error(out, SYNTAX);
            return Done::default();
        }
        withvalues = a.len() == 4;
        if withvalues && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&c) {
            reply::error(out, b"ERR value is out of range");
            return Done::default();
        }
        count = Some(c);
    }
    read(a, ctx, out, |h, out| {
        let Some(c) = count else {
            match h.and_then(|h| h.nth(random() as usize % h.len().max(1))) {
                Some((f, _)) => reply::bulk(out, f),
                None => reply::null(out),
            }
            return;
        };
        let h = match h {
            Some(h) if c != 0 => h,
            _ => return reply::array(out, 0),
        };
        let put = |out: &mut dyn Sink, (f, v): (&[u8], &[u8])| {
            if withvalues {
                reply::pair(out);
            }
            reply::bulk(out, f);
            if withvalues {
                reply::bulk(out, v);
            }
        };
        // Field and value flat in RESP2, a pair each in RESP3.
        let header = |out: &mut dyn Sink, n: usize| {
            if withvalues {
                reply::pairs(out, n);
            } else {
                reply::array(out, n);
            }
        };
        if c < 0 {
            // Repeats allowed: exactly |count| picks.
            let n = c.unsigned_abs() as usize;
            header(out, n);
            for _ in 0..n {
                let i = random() as usize % h.len();
                put(out, h.nth(i).expect("in range"));
            }
            return;
        }
        let n = (c as usize).min(h.len());
        header(out, n);
        if n == h.len() {
            // All of it, in the hash's order, as Redis answers.
            h.iter().for_each(|p| put(out, p));
            return;
        }
        let mut picked: Vec<usize> = (0..h.len()).collect();
        for i in 0..n {
            let j = i + random() as usize % (h.len() - i);
            picked.swap(i, j);
        }
        for &i in &picked[..n] {
            put(out, h.nth(i).expect("in range"));
        }
    })
}
