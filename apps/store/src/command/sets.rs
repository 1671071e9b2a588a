//! Set commands, as Redis 7.0 answers them. A change is logged as the members it added or
//! removed, with whether it started the set or emptied it (the key then goes, as in Redis);
//! the STORE forms log the destination's whole new set.

use super::{random, Argv, Ctx, Done, NOT_INT, WRONGTYPE};
use crate::keyspace::{Entry, Locked, Shard, Value};
use crate::set::Set;
use resp::reply::{self, Sink};

/// What a key holds, for a set command.
enum Found<'a> {
    Set(&'a mut Set),
    Missing,
    Wrong,
}

fn find<'s>(s: &'s mut Shard, key: &[u8], now_ms: i64) -> Found<'s> {
    match s.live(key, now_ms) {
        Some(Entry { value: Value::Set(set), .. }) => Found::Set(set),
        Some(_) => Found::Wrong,
        None => Found::Missing,
    }
}

/// Adds (`add`) or removes `members` at `key` (a set or missing: the caller checked), logging
/// the members that changed; returns how many did, and the change (None: nothing changed).
fn change(s: &mut Shard, key: &[u8], add: bool, members: &[&[u8]], ctx: &mut Ctx<'_>) -> (usize, Option<u64>) {
    let fresh = !matches!(s.live(key, ctx.now_ms), Some(Entry { value: Value::Set(_), .. }));
    if fresh && !add {
        return (0, None);
    }
    if fresh {
        s.map.insert(key.into(), Entry { value: Value::Set(Set::default()), expire_ms: 0, seq: 0 });
    }
    let e = s.map.get_mut(key).expect("a set now");
    let Value::Set(set) = &mut e.value else { unreachable!("a set") };
    let mut changed: Vec<&[u8]> = Vec::new();
    for &m in members {
        if if add { set.add(m) } else { set.remove(m) } {
            changed.push(m);
        }
    }
    if changed.is_empty() {
        return (0, None);
    }
    let gone = set.is_empty();
    let seq = ctx.journal.members(key, fresh, gone, 0, add, &changed);
    e.seq = seq;
    if gone {
        s.map.remove(key);
        s.removed_seq = seq;
    }
    (changed.len(), Some(seq))
}

/// A read of the set at `key`: `f` answers from it (None: no such key).
fn read(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, f: impl FnOnce(Option<&Set>, &mut dyn Sink)) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match find(&mut s, key, ctx.now_ms) {
        Found::Set(set) => f(Some(set), out),
        Found::Missing => f(None, out),
        Found::Wrong => reply::error(out, WRONGTYPE),
    }
    Done::wait(s.seq_of(key))
}

fn add_or_remove(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, add: bool) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    if let Found::Wrong = find(&mut s, key, ctx.now_ms) {
        reply::error(out, WRONGTYPE);
        return Done::wait(s.seq_of(key));
    }
    let members: Vec<&[u8]> = (2..a.len()).map(|i| a.get(i)).collect();
    let (n, seq) = change(&mut s, key, add, &members, ctx);
    reply::int(out, n as i64);
    Done::wait(seq.unwrap_or_else(|| s.seq_of(key)))
}

pub(super) fn sadd(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    add_or_remove(a, ctx, out, true)
}

pub(super) fn srem(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    add_or_remove(a, ctx, out, false)
}

/// Members as a set (RESP3's set type; RESP2 an array), as SMEMBERS, SINTER and SPOP answer.
fn put_members(out: &mut dyn Sink, members: &[Box<[u8]>]) {
    reply::set(out, members.len());
    for m in members {
        reply::bulk(out, m);
    }
}

pub(super) fn smembers(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    read(a, ctx, out, |set, out| put_members(out, &set.map(Set::members).unwrap_or_default()))
}

pub(super) fn sismember(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let m = a.get(2);
    read(a, ctx, out, |set, out| reply::int(out, i64::from(set.is_some_and(|s| s.contains(m)))))
}

pub(super) fn smismember(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    read(a, ctx, out, |set, out| {
        reply::array(out, a.len() - 2);
        for i in 2..a.len() {
            reply::int(out, i64::from(set.is_some_and(|s| s.contains(a.get(i)))));
        }
    })
}

pub(super) fn scard(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    read(a, ctx, out, |set, out| reply::int(out, set.map_or(0, Set::len) as i64))
}

/// SPOP's and SRANDMEMBER's count: None without one, else the count or the error written.
fn count_arg(a: Argv<'_>, out: &mut dyn Sink, name: &str) -> Result<Option<i64>, ()> {
    if a.len() == 2 {
        return Ok(None);
    }
    if a.len() > 3 {
        reply::error(out, b"ERR syntax error");
        return Err(());
    }
    match resp::num::parse_i64(a.get(2)) {
        Some(n) if name == "spop" && n < 0 => {
            reply::error(out, b"ERR value is out of range, must be positive");
            Err(())
        }
        Some(n) => Ok(Some(n)),
        None if name == "spop" => {
            reply::error(out, b"ERR value is out of range, must be positive");
            Err(())
        }
        None => {
            reply::error(out, NOT_INT);
            Err(())
        }
    }
}

/// `n` members of `set` picked at random, without repeats (all of them, in order, when `n`
/// is at least the size).
fn pick(set: &Set, n: usize) -> Vec<Box<[u8]>> {
    let mut all = set.members();
    if n >= all.len() {
        return all;
    }
    for i in 0..n {
        let j = i + random() as usize % (all.len() - i);
        all.swap(i, j);
    }
    all.truncate(n);
    all
}

pub(super) fn spop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Ok(count) = count_arg(a, out, "spop") else { return Done::default() };
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    let chosen = match find(&mut s, key, ctx.now_ms) {
        Found::Set(set) => pick(set, count.map_or(1, |c| c as usize)),
        Found::Missing => {
            match count {
                Some(_) => reply::set(out, 0),
                None => reply::null(out),
            }
            return Done::wait(s.seq_of(key));
        }
        Found::Wrong => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
    };
    match count {
        Some(_) => put_members(out, &chosen),
        None => reply::bulk(out, &chosen[0]),
    }
    if chosen.is_empty() {
        return Done::wait(s.seq_of(key));
    }
    let members: Vec<&[u8]> = chosen.iter().map(|m| &**m).collect();
    let (_, seq) = change(&mut s, key, false, &members, ctx);
    Done::wait(seq.unwrap_or_else(|| s.seq_of(key)))
}

pub(super) fn srandmember(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Ok(count) = count_arg(a, out, "srandmember") else { return Done::default() };
    read(a, ctx, out, |set, out| match (set, count) {
        (None, None) => reply::null(out),
        (None, Some(_)) | (Some(_), Some(0)) => reply::array(out, 0),
        (Some(set), None) => reply::bulk(out, &pick(set, 1)[0]),
        (Some(set), Some(c)) if c > 0 => {
            // An array, not a set, as Redis answers SRANDMEMBER.
            let picked = pick(set, c as usize);
            reply::array(out, picked.len());
            for m in &picked {
                reply::bulk(out, m);
            }
        }
        (Some(set), Some(c)) => {
            // Repeats allowed: exactly |count| picks.
            let all = set.members();
            let n = c.unsigned_abs() as usize;
            reply::array(out, n);
            for _ in 0..n {
                reply::bulk(out, &all[random() as usize % all.len()]);
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

/// The result of SINTER/SUNION/SDIFF over `keys` (whose shards `locked` holds), built as a
/// set (so it has a set's order), or WRONGTYPE; and the highest change it shows.
fn combine(locked: &mut Locked<'_>, keys: &[&[u8]], how: Algebra, ctx: &Ctx<'_>) -> Result<(Set, u64), ()> {
    let mut sets: Vec<Option<Set>> = Vec::new();
    let mut wait = 0;
    for &k in keys {
        let s = locked.shard(ctx.ks.shard_of(k));
        wait = wait.max(s.seq_of(k));
        match find(s, k, ctx.now_ms) {
            Found::Set(set) => sets.push(Some(set.clone())),
            Found::Missing => sets.push(None),
            Found::Wrong => return Err(()),
        }
    }
    let mut result = Set::default();
    match how {
        Algebra::Union => {
            for m in sets.iter().flatten().flat_map(Set::members) {
                result.add(&m);
            }
        }
        Algebra::Inter => {
            if sets.iter().all(Option::is_some) {
                let sets: Vec<&Set> = sets.iter().flatten().collect();
                let smallest = sets.iter().min_by_key(|s| s.len()).expect("at least one key");
                for m in smallest.members() {
                    if sets.iter().all(|s| s.contains(&m)) {
                        result.add(&m);
                    }
                }
            }
        }
        Algebra::Diff => {
            if let Some(first) = &sets[0] {
                for m in first.members() {
                    if !sets[1..].iter().flatten().any(|s| s.contains(&m)) {
                        result.add(&m);
                    }
                }
            }
        }
    }
    Ok((result, wait))
}

fn algebra(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, how: Algebra) -> Done {
    let keys: Vec<&[u8]> = (1..a.len()).map(|i| a.get(i)).collect();
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of(keys.iter().copied()));
    match combine(&mut locked, &keys, how, ctx) {
        Ok((set, wait)) => {
            put_members(out, &set.members());
            Done::wait(wait)
        }
        Err(()) => {
            reply::error(out, WRONGTYPE);
            Done::default()
        }
    }
}

fn algebra_store(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, how: Algebra) -> Done {
    let dst = a.get(1);
    let keys: Vec<&[u8]> = (2..a.len()).map(|i| a.get(i)).collect();
    // The destination's shard is held with the sources': the result is stored as it was read.
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of(keys.iter().copied().chain([dst])));
    let (set, wait) = match combine(&mut locked, &keys, how, ctx) {
        Ok(r) => r,
        Err(()) => {
            reply::error(out, WRONGTYPE);
            return Done::default();
        }
    };
    let n = set.len();
    let seq = super::store_or_remove(locked.shard(ctx.ks.shard_of(dst)), dst, (n > 0).then_some(Value::Set(set)), ctx);
    reply::int(out, n as i64);
    Done::wait(seq.max(wait))
}

pub(super) fn sinter(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra(a, ctx, out, Algebra::Inter)
}

pub(super) fn sunion(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra(a, ctx, out, Algebra::Union)
}

pub(super) fn sdiff(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra(a, ctx, out, Algebra::Diff)
}

pub(super) fn sinterstore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra_store(a, ctx, out, Algebra::Inter)
}

pub(super) fn sunionstore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra_store(a, ctx, out, Algebra::Union)
}

pub(super) fn sdiffstore(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    algebra_store(a, ctx, out, Algebra::Diff)
}

pub(super) fn smove(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let (src, dst, m) = (a.get(1), a.get(2), a.get(3));
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of([src, dst].into_iter()));
    let (si, di) = (ctx.ks.shard_of(src), ctx.ks.shard_of(dst));
    let wait = locked.shard(si).seq_of(src).max(locked.shard(di).seq_of(dst));
    let has = match find(locked.shard(si), src, ctx.now_ms) {
        Found::Set(set) => set.contains(m),
        Found::Missing => false,
        Found::Wrong => {
            reply::error(out, WRONGTYPE);
            return Done::wait(wait);
        }
    };
    if let Found::Wrong = find(locked.shard(di), dst, ctx.now_ms) {
        reply::error(out, WRONGTYPE);
        return Done::wait(wait);
    }
    if !has {
        reply::int(out, 0);
        return Done::wait(wait);
    }
    if src == dst {
        reply::int(out, 1);
        return Done::wait(wait);
    }
    change(locked.shard(si), src, false, &[m], ctx);
    let (_, seq) = change(locked.shard(di), dst, true, &[m], ctx);
    reply::int(out, 1);
    Done::wait(seq.unwrap_or(wait))
}
