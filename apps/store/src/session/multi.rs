//! MULTI, EXEC, DISCARD, WATCH and UNWATCH: a connection's transaction, as Redis 7.0 runs it.
//! Commands after MULTI are checked (name, argument count) and queued; EXEC runs them with the
//! keyspace's gate held alone, so no other engine changes anything between them and their
//! changes take consecutive numbers in this engine's log — in one commit, so a crash keeps the
//! whole transaction or none of it. A WATCHed key changed (or expired) since WATCH makes EXEC
//! answer a null array and run nothing.

use crate::command::{execute_held, validate, Argv, Ctx, Done};
use resp::reply::{self, Sink};
use resp::{Parsed, Parser};

/// A transaction being queued.
#[derive(Default)]
pub(super) struct Multi {
    /// The queued requests, as received (RESP or inline), one after another.
    requests: Vec<u8>,
    count: usize,
    /// A command was refused while queueing: EXEC discards the transaction.
    dirty: bool,
}

/// A key under WATCH, as it was when watched.
pub(super) struct Watched {
    /// Its database.
    db: usize,
    key: Vec<u8>,
    live: bool,
    /// The change its entry (or, missing, its shard's last removal) carried.
    seq: u64,
}

/// The transaction commands and their argument counts (Redis's arity).
const FAMILY: [(&str, i32); 5] = [("multi", 1), ("exec", 1), ("discard", 1), ("watch", -2), ("unwatch", 1)];

/// What the connection holds of transactions.
#[derive(Default)]
pub(super) struct Tx {
    multi: Option<Multi>,
    watched: Vec<Watched>,
}

impl Tx {
    /// Queued bytes (they count against the connection's output limit).
    /// Commands queued (-1: not in a MULTI), as CLIENT LIST shows it.
    pub(super) fn queued_count(&self) -> i64 {
        self.multi.as_ref().map_or(-1, |m| m.count as i64)
    }

    /// True between MULTI and EXEC or DISCARD.
    pub(super) fn in_multi(&self) -> bool {
        self.multi.is_some()
    }

    pub(super) fn queued_bytes(&self) -> usize {
        self.multi.as_ref().map_or(0, |m| m.requests.len())
    }

    /// Handles `a` if it is a transaction command or comes while one is queued; None: run it
    /// as usual.
    pub(super) fn handle(&mut self, a: Argv<'_>, req: &[u8], ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Option<Done> {
        let name = a.get(0);
        let family = FAMILY.iter().find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name));
        if let Some(&(n, arity)) = family {
            let ok = if arity >= 0 { a.len() == arity as usize } else { a.len() >= arity.unsigned_abs() as usize };
            if !ok {
                let why = format!("wrong number of arguments for '{n}' command");
                if n == "exec" {
                    // A refused EXEC ends the transaction and the watches, as Redis's does.
                    reply::error(out, format!("EXECABORT Transaction discarded because of: {why}").as_bytes());
                    self.multi = None;
                    self.watched.clear();
                } else {
                    reply::error(out, format!("ERR {why}").as_bytes());
                    if let Some(m) = &mut self.multi {
                        m.dirty = true;
                    }
                }
                return Some(Done::default());
            }
            return Some(match n {
                "multi" => self.multi(out),
                "exec" => self.exec(ctx, out),
                "discard" => self.discard(out),
                "watch" => self.watch(a, ctx, out),
                _ => {
                    self.watched.clear();
                    reply::ok(out);
                    Done::default()
                }
            });
        }
        let m = self.multi.as_mut()?;
        // QUIT runs at once even inside a transaction, as in Redis.
        if name.eq_ignore_ascii_case(b"quit") {
            return None;
        }
        if validate(a, ctx, out).is_some() {
            m.requests.extend_from_slice(req);
            m.count += 1;
            reply::simple(out, b"QUEUED");
        } else {
            m.dirty = true;
        }
        Some(Done::default())
    }

    fn multi(&mut self, out: &mut dyn Sink) -> Done {
        if self.multi.is_some() {
            reply::error(out, b"ERR MULTI calls can not be nested");
        } else {
            self.multi = Some(Multi::default());
            reply::ok(out);
        }
        Done::default()
    }

    fn discard(&mut self, out: &mut dyn Sink) -> Done {
        if self.multi.take().is_none() {
            reply::error(out, b"ERR DISCARD without MULTI");
        } else {
            self.watched.clear();
            reply::ok(out);
        }
        Done::default()
    }

    fn watch(&mut self, a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
        if self.multi.is_some() {
            reply::error(out, b"ERR WATCH inside MULTI is not allowed");
            return Done::default();
        }
        let _gate = ctx.ks.shared();
        let mut wait = 0;
        for i in 1..a.len() {
            let key = a.get(i);
            if self.watched.iter().any(|w| w.key == key && w.db == ctx.ks.index()) {
                continue;
            }
            let mut s = ctx.ks.lock_key(key);
            let live = s.live(key, ctx.now_ms).is_some();
            let seq = s.seq_of(key);
            wait = wait.max(seq);
            self.watched.push(Watched { db: ctx.ks.index(), key: key.to_vec(), live, seq });
        }
        reply::ok(out);
        Done { wait, ..Done::default() }
    }

    fn exec(&mut self, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
        let Some(m) = self.multi.take() else {
            reply::error(out, b"ERR EXEC without MULTI");
            return Done::default();
        };
        let watched = std::mem::take(&mut self.watched);
        if m.dirty {
            reply::error(out, b"EXECABORT Transaction discarded because of previous errors.");
            return Done::default();
        }
        let _gate = ctx.ks.exclusive();
        let mut wait = 0;
        for w in &watched {
            let info = ctx.info;
            let ks = match info.databases().and_then(|d| d.db(w.db)) {
                Some(ks) => ks,
                None => ctx.ks,
            };
            let mut s = ks.lock_key(&w.key);
            let live = s.live(&w.key, ctx.now_ms).is_some();
            let seq = s.seq_of(&w.key);
            wait = wait.max(seq);
            if live != w.live || seq != w.seq {
                // Changed since WATCH (a missing key's shard lost another key meanwhile also
                // counts: its removal cannot be told apart from this key's creation and removal).
                reply::null_array(out);
                return Done { wait, ..Done::default() };
            }
        }
        reply::array(out, m.count);
        let mut p = Parser::new(resp::request::REDIS_MAX_BULK);
        let mut at = 0;
        while at < m.requests.len() {
            let Parsed::Request { consumed } = p.parse(&m.requests[at..]) else { break };
            let req = &m.requests[at..at + consumed];
            if !p.args.is_empty() {
                let a = Argv::new(&p.args, req);
                let done = execute_held(a, ctx, out);
                if done.block.is_some() {
                    // Inside a transaction nothing blocks: the timeout's answer at once.
                    Done::timeout_answer(a.get(0), out);
                }
                wait = wait.max(done.wait);
            }
            at += consumed;
        }
        Done { wait, ..Done::default() }
    }
}
