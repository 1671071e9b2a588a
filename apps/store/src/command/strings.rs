//! String commands.

use super::{int_arg, Argv, Ctx, Done, NOT_INT, SYNTAX, WRONGTYPE};
use crate::keyspace::{Entry, Shard, Value};
use resp::num::{format_i64, parse_i64};
use resp::reply::{self, Sink};
use resp::request::REDIS_MAX_BULK;

/// Stores `value` at `key` in a locked shard with change `seq`.
fn put(s: &mut Shard, key: &[u8], value: &[u8], expire_ms: i64, seq: u64) {
    let new_expiry = match s.map.get_mut(key) {
        Some(e) => {
            overwrite(&mut e.value, value);
            let changed = e.expire_ms != expire_ms;
            e.expire_ms = expire_ms;
            e.seq = seq;
            changed
        }
        None => {
            s.map.insert(key.into(), Entry { value: Value::Str(value.to_vec()), expire_ms, seq });
            true
        }
    };
    // An expiry kept (INCR, SETRANGE of a volatile key) is in the index already.
    if new_expiry {
        s.note_expiry(key, expire_ms);
    }
}

/// Makes `v` the string `value`, keeping a string's allocation when the new value fits (the
/// common overwrite); a value of another type is replaced.
fn overwrite(v: &mut Value, value: &[u8]) {
    match v {
        Value::Str(s) => {
            s.clear();
            s.extend_from_slice(value);
        }
        other => *other = Value::Str(value.to_vec()),
    }
}

pub(super) fn get(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match s.live(key, ctx.now_ms).map(|e| e.value.as_str()) {
        Some(Some(v)) => reply::bulk(out, v),
        Some(None) => reply::error(out, WRONGTYPE),
        None => reply::null(out),
    }
    Done::wait(s.seq_of(key))
}

pub(super) fn strlen(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match s.live(key, ctx.now_ms).map(|e| e.value.as_str()) {
        Some(Some(v)) => reply::int(out, v.len() as i64),
        Some(None) => reply::error(out, WRONGTYPE),
        None => reply::int(out, 0),
    }
    Done::wait(s.seq_of(key))
}

pub(super) fn mget(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of((1..a.len()).map(|i| a.get(i))));
    reply::array(out, a.len() - 1);
    let mut wait = 0;
    for i in 1..a.len() {
        let key = a.get(i);
        let s = locked.shard(ctx.ks.shard_of(key));
        // A key of another type reads as missing, as in Redis.
        match s.live(key, ctx.now_ms).and_then(|e| e.value.as_str()) {
            Some(v) => reply::bulk(out, v),
            None => reply::null(out),
        }
        wait = wait.max(s.seq_of(key));
    }
    Done::wait(wait)
}

/// SET's options, as Redis 7.0 parses them.
#[derive(Default)]
struct SetFlags {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    /// EX, PX, EXAT or PXAT, and its argument.
    expire: Option<(Unit, usize)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Ex,
    Px,
    ExAt,
    PxAt,
}

fn set_flags(a: Argv<'_>) -> Option<SetFlags> {
    let mut f = SetFlags::default();
    let mut j = 3;
    while j < a.len() {
        let opt = a.get(j);
        let has_next = j + 1 < a.len();
        let is = |w: &str| opt.eq_ignore_ascii_case(w.as_bytes());
        let unit = if is("ex") {
            Some(Unit::Ex)
        } else if is("px") {
            Some(Unit::Px)
        } else if is("exat") {
            Some(Unit::ExAt)
        } else if is("pxat") {
            Some(Unit::PxAt)
        } else {
            None
        };
        if is("nx") && !f.xx {
            f.nx = true;
        } else if is("xx") && !f.nx {
            f.xx = true;
        } else if is("get") {
            f.get = true;
        } else if is("keepttl") && f.expire.is_none() {
            f.keepttl = true;
        } else if let Some(u) = unit.filter(|&u| {
            // Redis allows the same unit twice (the last wins), not two different ones.
            has_next && !f.keepttl && f.expire.is_none_or(|(had, _)| had == u)
        }) {
            f.expire = Some((u, j + 1));
            j += 1;
        } else {
            return None;
        }
        j += 1;
    }
    Some(f)
}

/// The absolute expiry (Unix ms) of an EX/PX/EXAT/PXAT argument, or Redis's error.
fn expire_at(v: &[u8], unit: Unit, now_ms: i64, cmd: &str, out: &mut dyn Sink) -> Option<i64> {
    let n = int_arg(v, out)?;
    let seconds = matches!(unit, Unit::Ex | Unit::ExAt);
    let bad = |out: &mut dyn Sink| {
        reply::error(out, format!("ERR invalid expire time in '{cmd}' command").as_bytes());
        None
    };
    if n <= 0 || (seconds && n > i64::MAX / 1000) {
        return bad(out);
    }
    let ms = if seconds { n * 1000 } else { n };
    let at = if matches!(unit, Unit::Ex | Unit::Px) { ms.checked_add(now_ms) } else { Some(ms) };
    match at {
        Some(at) if at > 0 => Some(at),
        _ => bad(out),
    }
}

pub(super) fn set(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(f) = set_flags(a) else {
        reply::error(out, SYNTAX);
        return Done::default();
    };
    let mut expire = 0;
    if let Some((unit, at)) = f.expire {
        match expire_at(a.get(at), unit, ctx.now_ms, "set", out) {
            Some(t) => expire = t,
            None => return Done::default(),
        }
    }
    let (key, value) = (a.get(1), a.get(2));
    let mut s = ctx.ks.lock_key(key);
    // The entry found is overwritten in place: no second lookup for the common SET.
    let seq = match s.live(key, ctx.now_ms) {
        Some(e) => {
            if f.get {
                let Some(v) = e.value.as_str() else {
                    reply::error(out, WRONGTYPE);
                    return Done::wait(e.seq);
                };
                reply::bulk(out, v);
            }
            if f.nx {
                if !f.get {
                    reply::null(out);
                }
                return Done::wait(e.seq);
            }
            if f.keepttl {
                expire = e.expire_ms;
            }
            let seq = ctx.journal.sets(&[(key, value, expire)]);
            overwrite(&mut e.value, value);
            e.expire_ms = expire;
            e.seq = seq;
            seq
        }
        None => {
            if f.get || f.xx {
                reply::null(out);
            }
            if f.xx {
                return Done::wait(s.seq_of(key));
            }
            let expire = if f.keepttl { 0 } else { expire };
            let seq = ctx.journal.sets(&[(key, value, expire)]);
            s.map.insert(key.into(), Entry { value: Value::Str(value.to_vec()), expire_ms: expire, seq });
            seq
        }
    };
    // EX/PX/EXAT/PXAT gave a new time (KEEPTTL keeps one already noted; none is 0).
    if f.expire.is_some() {
        s.note_expiry(key, expire);
    }
    if !f.get {
        reply::ok(out);
    }
    Done::wait(seq)
}

pub(super) fn mset(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    if a.len().is_multiple_of(2) {
        super::arity_error(out, "mset");
        return Done::default();
    }
    let items: Vec<(&[u8], &[u8], i64)> = (1..a.len()).step_by(2).map(|i| (a.get(i), a.get(i + 1), 0)).collect();
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of(items.iter().map(|i| i.0)));
    let seq = ctx.journal.sets(&items);
    for (k, v, _) in &items {
        put(locked.shard(ctx.ks.shard_of(k)), k, v, 0, seq);
    }
    reply::ok(out);
    Done::wait(seq)
}

fn incr_by(key: &[u8], by: i64, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let mut s = ctx.ks.lock_key(key);
    let (old, expire) = match s.live(key, ctx.now_ms) {
        Some(e) => match e.value.as_str().map(|v| parse_i64(v)) {
            Some(Some(v)) => (v, e.expire_ms),
            None => {
                reply::error(out, WRONGTYPE);
                return Done::wait(s.seq_of(key));
            }
            Some(None) => {
                reply::error(out, NOT_INT);
                return Done::wait(s.seq_of(key));
            }
        },
        None => (0, 0),
    };
    let Some(new) = old.checked_add(by) else {
        reply::error(out, b"ERR increment or decrement would overflow");
        return Done::wait(s.seq_of(key));
    };
    let mut b = [0u8; 20];
    let text = format_i64(new, &mut b);
    let seq = ctx.journal.sets(&[(key, text, expire)]);
    put(&mut s, key, text, expire, seq);
    reply::int(out, new);
    Done::wait(seq)
}

/// INCRBYFLOAT: in Redis's 80-bit long double, written as Redis writes it; the key keeps its
/// expiry.
pub(super) fn incrbyfloat(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    let (old, expire) = match s.live(key, ctx.now_ms) {
        Some(e) => match e.value.as_str() {
            Some(v) => (v.clone(), e.expire_ms),
            None => {
                reply::error(out, WRONGTYPE);
                return Done::wait(s.seq_of(key));
            }
        },
        None => (b"0".to_vec(), 0),
    };
    let text = match resp::long_double::incr(&old, a.get(2)) {
        Ok(t) => t,
        Err(why) => {
            reply::error(out, why.as_bytes());
            return Done::wait(s.seq_of(key));
        }
    };
    let seq = ctx.journal.sets(&[(key, text.as_bytes(), expire)]);
    put(&mut s, key, text.as_bytes(), expire, seq);
    reply::bulk(out, text.as_bytes());
    Done::wait(seq)
}

pub(super) fn incr(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    incr_by(a.get(1), 1, ctx, out)
}

pub(super) fn decr(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    incr_by(a.get(1), -1, ctx, out)
}

pub(super) fn incrby(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    match int_arg(a.get(2), out) {
        Some(by) => incr_by(a.get(1), by, ctx, out),
        None => Done::default(),
    }
}

pub(super) fn decrby(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    match int_arg(a.get(2), out) {
        Some(i64::MIN) => {
            reply::error(out, b"ERR decrement would overflow");
            Done::default()
        }
        Some(by) => incr_by(a.get(1), -by, ctx, out),
        None => Done::default(),
    }
}

pub(super) fn append(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let (key, more) = (a.get(1), a.get(2));
    let mut s = ctx.ks.lock_key(key);
    let (len, expire) = match s.live(key, ctx.now_ms) {
        Some(Entry { value: Value::Str(v), expire_ms, .. }) => (v.len(), *expire_ms),
        Some(_) => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
        None => (0, 0),
    };
    if len + more.len() > REDIS_MAX_BULK {
        reply::error(out, b"ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return Done::wait(s.seq_of(key));
    }
    let seq = {
        let e = s.map.entry(key.into()).or_insert(Entry { value: Value::Str(Vec::new()), expire_ms: 0, seq: 0 });
        let Value::Str(v) = &mut e.value else { unreachable!("a string or new, checked above") };
        v.extend_from_slice(more);
        e.expire_ms = expire;
        let seq = ctx.journal.sets(&[(key, v, expire)]);
        e.seq = seq;
        seq
    };
    reply::int(out, (len + more.len()) as i64);
    Done::wait(seq)
}

/// SETEX and PSETEX: SET with an expiry that must be positive.
fn setex_generic(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, unit: Unit, cmd: &str) -> Done {
    let Some(expire) = expire_at(a.get(2), unit, ctx.now_ms, cmd, out) else { return Done::default() };
    let (key, value) = (a.get(1), a.get(3));
    let mut s = ctx.ks.lock_key(key);
    let seq = ctx.journal.sets(&[(key, value, expire)]);
    put(&mut s, key, value, expire, seq);
    reply::ok(out);
    Done::wait(seq)
}

pub(super) fn setex(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    setex_generic(a, ctx, out, Unit::Ex, "setex")
}

pub(super) fn psetex(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    setex_generic(a, ctx, out, Unit::Px, "psetex")
}

pub(super) fn setnx(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let (key, value) = (a.get(1), a.get(2));
    let mut s = ctx.ks.lock_key(key);
    if s.live(key, ctx.now_ms).is_some() {
        reply::int(out, 0);
        return Done::wait(s.seq_of(key));
    }
    let seq = ctx.journal.sets(&[(key, value, 0)]);
    put(&mut s, key, value, 0, seq);
    reply::int(out, 1);
    Done::wait(seq)
}

pub(super) fn getset(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let (key, value) = (a.get(1), a.get(2));
    let mut s = ctx.ks.lock_key(key);
    match s.live(key, ctx.now_ms).map(|e| e.value.as_str()) {
        Some(Some(old)) => reply::bulk(out, old),
        Some(None) => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
        None => reply::null(out),
    }
    // GETSET drops the key's expiry, as SET does.
    let seq = ctx.journal.sets(&[(key, value, 0)]);
    put(&mut s, key, value, 0, seq);
    Done::wait(seq)
}

pub(super) fn getdel(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match s.live(key, ctx.now_ms).map(|e| e.value.as_str()) {
        Some(Some(v)) => reply::bulk(out, v),
        Some(None) => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
        None => {
            reply::null(out);
            return Done::wait(s.seq_of(key));
        }
    }
    let seq = ctx.journal.del(&[key]);
    s.map.remove(key);
    s.removed_seq = seq;
    Done::wait(seq)
}

pub(super) fn getex(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    // EX/PX/EXAT/PXAT with an argument, or PERSIST; one of them at most.
    let (mut expire, mut persist) = (None, false);
    let mut j = 2;
    while j < a.len() {
        let o = a.get(j);
        let is = |w: &str| o.eq_ignore_ascii_case(w.as_bytes());
        let unit = [("ex", Unit::Ex), ("px", Unit::Px), ("exat", Unit::ExAt), ("pxat", Unit::PxAt)]
            .into_iter()
            .find_map(|(w, u)| is(w).then_some(u));
        match unit {
            Some(u) if j + 1 < a.len() && expire.is_none() && !persist => {
                expire = Some((u, j + 1));
                j += 1;
            }
            None if is("persist") && expire.is_none() => persist = true,
            _ => {
                reply::error(out, SYNTAX);
                return Done::default();
            }
        }
        j += 1;
    }
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    let Some(e) = s.live(key, ctx.now_ms) else {
        reply::null(out);
        return Done::wait(s.seq_of(key));
    };
    if e.value.as_str().is_none() {
        reply::error(out, WRONGTYPE);
        return Done::wait(e.seq);
    }
    let at = match expire {
        Some((u, i)) => match expire_at(a.get(i), u, ctx.now_ms, "getex", out) {
            Some(t) => Some(t),
            None => return Done::wait(e.seq),
        },
        None => None,
    };
    reply::bulk(out, e.value.as_str().expect("a string"));
    let seq = match (at, persist) {
        (Some(t), _) if t <= ctx.now_ms => {
            let seq = ctx.journal.del(&[key]);
            s.map.remove(key);
            s.removed_seq = seq;
            seq
        }
        (Some(t), _) => {
            let seq = ctx.journal.expire(key, t);
            e.expire_ms = t;
            e.seq = seq;
            s.note_expiry(key, t);
            seq
        }
        (None, true) if e.expire_ms != 0 => {
            let seq = ctx.journal.expire(key, 0);
            e.expire_ms = 0;
            e.seq = seq;
            seq
        }
        _ => e.seq,
    };
    Done::wait(seq)
}

pub(super) fn msetnx(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    if a.len().is_multiple_of(2) {
        super::arity_error(out, "msetnx");
        return Done::default();
    }
    let items: Vec<(&[u8], &[u8], i64)> = (1..a.len()).step_by(2).map(|i| (a.get(i), a.get(i + 1), 0)).collect();
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of(items.iter().map(|i| i.0)));
    let mut wait = 0;
    for (k, _, _) in &items {
        let s = locked.shard(ctx.ks.shard_of(k));
        if s.live(k, ctx.now_ms).is_some() {
            reply::int(out, 0);
            return Done::wait(s.seq_of(k));
        }
        wait = wait.max(s.seq_of(k));
    }
    let seq = ctx.journal.sets(&items);
    for (k, v, _) in &items {
        put(locked.shard(ctx.ks.shard_of(k)), k, v, 0, seq);
    }
    reply::int(out, 1);
    Done::wait(seq.max(wait))
}

pub(super) fn getrange(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(mut start) = int_arg(a.get(2), out) else { return Done::default() };
    let Some(mut end) = int_arg(a.get(3), out) else { return Done::default() };
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    let v: &[u8] = match s.live(key, ctx.now_ms).map(|e| e.value.as_str()) {
        Some(Some(v)) => v,
        Some(None) => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
        None => b"",
    };
    let len = v.len() as i64;
    // Redis's arithmetic, step by step (negative indexes count from the end).
    if start < 0 && end < 0 && start > end {
        reply::bulk(out, b"");
    } else {
        if start < 0 {
            start += len;
        }
        if end < 0 {
            end += len;
        }
        start = start.max(0);
        end = end.max(0);
        if end >= len {
            end = len - 1;
        }
        if start > end || len == 0 {
            reply::bulk(out, b"");
        } else {
            reply::bulk(out, &v[start as usize..=end as usize]);
        }
    }
    Done::wait(s.seq_of(key))
}

pub(super) fn setrange(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(offset) = int_arg(a.get(2), out) else { return Done::default() };
    if offset < 0 {
        reply::error(out, b"ERR offset is out of range");
        return Done::default();
    }
    let (key, more) = (a.get(1), a.get(3));
    let mut s = ctx.ks.lock_key(key);
    let too_long = |out: &mut dyn Sink| {
        reply::error(out, b"ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    };
    let (mut value, expire) = match s.live(key, ctx.now_ms) {
        Some(Entry { value: Value::Str(v), expire_ms, .. }) => {
            if more.is_empty() {
                reply::int(out, v.len() as i64);
                return Done::wait(s.seq_of(key));
            }
            (v.clone(), *expire_ms)
        }
        Some(_) => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
        None if more.is_empty() => {
            reply::int(out, 0);
            return Done::wait(s.seq_of(key));
        }
        None => (Vec::new(), 0),
    };
    let offset = offset as usize;
    if offset.saturating_add(more.len()) > REDIS_MAX_BULK {
        too_long(out);
        return Done::wait(s.seq_of(key));
    }
    if value.len() < offset + more.len() {
        value.resize(offset + more.len(), 0);
    }
    value[offset..offset + more.len()].copy_from_slice(more);
    let seq = ctx.journal.sets(&[(key, &value, expire)]);
    let len = value.len();
    s.map.insert(key.into(), Entry { value: Value::Str(value), expire_ms: expire, seq });
    reply::int(out, len as i64);
    Done::wait(seq)
}
