//! RENAME, RENAMENX, COPY and MOVE: a key's whole value (and expiry) under another name, logged as
//! the removal of the source (RENAME) and the whole new value of the destination, records
//! staged together under both keys' locks, so they reach the log in one commit.

use super::{int_arg, journal_whole, Argv, Ctx, Done, SYNTAX};
use crate::keyspace::Entry;
use resp::reply::{self, Sink};

fn rename_generic(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, nx: bool) -> Done {
    let (src, dst) = (a.get(1), a.get(2));
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of([src, dst].into_iter()));
    let (si, di) = (ctx.ks.shard_of(src), ctx.ks.shard_of(dst));
    let Some(src_seq) = locked.shard(si).live(src, ctx.now_ms).map(|e| e.seq) else {
        reply::error(out, b"ERR no such key");
        return Done::wait(locked.shard(si).seq_of(src));
    };
    if src == dst {
        // Redis answers without changing anything.
        if nx {
            reply::int(out, 0);
        } else {
            reply::ok(out);
        }
        return Done::wait(src_seq);
    }
    if nx && locked.shard(di).live(dst, ctx.now_ms).is_some() {
        reply::int(out, 0);
        return Done::wait(locked.shard(di).seq_of(dst));
    }
    // The value moves: taken out of the source's shard, not copied.
    let s = locked.shard(si);
    let e = s.map.remove(src).expect("found live above");
    ctx.journal.del(&[src]);
    let seq = journal_whole(ctx.journal, dst, &e.value, e.expire_ms);
    s.removed_seq = seq;
    let d = locked.shard(di);
    d.note_expiry(dst, e.expire_ms);
    d.map.insert(dst.into(), Entry { seq, ..e });
    if nx {
        reply::int(out, 1);
    } else {
        reply::ok(out);
    }
    Done::wait(seq)
}

pub(super) fn rename(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    rename_generic(a, ctx, out, false)
}

pub(super) fn renamenx(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    rename_generic(a, ctx, out, true)
}

pub(super) fn copy(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let (src, dst) = (a.get(1), a.get(2));
    let mut replace = false;
    let here = ctx.ks.index();
    let mut target = here;
    let mut j = 3;
    while j < a.len() {
        let o = a.get(j);
        if o.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if o.eq_ignore_ascii_case(b"db") && j + 1 < a.len() {
            let Some(n) = int_arg(a.get(j + 1), out) else { return Done::default() };
            let info = ctx.info;
            let known = usize::try_from(n).ok().filter(|&n| n == here || info.databases().is_some_and(|d| n < d.len()));
            let Some(n) = known else {
                reply::error(out, b"ERR DB index is out of range");
                return Done::default();
            };
            target = n;
            j += 1;
        } else {
            reply::error(out, SYNTAX);
            return Done::default();
        }
        j += 1;
    }
    if src == dst && target == here {
        reply::error(out, b"ERR source and destination objects are the same");
        return Done::default();
    }
    if target != here {
        return copy_to_db(src, dst, target, replace, ctx, out);
    }
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of([src, dst].into_iter()));
    let (si, di) = (ctx.ks.shard_of(src), ctx.ks.shard_of(dst));
    let Some(e) = locked.shard(si).live(src, ctx.now_ms).map(|e| e.clone()) else {
        reply::int(out, 0);
        return Done::wait(locked.shard(si).seq_of(src));
    };
    if !replace && locked.shard(di).live(dst, ctx.now_ms).is_some() {
        reply::int(out, 0);
        return Done::wait(locked.shard(di).seq_of(dst).max(e.seq));
    }
    let seq = journal_whole(ctx.journal, dst, &e.value, e.expire_ms);
    let d = locked.shard(di);
    d.note_expiry(dst, e.expire_ms);
    d.map.insert(dst.into(), Entry { seq, ..e });
    reply::int(out, 1);
    Done::wait(seq)
}

/// MOVE: the key (with its expiry) into database `db` of the store, unless it is there.
pub(super) fn move_key(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let key = a.get(1);
    let Some(n) = int_arg(a.get(2), out) else { return Done::default() };
    let info = ctx.info;
    let (src, here) = (ctx.ks, ctx.ks.index());
    let dst = match usize::try_from(n) {
        Ok(n) if n == here => src,
        Ok(n) => match info.databases().and_then(|d| d.db(n)) {
            Some(d) => d,
            None => {
                reply::error(out, b"ERR DB index is out of range");
                return Done::default();
            }
        },
        Err(_) => {
            reply::error(out, b"ERR DB index is out of range");
            return Done::default();
        }
    };
    if dst.index() == here {
        reply::error(out, b"ERR source and destination objects are the same");
        return Done::default();
    }
    // Two databases' shards: the lower database's first, so two MOVEs the other way round
    // never wait for each other.
    let (mut s, mut d) = if here < dst.index() {
        let s = src.lock_key(key);
        (s, dst.lock_key(key))
    } else {
        let d = dst.lock_key(key);
        (src.lock_key(key), d)
    };
    let Some(e) = s.live(key, ctx.now_ms).cloned() else {
        reply::int(out, 0);
        return Done::wait(s.seq_of(key));
    };
    if d.live(key, ctx.now_ms).is_some() {
        reply::int(out, 0);
        return Done::wait(d.seq_of(key).max(e.seq));
    }
    let gone = ctx.journal.del(&[key]);
    s.map.remove(key);
    s.removed_seq = gone;
    ctx.journal.select(dst.index());
    let seq = journal_whole(ctx.journal, key, &e.value, e.expire_ms);
    ctx.journal.select(here);
    d.note_expiry(key, e.expire_ms);
    d.map.insert(key.into(), Entry { value: e.value, expire_ms: e.expire_ms, seq });
    reply::int(out, 1);
    Done::wait(seq)
}

/// COPY into another database of the store.
fn copy_to_db(src: &[u8], dst: &[u8], target: usize, replace: bool, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let info = ctx.info;
    let (from, here) = (ctx.ks, ctx.ks.index());
    let Some(to) = info.databases().and_then(|d| d.db(target)) else {
        reply::error(out, b"ERR DB index is out of range");
        return Done::default();
    };
    // The lower database's shard first (as MOVE).
    let (mut s, mut d) = if here < target {
        let s = from.lock_key(src);
        (s, to.lock_key(dst))
    } else {
        let d = to.lock_key(dst);
        (from.lock_key(src), d)
    };
    let Some(e) = s.live(src, ctx.now_ms).cloned() else {
        reply::int(out, 0);
        return Done::wait(s.seq_of(src));
    };
    if !replace && d.live(dst, ctx.now_ms).is_some() {
        reply::int(out, 0);
        return Done::wait(d.seq_of(dst).max(e.seq));
    }
    ctx.journal.select(target);
    let seq = journal_whole(ctx.journal, dst, &e.value, e.expire_ms);
    ctx.journal.select(here);
    d.note_expiry(dst, e.expire_ms);
    d.map.insert(dst.into(), Entry { seq, ..e });
    reply::int(out, 1);
    Done::wait(seq)
}
