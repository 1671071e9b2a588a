//! Commands against Redis 7.0's replies (checked by hand against redis-server 7.0.15; the
//! end-to-end tests compare the two servers on a corpus).

use super::*;
use crate::log::order::Order;
use crate::log::stage::Stage;
use resp::{Parsed, Parser};
use std::sync::Arc;

struct NoInfo;

impl Info for NoInfo {
    fn info(&self, ks: &Keyspace, _sections: &[String]) -> String {
        format!("keys:{}", ks.len())
    }
    fn config(&self) -> Vec<(&'static str, String)> {
        vec![("appendonly", "yes".into()), ("appendfsync", "always".into())]
    }
}

struct Bench {
    ks: Keyspace,
    stage: Stage,
    now_ms: i64,
}

impl Bench {
    fn new() -> Bench {
        Bench { ks: Keyspace::new(4), stage: Stage::new(Arc::new(Order::new(1, 0)), 0), now_ms: 1_000_000 }
    }

    /// Runs one inline request; the reply and what it waits for.
    fn run(&mut self, line: &str) -> (String, Done) {
        let mut p = Parser::new(1 << 20);
        let req = format!("{line}\r\n");
        assert!(matches!(p.parse(req.as_bytes()), Parsed::Request { .. }));
        let mut out = Vec::new();
        let mut ctx = Ctx { ks: &self.ks, journal: &mut self.stage, now_ms: self.now_ms, info: &NoInfo };
        let done = execute(Argv::new(&p.args, req.as_bytes()), &mut ctx, &mut out);
        (String::from_utf8_lossy(&out).into_owned(), done)
    }

    fn r(&mut self, line: &str) -> String {
        self.run(line).0
    }
}

#[test]
fn set_and_its_options() {
    let mut b = Bench::new();
    assert_eq!(b.r("SET k v"), "+OK\r\n");
    assert_eq!(b.r("get k"), "$1\r\nv\r\n");
    assert_eq!(b.r("SET k w NX"), "$-1\r\n");
    assert_eq!(b.r("SET k w XX GET"), "$1\r\nv\r\n");
    assert_eq!(b.r("SET n w XX"), "$-1\r\n");
    assert_eq!(b.r("SET n w NX GET"), "$-1\r\n");
    assert_eq!(b.r("GET n"), "$1\r\nw\r\n");
    assert_eq!(b.r("SET k v NX XX"), "-ERR syntax error\r\n");
    assert_eq!(b.r("SET k v EX"), "-ERR syntax error\r\n");
    assert_eq!(b.r("SET k v EX 10 PX 10"), "-ERR syntax error\r\n");
    assert_eq!(b.r("SET k v EX 10 KEEPTTL"), "-ERR syntax error\r\n");
    assert_eq!(b.r("SET k v EX 0"), "-ERR invalid expire time in 'set' command\r\n");
    assert_eq!(b.r("SET k v EX x"), "-ERR value is not an integer or out of range\r\n");
    assert_eq!(b.r("SET k v EX 9223372036854776"), "-ERR invalid expire time in 'set' command\r\n");
    assert_eq!(b.r("SET k v PX 9223372036854775807"), "-ERR invalid expire time in 'set' command\r\n");
    assert_eq!(b.r("SET k v EX 10 EX 20"), "+OK\r\n");
    assert_eq!(b.r("TTL k"), ":20\r\n");
    assert_eq!(b.r("SET k v2 KEEPTTL"), "+OK\r\n");
    assert_eq!(b.r("PTTL k"), ":20000\r\n");
    assert_eq!(b.r("SET k v3"), "+OK\r\n");
    assert_eq!(b.r("TTL k"), ":-1\r\n");
    assert_eq!(b.r("SET k v PXAT 1000500"), "+OK\r\n");
    assert_eq!(b.r("PTTL k"), ":500\r\n");
    b.now_ms += 500;
    assert_eq!(b.r("GET k"), "$-1\r\n");
    assert_eq!(b.r("SET"), "-ERR wrong number of arguments for 'set' command\r\n");
}

#[test]
fn counters() {
    let mut b = Bench::new();
    assert_eq!(b.r("INCR c"), ":1\r\n");
    assert_eq!(b.r("INCRBY c 41"), ":42\r\n");
    assert_eq!(b.r("DECR c"), ":41\r\n");
    assert_eq!(b.r("DECRBY c 50"), ":-9\r\n");
    assert_eq!(b.r("DECRBY c -9223372036854775808"), "-ERR decrement would overflow\r\n");
    assert_eq!(b.r("INCRBY c x"), "-ERR value is not an integer or out of range\r\n");
    assert_eq!(b.r("SET big 9223372036854775807"), "+OK\r\n");
    assert_eq!(b.r("INCR big"), "-ERR increment or decrement would overflow\r\n");
    assert_eq!(b.r("SET s abc"), "+OK\r\n");
    assert_eq!(b.r("INCR s"), "-ERR value is not an integer or out of range\r\n");
    assert_eq!(b.r("SET s ' 1'"), "+OK\r\n");
    assert_eq!(b.r("INCR s"), "-ERR value is not an integer or out of range\r\n");
    // INCR keeps the key's expiry.
    assert_eq!(b.r("SET t 1 EX 100"), "+OK\r\n");
    assert_eq!(b.r("INCR t"), ":2\r\n");
    assert_eq!(b.r("TTL t"), ":100\r\n");
}

#[test]
fn strings_and_keys() {
    let mut b = Bench::new();
    assert_eq!(b.r("APPEND a hello"), ":5\r\n");
    assert_eq!(b.r("APPEND a ' world'"), ":11\r\n");
    assert_eq!(b.r("STRLEN a"), ":11\r\n");
    assert_eq!(b.r("STRLEN none"), ":0\r\n");
    assert_eq!(b.r("MSET x 1 y 2"), "+OK\r\n");
    assert_eq!(b.r("MSET x 1 y"), "-ERR wrong number of arguments for 'mset' command\r\n");
    assert_eq!(b.r("MGET x none y"), "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n");
    assert_eq!(b.r("EXISTS x x none y"), ":3\r\n");
    assert_eq!(b.r("DEL x x none"), ":1\r\n");
    assert_eq!(b.r("DBSIZE"), ":2\r\n");
    assert_eq!(b.r("FLUSHALL nope"), "-ERR syntax error\r\n");
    assert_eq!(b.r("FLUSHALL ASYNC"), "+OK\r\n");
    assert_eq!(b.r("DBSIZE"), ":0\r\n");
}

#[test]
fn expiry_commands() {
    let mut b = Bench::new();
    assert_eq!(b.r("EXPIRE none 10"), ":0\r\n");
    assert_eq!(b.r("SET k v"), "+OK\r\n");
    assert_eq!(b.r("TTL none"), ":-2\r\n");
    assert_eq!(b.r("EXPIRE k 10 XX"), ":0\r\n");
    assert_eq!(b.r("EXPIRE k 10 NX"), ":1\r\n");
    assert_eq!(b.r("EXPIRE k 20 NX"), ":0\r\n");
    assert_eq!(b.r("EXPIRE k 5 GT"), ":0\r\n");
    assert_eq!(b.r("EXPIRE k 30 GT"), ":1\r\n");
    assert_eq!(b.r("PEXPIRE k 1500 LT"), ":1\r\n");
    assert_eq!(b.r("TTL k"), ":2\r\n");
    assert_eq!(b.r("PTTL k"), ":1500\r\n");
    assert_eq!(b.r("EXPIRE k 1 NX XX"), "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n");
    assert_eq!(b.r("EXPIRE k 1 GT LT"), "-ERR GT and LT options at the same time are not compatible\r\n");
    assert_eq!(b.r("EXPIRE k 1 FOO"), "-ERR Unsupported option FOO\r\n");
    assert_eq!(b.r("EXPIRE k 9223372036854776"), "-ERR invalid expire time in 'expire' command\r\n");
    assert_eq!(b.r("PEXPIRE k 9223372036854775807"), "-ERR invalid expire time in 'pexpire' command\r\n");
    assert_eq!(b.r("PERSIST k"), ":1\r\n");
    assert_eq!(b.r("PERSIST k"), ":0\r\n");
    assert_eq!(b.r("TTL k"), ":-1\r\n");
    assert_eq!(b.r("EXPIRE k -1"), ":1\r\n");
    assert_eq!(b.r("EXISTS k"), ":0\r\n");
}

#[test]
fn server_commands_and_errors() {
    let mut b = Bench::new();
    assert_eq!(b.r("PING"), "+PONG\r\n");
    assert_eq!(b.r("ping hi"), "$2\r\nhi\r\n");
    assert_eq!(b.r("PING a b"), "-ERR wrong number of arguments for 'ping' command\r\n");
    assert_eq!(b.r("ECHO x"), "$1\r\nx\r\n");
    assert_eq!(b.r("SELECT 0"), "+OK\r\n");
    assert_eq!(b.r("SELECT 1"), "-ERR DB index is out of range\r\n");
    assert_eq!(b.r("SELECT x"), "-ERR value is not an integer or out of range\r\n");
    assert_eq!(b.r("NOPE a b"), "-ERR unknown command 'NOPE', with args beginning with: 'a' 'b' \r\n");
    assert_eq!(b.r("GET"), "-ERR wrong number of arguments for 'get' command\r\n");
    assert_eq!(
        b.r("CONFIG GET append*"),
        "*4\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n"
    );
    assert_eq!(b.r("CONFIG GET"), "-ERR wrong number of arguments for 'config|get' command\r\n");
    assert_eq!(b.r("CONFIG FOO"), "-ERR unknown subcommand 'FOO'. Try CONFIG HELP.\r\n");
    assert_eq!(b.r("COMMAND DOCS"), "*0\r\n");
    let (r, done) = b.run("QUIT");
    assert_eq!((r.as_str(), done.close), ("+OK\r\n", true));
}

#[test]
fn replies_wait_for_the_change_they_show() {
    let mut b = Bench::new();
    let (_, set) = b.run("SET k v");
    assert_eq!(set.wait, 1);
    let (_, get) = b.run("GET k");
    assert_eq!(get.wait, 1, "a read waits for the write it shows");
    let (_, del) = b.run("DEL k");
    assert_eq!(del.wait, 2);
    let (_, miss) = b.run("GET k");
    assert!(miss.wait >= 2, "a miss waits for the removal it shows");
    let (_, ping) = b.run("PING");
    assert_eq!(ping.wait, 0);
    // A refused change changes nothing and takes no number.
    let (_, nx) = b.run("SET k v NX");
    assert_eq!(nx.wait, 3);
    let (r, nx2) = b.run("SET k w NX");
    assert_eq!((r.as_str(), nx2.wait), ("$-1\r\n", 3));
}

#[test]
fn hashes() {
    let mut b = Bench::new();
    assert_eq!(b.r("HSET h a 1 b 2 a 3"), ":2\r\n");
    assert_eq!(b.r("HGET h a"), "$1\r\n3\r\n");
    assert_eq!(b.r("HGET h none"), "$-1\r\n");
    assert_eq!(b.r("HGET none a"), "$-1\r\n");
    assert_eq!(b.r("HGETALL h"), "*4\r\n$1\r\na\r\n$1\r\n3\r\n$1\r\nb\r\n$1\r\n2\r\n");
    assert_eq!(b.r("HKEYS h"), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    assert_eq!(b.r("HVALS h"), "*2\r\n$1\r\n3\r\n$1\r\n2\r\n");
    assert_eq!(b.r("HMGET h a none b"), "*3\r\n$1\r\n3\r\n$-1\r\n$1\r\n2\r\n");
    assert_eq!(b.r("HMGET none a"), "*1\r\n$-1\r\n");
    assert_eq!(b.r("HLEN h"), ":2\r\n");
    assert_eq!(b.r("HSTRLEN h a"), ":1\r\n");
    assert_eq!(b.r("HEXISTS h b"), ":1\r\n");
    assert_eq!(b.r("HEXISTS h c"), ":0\r\n");
    assert_eq!(b.r("HSETNX h a 9"), ":0\r\n");
    assert_eq!(b.r("HSETNX h c 9"), ":1\r\n");
    assert_eq!(b.r("HMSET h d 4"), "+OK\r\n");
    assert_eq!(b.r("HSET h a"), "-ERR wrong number of arguments for 'hset' command\r\n");
    assert_eq!(b.r("HMSET h a 1 b"), "-ERR wrong number of arguments for 'hmset' command\r\n");
    assert_eq!(b.r("HINCRBY h a 10"), ":13\r\n");
    assert_eq!(b.r("HINCRBY h new -5"), ":-5\r\n");
    assert_eq!(b.r("HINCRBY h a x"), "-ERR value is not an integer or out of range\r\n");
    assert_eq!(b.r("HSET h s abc big 9223372036854775807"), ":2\r\n");
    assert_eq!(b.r("HINCRBY h s 1"), "-ERR hash value is not an integer\r\n");
    assert_eq!(b.r("HINCRBY h big 1"), "-ERR increment or decrement would overflow\r\n");
    assert_eq!(b.r("HDEL h a a none"), ":1\r\n");
    assert_eq!(b.r("HDEL none a"), ":0\r\n");
    assert_eq!(b.r("TYPE h"), "+hash\r\n");
    assert_eq!(b.r("HDEL h b c d new s big"), ":6\r\n");
    assert_eq!(b.r("EXISTS h"), ":0\r\n", "a hash left empty is removed");
    assert_eq!(b.r("TYPE h"), "+none\r\n");
    assert_eq!(b.r("HRANDFIELD none"), "$-1\r\n");
    assert_eq!(b.r("HRANDFIELD none 3"), "*0\r\n");
    assert_eq!(b.r("HSET r x 1 y 2"), ":2\r\n");
    assert_eq!(b.r("HRANDFIELD r 5 WITHVALUES"), "*4\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$1\r\n2\r\n");
    assert_eq!(b.r("HRANDFIELD r 0"), "*0\r\n");
    assert_eq!(b.r("HRANDFIELD r -5").matches("\r\n$1\r\n").count(), 5, "repeats allowed: exactly 5");
    assert!(["$1\r\nx\r\n", "$1\r\ny\r\n"].contains(&b.r("HRANDFIELD r").as_str()));
    assert_eq!(b.r("HRANDFIELD r 1 WITHVALUES x"), "-ERR syntax error\r\n");
    assert_eq!(b.r("HRANDFIELD r x"), "-ERR value is not an integer or out of range\r\n");
    // An expired hash is gone for every command, and HSET makes a new one without its TTL.
    assert_eq!(b.r("EXPIRE r 1"), ":1\r\n");
    assert_eq!(b.r("TTL r"), ":1\r\n");
    b.now_ms += 1000;
    assert_eq!(b.r("HLEN r"), ":0\r\n");
    assert_eq!(b.r("HSET r z 1"), ":1\r\n");
    assert_eq!(b.r("TTL r"), ":-1\r\n");
    assert_eq!(b.r("HGETALL r"), "*2\r\n$1\r\nz\r\n$1\r\n1\r\n");
}

#[test]
fn sorted_sets() {
    let mut b = Bench::new();
    assert_eq!(b.r("ZADD z 2 b 1 a 3 c"), ":3\r\n");
    assert_eq!(
        b.r("ZRANGE z 0 -1 WITHSCORES"),
        "*6\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n"
    );
    assert_eq!(b.r("ZINCRBY z 0.1 a"), "$18\r\n1.1000000000000001\r\n");
    assert_eq!(b.r("ZRANGEBYSCORE z (1.1 +inf"), "*2\r\n$1\r\nb\r\n$1\r\nc\r\n");
    assert_eq!(b.r("ZREVRANK z a"), ":2\r\n");
    assert_eq!(b.r("ZADD z XX NX 1 a"), "-ERR XX and NX options at the same time are not compatible\r\n");
    assert_eq!(b.r("ZPOPMAX z 2"), "*4\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nb\r\n$1\r\n2\r\n");
    assert_eq!(b.r("ZREM z a"), ":1\r\n");
    assert_eq!(b.r("EXISTS z"), ":0\r\n", "an emptied sorted set is removed");
    assert_eq!(b.r("SET s v"), "+OK\r\n");
    assert_eq!(b.r("ZADD s 1 a"), "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
}

#[test]
fn a_command_on_a_key_of_another_type_is_wrongtype_and_changes_nothing() {
    let mut b = Bench::new();
    const WT: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    assert_eq!(b.r("HSET h f v"), ":1\r\n");
    assert_eq!(b.r("SET s v"), "+OK\r\n");
    for cmd in ["GET h", "STRLEN h", "INCR h", "DECRBY h 2", "APPEND h x", "SET h v GET"] {
        assert_eq!(b.r(cmd), WT, "{cmd}");
    }
    for cmd in ["HGET s f", "HSET s f v", "HSETNX s f v", "HDEL s f", "HLEN s", "HGETALL s", "HINCRBY s f 1"] {
        assert_eq!(b.r(cmd), WT, "{cmd}");
    }
    assert_eq!(b.r("HINCRBY s f x"), "-ERR value is not an integer or out of range\r\n", "the increment first");
    assert_eq!(b.r("MGET h s"), "*2\r\n$-1\r\n$1\r\nv\r\n", "MGET reads another type as missing");
    assert_eq!(b.r("HGETALL h"), "*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
    // SET replaces a key of any type.
    assert_eq!(b.r("SET h now-a-string"), "+OK\r\n");
    assert_eq!(b.r("TYPE h"), "+string\r\n");
    assert_eq!(b.r("TYPE s"), "+string\r\n");
}

mod replayed {
    use super::*;
    use crate::keyspace::Value;
    use crate::log::record::{read, Read, COMMIT_SIZE};
    use crate::log::replay;
    use proptest::prelude::*;

    /// Every key's value and expiry, live at `now_ms`, in key order. A set is compared by its
    /// members: rebuilt from a whole-value record (RENAME, a snapshot) a set of integers is
    /// sorted integers again, as Redis makes it when it loads one.
    fn contents(ks: &Keyspace, now_ms: i64) -> Vec<(Vec<u8>, Value, i64)> {
        let mut all = Vec::new();
        ks.for_each(|k, e| {
            if !e.expired(now_ms) {
                let value = match &e.value {
                    Value::Set(s) => {
                        let mut m = s.members();
                        m.sort();
                        Value::List(m.into_iter().collect())
                    }
                    v => v.clone(),
                };
                all.push((k.to_vec(), value, e.expire_ms));
            }
        });
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    fn command() -> impl Strategy<Value = String> {
        let key = prop_oneof![Just("a"), Just("b"), Just("c")];
        let field = prop_oneof![Just("x"), Just("y"), Just("z"), Just("w")];
        (0u8..41, key, field, 0i64..100).prop_map(|(op, k, f, n)| match op {
            33 | 34 => format!("ZADD {k} {} {f} {}.5 {}", n % 7, n % 3, n % 5),
            35 => format!("ZINCRBY {k} {} {f}", n % 4 - 2),
            36 => format!("ZREM {k} {f} {}", n % 5),
            37 => format!("ZPOPMIN {k} {}", n % 3),
            38 => format!("ZREMRANGEBYSCORE {k} ({} +inf", n % 6),
            39 => format!("ZUNIONSTORE {k} 2 {} {k} WEIGHTS 2 1", ["a", "b", "c"][n as usize % 3]),
            40 => format!("ZRANGESTORE {k} {} 0 1", ["a", "b", "c"][n as usize % 3]),
            26 | 27 => format!("SADD {k} {f} {}", n % 4),
            28 => format!("SREM {k} {f} {}", n % 4),
            29 => format!("SPOP {k} {}", n % 3),
            30 => format!("SMOVE {k} {} {f}", ["a", "b", "c"][n as usize % 3]),
            31 => {
                format!("SUNIONSTORE {k} {} {}", ["a", "b", "c"][n as usize % 3], ["a", "b", "c"][(n / 3) as usize % 3])
            }
            32 => format!("SINTERSTORE {k} {} {k}", ["a", "b", "c"][n as usize % 3]),
            17 | 25 => format!("RPUSH {k} {f} {n}"),
            18 => format!("LPOP {k}"),
            19 => format!("LREM {k} {} {f}", n % 3 - 1),
            20 => format!("LTRIM {k} 1 -1"),
            21 => format!("LSET {k} {} x", n % 3 - 1),
            22 => format!("LINSERT {k} BEFORE {f} y"),
            23 => format!("LMOVE {k} {} LEFT RIGHT", ["a", "b", "c"][n as usize % 3]),
            24 => format!("RPOP {k} 2"),
            9 => format!("RENAME {k} {}", ["a", "b", "c"][n as usize % 3]),
            10 => format!("COPY {k} {} REPLACE", ["a", "b", "c"][n as usize % 3]),
            11 => format!("SETRANGE {k} {} x", n % 5),
            12 => format!("GETEX {k} EX {}", n % 3 + 1),
            13 => format!("GETDEL {k}"),
            14 => format!("PEXPIREAT {k} {}", 1_000_000 + n * 100),
            15 => format!("GETEX {k} PERSIST"),
            0 => format!("SET {k} v{n}"),
            1 => format!("HSET {k} {f} {n} w {}", n + 1),
            2 => format!("HDEL {k} {f} w"),
            3 => format!("HINCRBY {k} {f} {n}"),
            4 => format!("HSETNX {k} {f} {n}"),
            5 => format!("DEL {k}"),
            6 => format!("EXPIRE {k} {}", n % 3),
            7 => format!("APPEND {k} {n}"),
            _ => "TICK".to_string(),
        })
    }

    proptest! {
        /// What the commands logged, replayed in order into an empty keyspace, is what they
        /// left, whatever mix of types, removals and expiries they went through — and so is
        /// the replay of every change after `from` onto the state after `upto` (a snapshot
        /// copied while changes went on holds some the replay meets again).
        #[test]
        fn the_log_rebuilds_what_the_commands_left(
            cmds in proptest::collection::vec(command(), 1..60),
            cut in (0usize..200, 0usize..200),
        ) {
            let mut b = Bench::new();
            for c in &cmds {
                if c == "TICK" {
                    b.now_ms += 1000;
                } else {
                    b.r(c);
                }
            }
            let mut out = Vec::new();
            let mut records = Vec::new();
            if b.stage.take_commit(&mut out, 1, 0).is_some() {
                let mut at = COMMIT_SIZE;
                while let Read::Record { size, .. } = read(&out[at..], 1 << 20) {
                    records.push(at);
                    at += size;
                }
            }
            let replay_onto = |ks: &Keyspace, range: std::ops::Range<usize>| {
                for &at in &records[range] {
                    let Read::Record { seq, change, .. } = read(&out[at..], 1 << 20) else { unreachable!() };
                    replay::apply(ks, seq, change);
                }
            };
            let again = Keyspace::new(2);
            replay_onto(&again, 0..records.len());
            prop_assert_eq!(contents(&again, b.now_ms), contents(&b.ks, b.now_ms), "after {:?}", cmds);
            let n = records.len();
            let (from, upto) = (cut.0 % (n + 1), cut.1 % (n + 1));
            let (from, upto) = (from.min(upto), from.max(upto));
            let overlap = Keyspace::new(2);
            replay_onto(&overlap, 0..upto);
            replay_onto(&overlap, from..n);
            prop_assert_eq!(
                contents(&overlap, b.now_ms), contents(&b.ks, b.now_ms),
                "changes {}.. replayed onto the state after {}: {:?}", from, upto, cmds
            );
        }
    }
}

#[test]
fn active_expiry_removes_what_has_expired_and_nothing_else() {
    let mut b = Bench::new();
    for cmd in ["SET a 1 PX 100", "SETEX b 1 2", "HSET h f v", "PEXPIRE h 300", "SET c 3 PX 100", "PERSIST c"] {
        b.r(cmd);
    }
    assert_eq!(b.r("SET d 4 PX 100"), "+OK\r\n");
    assert_eq!(b.r("PEXPIRE d 5000"), ":1\r\n", "a later expiry leaves the first one stale");
    assert_eq!(b.r("SET e 5 PX 100"), "+OK\r\n");
    assert_eq!(b.r("DEL e"), ":1\r\n");
    assert_eq!(b.r("SET e 6"), "+OK\r\n", "a new e without expiry: the old entry is stale");
    assert_eq!(b.r("DBSIZE"), ":6\r\n");
    b.now_ms += 150;
    // Nobody touches a: the cycle removes it (and only what has expired).
    assert_eq!(b.ks.expire_cycle(b.now_ms, |_| true, None), 1);
    assert_eq!(b.r("DBSIZE"), ":5\r\n");
    b.now_ms += 1000;
    assert_eq!(b.ks.expire_cycle(b.now_ms, |_| true, None), 2, "b and h");
    assert_eq!(b.r("DBSIZE"), ":3\r\n");
    assert_eq!(b.r("MGET c d e"), "*3\r\n$1\r\n3\r\n$1\r\n4\r\n$1\r\n6\r\n");
    b.now_ms += 5000;
    assert_eq!(b.ks.expire_cycle(b.now_ms, |_| true, None), 1, "d at its later time");
    assert_eq!(b.r("KEYS *").matches("\r\n$1\r\n").count(), 2);
    // A removal by the cycle is a miss that waits for the change that set the expiry.
    let (_, done) = b.run("GET d");
    assert!(done.wait >= 8, "{done:?}");
}
