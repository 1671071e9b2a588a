//! The meta commands (`mg`, `ms`, `md`, `ma`, `mn`, `me`), answered as memcached 1.6 answers
//! them. Supported flags — mg: c f h k l N O q R s t T u v; ms: c C F I k M O q T; md: C I k O q T;
//! ma: c C D J k M N O q t T v; base64 keys (`b`) on all four. memcached 1.6.18 itself refuses
//! `E` and `md x` (`CLIENT_ERROR invalid flag`), and so does this server.
//!
//! Stale-while-revalidate, as memcached: `mg N` creates an empty item on a miss, `mg R` asks
//! for the item when its time to live falls below a bound, `md I` invalidates instead of
//! deleting, `ms I` with an older CAS stores a value that stays stale. The first reader of such
//! an item is told it won (`W`) and should recache it; later readers see `Z` (someone else
//! already won) and `X` (the value is stale).

use super::out::reply;
use super::out::{Line, Out};
use super::{Ctx, Step};
use crate::cache::{Arith, Item, Mode, Stored};
use memcache::meta::{Flags, Meta, MetaCmd};
use memcache::{i32_token, u32_token, u64_token};

// memcached words a bad flag token differently per command.
const BAD_TOKEN_MG: &[u8] = b"CLIENT_ERROR bad token in command line format";
const BAD_TOKEN_MS: &[u8] = b"CLIENT_ERROR bad command line format";
const BAD_TOKEN_MD_MA: &[u8] = b"CLIENT_ERROR invalid or duplicate flag";

pub(super) fn run(
    m: Meta<'_>,
    data: &[u8],
    n: usize,
    ctx: &mut Ctx<'_>,
    out: &mut dyn Out,
    swallow: &mut usize,
) -> Step {
    ctx.counters.cmd_meta.inc();
    let (cmd, key, datalen, flags) = match m {
        Meta::Cmd { cmd, key, datalen, flags } => (cmd, key, datalen, flags),
        Meta::Unknown => {
            reply(out, false, b"ERROR");
            return Step::Done(n);
        }
        Meta::Error(e, skip) => {
            let mut l = Line::new();
            l.s(b"CLIENT_ERROR ").s(e.as_bytes());
            reply(out, false, l.bytes());
            *swallow = skip.map_or(0, |d| d + 2);
            return Step::Done(n);
        }
    };
    let allowed: &[u8] = match cmd {
        MetaCmd::Get => b"bcfhklNOqRstTuv",
        MetaCmd::Set => b"bcCFIkMOqT",
        MetaCmd::Delete => b"bCIkOqT",
        MetaCmd::Arith => b"bcCDJkMNOqtTv",
        MetaCmd::Noop | MetaCmd::Debug => b"",
    };
    if flags.iter().any(|(f, _)| !allowed.contains(&f)) {
        reply(out, false, b"CLIENT_ERROR invalid flag");
        if cmd == MetaCmd::Set {
            *swallow = datalen + 2;
        }
        return Step::Done(n);
    }
    // With `b` the key is base64: operations use the bytes, answers show the token.
    let shown = key;
    let mut decoded = [0u8; 256];
    let key: &[u8] = if flags.has(b'b') {
        match memcache::meta::decode_key(key, &mut decoded) {
            Some(len) => &decoded[..len],
            None => {
                reply(out, false, b"CLIENT_ERROR error decoding key");
                if cmd == MetaCmd::Set {
                    *swallow = datalen + 2;
                }
                return Step::Done(n);
            }
        }
    } else {
        key
    };
    match cmd {
        MetaCmd::Noop => {
            out.put(b"MN\r\n");
            Step::Done(n)
        }
        MetaCmd::Debug => {
            debug(key, ctx, out);
            Step::Done(n)
        }
        MetaCmd::Get => {
            get(key, shown, flags, ctx, out);
            Step::Done(n)
        }
        MetaCmd::Delete => {
            delete(key, shown, flags, ctx, out);
            Step::Done(n)
        }
        MetaCmd::Arith => {
            arith(key, shown, flags, ctx, out);
            Step::Done(n)
        }
        MetaCmd::Set => {
            let cf = flags.get(b'F').and_then(u32_token).unwrap_or(0);
            if !ctx.cache.fits(key.len(), datalen, cf) {
                ctx.counters.store_too_large.inc();
                reply(out, false, b"SERVER_ERROR object too large for cache");
                *swallow = datalen + 2;
                return Step::Done(n);
            }
            let Some(block) = data.get(n..n + datalen + 2) else { return Step::Incomplete };
            if &block[datalen..] != b"\r\n" {
                reply(out, false, b"CLIENT_ERROR bad data chunk");
                return Step::Done(n + datalen + 2);
            }
            set(key, shown, &block[..datalen], flags, ctx, out);
            Step::Done(n + datalen + 2)
        }
    }
}

/// Appends the return flags asked for (in the order asked).
fn ret_flags(l: &mut Line, flags: Flags<'_>, key: &[u8], it: Option<&Item<'_>>, now: u32, prev: (bool, u32)) {
    ret_flags_or(l, flags, key, it, now, prev, false)
}

/// As [`ret_flags`]; with `zero_cas`, `c` without an item returns `c0` (a failed meta set
/// returns the CAS it set: none).
fn ret_flags_or(
    l: &mut Line,
    flags: Flags<'_>,
    key: &[u8],
    it: Option<&Item<'_>>,
    now: u32,
    prev: (bool, u32),
    zero_cas: bool,
) {
    for (f, tok) in flags.iter() {
        match (f, it) {
            (b'c', None) if zero_cas => {
                l.s(b" c0");
            }
            (b'O', _) => {
                l.s(b" O").s(tok);
            }
            (b'k', _) => {
                l.s(b" k").s(key);
            }
            (b'c', Some(it)) => {
                l.s(b" c").n(it.cas);
            }
            (b'f', Some(it)) => {
                l.s(b" f").n(u64::from(it.flags));
            }
            (b's', Some(it)) => {
                l.s(b" s").n(it.value.len() as u64);
            }
            (b't', Some(it)) => {
                l.s(b" t").i(if it.exptime == 0 { -1 } else { i64::from(it.exptime) - i64::from(now) });
            }
            (b'h', Some(_)) => {
                l.s(if prev.0 { b" h1" } else { b" h0" });
            }
            (b'l', Some(_)) => {
                l.s(b" l").n(u64::from(now.saturating_sub(prev.1)));
            }
            _ => {}
        }
    }
    // A returned base64 key is marked as such, after the other flags.
    if flags.has(b'k') && flags.has(b'b') {
        l.s(b" b");
    }
}

fn ttl(tok: Option<&[u8]>, ctx: &Ctx<'_>) -> Result<Option<u32>, ()> {
    match tok {
        None => Ok(None),
        Some(t) => i32_token(t).map(|e| Some(ctx.cache.realtime(i64::from(e), ctx.now))).ok_or(()),
    }
}

/// The `C` flag: 0 if absent; `C0` compares against a unique no item has.
fn cas_flag(flags: Flags<'_>) -> Option<u64> {
    match flags.get(b'C').map(u64_token) {
        None => Some(0),
        Some(Some(0)) => Some(u64::MAX),
        Some(c) => c,
    }
}

fn get(key: &[u8], shown: &[u8], flags: Flags<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Out) {
    let Ok(touch) = ttl(flags.get(b'T'), ctx) else { return reply(out, false, BAD_TOKEN_MG) };
    let Ok(vivify) = ttl(flags.get(b'N'), ctx) else { return reply(out, false, BAD_TOKEN_MG) };
    let recache = match flags.get(b'R').map(u32_token) {
        None => None,
        Some(Some(r)) => Some(r),
        Some(None) => return reply(out, false, BAD_TOKEN_MG),
    };
    let c = ctx.counters;
    c.cmd_get.inc();
    if touch.is_some() {
        c.cmd_touch.inc();
    }
    let mut l = ctx.cache.lock(key);
    let (id, created) = match (l.find(key, ctx.now), vivify) {
        (Some(id), _) => (id, false),
        (None, Some(exp)) => {
            c.get_misses.inc();
            // The miss becomes an empty item whose creator is told to fill it (`W`).
            match l.store(key, Mode::Add, 0, exp, b"", 0, ctx.now) {
                Stored::Stored(_) => match l.find(key, ctx.now) {
                    Some(id) => (id, true),
                    None => return reply(out, flags.has(b'q'), b"EN"),
                },
                _ => return reply(out, false, b"SERVER_ERROR out of memory storing object"),
            }
        }
        (None, None) => {
            c.get_misses.inc();
            if touch.is_some() {
                c.touch_misses.inc();
            }
            return reply(out, flags.has(b'q'), b"EN");
        }
    };
    let before = l.shard.item(id);
    let prev = (before.fetched, before.time);
    if !flags.has(b'u') {
        l.shard.touch_read(id, ctx.now);
    }
    if let Some(e) = touch {
        l.shard.set_exptime(id, e);
        c.touch_hits.inc();
    }
    if !created {
        c.get_hits.inc();
    }
    let it = l.shard.item(id);
    let expiring = matches!(recache, Some(r) if it.exptime != 0 && it.exptime.saturating_sub(ctx.now) < r);
    let win = !it.token_sent && (created || it.stale || expiring);
    let mut line = Line::new();
    let v = flags.has(b'v');
    if v {
        line.s(b"VA ").n(it.value.len() as u64);
    } else {
        line.s(b"HD");
    }
    ret_flags(&mut line, flags, shown, Some(&it), ctx.now, prev);
    if it.token_sent {
        line.s(b" Z");
    }
    if it.stale {
        line.s(b" X");
    }
    if win {
        line.s(b" W");
    }
    line.s(b"\r\n");
    out.put(line.bytes());
    if v {
        out.put(it.value);
        out.put(b"\r\n");
    }
    if win {
        let stale = it.stale;
        l.shard.set_marks(id, stale, true);
    }
}

fn set(key: &[u8], shown: &[u8], value: &[u8], flags: Flags<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Out) {
    ctx.counters.cmd_set.inc();
    let mode = match flags.get(b'M') {
        None | Some(b"S" | b"s") => Mode::Set,
        Some(b"E" | b"e") => Mode::Add,
        Some(b"A" | b"a") => Mode::Append,
        Some(b"P" | b"p") => Mode::Prepend,
        Some(b"R" | b"r") => Mode::Replace,
        Some(_) => return reply(out, false, b"CLIENT_ERROR invalid mode for ms M token"),
    };
    let Ok(exp) = ttl(flags.get(b'T'), ctx) else { return reply(out, false, BAD_TOKEN_MS) };
    let cf = match flags.get(b'F').map(u32_token) {
        None => 0,
        Some(Some(f)) => f,
        Some(None) => return reply(out, false, BAD_TOKEN_MS),
    };
    let Some(cas) = cas_flag(flags) else { return reply(out, false, BAD_TOKEN_MG) };
    let mut l = ctx.cache.lock(key);
    let r = if flags.has(b'I') {
        l.store_invalidating(key, mode, cf, exp.unwrap_or(0), value, cas, ctx.now)
    } else {
        l.store(key, mode, cf, exp.unwrap_or(0), value, cas, ctx.now)
    };
    let c = ctx.counters;
    let q = flags.has(b'q');
    let mut line = Line::new();
    let (code, quiet): (&[u8], bool) = match r {
        Stored::Stored(_) => {
            if cas != 0 {
                c.cas_hits.inc();
            }
            (b"HD", q)
        }
        Stored::NotStored => (b"NS", false),
        Stored::Exists => {
            c.cas_badval.inc();
            (b"EX", false)
        }
        Stored::NotFound => {
            c.cas_misses.inc();
            (b"NF", false)
        }
        Stored::TooLarge => {
            c.store_too_large.inc();
            return reply(out, false, b"SERVER_ERROR object too large for cache");
        }
        Stored::NoMemory => {
            c.store_no_memory.inc();
            return reply(out, false, b"SERVER_ERROR out of memory storing object");
        }
    };
    if quiet {
        return;
    }
    line.s(code);
    let it = match r {
        Stored::Stored(_) => l.find(key, ctx.now).map(|id| l.shard.item(id)),
        _ => None,
    };
    ret_flags_or(&mut line, flags, shown, it.as_ref(), ctx.now, (false, ctx.now), true);
    line.s(b"\r\n");
    out.put(line.bytes());
}

fn delete(key: &[u8], shown: &[u8], flags: Flags<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Out) {
    let Some(cas) = cas_flag(flags) else { return reply(out, false, BAD_TOKEN_MD_MA) };
    let Ok(exp) = ttl(flags.get(b'T'), ctx) else { return reply(out, false, BAD_TOKEN_MD_MA) };
    let mut l = ctx.cache.lock(key);
    let r = if flags.has(b'I') { l.invalidate(key, cas, exp, ctx.now) } else { l.delete(key, cas, ctx.now) };
    let code: &[u8] = match r {
        Stored::Stored(_) => {
            ctx.counters.delete_hits.inc();
            b"HD"
        }
        Stored::Exists => b"EX",
        _ => {
            ctx.counters.delete_misses.inc();
            b"NF"
        }
    };
    // Quiet mode hides only success: a client pipelining deletes still learns of misses.
    if flags.has(b'q') && code == b"HD" {
        return;
    }
    let mut line = Line::new();
    line.s(code);
    ret_flags(&mut line, flags, shown, None, ctx.now, (false, ctx.now));
    line.s(b"\r\n");
    out.put(line.bytes());
}

fn arith(key: &[u8], shown: &[u8], flags: Flags<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Out) {
    let incr = match flags.get(b'M') {
        None | Some(b"I" | b"i" | b"+") => true,
        Some(b"D" | b"d" | b"-") => false,
        Some(_) => return reply(out, false, b"CLIENT_ERROR invalid mode for ma M token"),
    };
    let delta = match flags.get(b'D').map(u64_token) {
        None => 1,
        Some(Some(d)) => d,
        Some(None) => return reply(out, false, BAD_TOKEN_MD_MA),
    };
    let initial = match flags.get(b'J').map(u64_token) {
        None => 0,
        Some(Some(j)) => j,
        Some(None) => return reply(out, false, BAD_TOKEN_MD_MA),
    };
    let Ok(vivify) = ttl(flags.get(b'N'), ctx) else { return reply(out, false, BAD_TOKEN_MD_MA) };
    let Ok(touch) = ttl(flags.get(b'T'), ctx) else { return reply(out, false, BAD_TOKEN_MD_MA) };
    let Some(cas) = cas_flag(flags) else { return reply(out, false, BAD_TOKEN_MD_MA) };
    let c = ctx.counters;
    let mut l = ctx.cache.lock(key);
    let r = l.arith_or_create(key, incr, delta, cas, vivify.map(|exp| (initial, exp)), ctx.now);
    let (hits, misses) = if incr { (&c.incr_hits, &c.incr_misses) } else { (&c.decr_hits, &c.decr_misses) };
    let q = flags.has(b'q');
    match r {
        Arith::Value(v, _) => {
            hits.inc();
            if let Some(e) = touch {
                if let Some(id) = l.find(key, ctx.now) {
                    l.shard.set_exptime(id, e);
                }
            }
            let it = l.find(key, ctx.now).map(|id| l.shard.item(id));
            let mut line = Line::new();
            let mut d = [0u8; 20];
            let digits = crate::cache::format_u64(v, &mut d);
            if flags.has(b'v') {
                line.s(b"VA ").n(digits.len() as u64);
            } else if q {
                return;
            } else {
                line.s(b"HD");
            }
            ret_flags(&mut line, flags, shown, it.as_ref(), ctx.now, (false, ctx.now));
            line.s(b"\r\n");
            out.put(line.bytes());
            if flags.has(b'v') {
                out.put(digits);
                out.put(b"\r\n");
            }
        }
        Arith::NotFound => {
            misses.inc();
            reply(out, q, b"NF");
        }
        Arith::Exists => reply(out, false, b"EX"),
        Arith::NonNumeric => reply(out, false, b"CLIENT_ERROR cannot increment or decrement non-numeric value"),
        Arith::NoMemory => reply(out, false, b"SERVER_ERROR out of memory"),
    }
}

fn debug(key: &[u8], ctx: &mut Ctx<'_>, out: &mut dyn Out) {
    let mut l = ctx.cache.lock(key);
    let Some(id) = l.find(key, ctx.now) else { return reply(out, false, b"EN") };
    let it = l.shard.item(id);
    let mut line = Line::new();
    line.s(b"ME ").s(key).s(b" exp=");
    // memcached prints the time since expiry here (negative while the item lives).
    line.i(if it.exptime == 0 { -1 } else { i64::from(ctx.now) - i64::from(it.exptime) });
    line.s(b" la=").n(u64::from(ctx.now.saturating_sub(it.time)));
    line.s(b" cas=").n(it.cas);
    line.s(if it.fetched { b" fetch=yes" } else { b" fetch=no" });
    line.s(b" cls=").n(l.shard.class_index(id) as u64 + 1);
    line.s(b" size=").n(crate::cache::item_size(key.len(), it.value.len(), it.flags) as u64);
    line.s(b"\r\n");
    out.put(line.bytes());
}
