//! RENAME, RENAMENX and COPY: a key's whole value (and expiry) under another name, logged as
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
    let mut j = 3;
    while j < a.len() {
        let o = a.get(j);
        if o.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if o.eq_ignore_ascii_case(b"db") && j + 1 < a.len() {
            match int_arg(a.get(j + 1), out) {
                Some(0) => {}
                Some(_) => {
                    reply::error(out, b"ERR DB index is out of range");
                    return Done::default();
                }
                None => return Done::default(),
            }
            j += 1;
        } else {
            reply::error(out, SYNTAX);
            return Done::default();
        }
        j += 1;
    }
    if src == dst {
        reply::error(out, b"ERR source and destination objects are the same");
        return Done::default();
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
