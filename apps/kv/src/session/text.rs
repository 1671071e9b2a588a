//! The text protocol's classic commands, answered as memcached 1.6 answers them.

use super::out::{hit_or_miss, reply, Line, Out};
use super::{meta, Ctx, Step};
use crate::cache::{Arith, Mode, Stored};
use crate::stats::DetailOp;
use memcache::text::{self, Command, Keys, StoreOp};

pub(super) fn step(data: &[u8], ctx: &mut Ctx<'_>, out: &mut dyn Out, swallow: &mut usize) -> Step {
    let (line, n) = match text::line(data) {
        text::Line::Found(l, n) => (l, n),
        text::Line::Incomplete => return Step::Incomplete,
        text::Line::TooLong => {
            ctx.counters.protocol_errors.inc();
            return Step::Close;
        }
    };
    match text::parse(line) {
        Command::Get { keys, cas, touch } => {
            get(keys, cas, touch, ctx, out);
            Step::Done(n)
        }
        Command::Store { op, key, flags, exptime, bytes, cas, noreply } => {
            if !ctx.cache.fits(key.len(), bytes, flags) {
                // Refused before the data is read; the data is skipped as it arrives.
                ctx.counters.store_too_large.inc();
                ctx.counters.cmd_set.inc();
                ctx.detail.record(key, DetailOp::Set);
                let mode = if op == StoreOp::Set { Mode::Set } else { Mode::Add };
                ctx.cache.lock(key).refuse_too_large(key, mode, ctx.now);
                reply(out, noreply, b"SERVER_ERROR object too large for cache");
                *swallow = bytes + 2;
                return Step::Done(n);
            }
            let Some(block) = data.get(n..n + bytes + 2) else { return Step::Incomplete };
            if &block[bytes..] != b"\r\n" {
                reply(out, noreply, b"CLIENT_ERROR bad data chunk");
                return Step::Done(n + bytes + 2);
            }
            store(op, key, flags, exptime, &block[..bytes], cas, noreply, ctx, out);
            Step::Done(n + bytes + 2)
        }
        Command::Delete { key, noreply } => {
            ctx.detail.record(key, DetailOp::Delete);
            let hit = matches!(ctx.cache.lock(key).delete(key, 0, ctx.now), Stored::Stored(_));
            let c = (&ctx.counters.delete_hits, &ctx.counters.delete_misses);
            hit_or_miss(out, noreply, hit, c, (b"DELETED", b"NOT_FOUND"));
            Step::Done(n)
        }
        Command::Arith { key, incr, delta, noreply } => {
            let r = ctx.cache.lock(key).arith(key, incr, delta, 0, ctx.now);
            let (hits, misses) = if incr {
                (&ctx.counters.incr_hits, &ctx.counters.incr_misses)
            } else {
                (&ctx.counters.decr_hits, &ctx.counters.decr_misses)
            };
            match r {
                Arith::Value(v, _) => {
                    hits.inc();
                    reply(out, noreply, Line::new().n(v).bytes());
                }
                Arith::NotFound | Arith::Exists => {
                    misses.inc();
                    reply(out, noreply, b"NOT_FOUND");
                }
                Arith::NonNumeric => {
                    reply(out, noreply, b"CLIENT_ERROR cannot increment or decrement non-numeric value")
                }
                Arith::NoMemory => reply(out, noreply, b"SERVER_ERROR out of memory"),
            }
            Step::Done(n)
        }
        Command::Touch { key, exptime, noreply } => {
            ctx.counters.cmd_touch.inc();
            let exp = ctx.cache.realtime(exptime, ctx.now);
            let hit = ctx.cache.lock(key).touch(key, exp, ctx.now);
            let c = (&ctx.counters.touch_hits, &ctx.counters.touch_misses);
            hit_or_miss(out, noreply, hit, c, (b"TOUCHED", b"NOT_FOUND"));
            Step::Done(n)
        }
        Command::FlushAll { delay, noreply } => {
            ctx.counters.cmd_flush.inc();
            let at = delay.filter(|&d| d > 0).map(|d| ctx.cache.realtime(d, ctx.now));
            ctx.cache.flush_all(at, ctx.now);
            reply(out, noreply, b"OK");
            Step::Done(n)
        }
        Command::Version => {
            out.put(b"VERSION ");
            out.put(ctx.info.version().as_bytes());
            out.put(b"\r\n");
            Step::Done(n)
        }
        Command::Verbosity { noreply } => {
            reply(out, noreply, b"OK");
            Step::Done(n)
        }
        Command::Stats { group } => {
            stats(group, ctx, out);
            Step::Done(n)
        }
        Command::Quit => Step::Close,
        Command::Meta(m) => meta::run(m, data, n, ctx, out, swallow),
        Command::Silent => Step::Done(n),
        Command::Hangup => {
            ctx.counters.protocol_errors.inc();
            Step::Close
        }
        Command::Error(e) => {
            if e == text::ERROR {
                ctx.counters.protocol_errors.inc();
            }
            reply(out, false, e.as_bytes());
            Step::Done(n)
        }
    }
}

fn get(keys: Keys<'_>, cas: bool, touch: Option<i64>, ctx: &mut Ctx<'_>, out: &mut dyn Out) {
    let exp = touch.map(|t| ctx.cache.realtime(t, ctx.now));
    for key in keys.iter() {
        let c = ctx.counters;
        if touch.is_some() {
            c.cmd_touch.inc();
        }
        c.cmd_get.inc();
        let mut l = ctx.cache.lock(key);
        let got = l.get(key, ctx.now, exp);
        ctx.detail.record(key, DetailOp::Get(got.is_some()));
        match got {
            Some(it) => {
                if touch.is_some() {
                    c.touch_hits.inc();
                }
                c.get_hits.inc();
                let mut line = Line::new();
                line.s(b"VALUE ").s(key).s(b" ").n(u64::from(it.flags)).s(b" ").n(it.value.len() as u64);
                if cas {
                    line.s(b" ").n(it.cas);
                }
                line.s(b"\r\n");
                out.put(line.bytes());
                out.put(it.value);
                out.put(b"\r\n");
            }
            None => {
                if touch.is_some() {
                    c.touch_misses.inc();
                }
                c.get_misses.inc();
            }
        }
    }
    out.put(b"END\r\n");
}

#[allow(clippy::too_many_arguments)]
fn store(
    op: StoreOp,
    key: &[u8],
    flags: u32,
    exptime: i64,
    value: &[u8],
    cas: u64,
    noreply: bool,
    ctx: &mut Ctx<'_>,
    out: &mut dyn Out,
) {
    let mode = match op {
        StoreOp::Set | StoreOp::Cas => Mode::Set,
        StoreOp::Add => Mode::Add,
        StoreOp::Replace => Mode::Replace,
        StoreOp::Append => Mode::Append,
        StoreOp::Prepend => Mode::Prepend,
    };
    ctx.counters.cmd_set.inc();
    ctx.detail.record(key, DetailOp::Set);
    let exp = ctx.cache.realtime(exptime, ctx.now);
    // `cas … 0` compares against a unique no item has (0 means "no compare" below).
    let cas = match op {
        StoreOp::Cas if cas == 0 => u64::MAX,
        StoreOp::Cas => cas,
        _ => 0,
    };
    let r = ctx.cache.lock(key).store(key, mode, flags, exp, value, cas, ctx.now);
    let c = ctx.counters;
    let s: &[u8] = match r {
        Stored::Stored(_) => {
            if op == StoreOp::Cas {
                c.cas_hits.inc();
            }
            b"STORED"
        }
        Stored::NotStored => b"NOT_STORED",
        Stored::Exists => {
            c.cas_badval.inc();
            b"EXISTS"
        }
        Stored::NotFound => {
            c.cas_misses.inc();
            b"NOT_FOUND"
        }
        Stored::TooLarge => {
            c.store_too_large.inc();
            b"SERVER_ERROR object too large for cache"
        }
        Stored::NoMemory => {
            c.store_no_memory.inc();
            b"SERVER_ERROR out of memory storing object"
        }
    };
    reply(out, noreply, s);
}

fn stats(group: &[u8], ctx: &mut Ctx<'_>, out: &mut dyn Out) {
    if group == b"reset" {
        ctx.info.reset();
        out.put(b"RESET\r\n");
        return;
    }
    let mut words = group.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let first = words.next();
    if first == Some(&b"cachedump"[..]) {
        // memcached's order of checks: two numbers, then a class id below 64.
        let (a, b) = (words.next(), words.next());
        let num = |w: &[u8]| std::str::from_utf8(w).ok()?.parse::<u32>().ok();
        let reply: &[u8] = match (a, b) {
            (Some(a), Some(b)) => match (num(a), num(b)) {
                (Some(class), Some(_)) if class >= 64 => b"CLIENT_ERROR Illegal slab id\r\n",
                (Some(class), Some(limit)) => return out.put(&ctx.cache.cachedump(class as usize, limit as usize)),
                _ => b"CLIENT_ERROR bad command line format\r\n",
            },
            _ => b"CLIENT_ERROR bad command line\r\n",
        };
        out.put(reply);
        return;
    }
    if first == Some(&b"detail"[..]) {
        match words.next() {
            Some(b"on") => {
                ctx.detail.set_on(true);
                out.put(b"OK\r\n");
            }
            Some(b"off") => {
                ctx.detail.set_on(false);
                out.put(b"OK\r\n");
            }
            Some(b"dump") => out.put(&ctx.detail.dump()),
            _ => out.put(b"CLIENT_ERROR usage: stats detail on|off|dump\r\n"),
        }
        return;
    }
    let mut body = Vec::new();
    let known = ctx.info.stats(group, ctx.now, &mut |name, value| {
        body.extend_from_slice(b"STAT ");
        body.extend_from_slice(name.as_bytes());
        body.push(b' ');
        body.extend_from_slice(value.as_bytes());
        body.extend_from_slice(b"\r\n");
    });
    if known {
        out.put(&body);
        out.put(b"END\r\n");
    } else {
        out.put(b"ERROR\r\n");
    }
}
