//! A replica's side of a connection, as a Redis primary serves it: REPLCONF, PSYNC (a full
//! sync by RDB file, or a continuation from the backlog), SYNC (the old form, and
//! `redis-cli --rdb`), then the stream; and ROLE.

use crate::command::{Argv, Ctx, Done};
use crate::repl::feed::{Feed, Replica};
use crate::repl::rdb;
use resp::reply::{self, Sink};
use std::sync::atomic::Ordering;

/// Where a replica connection is.
pub(super) enum Follower {
    /// Its snapshot was taken at change `last`; it goes out (after `header`) once the stream
    /// has passed that change, from where the stream then continues.
    Loading {
        last: u64,
        /// PSYNC's +FULLRESYNC line goes first (SYNC has none).
        psync: bool,
        /// Close after the file (REPLCONF rdb-only: `redis-cli --rdb`).
        rdb_only: bool,
        rdb: Vec<u8>,
    },
    /// Receiving the stream from offset `next`.
    Streaming { next: u64 },
}

/// A WAIT in progress: the client's changes up to `seq`, acknowledged by `need` replicas,
/// or until `deadline_ms` (0: none).
#[derive(Clone, Copy)]
pub(super) struct AckWait {
    pub(super) seq: u64,
    pub(super) need: usize,
    pub(super) deadline_ms: i64,
}

/// The connection's replica state.
#[derive(Default)]
pub(super) struct ReplicaConn {
    /// The port it says it serves on.
    port: u16,
    rdb_only: bool,
    /// Its number in the feed, once it synced.
    pub(super) id: Option<u64>,
    pub(super) follower: Option<Follower>,
}

fn arg_u64(v: &[u8]) -> Option<u64> {
    std::str::from_utf8(v).ok()?.parse().ok()
}

impl ReplicaConn {
    /// Handles `a` if it is a replication command; None: others take it.
    pub(super) fn handle(&mut self, a: Argv<'_>, ctx: &mut Ctx<'_>, peer: &str, out: &mut dyn Sink) -> Option<Done> {
        let name = a.get(0);
        let is = |w: &str| name.eq_ignore_ascii_case(w.as_bytes());
        if is("role") {
            role(ctx, out);
        } else if is("replconf") {
            self.replconf(a, ctx, out);
        } else if is("psync") || is("sync") {
            let Some(feed) = ctx.info.feed() else {
                reply::error(out, b"ERR replication is not served here");
                return Some(Done::default());
            };
            if self.follower.is_some() {
                // As Redis: a second sync on one connection is ignored.
                return Some(Done::default());
            }
            let psync = is("psync");
            if psync && a.len() != 3 {
                reply::error(out, b"ERR wrong number of arguments for 'psync' command");
                return Some(Done::default());
            }
            // PSYNC <replid> <offset of the first byte wanted>: our offsets count from 0.
            let wanted = if psync { arg_u64(a.get(2)).and_then(|o| o.checked_sub(1)) } else { None };
            if let Some(next) = wanted.filter(|&n| !self.rdb_only && feed.can_continue(a.get(1), n)) {
                out.put(format!("+CONTINUE {}\r\n", feed.replid()).as_bytes());
                feed.syncs.partial_ok.fetch_add(1, Ordering::Relaxed);
                self.attach(feed, peer, true, ctx.now_ms);
                self.follower = Some(Follower::Streaming { next });
                return Some(Done::default());
            }
            if psync && a.get(1) != b"?" {
                feed.syncs.partial_err.fetch_add(1, Ordering::Relaxed);
            }
            if !self.rdb_only {
                feed.syncs.full.fetch_add(1, Ordering::Relaxed);
            }
            // The keyspace held still: the snapshot is exactly the changes up to `last`.
            let (last, file) = {
                let _all = ctx.ks.exclusive();
                let last = ctx.journal.last();
                if !self.rdb_only {
                    feed.start_sync(last, ctx.now_ms);
                }
                let file = match ctx.info.databases() {
                    Some(dbs) => rdb::write(dbs.iter(), ctx.now_ms, !self.rdb_only),
                    None => rdb::write([ctx.ks], ctx.now_ms, !self.rdb_only),
                };
                (last, file)
            };
            if !self.rdb_only {
                self.attach(feed, peer, false, ctx.now_ms);
            }
            self.follower = Some(Follower::Loading { last, psync, rdb_only: self.rdb_only, rdb: file });
        } else {
            return None;
        }
        Some(Done::default())
    }

    fn attach(&mut self, feed: &Feed, peer: &str, online: bool, now_ms: i64) {
        let r = Replica { ip: peer.to_string(), port: self.port, ack: 0, ack_ms: now_ms, online };
        self.id = Some(feed.attach(r));
    }

    fn replconf(&mut self, a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) {
        if a.len().is_multiple_of(2) {
            reply::error(out, b"ERR syntax error");
            return;
        }
        let mut i = 1;
        while i + 1 < a.len() {
            let (opt, v) = (a.get(i), a.get(i + 1));
            if opt.eq_ignore_ascii_case(b"ack") {
                // Acknowledgements get no reply.
                if let (Some(feed), Some(id), Some(off)) = (ctx.info.feed(), self.id, arg_u64(v)) {
                    feed.update(id, false, Some(off), ctx.now_ms);
                }
                return;
            } else if opt.eq_ignore_ascii_case(b"listening-port") {
                match arg_u64(v).and_then(|p| u16::try_from(p).ok()) {
                    Some(p) => self.port = p,
                    None => {
                        reply::error(out, b"ERR value is not an integer or out of range");
                        return;
                    }
                }
            } else if opt.eq_ignore_ascii_case(b"rdb-only") {
                self.rdb_only = v == b"1";
            } else if opt.eq_ignore_ascii_case(b"getack") {
                return;
            } else if !(opt.eq_ignore_ascii_case(b"capa") || opt.eq_ignore_ascii_case(b"ip-address")) {
                let o = String::from_utf8_lossy(opt);
                reply::error(out, format!("ERR Unrecognized REPLCONF option: {o}").as_bytes());
                return;
            }
            i += 2;
        }
        reply::ok(out);
    }
}

/// ROLE, as a primary or a replica answers it.
fn role(ctx: &Ctx<'_>, out: &mut dyn Sink) {
    if let Some(l) = ctx.info.upstream() {
        let state = if l.up {
            "connected"
        } else if l.syncing {
            "sync"
        } else {
            "connect"
        };
        reply::array(out, 5);
        reply::bulk(out, b"slave");
        reply::bulk(out, l.host.as_bytes());
        reply::int(out, i64::from(l.port));
        reply::bulk(out, state.as_bytes());
        reply::int(out, l.offset as i64);
        return;
    }
    let (offset, replicas) = ctx.info.feed().map_or((0, Vec::new()), |f| (f.total(), f.replicas()));
    let online: Vec<&Replica> = replicas.iter().filter(|r| r.online).collect();
    reply::array(out, 3);
    reply::bulk(out, b"master");
    reply::int(out, offset as i64);
    reply::array(out, online.len());
    for r in online {
        reply::array(out, 3);
        reply::bulk(out, r.ip.as_bytes());
        reply::bulk(out, r.port.to_string().as_bytes());
        reply::bulk(out, r.ack.to_string().as_bytes());
    }
}

/// WAIT's arguments: the replicas needed and the deadline (0: none); None with the error
/// written.
pub(super) fn wait_args(a: Argv<'_>, now_ms: i64, out: &mut dyn Sink) -> Option<(usize, i64)> {
    if a.len() != 3 {
        reply::error(out, b"ERR wrong number of arguments for 'wait' command");
        return None;
    }
    let Some(n) = resp::num::parse_i64(a.get(1)) else {
        reply::error(out, b"ERR value is not an integer or out of range");
        return None;
    };
    let Some(t) = resp::num::parse_i64(a.get(2)) else {
        reply::error(out, b"ERR timeout is not an integer or out of range");
        return None;
    };
    if t < 0 {
        reply::error(out, b"ERR timeout is negative");
        return None;
    }
    Some((n.max(0) as usize, if t == 0 { 0 } else { now_ms.saturating_add(t) }))
}
