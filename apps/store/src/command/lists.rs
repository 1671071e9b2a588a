//! List commands, as Redis 7.0 answers them. Each change is one [`ListOp`] applied through
//! [`list::apply`] — the function the replay uses — and logged as it is, with whether it
//! started the list (fresh) or emptied it (gone: the key is removed, as in Redis).

use super::{int_arg, Argv, Ctx, Done, SYNTAX, WRONGTYPE};
use crate::keyspace::{Entry, Shard, Value};
use crate::list::{self, List};
use crate::log::record::ListOp;
use resp::reply::{self, Sink};

/// What a key holds, for a list command.
pub(super) enum Found<'a> {
    List(&'a mut List),
    Missing,
    Wrong,
}

pub(super) fn find<'s>(s: &'s mut Shard, key: &[u8], now_ms: i64) -> Found<'s> {
    match s.live(key, now_ms) {
        Some(Entry { value: Value::List(l), .. }) => Found::List(l),
        Some(_) => Found::Wrong,
        None => Found::Missing,
    }
}

/// Applies `op` to the list at `key` (a list or missing: the caller checked) and logs it;
/// returns what [`list::apply`] returned, the change, and the length left.
pub(super) fn change(s: &mut Shard, key: &[u8], op: ListOp<'_>, ctx: &mut Ctx<'_>) -> (usize, u64, usize) {
    let fresh = !matches!(s.live(key, ctx.now_ms), Some(Entry { value: Value::List(_), .. }));
    if fresh {
        s.map.insert(key.into(), Entry { value: Value::List(List::new()), expire_ms: 0, seq: 0 });
    }
    let e = s.map.get_mut(key).expect("a list now");
    let Value::List(l) = &mut e.value else { unreachable!("a list") };
    let n = list::apply(l, &op);
    let len = l.len();
    let seq = ctx.journal.list(key, fresh, len == 0, 0, &op);
    e.seq = seq;
    if len == 0 {
        s.map.remove(key);
        s.removed_seq = seq;
    }
    (n, seq, len)
}

/// A read of the list at `key`: `f` answers from it (None: no such key).
fn read(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, f: impl FnOnce(Option<&List>, &mut dyn Sink)) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match find(&mut s, key, ctx.now_ms) {
        Found::List(l) => f(Some(l), out),
        Found::Missing => f(None, out),
        Found::Wrong => reply::error(out, WRONGTYPE),
    }
    Done::wait(s.seq_of(key))
}

fn push(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, left: bool, only_if_there: bool) -> Done {
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match find(&mut s, key, ctx.now_ms) {
        Found::Wrong => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
        Found::Missing if only_if_there => {
            reply::int(out, 0);
            return Done::wait(s.seq_of(key));
        }
        _ => {}
    }
    let values = (2..a.len()).map(|i| a.get(i)).collect();
    let (_, seq, len) = change(&mut s, key, ListOp::Push { left, values }, ctx);
    reply::int(out, len as i64);
    Done::wait(seq)
}

pub(super) fn lpush(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    push(a, ctx, out, true, false)
}

pub(super) fn rpush(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    push(a, ctx, out, false, false)
}

pub(super) fn lpushx(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    push(a, ctx, out, true, true)
}

pub(super) fn rpushx(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    push(a, ctx, out, false, true)
}

fn pop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink, left: bool) -> Done {
    let count = if a.len() > 2 {
        if a.len() > 3 {
            super::arity_error(out, if left { "lpop" } else { "rpop" });
            return Done::default();
        }
        match resp::num::parse_i64(a.get(2)) {
            Some(n) if n >= 0 => Some(n as u64),
            _ => {
                reply::error(out, b"ERR value is out of range, must be positive");
                return Done::default();
            }
        }
    } else {
        None
    };
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    let l = match find(&mut s, key, ctx.now_ms) {
        Found::List(l) => l,
        Found::Missing => {
            if count.is_some() {
                reply::null_array(out);
            } else {
                reply::null(out);
            }
            return Done::wait(s.seq_of(key));
        }
        Found::Wrong => {
            reply::error(out, WRONGTYPE);
            return Done::wait(s.seq_of(key));
        }
    };
    let n = count.unwrap_or(1).min(l.len() as u64) as usize;
    if count.is_some() {
        reply::array(out, n);
    }
    for i in 0..n {
        let at = if left { i } else { l.len() - 1 - i };
        reply::bulk(out, &l[at]);
    }
    if n == 0 {
        return Done::wait(s.seq_of(key));
    }
    let (_, seq, _) = change(&mut s, key, ListOp::Pop { left, count: n as u64 }, ctx);
    Done::wait(seq)
}

pub(super) fn lpop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    pop(a, ctx, out, true)
}

pub(super) fn rpop(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    pop(a, ctx, out, false)
}

pub(super) fn llen(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    read(a, ctx, out, |l, out| reply::int(out, l.map_or(0, List::len) as i64))
}

pub(super) fn lrange(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(start) = int_arg(a.get(2), out) else { return Done::default() };
    let Some(stop) = int_arg(a.get(3), out) else { return Done::default() };
    read(a, ctx, out, |l, out| match l.and_then(|l| list::range(start, stop, l.len()).map(|r| (l, r))) {
        Some((l, (from, to))) => {
            reply::array(out, to - from + 1);
            for v in l.range(from..=to) {
                reply::bulk(out, v);
            }
        }
        None => reply::array(out, 0),
    })
}

pub(super) fn lindex(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(index) = int_arg(a.get(2), out) else { return Done::default() };
    read(a, ctx, out, |l, out| match l.and_then(|l| list::place(index, l.len()).map(|i| &l[i])) {
        Some(v) => reply::bulk(out, v),
        None => reply::null(out),
    })
}

pub(super) fn lset(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(index) = int_arg(a.get(2), out) else { return Done::default() };
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    let why: &[u8] = match find(&mut s, key, ctx.now_ms) {
        Found::List(l) if list::place(index, l.len()).is_some() => {
            let (_, seq, _) = change(&mut s, key, ListOp::Set { index, value: a.get(3) }, ctx);
            reply::ok(out);
            return Done::wait(seq);
        }
        Found::List(_) => b"ERR index out of range",
        Found::Missing => b"ERR no such key",
        Found::Wrong => WRONGTYPE,
    };
    reply::error(out, why);
    Done::wait(s.seq_of(key))
}

pub(super) fn linsert(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let before = match a.get(2) {
        w if w.eq_ignore_ascii_case(b"before") => true,
        w if w.eq_ignore_ascii_case(b"after") => false,
        _ => {
            reply::error(out, SYNTAX);
            return Done::default();
        }
    };
    let (key, pivot, value) = (a.get(1), a.get(3), a.get(4));
    let mut s = ctx.ks.lock_key(key);
    match find(&mut s, key, ctx.now_ms) {
        Found::List(l) if l.iter().any(|e| &**e == pivot) => {
            let (_, seq, len) = change(&mut s, key, ListOp::Insert { before, pivot, value }, ctx);
            reply::int(out, len as i64);
            return Done::wait(seq);
        }
        Found::List(_) => reply::int(out, -1),
        Found::Missing => reply::int(out, 0),
        Found::Wrong => reply::error(out, WRONGTYPE),
    }
    Done::wait(s.seq_of(key))
}

pub(super) fn lrem(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(count) = int_arg(a.get(2), out) else { return Done::default() };
    let (key, value) = (a.get(1), a.get(3));
    let mut s = ctx.ks.lock_key(key);
    match find(&mut s, key, ctx.now_ms) {
        Found::List(l) if l.iter().any(|e| &**e == value) => {
            let (n, seq, _) = change(&mut s, key, ListOp::Remove { count, value }, ctx);
            reply::int(out, n as i64);
            return Done::wait(seq);
        }
        Found::List(_) | Found::Missing => reply::int(out, 0),
        Found::Wrong => reply::error(out, WRONGTYPE),
    }
    Done::wait(s.seq_of(key))
}

pub(super) fn ltrim(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(start) = int_arg(a.get(2), out) else { return Done::default() };
    let Some(stop) = int_arg(a.get(3), out) else { return Done::default() };
    let key = a.get(1);
    let mut s = ctx.ks.lock_key(key);
    match find(&mut s, key, ctx.now_ms) {
        Found::List(l) => {
            let keeps_all = list::range(start, stop, l.len()) == Some((0, l.len() - 1));
            if !keeps_all {
                let (_, seq, _) = change(&mut s, key, ListOp::Trim { start, stop }, ctx);
                reply::ok(out);
                return Done::wait(seq);
            }
            reply::ok(out);
        }
        Found::Missing => reply::ok(out),
        Found::Wrong => reply::error(out, WRONGTYPE),
    }
    Done::wait(s.seq_of(key))
}

pub(super) fn side(w: &[u8]) -> Option<bool> {
    if w.eq_ignore_ascii_case(b"left") {
        Some(true)
    } else if w.eq_ignore_ascii_case(b"right") {
        Some(false)
    } else {
        None
    }
}

pub(super) fn lmove_generic(
    src: &[u8],
    dst: &[u8],
    from_left: bool,
    to_left: bool,
    ctx: &mut Ctx<'_>,
    out: &mut dyn Sink,
) -> Done {
    let mut locked = ctx.ks.lock_set(ctx.ks.mask_of([src, dst].into_iter()));
    let (si, di) = (ctx.ks.shard_of(src), ctx.ks.shard_of(dst));
    let value: Box<[u8]> = match find(locked.shard(si), src, ctx.now_ms) {
        Found::List(l) => {
            let v = if from_left { l.front() } else { l.back() };
            v.expect("a list is never empty").clone()
        }
        Found::Missing => {
            reply::null(out);
            return Done::wait(locked.shard(si).seq_of(src));
        }
        Found::Wrong => {
            reply::error(out, WRONGTYPE);
            return Done::wait(locked.shard(si).seq_of(src));
        }
    };
    if let Found::Wrong = find(locked.shard(di), dst, ctx.now_ms) {
        reply::error(out, WRONGTYPE);
        return Done::wait(locked.shard(di).seq_of(dst));
    }
    change(locked.shard(si), src, ListOp::Pop { left: from_left, count: 1 }, ctx);
    let (_, seq, _) = change(locked.shard(di), dst, ListOp::Push { left: to_left, values: vec![&value] }, ctx);
    reply::bulk(out, &value);
    Done::wait(seq)
}

pub(super) fn lmove(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let (Some(from), Some(to)) = (side(a.get(3)), side(a.get(4))) else {
        reply::error(out, SYNTAX);
        return Done::default();
    };
    lmove_generic(a.get(1), a.get(2), from, to, ctx, out)
}

pub(super) fn rpoplpush(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    lmove_generic(a.get(1), a.get(2), false, true, ctx, out)
}

pub(super) fn lpos(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let el = a.get(2);
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0usize);
    let mut j = 3;
    while j < a.len() {
        let o = a.get(j);
        let more = j + 1 < a.len();
        let positive = |v: &[u8], msg: &[u8], out: &mut dyn Sink| match resp::num::parse_i64(v) {
            Some(n) if n >= 0 => Some(n as usize),
            _ => {
                reply::error(out, msg);
                None
            }
        };
        if o.eq_ignore_ascii_case(b"rank") && more {
            let Some(r) = int_arg(a.get(j + 1), out) else { return Done::default() };
            if r == 0 {
                reply::error(
                    out,
                    b"ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use \
                      negative to start from the end of the list",
                );
                return Done::default();
            }
            rank = r;
        } else if o.eq_ignore_ascii_case(b"count") && more {
            let Some(c) = positive(a.get(j + 1), b"ERR COUNT can't be negative", out) else { return Done::default() };
            count = Some(c);
        } else if o.eq_ignore_ascii_case(b"maxlen") && more {
            let Some(m) = positive(a.get(j + 1), b"ERR MAXLEN can't be negative", out) else {
                return Done::default();
            };
            maxlen = m;
        } else {
            reply::error(out, SYNTAX);
            return Done::default();
        }
        j += 2;
    }
    read(a, ctx, out, |l, out| {
        let Some(l) = l else {
            match count {
                Some(_) => reply::array(out, 0),
                None => reply::null(out),
            }
            return;
        };
        // From the head for a positive rank, from the tail for a negative one.
        let from_tail = rank < 0;
        let skip = rank.unsigned_abs() as usize - 1;
        let len = l.len();
        let scan = if maxlen == 0 { len } else { maxlen.min(len) };
        let hits = (0..scan).map(|i| if from_tail { len - 1 - i } else { i }).filter(|&i| &*l[i] == el).skip(skip);
        match count {
            None => match hits.take(1).next() {
                Some(i) => reply::int(out, i as i64),
                None => reply::null(out),
            },
            Some(c) => {
                let found: Vec<usize> = if c == 0 { hits.collect() } else { hits.take(c).collect() };
                reply::array(out, found.len());
                for i in found {
                    reply::int(out, i as i64);
                }
            }
        }
    })
}
