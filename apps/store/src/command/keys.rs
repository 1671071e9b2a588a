//! Commands on keys as a whole: removal, existence, expiry, counting.

use super::{int_arg, Argv, Ctx, Done, SYNTAX};
use resp::reply::{self, Sink};

pub(super) fn del(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of((1..a.len()).map(|i| a.get(i))));
    let mut gone: Vec<&[u8]> = Vec::new();
    let mut wait = 0;
    for i in 1..a.len() {
        let key = a.get(i);
        let s = locked.shard(ctx.ks.shard_of(key));
        if s.live(key, ctx.now_ms).is_some() && !gone.contains(&key) {
            gone.push(key);
        }
        wait = wait.max(s.seq_of(key));
    }
    if !gone.is_empty() {
        let seq = ctx.journal.del(&gone);
        for key in &gone {
            let s = locked.shard(ctx.ks.shard_of(key));
            s.map.remove(*key);
            s.removed_seq = seq;
        }
        wait = seq;
    }
    reply::int(out, gone.len() as i64);
    Done::wait(wait)
}

pub(super) fn type_of(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    let name = s.live(key, ctx.now_ms).map_or("none", |e| e.value.type_name());
    reply::simple(out, name.as_bytes());
    Done::wait(s.seq_of(key))
}

pub(super) fn exists(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of((1..a.len()).map(|i| a.get(i))));
    let (mut n, mut wait) = (0, 0);
    for i in 1..a.len() {
        let key = a.get(i);
        let s = locked.shard(ctx.ks.shard_of(key));
        n += i64::from(s.live(key, ctx.now_ms).is_some());
        wait = wait.max(s.seq_of(key));
    }
    reply::int(out, n);
    Done::wait(wait)
}

/// EXPIRE's conditions (Redis 7.0).
#[derive(Default)]
struct When {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

fn expire_generic(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, ms_unit: bool, cmd: &str) -> Done {
    expire_at_generic(a, ctx, out, ms_unit, false, cmd)
}

/// EXPIRE, PEXPIRE (`absolute` false: the time is from now), EXPIREAT and PEXPIREAT.
fn expire_at_generic(
    a: Argv<'_>,
    ctx: &mut Ctx<'_>,
    out: &mut dyn Sink,
    ms_unit: bool,
    absolute: bool,
    cmd: &str,
) -> Done {
    let mut w = When::default();
    for j in 3..a.len() {
        let o = a.get(j);
        let is = |s: &str| o.eq_ignore_ascii_case(s.as_bytes());
        if is("nx") {
            w.nx = true;
        } else if is("xx") {
            w.xx = true;
        } else if is("gt") {
            w.gt = true;
        } else if is("lt") {
            w.lt = true;
        } else {
            let mut t = b"ERR Unsupported option ".to_vec();
            t.extend_from_slice(super::c_str(o, usize::MAX));
            reply::error(out, &t);
            return Done::default();
        }
    }
    if w.nx && (w.xx || w.gt || w.lt) {
        reply::error(out, b"ERR NX and XX, GT or LT options at the same time are not compatible");
        return Done::default();
    }
    if w.gt && w.lt {
        reply::error(out, b"ERR GT and LT options at the same time are not compatible");
        return Done::default();
    }
    let Some(mut when) = int_arg(a.get(2), out) else { return Done::default() };
    let bad = |out: &mut dyn Sink| {
        reply::error(out, format!("ERR invalid expire time in '{cmd}' command").as_bytes());
        Done::default()
    };
    if !ms_unit {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return bad(out);
        }
        when *= 1000;
    }
    let base = if absolute { 0 } else { ctx.now_ms };
    let Some(when) = when.checked_add(base) else {
        return bad(out);
    };
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    let Some(e) = s.live(key, ctx.now_ms) else {
        reply::int(out, 0);
        return Done::wait(s.seq_of(key));
    };
    let cur = e.expire_ms;
    let refused = (w.nx && cur != 0)
        || (w.xx && cur == 0)
        || (w.gt && (cur == 0 || when <= cur))
        || (w.lt && cur != 0 && when >= cur);
    if refused {
        reply::int(out, 0);
        return Done::wait(e.seq);
    }
    let seq = if when <= ctx.now_ms {
        let seq = ctx.journal.del(&[key]);
        s.map.remove(key);
        s.removed_seq = seq;
        seq
    } else {
        // A stored expiry of 0 means none: a time at the epoch itself is already past.
        let seq = ctx.journal.expire(key, when);
        e.expire_ms = when;
        e.seq = seq;
        s.note_expiry(key, when);
        seq
    };
    reply::int(out, 1);
    Done::wait(seq)
}

pub(super) fn expire(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    expire_generic(a, ctx, out, false, "expire")
}

pub(super) fn pexpire(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    expire_generic(a, ctx, out, true, "pexpire")
}

pub(super) fn expireat(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    expire_at_generic(a, ctx, out, false, true, "expireat")
}

pub(super) fn pexpireat(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    expire_at_generic(a, ctx, out, true, true, "pexpireat")
}

/// TTL, PTTL (`absolute` false: the time left), EXPIRETIME and PEXPIRETIME.
fn ttl_generic(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, ms: bool, absolute: bool) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    let v = match s.live(key, ctx.now_ms) {
        None => -2,
        Some(e) if e.expire_ms == 0 => -1,
        Some(e) => {
            let left = if absolute { e.expire_ms } else { (e.expire_ms - ctx.now_ms).max(0) };
            if ms {
                left
            } else {
                (left + 500) / 1000
            }
        }
    };
    reply::int(out, v);
    Done::wait(s.seq_of(key))
}

pub(super) fn ttl(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    ttl_generic(a, ctx, out, false, false)
}

pub(super) fn pttl(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    ttl_generic(a, ctx, out, true, false)
}

pub(super) fn expiretime(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    ttl_generic(a, ctx, out, false, true)
}

pub(super) fn pexpiretime(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    ttl_generic(a, ctx, out, true, true)
}

pub(super) fn persist(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match s.live(key, ctx.now_ms) {
        Some(e) if e.expire_ms != 0 => {
            let seq = ctx.journal.expire(key, 0);
            e.expire_ms = 0;
            e.seq = seq;
            reply::int(out, 1);
            Done::wait(seq)
        }
        _ => {
            reply::int(out, 0);
            Done::wait(s.seq_of(key))
        }
    }
}

pub(super) fn dbsize(_a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    reply::int(out, ctx.ks.len() as i64);
    Done::wait(ctx.journal.last())
}

pub(super) fn flushall(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let ok = a.len() == 1
        || (a.len() == 2 && (a.get(1).eq_ignore_ascii_case(b"sync") || a.get(1).eq_ignore_ascii_case(b"async")));
    if !ok {
        reply::error(out, SYNTAX);
        return Done::default();
    }
    let info = ctx.info;
    let all = a.get(0).eq_ignore_ascii_case(b"flushall");
    let dbs: Vec<&crate::keyspace::Keyspace> = match info.databases() {
        Some(d) if all => d.iter().collect(),
        _ => vec![ctx.ks],
    };
    // Every shard of every database cleared is held while the change takes its number.
    let mut held: Vec<_> = dbs.iter().map(|ks| ks.lock_set(ks.all())).collect();
    let seq = if all { ctx.journal.flush() } else { ctx.journal.record(&crate::log::record::Change::FlushDb) };
    for locked in &mut held {
        for s in locked.each() {
            s.clear(seq);
        }
    }
    reply::ok(out);
    Done::wait(seq)
}

/// SWAPDB: two databases trade their keys (clients stay on the number they selected).
pub(super) fn swapdb(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let db = |v: &[u8], which: &[u8], out: &mut dyn Sink| match resp::num::parse_i64(v) {
        Some(n) => Some(n),
        None => {
            reply::error(out, which);
            None
        }
    };
    let Some(x) = db(a.get(1), b"ERR invalid first DB index", out) else { return Done::default() };
    let Some(y) = db(a.get(2), b"ERR invalid second DB index", out) else { return Done::default() };
    let info = ctx.info;
    let count = info.databases().map_or(1, |d| d.len()) as i64;
    if !(0..count).contains(&x) || !(0..count).contains(&y) {
        reply::error(out, b"ERR DB index is out of range");
        return Done::default();
    }
    let Some(dbs) = info.databases().filter(|_| x != y) else {
        reply::ok(out);
        return Done::default();
    };
    let journal = &mut ctx.journal;
    let seq =
        dbs.swap(x as usize, y as usize, || journal.record(&crate::log::record::Change::SwapDb(x as u32, y as u32)));
    reply::ok(out);
    Done::wait(seq)
}
