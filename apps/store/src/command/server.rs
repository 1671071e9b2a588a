//! Connection and server commands.

use super::{arity_error, int_arg, Argv, Ctx, Done};
use resp::reply::{self, Sink};

pub(super) fn ping(a: Argv<'_>, _ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    match a.len() {
        1 => reply::simple(out, b"PONG"),
        2 => reply::bulk(out, a.get(1)),
        _ => arity_error(out, "ping"),
    }
    Done::default()
}

pub(super) fn echo(a: Argv<'_>, _ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    reply::bulk(out, a.get(1));
    Done::default()
}

pub(super) fn time(_a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(ctx.now_ms * 1000, |d| d.as_micros() as i64);
    reply::array(out, 2);
    reply::bulk(out, (us / 1_000_000).to_string().as_bytes());
    reply::bulk(out, (us % 1_000_000).to_string().as_bytes());
    Done::default()
}

pub(super) fn select(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(n) = int_arg(a.get(1), out) else { return Done::default() };
    let info = ctx.info;
    let target = match usize::try_from(n) {
        Ok(n) if n == ctx.ks.index() => Some(ctx.ks),
        Ok(n) => info.databases().and_then(|d| d.db(n)),
        Err(_) => None,
    };
    match target {
        Some(ks) => {
            ctx.ks = ks;
            ctx.journal.select(ks.index());
            reply::ok(out);
        }
        None => reply::error(out, b"ERR DB index is out of range"),
    }
    Done::default()
}

pub(super) fn quit(_a: Argv<'_>, _ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    reply::ok(out);
    Done { close: true, ..Done::default() }
}

pub(super) fn info(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let sections: Vec<String> = (1..a.len()).map(|i| String::from_utf8_lossy(a.get(i)).to_ascii_lowercase()).collect();
    let text = ctx.info.info(ctx.ks, &sections);
    reply::verbatim(out, text.as_bytes());
    Done::wait(ctx.journal.last())
}

/// What redis-cli and redis-benchmark ask when they start: the command table is not
/// described (an empty answer, which both take), its size is.
pub(super) fn command(a: Argv<'_>, _ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    if a.len() == 1 {
        reply::array(out, 0);
        return Done::default();
    }
    let sub = a.get(1);
    let is = |s: &str| sub.eq_ignore_ascii_case(s.as_bytes());
    if is("count") && a.len() == 2 {
        reply::int(out, super::count() as i64);
    } else if is("docs") {
        reply::map(out, 0);
    } else if is("info") {
        reply::array(out, 0);
    } else if is("count") {
        arity_error(out, "command|count");
    } else {
        unknown_subcommand(sub, "COMMAND", out);
    }
    Done::default()
}

/// Redis's answer to a subcommand `cmd` does not have.
pub(crate) fn unknown_subcommand(sub: &[u8], cmd: &str, out: &mut dyn Sink) {
    let mut t = b"ERR unknown subcommand '".to_vec();
    t.extend_from_slice(super::c_str(sub, 128));
    t.extend_from_slice(format!("'. Try {cmd} HELP.").as_bytes());
    reply::error(out, &t);
}

pub(super) fn config(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let sub = a.get(1);
    if sub.eq_ignore_ascii_case(b"get") {
        if a.len() < 3 {
            arity_error(out, "config|get");
            return Done::default();
        }
        let params = ctx.info.config();
        let hits: Vec<&(&str, String)> = params
            .iter()
            .filter(|(name, _)| (2..a.len()).any(|i| super::glob::matches(a.get(i), name.as_bytes(), true)))
            .collect();
        reply::map(out, hits.len());
        for (name, value) in hits {
            reply::bulk(out, name.as_bytes());
            reply::bulk(out, value.as_bytes());
        }
    } else if sub.eq_ignore_ascii_case(b"set")
        || sub.eq_ignore_ascii_case(b"resetstat")
        || sub.eq_ignore_ascii_case(b"rewrite")
    {
        reply::error(
            out,
            b"ERR sirocco store does not change its configuration at run time; restart it with the new one",
        );
    } else {
        unknown_subcommand(sub, "CONFIG", out);
    }
    Done::default()
}
