//! Commands, sans-IO: the arguments of one request in, keyspace operations and log records,
//! the reply out — and the sequence number the reply must wait for (the change it made or
//! the value it showed must be durable before any client sees it). Replies and errors are
//! Redis 7.0's, word for word.

mod blocking;
mod glob;
mod hashes;
pub(crate) use server::unknown_subcommand;
mod keys;
mod lists;
mod moves;
mod scan;
mod server;
mod sets;
mod strings;
mod zsets;

use crate::keyspace::{Entry, Keyspace, Shard, Value};
use crate::log::record::{Change, ListOp};
use resp::reply::{self, Sink};
use resp::Args;

/// Where changes go: each call takes the next sequence number, stages one log record of the
/// change, and returns the number. Called with the changed keys' shards locked.
pub trait Journal {
    /// Keys set to values: `(key, value, expire at ms or 0)`.
    fn sets(&mut self, items: &[(&[u8], &[u8], i64)]) -> u64;
    /// Keys removed.
    fn del(&mut self, keys: &[&[u8]]) -> u64;
    /// A key's expiry set (0: removed).
    fn expire(&mut self, key: &[u8], at_ms: i64) -> u64;
    /// Fields of the hash at `key` set; `fresh`: the key becomes a new hash (of these
    /// fields, expiring at `expire_ms`), replacing what it held.
    fn hash_set(&mut self, key: &[u8], fresh: bool, expire_ms: i64, fields: &[(&[u8], &[u8])]) -> u64;
    /// Fields of the hash at `key` removed (the key with them when none is left).
    fn hash_del(&mut self, key: &[u8], fields: &[&[u8]]) -> u64;
    /// A change to the list at `key` (see [`ListOp`]); `fresh`: it starts a new list
    /// expiring at `expire_ms`; `gone`: it leaves the list empty and the key removed.
    fn list(&mut self, key: &[u8], fresh: bool, gone: bool, expire_ms: i64, op: &ListOp<'_>) -> u64;
    /// Members of the set at `key` added (`add`) or removed; `fresh` and `gone` as for lists.
    fn members(&mut self, key: &[u8], fresh: bool, gone: bool, expire_ms: i64, add: bool, members: &[&[u8]]) -> u64;
    /// Any other change (a sorted set's, a key's whole value).
    fn record(&mut self, change: &Change<'_>) -> u64;
    /// Every key removed.
    fn flush(&mut self) -> u64;
    /// The changes that follow are in database `db` (SELECT).
    fn select(&mut self, _db: usize) {}
    /// The last number handed out (what a reply about the whole keyspace waits for).
    fn last(&self) -> u64;
}

/// What a server tells beyond the keys, for INFO and CONFIG GET.
pub trait Info {
    /// The INFO text for `sections` (lowercase; empty: the default ones).
    fn info(&self, ks: &Keyspace, sections: &[String]) -> String;
    /// CONFIG GET's parameters and their values.
    fn config(&self) -> Vec<(&'static str, String)>;
    /// Command `cmd` (an index of [`names`]) ran for `usec` microseconds, or was refused
    /// (INFO commandstats).
    fn count(&self, _cmd: usize, _usec: u64, _call: Call) {}
    /// The default user's password (`requirepass`), if connections must AUTH.
    fn password(&self) -> Option<&[u8]> {
        None
    }
    /// The replication feed, where replicas are served.
    fn feed(&self) -> Option<&crate::repl::feed::Feed> {
        None
    }
    /// Every database of the store (SELECT, FLUSHALL, a full sync); None: only the one in
    /// the context.
    fn databases(&self) -> Option<&crate::keyspace::Databases> {
        None
    }
    /// Every connection, for CLIENT LIST.
    fn clients(&self) -> Vec<std::sync::Arc<crate::session::ClientView>> {
        Vec::new()
    }
    /// CLIENT KILL marked connections: their engines are to look.
    fn killed_some(&self) {}
    /// The link to the primary, where this store is a replica (writes are then refused).
    fn upstream(&self) -> Option<crate::repl::follow::LinkState> {
        None
    }
}

/// How a command call ended, as INFO commandstats counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// It ran and answered.
    Done,
    /// It ran and answered with an error (`failed_calls`).
    Failed,
    /// It was refused before running: wrong number of arguments (`rejected_calls`).
    Rejected,
}

/// The commands' names, in the order [`Info::count`] numbers them.
pub fn names() -> impl Iterator<Item = &'static str> {
    COMMANDS.iter().map(|(n, ..)| *n)
}

/// Passes a reply on and notes whether it is an error reply.
struct Watch<'a> {
    out: &'a mut dyn Sink,
    first: Option<u8>,
}

impl Sink for Watch<'_> {
    fn put(&mut self, b: &[u8]) {
        if self.first.is_none() {
            self.first = b.first().copied();
        }
        self.out.put(b);
    }
    fn resp3(&self) -> bool {
        self.out.resp3()
    }
}

/// What a command runs against.
pub struct Ctx<'a> {
    /// The keys.
    pub ks: &'a Keyspace,
    /// The log.
    pub journal: &'a mut dyn Journal,
    /// Unix time now, in milliseconds.
    pub now_ms: i64,
    /// The server.
    pub info: &'a dyn Info,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Done {
    /// The sequence number that must be durable before the reply goes out (0: none).
    pub wait: u64,
    /// Close the connection after the reply (QUIT).
    pub close: bool,
    /// A blocking command found nothing to take: it wrote no reply, and is to run again
    /// until it does or its deadline passes (Unix ms; 0: none).
    pub block: Option<i64>,
}

impl Done {
    fn wait(seq: u64) -> Done {
        Done { wait: seq, close: false, block: None }
    }

    /// What a blocking command `name` answers where it may not block (in a transaction): a
    /// null array (a null bulk string for the moves).
    pub fn timeout_answer(name: &[u8], out: &mut dyn Sink) {
        if name.eq_ignore_ascii_case(b"blmove") || name.eq_ignore_ascii_case(b"brpoplpush") {
            reply::null(out);
        } else {
            reply::null_array(out);
        }
    }
}

/// The arguments of one request.
#[derive(Clone, Copy)]
pub struct Argv<'a> {
    args: &'a Args,
    buf: &'a [u8],
}

impl<'a> Argv<'a> {
    /// The arguments parsed into `args` from the request at the start of `buf`.
    pub fn new(args: &'a Args, buf: &'a [u8]) -> Argv<'a> {
        Argv { args, buf }
    }

    /// How many (the command's name included).
    pub fn len(&self) -> usize {
        self.args.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.args.is_empty()
    }

    /// Argument `i`.
    pub fn get(&self, i: usize) -> &'a [u8] {
        self.args.get(self.buf, i)
    }
}

/// `-ERR value is not an integer or out of range`.
const NOT_INT: &[u8] = b"ERR value is not an integer or out of range";
/// Redis's answer to a command on a key of another type.
pub const WRONGTYPE: &[u8] = b"WRONGTYPE Operation against a key holding the wrong kind of value";
/// `-ERR syntax error`.
const SYNTAX: &[u8] = b"ERR syntax error";

/// Logs `key` as now holding `value` whole, expiring at `expire_ms` (RENAME, COPY): one record,
/// the same a snapshot holds for the key.
fn journal_whole(journal: &mut dyn Journal, key: &[u8], value: &Value, expire_ms: i64) -> u64 {
    crate::log::record::with_whole(key, value, expire_ms, |c| journal.record(c))
}

/// Stores `value` at `dst` in its locked shard (replacing any value and expiry), or removes
/// `dst` where `value` is None (an empty result: the STORE forms leave no empty value).
/// Returns the change a reply waits for.
fn store_or_remove(s: &mut Shard, dst: &[u8], value: Option<Value>, ctx: &mut Ctx<'_>) -> u64 {
    match value {
        None if s.live(dst, ctx.now_ms).is_none() => s.seq_of(dst),
        None => {
            let seq = ctx.journal.del(&[dst]);
            s.map.remove(dst);
            s.removed_seq = seq;
            seq
        }
        Some(v) => {
            let seq = journal_whole(ctx.journal, dst, &v, 0);
            s.map.insert(dst.into(), Entry { value: v, expire_ms: 0, seq });
            seq
        }
    }
}

/// A random number for RANDOMKEY and HRANDFIELD (xorshift per thread, seeded from the
/// standard library's random hasher keys: no cryptographic promise, as in Redis).
fn random() -> u64 {
    use std::cell::Cell;
    use std::hash::BuildHasher;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(std::hash::RandomState::new().hash_one(0u64) | 1);
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    })
}

/// Redis's argument count rules: `n` exactly, or at least `-n`.
fn arity_ok(arity: i32, n: usize) -> bool {
    if arity >= 0 {
        n == arity as usize
    } else {
        n >= arity.unsigned_abs() as usize
    }
}

fn arity_error(out: &mut dyn Sink, name: &str) {
    reply::error(out, format!("ERR wrong number of arguments for '{name}' command").as_bytes());
}

/// The command table: name, arity (as Redis's), handler.
type Handler = fn(Argv<'_>, &mut Ctx<'_>, &mut dyn Sink) -> Done;

const COMMANDS: &[(&str, i32, Handler)] = &[
    ("get", 2, strings::get),
    ("set", -3, strings::set),
    ("del", -2, keys::del),
    ("exists", -2, keys::exists),
    ("incr", 2, strings::incr),
    ("incrby", 3, strings::incrby),
    ("decr", 2, strings::decr),
    ("decrby", 3, strings::decrby),
    ("incrbyfloat", 3, strings::incrbyfloat),
    ("mget", -2, strings::mget),
    ("mset", -3, strings::mset),
    ("append", 3, strings::append),
    ("strlen", 2, strings::strlen),
    ("setex", 4, strings::setex),
    ("psetex", 4, strings::psetex),
    ("setnx", 3, strings::setnx),
    ("getset", 3, strings::getset),
    ("getdel", 2, strings::getdel),
    ("getex", -2, strings::getex),
    ("msetnx", -3, strings::msetnx),
    ("getrange", 4, strings::getrange),
    // SUBSTR is GETRANGE's old name, still served by Redis.
    ("substr", 4, strings::getrange),
    ("setrange", 4, strings::setrange),
    ("expire", -3, keys::expire),
    ("pexpire", -3, keys::pexpire),
    ("expireat", -3, keys::expireat),
    ("pexpireat", -3, keys::pexpireat),
    ("ttl", 2, keys::ttl),
    ("pttl", 2, keys::pttl),
    ("expiretime", 2, keys::expiretime),
    ("pexpiretime", 2, keys::pexpiretime),
    ("keys", 2, scan::keys),
    ("scan", -2, scan::scan),
    ("randomkey", 1, scan::randomkey),
    ("hscan", -3, scan::hscan),
    ("sscan", -3, scan::sscan),
    ("rename", 3, moves::rename),
    ("renamenx", 3, moves::renamenx),
    ("copy", -3, moves::copy),
    ("move", 3, moves::move_key),
    ("persist", 2, keys::persist),
    ("dbsize", 1, keys::dbsize),
    ("flushall", -1, keys::flushall),
    ("flushdb", -1, keys::flushall),
    ("swapdb", 3, keys::swapdb),
    ("type", 2, keys::type_of),
    ("hset", -4, hashes::hset),
    ("hmset", -4, hashes::hmset),
    ("hsetnx", 4, hashes::hsetnx),
    ("hget", 3, hashes::hget),
    ("hmget", -3, hashes::hmget),
    ("hdel", -3, hashes::hdel),
    ("hlen", 2, hashes::hlen),
    ("hstrlen", 3, hashes::hstrlen),
    ("hexists", 3, hashes::hexists),
    ("hkeys", 2, hashes::hkeys),
    ("hvals", 2, hashes::hvals),
    ("hgetall", 2, hashes::hgetall),
    ("hincrby", 4, hashes::hincrby),
    ("hincrbyfloat", 4, hashes::hincrbyfloat),
    ("hrandfield", -2, hashes::hrandfield),
    ("lpush", -3, lists::lpush),
    ("rpush", -3, lists::rpush),
    ("lpushx", -3, lists::lpushx),
    ("rpushx", -3, lists::rpushx),
    ("lpop", -2, lists::lpop),
    ("rpop", -2, lists::rpop),
    ("llen", 2, lists::llen),
    ("lrange", 4, lists::lrange),
    ("lindex", 3, lists::lindex),
    ("lset", 4, lists::lset),
    ("linsert", 5, lists::linsert),
    ("lrem", 4, lists::lrem),
    ("ltrim", 4, lists::ltrim),
    ("lmove", 5, lists::lmove),
    ("rpoplpush", 3, lists::rpoplpush),
    ("sadd", -3, sets::sadd),
    ("srem", -3, sets::srem),
    ("smembers", 2, sets::smembers),
    ("sismember", 3, sets::sismember),
    ("smismember", -3, sets::smismember),
    ("scard", 2, sets::scard),
    ("spop", -2, sets::spop),
    ("srandmember", -2, sets::srandmember),
    ("sinter", -2, sets::sinter),
    ("sunion", -2, sets::sunion),
    ("sdiff", -2, sets::sdiff),
    ("sinterstore", -3, sets::sinterstore),
    ("sunionstore", -3, sets::sunionstore),
    ("sdiffstore", -3, sets::sdiffstore),
    ("smove", 4, sets::smove),
    ("zadd", -4, zsets::zadd),
    ("zincrby", 4, zsets::zincrby),
    ("zrem", -3, zsets::zrem),
    ("zcard", 2, zsets::zcard),
    ("zscore", 3, zsets::zscore),
    ("zmscore", -3, zsets::zmscore),
    ("zrank", 3, zsets::zrank),
    ("zrevrank", 3, zsets::zrevrank),
    ("zcount", 4, zsets::zcount),
    ("zlexcount", 4, zsets::zlexcount),
    ("zrange", -4, zsets::zrange),
    ("zrevrange", -4, zsets::zrevrange),
    ("zrangebyscore", -4, zsets::zrangebyscore),
    ("zrevrangebyscore", -4, zsets::zrevrangebyscore),
    ("zrangebylex", -4, zsets::zrangebylex),
    ("zrevrangebylex", -4, zsets::zrevrangebylex),
    ("zrangestore", -5, zsets::zrangestore),
    ("zremrangebyrank", 4, zsets::zremrangebyrank),
    ("zremrangebyscore", 4, zsets::zremrangebyscore),
    ("zremrangebylex", 4, zsets::zremrangebylex),
    ("zpopmin", -2, zsets::zpopmin),
    ("zpopmax", -2, zsets::zpopmax),
    ("zmpop", -4, zsets::zmpop),
    ("zrandmember", -2, zsets::zrandmember),
    ("zunionstore", -4, zsets::zunionstore),
    ("zinterstore", -4, zsets::zinterstore),
    ("zdiffstore", -4, zsets::zdiffstore),
    ("zunion", -3, zsets::zunion),
    ("zinter", -3, zsets::zinter),
    ("zdiff", -3, zsets::zdiff),
    ("zintercard", -3, zsets::zintercard),
    ("zscan", -3, scan::zscan),
    ("blpop", -3, blocking::blpop),
    ("brpop", -3, blocking::brpop),
    ("blmove", 6, blocking::blmove),
    ("brpoplpush", 4, blocking::brpoplpush),
    ("blmpop", -5, blocking::blmpop),
    ("bzpopmin", -3, blocking::bzpopmin),
    ("bzpopmax", -3, blocking::bzpopmax),
    ("bzmpop", -5, blocking::bzmpop),
    ("lmpop", -4, blocking::lmpop),
    ("lpos", -3, lists::lpos),
    ("ping", -1, server::ping),
    ("echo", 2, server::echo),
    ("time", 1, server::time),
    ("select", 2, server::select),
    ("info", -1, server::info),
    ("quit", -1, server::quit),
    ("command", -1, server::command),
    ("config", -2, server::config),
];

/// The commands that change keys: refused on a replica (Redis's `write` flag).
const WRITES: &[&str] = &[
    "set",
    "del",
    "incr",
    "incrby",
    "decr",
    "decrby",
    "incrbyfloat",
    "hincrbyfloat",
    "mset",
    "append",
    "setex",
    "psetex",
    "setnx",
    "getset",
    "getdel",
    "getex",
    "msetnx",
    "setrange",
    "expire",
    "pexpire",
    "expireat",
    "pexpireat",
    "rename",
    "renamenx",
    "copy",
    "move",
    "persist",
    "flushall",
    "flushdb",
    "swapdb",
    "hset",
    "hmset",
    "hsetnx",
    "hdel",
    "hincrby",
    "lpush",
    "rpush",
    "lpushx",
    "rpushx",
    "lpop",
    "rpop",
    "lset",
    "linsert",
    "lrem",
    "ltrim",
    "lmove",
    "rpoplpush",
    "sadd",
    "srem",
    "spop",
    "blpop",
    "brpop",
    "blmove",
    "brpoplpush",
    "blmpop",
    "bzpopmin",
    "bzpopmax",
    "bzmpop",
    "lmpop",
    "sinterstore",
    "sunionstore",
    "sdiffstore",
    "smove",
    "zadd",
    "zincrby",
    "zrem",
    "zrangestore",
    "zremrangebyrank",
    "zremrangebyscore",
    "zremrangebylex",
    "zpopmin",
    "zpopmax",
    "zmpop",
    "zunionstore",
    "zinterstore",
    "zdiffstore",
];

/// True if command `idx` changes keys.
fn is_write(idx: usize) -> bool {
    static FLAGS: std::sync::OnceLock<Vec<bool>> = std::sync::OnceLock::new();
    FLAGS.get_or_init(|| COMMANDS.iter().map(|(n, ..)| WRITES.contains(n)).collect())[idx]
}

/// The longest command name.
const LONGEST_NAME: usize = 16;

/// The index in [`COMMANDS`] of the command `name` names (any case): one hash lookup, not a
/// scan of the table, which every request would otherwise pay.
fn lookup(name: &[u8]) -> Option<usize> {
    static INDEX: std::sync::OnceLock<std::collections::HashMap<&'static [u8], usize>> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| COMMANDS.iter().enumerate().map(|(i, (n, ..))| (n.as_bytes(), i)).collect());
    if name.len() > LONGEST_NAME {
        return None;
    }
    let mut lower = [0u8; LONGEST_NAME];
    let lower = &mut lower[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    index.get(&*lower).copied()
}

/// Commands the session answers itself, numbered after the table's (CLIENT LIST's `cmd=`).
const SESSION_COMMANDS: &[&str] = &[
    "auth", "hello", "client", "multi", "exec", "discard", "watch", "unwatch", "psync", "sync", "replconf", "role",
    "wait",
];

/// A number for the command `name` (any case): its place in the table, or after it for the
/// session's own; usize::MAX for an unknown one.
pub fn id_of(name: &[u8]) -> usize {
    lookup(name).unwrap_or_else(|| {
        SESSION_COMMANDS
            .iter()
            .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
            .map_or(usize::MAX, |i| COMMANDS.len() + i)
    })
}

/// The name of command number `id` ([`id_of`]); "NULL" for none, as Redis shows it.
pub fn name_of(id: usize) -> &'static str {
    COMMANDS
        .get(id)
        .map(|c| c.0)
        .or_else(|| SESSION_COMMANDS.get(id.wrapping_sub(COMMANDS.len())).copied())
        .unwrap_or("NULL")
}

/// How many commands there are (COMMAND COUNT).
pub fn count() -> usize {
    COMMANDS.len()
}

/// The command `a` names, if it exists and has a count of arguments it takes; else the error
/// is written (Redis's words) and None returned. MULTI queues only what passes this.
pub fn validate(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Option<usize> {
    let Some(idx) = lookup(a.get(0)) else {
        unknown_command(a, out);
        return None;
    };
    let (cname, arity, _) = COMMANDS[idx];
    if !arity_ok(arity, a.len()) {
        arity_error(out, cname);
        ctx.info.count(idx, 0, Call::Rejected);
        return None;
    }
    Some(idx)
}

/// Runs one request (not empty) and writes its reply.
pub fn execute(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let _gate = ctx.ks.shared();
    execute_held(a, ctx, out)
}

thread_local! {
    /// The last command the table ran on this thread, and how many it ran (CLIENT LIST's
    /// `cmd=` without a second lookup of the name).
    static LAST: std::cell::Cell<(usize, u64)> = const { std::cell::Cell::new((usize::MAX, 0)) };
}

/// How many commands the table has run on this thread (to tell whether one ran since).
pub fn ran() -> u64 {
    LAST.with(|l| l.get().1)
}

/// The number ([`id_of`]) of the last command the table ran on this thread.
pub fn last_id() -> usize {
    LAST.with(|l| l.get().0)
}

/// [`execute`] for a caller that holds the keyspace's gate itself (EXEC holds it alone).
pub fn execute_held(a: Argv<'_>, ctx: &mut Ctx<'_>, out: &mut dyn Sink) -> Done {
    let Some(idx) = validate(a, ctx, out) else { return Done::default() };
    LAST.with(|l| l.set((idx, l.get().1 + 1)));
    if is_write(idx) && ctx.info.upstream().is_some() {
        reply::error(out, b"READONLY You can't write against a read only replica.");
        return Done::default();
    }
    let handler = COMMANDS[idx].2;
    let t = std::time::Instant::now();
    let mut w = Watch { out, first: None };
    let done = handler(a, ctx, &mut w);
    let call = if w.first == Some(b'-') { Call::Failed } else { Call::Done };
    ctx.info.count(idx, t.elapsed().as_micros() as u64, call);
    done
}

/// `%.*s` of C: at most `n` bytes, ending at a NUL.
fn c_str(b: &[u8], n: usize) -> &[u8] {
    let b = &b[..b.len().min(n)];
    b.iter().position(|&x| x == 0).map_or(b, |i| &b[..i])
}

fn unknown_command(a: Argv<'_>, out: &mut dyn Sink) {
    let mut args = Vec::new();
    let mut i = 1;
    while i < a.len() && args.len() < 128 {
        args.push(b'\'');
        args.extend_from_slice(c_str(a.get(i), 128 - (args.len() - 1)));
        args.extend_from_slice(b"' ");
        i += 1;
    }
    let mut text = b"ERR unknown command '".to_vec();
    text.extend_from_slice(c_str(a.get(0), 128));
    text.extend_from_slice(b"', with args beginning with: ");
    text.extend_from_slice(&args);
    reply::error(out, &text);
}

/// Parses an integer argument as Redis's `getLongLongFromObjectOrReply` does, answering the
/// error itself.
fn int_arg(v: &[u8], out: &mut dyn Sink) -> Option<i64> {
    let n = resp::num::parse_i64(v);
    if n.is_none() {
        reply::error(out, NOT_INT);
    }
    n
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod lookup_tests {
    #[test]
    fn every_command_is_found_by_its_name_in_any_case() {
        for (i, (name, ..)) in super::COMMANDS.iter().enumerate() {
            assert!(name.len() <= super::LONGEST_NAME, "{name}");
            assert_eq!(super::lookup(name.as_bytes()), Some(i));
            assert_eq!(super::lookup(name.to_ascii_uppercase().as_bytes()), Some(i));
        }
        assert_eq!(super::lookup(b"nope"), None);
        for w in super::WRITES {
            assert!(super::lookup(w.as_bytes()).is_some_and(super::is_write), "{w}");
        }
        assert_eq!(super::lookup(&[b'g'; 100]), None);
    }
}
