//! The binary protocol, answered as memcached 1.6 answers it (quiet variants answer only
//! hits and errors; a request memcached cannot frame closes the connection).

use super::out::Out;
use super::{Ctx, Step};
use crate::cache::{Arith, Mode, Stored};
use memcache::binary::{self, op, Header, Status, HEADER};
use memcache::text::MAX_KEY;

fn respond(out: &mut dyn Out, h: &Header, status: Status, cas: u64, extras: &[u8], key: &[u8], value: &[u8]) {
    let body = (extras.len() + key.len() + value.len()) as u32;
    out.put(&binary::response(h.opcode, key.len() as u16, extras.len() as u8, status, body, h.opaque, cas));
    out.put(extras);
    out.put(key);
    out.put(value);
}

fn error(out: &mut dyn Out, h: &Header, status: Status) {
    respond(out, h, status, 0, &[], &[], status.text());
}

pub(super) fn step(data: &[u8], ctx: &mut Ctx<'_>, out: &mut dyn Out, swallow: &mut usize) -> Step {
    if data[0] != binary::REQUEST {
        ctx.counters.protocol_errors.inc();
        return Step::Close;
    }
    let Some(h) = binary::header(data) else { return Step::Incomplete };
    let Some(vlen) = h.valuelen() else {
        ctx.counters.protocol_errors.inc();
        return Step::Close;
    };
    let body = h.bodylen as usize;
    let (key_at, klen) = (HEADER + usize::from(h.extlen), usize::from(h.keylen));
    if klen > MAX_KEY {
        ctx.counters.protocol_errors.inc();
        error(out, &h, Status::Invalid);
        return Step::Close;
    }
    // A value larger than any item is refused before it arrives, and skipped as it does.
    if data.len() < HEADER + usize::from(h.extlen) {
        return Step::Incomplete;
    }
    let flags = if h.extlen == 8 { data.get(HEADER..HEADER + 4).map_or(0, |f| u32_at(f, 0)) } else { 0 };
    if !ctx.cache.fits(klen, vlen as usize, flags) {
        let Some(key) = data.get(key_at..key_at + klen) else { return Step::Incomplete };
        let mode = if matches!(h.opcode, op::SET | op::SETQ) { Mode::Set } else { Mode::Add };
        ctx.cache.lock(key).refuse_too_large(key, mode, ctx.now);
        ctx.counters.store_too_large.inc();
        error(out, &h, Status::TooLarge);
        *swallow = HEADER + body - (key_at + klen);
        return Step::Done(key_at + klen);
    }
    let Some(req) = data.get(..HEADER + body) else { return Step::Incomplete };
    let extras = &req[HEADER..key_at];
    let key = &req[key_at..key_at + klen];
    let value = &req[key_at + klen..];
    let quiet = binary::quiet(h.opcode);
    let n = HEADER + body;
    let c = ctx.counters;
    match h.opcode {
        op::GET | op::GETQ | op::GETK | op::GETKQ | op::GAT | op::GATQ | op::GATK | op::GATKQ => {
            let touch = matches!(h.opcode, op::GAT | op::GATQ | op::GATK | op::GATKQ);
            let want = if touch { 4 } else { 0 };
            if extras.len() != want || klen == 0 || !value.is_empty() {
                return invalid(out, &h, ctx);
            }
            let exp = touch.then(|| ctx.cache.realtime(i64::from(u32_at(extras, 0)), ctx.now));
            let with_key = matches!(h.opcode, op::GETK | op::GETKQ | op::GATK | op::GATKQ);
            c.cmd_get.inc();
            if touch {
                c.cmd_touch.inc();
            }
            let mut l = ctx.cache.lock(key);
            let got = l.get(key, ctx.now, exp);
            ctx.detail.record(key, crate::stats::DetailOp::Get(got.is_some()));
            match got {
                Some(it) => {
                    c.get_hits.inc();
                    if touch {
                        c.touch_hits.inc();
                    }
                    let k: &[u8] = if with_key { key } else { b"" };
                    respond(out, &h, Status::Ok, it.cas, &it.flags.to_be_bytes(), k, it.value);
                }
                None => {
                    c.get_misses.inc();
                    if touch {
                        c.touch_misses.inc();
                    }
                    if !quiet {
                        if with_key {
                            respond(out, &h, Status::NotFound, 0, &[], key, &[]);
                        } else {
                            error(out, &h, Status::NotFound);
                        }
                    }
                }
            }
        }
        op::SET | op::SETQ | op::ADD | op::ADDQ | op::REPLACE | op::REPLACEQ => {
            if extras.len() != 8 || klen == 0 {
                return invalid(out, &h, ctx);
            }
            c.cmd_set.inc();
            ctx.detail.record(key, crate::stats::DetailOp::Set);
            let mode = match h.opcode {
                op::SET | op::SETQ => Mode::Set,
                op::ADD | op::ADDQ => Mode::Add,
                _ => Mode::Replace,
            };
            let flags = u32_at(extras, 0);
            let exp = ctx.cache.realtime(i64::from(u32_at(extras, 4) as i32), ctx.now);
            let r = ctx.cache.lock(key).store(key, mode, flags, exp, value, h.cas, ctx.now);
            stored(out, &h, r, mode, quiet, ctx);
        }
        op::APPEND | op::APPENDQ | op::PREPEND | op::PREPENDQ => {
            if !extras.is_empty() || klen == 0 {
                return invalid(out, &h, ctx);
            }
            c.cmd_set.inc();
            let mode = if matches!(h.opcode, op::APPEND | op::APPENDQ) { Mode::Append } else { Mode::Prepend };
            let r = ctx.cache.lock(key).store(key, mode, 0, 0, value, h.cas, ctx.now);
            stored(out, &h, r, mode, quiet, ctx);
        }
        op::DELETE | op::DELETEQ => {
            if !extras.is_empty() || klen == 0 || !value.is_empty() {
                return invalid(out, &h, ctx);
            }
            ctx.detail.record(key, crate::stats::DetailOp::Delete);
            match ctx.cache.lock(key).delete(key, h.cas, ctx.now) {
                Stored::Stored(_) => {
                    c.delete_hits.inc();
                    if !quiet {
                        respond(out, &h, Status::Ok, 0, &[], &[], &[]);
                    }
                }
                Stored::Exists => error(out, &h, Status::Exists),
                _ => {
                    c.delete_misses.inc();
                    error(out, &h, Status::NotFound);
                }
            }
        }
        op::INCREMENT | op::INCREMENTQ | op::DECREMENT | op::DECREMENTQ => {
            if extras.len() != 20 || klen == 0 || !value.is_empty() {
                return invalid(out, &h, ctx);
            }
            let incr = matches!(h.opcode, op::INCREMENT | op::INCREMENTQ);
            let delta = u64::from_be_bytes(extras[0..8].try_into().expect("8 bytes"));
            let initial = u64::from_be_bytes(extras[8..16].try_into().expect("8 bytes"));
            let exptime = u32_at(extras, 16);
            // A miss creates the counter with its initial value, unless the expiry says not to.
            let create =
                (exptime != u32::MAX).then(|| (initial, ctx.cache.realtime(i64::from(exptime as i32), ctx.now)));
            let r = ctx.cache.lock(key).arith_or_create(key, incr, delta, h.cas, create, ctx.now);
            let (hits, misses) = if incr { (&c.incr_hits, &c.incr_misses) } else { (&c.decr_hits, &c.decr_misses) };
            match r {
                Arith::Value(v, cas) => {
                    hits.inc();
                    if !quiet {
                        respond(out, &h, Status::Ok, cas, &[], &[], &v.to_be_bytes());
                    }
                }
                Arith::NotFound => {
                    misses.inc();
                    error(out, &h, Status::NotFound);
                }
                Arith::Exists => error(out, &h, Status::Exists),
                Arith::NonNumeric => error(out, &h, Status::NonNumeric),
                Arith::NoMemory => error(out, &h, Status::NoMemory),
            }
        }
        op::TOUCH => {
            if extras.len() != 4 || klen == 0 || !value.is_empty() {
                return invalid(out, &h, ctx);
            }
            c.cmd_touch.inc();
            let exp = ctx.cache.realtime(i64::from(u32_at(extras, 0)), ctx.now);
            let mut l = ctx.cache.lock(key);
            // Answered as a get without the value: the flags and the CAS unique.
            match l.get(key, ctx.now, Some(exp)) {
                Some(it) => {
                    c.touch_hits.inc();
                    respond(out, &h, Status::Ok, it.cas, &it.flags.to_be_bytes(), &[], &[]);
                }
                None => {
                    c.touch_misses.inc();
                    error(out, &h, Status::NotFound);
                }
            }
        }
        op::QUIT | op::QUITQ => {
            if !quiet {
                respond(out, &h, Status::Ok, 0, &[], &[], &[]);
            }
            return Step::Close;
        }
        op::FLUSH | op::FLUSHQ => {
            if !(extras.is_empty() || extras.len() == 4) || klen != 0 || !value.is_empty() {
                return invalid(out, &h, ctx);
            }
            c.cmd_flush.inc();
            let delay = if extras.len() == 4 { u32_at(extras, 0) } else { 0 };
            let at = (delay > 0).then(|| ctx.cache.realtime(i64::from(delay), ctx.now));
            ctx.cache.flush_all(at, ctx.now);
            if !quiet {
                respond(out, &h, Status::Ok, 0, &[], &[], &[]);
            }
        }
        op::NOOP => respond(out, &h, Status::Ok, 0, &[], &[], &[]),
        op::VERSION => respond(out, &h, Status::Ok, 0, &[], &[], ctx.info.version().as_bytes()),
        op::VERBOSITY => respond(out, &h, Status::Ok, 0, &[], &[], &[]),
        op::STAT if key == b"reset" || key.starts_with(b"detail") => {
            // As memcached's process_bin_stat: reset and detail on/off answer with the
            // terminator alone, detail dump with one stat "detail" holding the text dump.
            match key {
                b"reset" => ctx.info.reset(),
                b"detail on" => ctx.detail.set_on(true),
                b"detail off" => ctx.detail.set_on(false),
                b"detail dump" => respond(out, &h, Status::Ok, 0, &[], b"detail", &ctx.detail.dump()),
                _ => {
                    error(out, &h, Status::NotFound);
                    return Step::Done(n);
                }
            }
            respond(out, &h, Status::Ok, 0, &[], &[], &[]);
        }
        op::STAT => {
            let mut pairs: Vec<(String, String)> = Vec::new();
            let known = ctx.info.stats(key, ctx.now, &mut |k, v| pairs.push((k.to_string(), v.to_string())));
            if !known {
                error(out, &h, Status::NotFound);
            } else {
                for (k, v) in &pairs {
                    respond(out, &h, Status::Ok, 0, &[], k.as_bytes(), v.as_bytes());
                }
                respond(out, &h, Status::Ok, 0, &[], &[], &[]);
            }
        }
        _ => error(out, &h, Status::UnknownCommand),
    }
    Step::Done(n)
}

fn stored(out: &mut dyn Out, h: &Header, r: Stored, mode: Mode, quiet: bool, ctx: &Ctx<'_>) {
    let c = ctx.counters;
    match r {
        Stored::Stored(cas) => {
            if h.cas != 0 {
                c.cas_hits.inc();
            }
            if !quiet {
                respond(out, h, Status::Ok, cas, &[], &[], &[]);
            }
        }
        // memcached names why: an add found the key, a replace did not.
        Stored::NotStored => match mode {
            Mode::Add => error(out, h, Status::Exists),
            Mode::Replace => error(out, h, Status::NotFound),
            _ => error(out, h, Status::NotStored),
        },
        Stored::Exists => {
            c.cas_badval.inc();
            error(out, h, Status::Exists)
        }
        Stored::NotFound => {
            c.cas_misses.inc();
            error(out, h, Status::NotFound)
        }
        Stored::TooLarge => {
            c.store_too_large.inc();
            error(out, h, Status::TooLarge)
        }
        Stored::NoMemory => {
            c.store_no_memory.inc();
            error(out, h, Status::NoMemory)
        }
    }
}

/// A request whose lengths do not fit its command: answered, then the connection is closed,
/// as memcached does (what follows cannot be trusted to be framed as the client meant).
fn invalid(out: &mut dyn Out, h: &Header, ctx: &Ctx<'_>) -> Step {
    ctx.counters.protocol_errors.inc();
    error(out, h, Status::Invalid);
    Step::Close
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
