//! `sirocco store` against Redis's own tools and Redis itself: redis-cli and redis-benchmark
//! work; the same requests to Redis 7.0 (`appendfsync always`) and to sirocco, whole and cut
//! into small segments, get the same bytes back; acknowledged writes survive SIGKILL at
//! random points, round after round; a torn last write is cut off and reported, damage
//! before it stops the start; bad input gets errors or a closed connection, never a crash;
//! with two queues every key is seen everywhere.

use crate::common::*;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A scratch directory for a store or Redis, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        // Tests run in parallel in one process: each scratch gets a number of its own, or two
        // Redis servers would share (and wipe) one directory.
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!("sirocco-e2e-store-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Redis in a namespace with the durability sirocco promises, stopped on drop (then its
/// directory goes).
struct Redis(Child, #[allow(dead_code)] Scratch);

impl Drop for Redis {
    fn drop(&mut self) {
        // redis-server is one process (its I/O threads die with it).
        stop_child(&mut self.0);
    }
}

fn redis(net: &TestNet) -> Redis {
    redis_with(net, &[])
}

fn redis_with(net: &TestNet, extra: &[&str]) -> Redis {
    let dir = Scratch::new("redis");
    let child = Command::new("ip")
        .args(["netns", "exec", &net.srv_ns, "redis-server", "--bind", SERVER, "--port", "6379"])
        .args(extra)
        .args(["--appendonly", "yes", "--appendfsync", "always", "--save", ""])
        .args(["--protected-mode", "no", "--daemonize", "no", "--dir", dir.path(), "--logfile", ""])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start redis-server (apt install redis-server)");
    let r = Redis(child, dir);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        if in_netns(&net.cli_ns, || TcpStream::connect((SERVER, 6379)).is_ok()) {
            return r;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("redis-server did not start");
}

fn store(net: &TestNet, dir: &Scratch, extra: &[&str]) -> Sirocco {
    let mut args =
        vec!["store", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--dir", dir.path(), "--segment-mb", "4"];
    args.extend_from_slice(extra);
    net.start(&args)
}

/// A request in RESP's multibulk form.
fn req(args: &[&[u8]]) -> Vec<u8> {
    let mut b = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        b.extend_from_slice(a);
        b.extend_from_slice(b"\r\n");
    }
    b
}

/// `req` from words.
fn cmd(words: &str) -> Vec<u8> {
    let w: Vec<&[u8]> = words.split(' ').map(str::as_bytes).collect();
    req(&w)
}

/// The length of the reply at the start of `b`, if it is all there.
fn reply_len(b: &[u8]) -> Option<usize> {
    let line = b.windows(2).position(|w| w == b"\r\n")?;
    let n = || std::str::from_utf8(&b[1..line]).ok()?.parse::<i64>().ok();
    match b.first()? {
        b'+' | b'-' | b':' => Some(line + 2),
        b'$' => {
            let n = n()?;
            let len = if n < 0 { line + 2 } else { line + 2 + n as usize + 2 };
            (b.len() >= len).then_some(len)
        }
        b'*' => {
            let mut at = line + 2;
            for _ in 0..n()?.max(0) {
                at += reply_len(&b[at..])?;
            }
            Some(at)
        }
        _ => None,
    }
}

/// A kernel TCP client.
struct Client(TcpStream);

impl Client {
    fn connect(addr: &str) -> Client {
        let s = TcpStream::connect((addr, 6379)).unwrap();
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client(s)
    }

    /// Sends `input` and reads `n` replies.
    fn ask_n(&mut self, input: &[u8], n: usize) -> Vec<Vec<u8>> {
        self.0.write_all(input).unwrap();
        self.read_n(n)
    }

    fn read_n(&mut self, n: usize) -> Vec<Vec<u8>> {
        let mut buf = Vec::new();
        let mut out = Vec::new();
        let mut b = vec![0u8; 1 << 16];
        while out.len() < n {
            if let Some(len) = reply_len(&buf) {
                out.push(buf.drain(..len).collect());
                continue;
            }
            let got = self.0.read(&mut b).expect("a reply within 10 s");
            assert!(got > 0, "connection closed after {} of {n} replies", out.len());
            buf.extend_from_slice(&b[..got]);
        }
        assert!(buf.is_empty(), "more than {n} replies");
        out
    }

    fn ask(&mut self, input: &[u8]) -> Vec<u8> {
        self.ask_n(input, 1).remove(0)
    }
}

/// Sends `input` on a new connection in pieces of `piece` bytes, then a marker, and reads
/// until the marker's reply or the end of the connection (bounded).
fn exchange(addr: &'static str, input: Vec<u8>, piece: usize) -> Vec<u8> {
    let mut s = TcpStream::connect((addr, 6379)).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    for p in input.chunks(piece.max(1)) {
        if s.write_all(p).is_err() {
            break;
        }
        if piece < input.len() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let marker = req(&[b"ECHO", b"--end--"]);
    let _ = s.write_all(&marker);
    let end = b"$7\r\n--end--\r\n";
    let mut out = Vec::new();
    let t = Instant::now();
    let mut b = [0u8; 65536];
    while t.elapsed() < Duration::from_secs(5) {
        match s.read(&mut b) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&b[..n]);
                if out.ends_with(end) {
                    out.truncate(out.len() - end.len());
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
    }
    out
}

/// The corpus: each case runs on a fresh connection after FLUSHALL.
fn corpus() -> Vec<Vec<u8>> {
    let c = |list: &[&str]| list.iter().flat_map(|w| cmd(w)).collect::<Vec<u8>>();
    let mut v =
        vec![
        c(&["SET k v", "GET k", "GET missing", "EXISTS k missing k", "DEL k missing k", "GET k", "DBSIZE"]),
        c(&["SET k v NX", "SET k w NX", "SET k w XX", "GET k", "SET n v XX", "EXISTS n", "SET k x GET", "SET n y GET"]),
        c(&["SET k v NX XX", "SET k v EX", "SET k v EX 0", "SET k v EX -5", "SET k v EX abc", "SET k v PX 0"]),
        c(&["SET k v EX 9223372036854776", "SET k v PX 9223372036854775807", "SET k v EX 10 PX 10", "SET k v FOO"]),
        c(&["SET k v EX 100", "TTL k", "SET k v2 KEEPTTL", "TTL k", "SET k v3", "TTL k", "PTTL k", "PTTL none"]),
        c(&["SET k v EX 10 EX 100", "TTL k", "SET k v KEEPTTL EX 5", "SET k v EXAT 4102444800", "EXISTS k"]),
        c(&["SET k v PXAT 1", "GET k", "EXISTS k", "SET k v EXAT 1 GET", "GET k"]),
        c(&["INCR c", "INCR c", "INCRBY c 40", "DECR c", "DECRBY c 100", "GET c", "INCRBY c x", "INCRBY c 1.5"]),
        c(&[
            "SET c 9223372036854775807",
            "INCR c",
            "SET d -9223372036854775808",
            "DECR d",
            "DECRBY d -9223372036854775808",
        ]),
        c(&[
            "SET s abc",
            "INCR s",
            "SET s 007",
            "INCR s",
            "SET s 12345678901234567890",
            "INCR s",
            "SET s -0",
            "INCR s",
        ]),
        c(&["SET t 5 EX 100", "INCR t", "TTL t", "APPEND t 1", "TTL t", "GET t"]),
        c(&[
            "APPEND a hello",
            "APPEND a world",
            "GET a",
            "STRLEN a",
            "STRLEN none",
            "APPEND e ",
            "EXISTS e",
            "STRLEN e",
        ]),
        c(&["MSET a 1 b 2 c 3", "MGET a b none c", "MSET a", "MSET a 1 b", "DBSIZE", "MSET a x a y", "GET a"]),
        c(&[
            "SET k v",
            "EXPIRE k 100 XX",
            "EXPIRE k 100 NX",
            "EXPIRE k 200 NX",
            "TTL k",
            "EXPIRE k 50 GT",
            "EXPIRE k 500 GT",
        ]),
        c(&[
            "SET k v",
            "EXPIRE k 100",
            "EXPIRE k 50 LT",
            "TTL k",
            "EXPIRE k 1000 LT",
            "PERSIST k",
            "PERSIST k",
            "TTL k",
        ]),
        c(&["SET k v", "EXPIRE k 10 NX XX", "EXPIRE k 10 GT LT", "EXPIRE k 10 FOO", "EXPIRE k x", "EXPIRE none 10"]),
        c(&["SET k v", "EXPIRE k 9223372036854776", "PEXPIRE k 9223372036854775807", "EXPIRE k -1", "EXISTS k"]),
        c(&["SET k v", "PEXPIRE k 100000", "TTL k", "EXPIRE k 0", "GET k", "PERSIST none", "TTL none"]),
        c(&[
            "SET a 1",
            "SET b 2",
            "DBSIZE",
            "FLUSHALL nope",
            "FLUSHALL SYNC",
            "DBSIZE",
            "SET a 1",
            "FLUSHALL ASYNC",
            "DBSIZE",
        ]),
        c(&["PING", "PING hello", "PING a b", "ECHO x", "ECHO", "SELECT 0", "SELECT 1", "SELECT x", "SELECT"]),
        c(&["NOPE", "NOPE a b c", "gEt k", "Set k V", "gEt k", "GET", "SET k", "INCRBY k", "DEL", "MGET", "TTL"]),
        c(&["CONFIG GET appendonly", "CONFIG GET appendfsync", "CONFIG GET databases", "CONFIG GET", "CONFIG NOPE"]),
        c(&["STRLEN", "APPEND k", "EXISTS", "EXPIRE k", "PERSIST", "DBSIZE x", "ECHO a b", "DECR", "PTTL"]),
        b"SET \"a b\" 'c d'\r\nGET \"a b\"\r\nSET q \"x\\ty\\x41\\n\"\r\nGET q\r\n\r\n   \r\nPING\r\n*0\r\nPING\r\n"
            .to_vec(),
        [req(&[b"SET", b"bin\0\r\n", b"\0\x01\xff\r\n\r\n"]), req(&[b"GET", b"bin\0\r\n"]), req(&[b"SET", b"", b""])]
            .concat(),
        [req(&[b"GET", b""]), req(&[b"STRLEN", b"bin\0\r\n"]), req(&[b"NOPE", &[b'x'; 200]])].concat(),
        [req(&[b"ECHO", &[b'e'; 100_000]]), req(&[b"SET", b"big", &[b'b'; 1 << 20]]), cmd("STRLEN big")].concat(),
        c(&[
            "HSET h a 1 b 2 a 3",
            "HGET h a",
            "HGET h x",
            "HGET none a",
            "HGETALL h",
            "HKEYS h",
            "HVALS h",
            "HMGET h a x b",
            "HMGET none a",
            "HLEN h",
            "HLEN none",
        ]),
        c(&["HSET h a 1", "HSTRLEN h a", "HSTRLEN h x", "HEXISTS h a", "HEXISTS h x", "HEXISTS none a"]),
        c(&["HSET h a 1", "HSETNX h a 9", "HSETNX h c 9", "HMSET h d 4 a 0", "HGETALL h", "HKEYS none"]),
        c(&["HSET h a", "HMSET h a 1 b", "HSET", "HGET h", "HDEL h", "HSETNX h a", "HRANDFIELD", "HLEN", "HKEYS"]),
        c(&["HINCRBY h a 10", "HINCRBY h a -3", "HINCRBY h a x", "HINCRBY h a 1.5", "HINCRBY h a", "HGETALL h"]),
        c(&[
            "HSET h s abc big 9223372036854775807 neg -9223372036854775808 sp ' 1' z 007",
            "HINCRBY h s 1",
            "HINCRBY h big 1",
            "HINCRBY h neg -1",
            "HINCRBY h sp 1",
            "HINCRBY h z 1",
            "HINCRBY h big -9223372036854775808",
            "HGETALL h",
        ]),
        c(&[
            "HSET h a 1 b 2 c 3",
            "HDEL h a a x",
            "HDEL none a",
            "TYPE h",
            "HDEL h b c",
            "EXISTS h",
            "TYPE h",
            "HGETALL h",
        ]),
        c(&[
            "HSET h f v",
            "SET s v",
            "GET h",
            "STRLEN h",
            "INCR h",
            "DECRBY h 2",
            "APPEND h x",
            "SET h v GET",
            "MGET h s",
            "HGETALL h",
        ]),
        c(&[
            "SET s v",
            "HGET s f",
            "HSET s f v",
            "HSETNX s f v",
            "HDEL s f",
            "HLEN s",
            "HGETALL s",
            "HINCRBY s f 1",
            "HINCRBY s f x",
            "HRANDFIELD s",
            "HMGET s f",
            "HEXISTS s f",
        ]),
        c(&["HSET h f v", "TYPE h", "SET s v", "TYPE s", "TYPE none", "SET h v", "TYPE h", "GET h", "HGET h f"]),
        c(&[
            "HSET r x 1 y 2",
            "HRANDFIELD none",
            "HRANDFIELD none 3",
            "HRANDFIELD r 0",
            "HRANDFIELD r 10",
            "HRANDFIELD r 2 WITHVALUES",
            "HRANDFIELD r 1 WITHVALUES x",
            "HRANDFIELD r x",
            "HRANDFIELD r 1 NOPE",
            "HRANDFIELD r -9223372036854775808",
            "HRANDFIELD r -9223372036854775807 WITHVALUES",
        ]),
        c(&["HSET e f 1", "EXPIRE e 100", "TTL e", "HSET e g 2", "TTL e", "EXPIRE e -1", "EXISTS e", "HSET e f 3"]),
        c(&["HSET e f 1", "PERSIST e", "TTL e", "HINCRBY e f 1", "HSET e f 1 EXPIRE", "HLEN e", "DEL e", "HLEN e"]),
        [
            req(&[b"HSET", b"big", b"f1", b"1", b"f2", &[b'v'; 65], b"f3", b"3"]),
            cmd("HLEN big"),
            cmd("HGET big f3"),
            cmd("HSTRLEN big f2"),
            req(&[b"HSET", b"bin\0", b"\0\r\n", b"\xff\0"]),
            req(&[b"HGETALL", b"bin\0"]),
            req(&[b"HSET", b"e", b"", b""]),
            req(&[b"HGETALL", b"e"]),
        ]
        .concat(),
        c(&[
            "SET k v",
            "SETEX k 100 v2",
            "GET k",
            "SETEX k 0 v",
            "SETEX k -1 v",
            "SETEX k x v",
            "PSETEX k 0 v",
            "SETEX k 9223372036854776 v",
            "SETEX",
            "SETNX k z",
            "SETNX n z",
            "GET n",
        ]),
        c(&["SET k v EX 100", "GETSET k w", "TTL k", "GETSET none x", "HSET h f v", "GETSET h x", "GET none"]),
        c(&["SET k v", "GETDEL k", "GETDEL k", "HSET h f v", "GETDEL h", "EXISTS h k", "GETDEL"]),
        c(&[
            "SET k v",
            "GETEX k",
            "GETEX k PXAT 4102444800000",
            "PEXPIRETIME k",
            "GETEX k PERSIST",
            "TTL k",
            "GETEX k EX 10 PX 10",
            "GETEX k EX",
            "GETEX k PERSIST EX 10",
            "GETEX k EX 10 PERSIST",
            "GETEX k EX 0",
            "GETEX k EX -1",
            "GETEX k EX x",
            "GETEX k FOO",
            "GETEX none EX 10",
            "GETEX k EXAT 1",
            "EXISTS k",
        ]),
        c(&["HSET h f v", "GETEX h", "GETEX h EX x", "GETEX h PERSIST", "GETEX"]),
        c(&["MSETNX a 1 b 2", "MSETNX b 3 c 4", "MGET a b c", "MSETNX a", "MSETNX a 1 b", "MSETNX x 1 x 2", "GET x"]),
        c(&[
            "SET s Hello",
            "GETRANGE s 0 3",
            "GETRANGE s -3 -1",
            "GETRANGE s 0 -1",
            "GETRANGE s 10 100",
            "GETRANGE s -1 -5",
            "GETRANGE s 3 1",
            "GETRANGE s -100 100",
            "GETRANGE none 0 1",
            "GETRANGE s x 1",
            "SUBSTR s 1 2",
            "HSET h f v",
            "GETRANGE h 0 1",
        ]),
        c(&[
            "SET s Hello",
            "SETRANGE s 0 J",
            "GET s",
            "SETRANGE s 7 World",
            "GET s",
            "SETRANGE n 3 x",
            "GET n",
            "SETRANGE s -1 x",
            "SETRANGE s x y",
            "SETRANGE s 536870912 x",
            // (536870911 would be accepted: a 512 MB value, too heavy for a corpus case.)
            "STRLEN s",
            "HSET h f v",
            "SETRANGE h 0 x",
        ]),
        [req(&[b"SETRANGE", b"e", b"5", b""]), cmd("EXISTS e"), cmd("SET f ab"), req(&[b"SETRANGE", b"f", b"9", b""])]
            .concat(),
        c(&[
            "SET k v",
            "EXPIREAT k 4102444800",
            "EXPIRETIME k",
            "PEXPIRETIME k",
            "PEXPIREAT k 4102444800123",
            "PEXPIRETIME k",
            "EXPIRETIME k",
            "EXPIREAT k 4102444800 NX",
            "EXPIREAT k 4102444801 GT",
            "EXPIRETIME k",
            "EXPIREAT k x",
            "EXPIREAT k 9223372036854776",
            "PEXPIREAT k 9223372036854775807",
            "EXPIRETIME none",
            "SET p v",
            "EXPIRETIME p",
            "EXPIREAT p 1",
            "EXISTS p",
        ]),
        c(&[
            "SET a 1",
            "PEXPIREAT a 4102444800000",
            "RENAME a b",
            "EXISTS a",
            "GET b",
            "PEXPIRETIME b",
            "RENAME a c",
            "RENAME b b",
            "RENAMENX b b",
            "SET c 3",
            "RENAMENX b c",
            "RENAMENX b d",
            "GET d",
            "RENAMENX none x",
            "HSET h f v",
            "RENAME h s",
            "HGETALL s",
            "TYPE s",
            "RENAME s",
        ]),
        c(&[
            "SET a 1",
            "COPY a b",
            "GET b",
            "COPY a b",
            "SET a 2",
            "COPY a b REPLACE",
            "GET b",
            "COPY a a",
            "COPY none b",
            "COPY a b DB 1",
            "COPY a b DB x",
            "COPY a b FOO",
            "COPY a b DB",
            "HSET h f v g w",
            "COPY h h2",
            "HGETALL h2",
            "PEXPIREAT h 4102444800000",
            "COPY h h3",
            "PEXPIRETIME h3",
            "COPY a b DB 0 REPLACE",
            "COPY a",
        ]),
        c(&[
            "MSET one 1 two 2 three 3 four 4",
            "KEYS t?o",
            "KEYS f[o]ur",
            "KEYS nomatch",
            "KEYS [^a-z]*",
            "KEYS o*",
            "KEYS *hre*",
            "KEYS",
            "RANDOMKEY x",
        ]),
        c(&[
            "RANDOMKEY",
            "SET only 1",
            "RANDOMKEY",
            "KEYS *",
            "SCAN x",
            "SCAN 0 COUNT 0",
            "SCAN 0 MATCH",
            "SCAN 0 COUNT x",
        ]),
        c(&["SCAN 0 FOO bar", "SCAN -1", "TIME x", "SCAN"]),
        c(&["MULTI", "SET a 1", "INCR a", "HSET h f v", "GET a", "HGETALL h", "EXEC", "GET a", "EXEC"]),
        c(&["MULTI", "MULTI", "SET a 1", "NOPE", "EXEC", "GET a"]),
        c(&["MULTI", "SET a", "GET a", "EXEC", "EXISTS a"]),
        c(&["EXEC", "DISCARD", "MULTI", "SET a 1", "DISCARD", "DISCARD", "GET a", "MULTI", "EXEC"]),
        c(&["MULTI", "WATCH x", "SET b 2", "EXEC", "GET b", "MULTI x", "EXEC x", "DISCARD x", "UNWATCH x"]),
        c(&["MULTI", "SET s v", "HSET s f v", "GET s", "INCR s", "EXEC", "GET s"]),
        c(&["SET w 1", "WATCH w", "SET w 2", "MULTI", "SET w 3", "EXEC", "GET w"]),
        c(&["SET w 1", "WATCH w", "MULTI", "SET w 3", "EXEC", "GET w", "WATCH w", "UNWATCH", "SET w 4", "MULTI"]),
        c(&["WATCH m", "SET m 1", "MULTI", "GET m", "EXEC", "WATCH", "WATCH a b a", "MULTI", "PING", "EXEC"]),
        c(&["SET k v", "WATCH k", "EXPIRE k 100", "MULTI", "GET k", "EXEC", "WATCH k", "GET k", "MULTI", "EXEC"]),
        c(&["WATCH gone", "MULTI", "SET gone 1", "EXEC", "GET gone", "MULTI", "PING", "QUIT", "PING"]),
        c(&["AUTH x", "AUTH default x", "AUTH other x", "AUTH", "HELLO 4", "CLIENT SETNAME a", "CLIENT GETNAME"]),
        c(&[
            "RPUSH l a b c",
            "LPUSH l x y",
            "LRANGE l 0 -1",
            "LLEN l",
            "LINDEX l 0",
            "LINDEX l -1",
            "LINDEX l 99",
            "LRANGE l -100 100",
            "LRANGE l 3 1",
            "LRANGE none 0 -1",
            "TYPE l",
        ]),
        c(&["RPUSH l a b c d", "LPOP l", "RPOP l", "LPOP l 5", "EXISTS l", "LPOP l", "LPOP l 2", "RPOP none 0"]),
        c(&["RPUSH l a b c", "LPOP l 0", "RPOP l -1", "LPOP l x", "LPOP l 1 2", "RPOP l 2", "LLEN l"]),
        c(&["LPUSHX l a", "RPUSH l a", "LPUSHX l b", "RPUSHX l c", "LRANGE l 0 -1", "RPUSHX none x", "EXISTS none"]),
        c(&[
            "RPUSH l a b c",
            "LSET l 1 B",
            "LSET l -1 C",
            "LSET l 5 x",
            "LSET none 0 x",
            "LSET l x y",
            "LRANGE l 0 -1",
        ]),
        c(&[
            "RPUSH l a b c",
            "LINSERT l BEFORE b x",
            "LINSERT l after c y",
            "LINSERT l BEFORE nope z",
            "LINSERT none BEFORE a z",
            "LINSERT l MIDDLE a z",
            "LRANGE l 0 -1",
        ]),
        c(&[
            "RPUSH l a x b x c x",
            "LREM l -2 x",
            "LRANGE l 0 -1",
            "LREM l 0 x",
            "LREM l 1 nope",
            "LREM none 0 a",
            "LREM l x a",
            "LRANGE l 0 -1",
        ]),
        c(&[
            "RPUSH l a b c d e",
            "LTRIM l 1 -2",
            "LRANGE l 0 -1",
            "LTRIM l 0 -1",
            "LTRIM l 5 10",
            "EXISTS l",
            "LTRIM none 0 1",
            "LTRIM l x 1",
        ]),
        c(&[
            "RPUSH src a b c",
            "LMOVE src dst LEFT RIGHT",
            "LMOVE src dst RIGHT LEFT",
            "LRANGE src 0 -1",
            "LRANGE dst 0 -1",
            "RPOPLPUSH src src",
            "LRANGE src 0 -1",
            "RPOPLPUSH src dst",
            "EXISTS src",
            "LMOVE none dst LEFT LEFT",
            "LMOVE dst dst UP LEFT",
            "LRANGE dst 0 -1",
        ]),
        c(&[
            "SET s v",
            "LPUSH s a",
            "LRANGE s 0 1",
            "LPOP s",
            "LLEN s",
            "RPUSH l a",
            "GET l",
            "HSET l f v",
            "LMOVE l s LEFT LEFT",
            "LMOVE s l LEFT LEFT",
            "LRANGE l 0 -1",
        ]),
        c(&[
            "RPUSH l a",
            "PEXPIREAT l 4102444800000",
            "RPUSH l b",
            "PEXPIRETIME l",
            "LPOP l 2",
            "RPUSH l c",
            "PEXPIRETIME l",
        ]),
        c(&[
            "RPUSH",
            "RPUSH l",
            "LRANGE l 0",
            "LINDEX l",
            "LSET l 0",
            "LINSERT l BEFORE a",
            "LREM l 0",
            "LMOVE a b LEFT",
        ]),
        c(&[
            "SADD s 5 -2 10 5",
            "SMEMBERS s",
            "SCARD s",
            "SISMEMBER s 10",
            "SISMEMBER s 010",
            "SMISMEMBER s 5 6 -2",
            "SREM s 5 99",
            "SMEMBERS s",
            "SREM s -2 10",
            "EXISTS s",
            "SMEMBERS none",
            "SCARD none",
            "TYPE s",
        ]),
        c(&["SADD s 3 1 2", "SADD s word", "SCARD s", "SISMEMBER s word", "SREM s word 1 2 3", "EXISTS s"]),
        c(&[
            "SADD a 1 2 3 4",
            "SADD b 3 4 5",
            "SADD c 4 9",
            "SINTER a b",
            "SINTER a b c",
            "SINTER a none",
            "SUNION a b c",
            "SDIFF a b",
            "SDIFF a b c",
            "SDIFF none a",
            "SINTERSTORE d a b",
            "SMEMBERS d",
            "SUNIONSTORE d a c",
            "SMEMBERS d",
            "SDIFFSTORE d a a",
            "EXISTS d",
            "SINTERSTORE d none a",
        ]),
        c(&[
            "SADD a 1 2",
            "SMOVE a b 1",
            "SMOVE a b 7",
            "SMEMBERS a",
            "SMEMBERS b",
            "SMOVE a a 2",
            "SMOVE a b 2",
            "EXISTS a",
            "SMOVE none b 1",
            "SET str v",
            "SMOVE b str 1",
            "SMOVE str b 1",
            "SMEMBERS b",
        ]),
        c(&[
            "SADD s 1 2 3",
            "SPOP s 10",
            "EXISTS s",
            "SPOP none",
            "SPOP none 2",
            "SADD s 7",
            "SPOP s",
            "SPOP s 0",
            "SPOP s -1",
            "SPOP s x",
            "SPOP s 1 2",
        ]),
        c(&[
            "SADD s 1 2 3",
            "SRANDMEMBER s 10",
            "SRANDMEMBER s 0",
            "SRANDMEMBER none",
            "SRANDMEMBER none 5",
            "SRANDMEMBER s x",
            "SRANDMEMBER s 1 2",
            "SADD one 9",
            "SRANDMEMBER one",
            "SRANDMEMBER one -3",
        ]),
        c(&[
            "SET str v",
            "SADD str a",
            "SMEMBERS str",
            "SINTER str",
            "SUNIONSTORE d str",
            "SADD s a",
            "GET s",
            "LPUSH s x",
            "HSET s f v",
            "SCARD str",
        ]),
        c(&["SADD", "SADD s", "SREM s", "SMEMBERS", "SISMEMBER s", "SINTER", "SINTERSTORE d", "SMOVE a b"]),
        c(&[
            "HSET h b 1 a 2 c 3",
            "HSCAN h 0",
            "HSCAN h 0 MATCH [ab] COUNT 1",
            "HSCAN h 0 TYPE hash",
            "HSCAN h x",
            "HSCAN h 0 COUNT 0",
            "HSCAN none 0",
            "SADD s 3 1 2",
            "SSCAN s 0",
            "SSCAN s 0 MATCH 1*",
            "SSCAN none 0",
            "SSCAN h 0",
            "HSCAN s 0",
            "HSCAN h",
        ]),
        // Sorted sets.
        c(&[
            "ZADD z 1 a 2 b 3 c",
            "ZADD z 1.5 a 0.1 d -inf e +inf f",
            "ZRANGE z 0 -1 WITHSCORES",
            "ZCARD z",
            "ZSCORE z a",
            "ZSCORE z nope",
            "ZSCORE none a",
            "ZMSCORE z a nope e",
            "ZMSCORE none a",
            "ZRANK z c",
            "ZREVRANK z c",
            "ZRANK z nope",
            "ZADD z 1e400 x",
            "ZADD z nan x",
            "ZADD z abc x",
            "ZADD z 1",
            "ZADD z 1 a 2",
            "ZADD z 0x10 x",
            "ZADD z 1e-400 x",
            "ZADD z 5e-324 tiny",
            "ZSCORE z tiny",
            "ZADD z 1e17 big 123456789.123 odd -0 negzero",
            "ZRANGE z 0 -1 WITHSCORES",
            "ZSCORE z negzero",
        ]),
        c(&[
            "ZADD z 1 a 2 b",
            "ZADD z NX 5 a 3 c",
            "ZADD z XX 5 a 4 d",
            "ZADD z XX NX 1 a",
            "ZADD z GT LT 1 a",
            "ZADD z NX GT 1 a",
            "ZADD z GT CH 1 a 10 b 7 e",
            "ZADD z LT CH 1 a 10 b",
            "ZADD z XX GT CH 100 a",
            "ZADD z CH 100 a 100 b 1 new",
            "ZADD z INCR 2 a",
            "ZADD z INCR 2 a 3 b",
            "ZADD z INCR NX 2 a",
            "ZADD z INCR XX 2 nope",
            "ZADD z INCR GT -5 a",
            "ZADD none XX 1 a",
            "ZADD none XX INCR 1 a",
            "EXISTS none",
            "ZINCRBY z 1.5 b",
            "ZINCRBY z x b",
            "ZINCRBY z 1 fresh",
            "ZADD z inf i",
            "ZINCRBY z -inf i",
            "ZSCORE z i",
            "ZRANGE z 0 -1 WITHSCORES",
        ]),
        c(&[
            "ZADD z 1 a 2 b 3 c 4 d 5 e",
            "ZRANGE z 1 3",
            "ZRANGE z -2 -1 WITHSCORES",
            "ZRANGE z 3 1",
            "ZRANGE z 10 20",
            "ZRANGE z -100 100",
            "ZRANGE z 0 -1 REV",
            "ZREVRANGE z 0 1 WITHSCORES",
            "ZREVRANGE z 0 1 REV",
            "ZRANGE z 1 x",
            "ZRANGE z 0 1 LIMIT 0 1",
            "ZRANGE z 0 1 FOO",
            "ZRANGE z (1 3 BYSCORE",
            "ZRANGE z 1 (3 BYSCORE WITHSCORES",
            "ZRANGE z -inf +inf BYSCORE LIMIT 1 2",
            "ZRANGE z -inf +inf BYSCORE LIMIT -1 2",
            "ZRANGE z -inf +inf BYSCORE LIMIT 1 -1",
            "ZRANGE z -inf +inf BYSCORE LIMIT 10 1",
            "ZRANGE z 5 2 BYSCORE REV",
            "ZRANGE z (5 (2 BYSCORE REV WITHSCORES LIMIT 1 1",
            "ZRANGE z x 2 BYSCORE",
            "ZRANGE z (x 2 BYSCORE",
            "ZRANGE z  2 BYSCORE",
            "ZRANGEBYSCORE z 2 4",
            "ZRANGEBYSCORE z 2 4 WITHSCORES LIMIT 1 5",
            "ZRANGEBYSCORE z 2 4 BYSCORE",
            "ZREVRANGEBYSCORE z 4 2",
            "ZREVRANGEBYSCORE z 2 4",
            "ZCOUNT z 2 4",
            "ZCOUNT z (2 (4",
            "ZCOUNT z -inf inf",
            "ZCOUNT z 4 2",
            "ZCOUNT z a b",
            "ZCOUNT none 0 1",
            "ZRANGE none 0 -1",
            "ZRANGE z 0 -1 LIMIT 0",
            "ZRANGE z 0 1 WITHSCORES BYLEX",
        ]),
        c(&[
            "ZADD l 0 a 0 b 0 c 0 d 0 e 0 ab",
            "ZRANGE l - + BYLEX",
            "ZRANGE l [b (d BYLEX",
            "ZRANGE l (a [c BYLEX LIMIT 1 2",
            "ZRANGE l + - BYLEX REV",
            "ZRANGE l [d (ab BYLEX REV",
            "ZRANGEBYLEX l - [b",
            "ZREVRANGEBYLEX l [c -",
            "ZRANGEBYLEX l a c",
            "ZRANGEBYLEX l [c [a",
            "ZRANGEBYLEX l (c [c",
            "ZRANGEBYLEX l + -",
            "ZLEXCOUNT l [a [c",
            "ZLEXCOUNT l - +",
            "ZLEXCOUNT l x y",
            "ZREMRANGEBYLEX l [a (b",
            "ZRANGE l 0 -1",
            "ZREMRANGEBYLEX l x y",
            "ZREMRANGEBYLEX l - +",
            "EXISTS l",
        ]),
        c(&[
            "ZADD z 1 a 2 b 3 c 4 d 5 e 6 f",
            "ZREMRANGEBYRANK z 0 1",
            "ZREMRANGEBYRANK z -1 -1",
            "ZREMRANGEBYRANK z 5 10",
            "ZREMRANGEBYRANK z x 1",
            "ZREMRANGEBYSCORE z (3 4",
            "ZREMRANGEBYSCORE z a 4",
            "ZRANGE z 0 -1 WITHSCORES",
            "ZREMRANGEBYSCORE z -inf +inf",
            "EXISTS z",
            "ZREMRANGEBYRANK none 0 -1",
            "ZADD z 1 a 2 b 3 c",
            "ZREM z a nope",
            "ZREM z b c a",
            "EXISTS z",
            "ZREM none a",
        ]),
        c(&[
            "ZADD z 1 a 2 b 3 c 4 d",
            "ZPOPMIN z",
            "ZPOPMAX z",
            "ZPOPMIN z 0",
            "ZPOPMIN z -1",
            "ZPOPMIN z x",
            "ZPOPMIN z 1 2",
            "ZPOPMAX z 10",
            "EXISTS z",
            "ZPOPMIN none",
            "ZPOPMIN none 3",
            "ZADD a 1 x 2 y",
            "ZADD b 5 q",
            "ZMPOP 2 none a MIN",
            "ZMPOP 2 a b MAX COUNT 5",
            "ZMPOP 2 a b MAX COUNT 5",
            "ZMPOP 1 none MIN",
            "ZMPOP 0 a MIN",
            "ZMPOP 1 b",
            "ZMPOP 1 b MIDDLE",
            "ZMPOP 1 b MIN COUNT 0",
            "ZMPOP 1 b MIN COUNT 1 COUNT 1",
            "ZMPOP 5 b MIN",
            "ZADD one 7 only",
            "ZRANDMEMBER one",
            "ZRANDMEMBER one 5 WITHSCORES",
            "ZRANDMEMBER one -3 WITHSCORES",
            "ZRANDMEMBER one 0",
            "ZRANDMEMBER none",
            "ZRANDMEMBER none 3",
            "ZRANDMEMBER one x",
            "ZRANDMEMBER one 1 FOO",
            "ZRANDMEMBER one -9223372036854775808",
            "ZRANDMEMBER one 9223372036854775807 WITHSCORES",
        ]),
        c(&[
            "ZADD a 1 x 2 y 3 z",
            "ZADD b 10 y 20 z 30 w",
            "SADD s x w",
            "ZUNION 2 a b WITHSCORES",
            "ZUNION 2 a b WEIGHTS 2 0.5 WITHSCORES",
            "ZUNION 3 a b s AGGREGATE MAX WITHSCORES",
            "ZUNION 2 a b AGGREGATE MIN",
            "ZINTER 2 a b WITHSCORES",
            "ZINTER 2 a s WITHSCORES",
            "ZINTER 2 a none",
            "ZDIFF 2 a b WITHSCORES",
            "ZDIFF 2 b s",
            "ZDIFF 2 a b WEIGHTS 1 1",
            "ZINTERCARD 2 a b",
            "ZINTERCARD 2 a b LIMIT 1",
            "ZINTERCARD 2 a b LIMIT -1",
            "ZINTERCARD 2 a b WITHSCORES",
            "ZUNIONSTORE d 2 a b",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZINTERSTORE d 2 a b AGGREGATE SUM WEIGHTS 1 -1",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZDIFFSTORE d 2 a a",
            "EXISTS d",
            "ZUNIONSTORE d 0 a",
            "ZUNIONSTORE d 3 a b",
            "ZUNIONSTORE d x a",
            "ZUNIONSTORE d 2 a b WEIGHTS 1",
            "ZUNIONSTORE d 2 a b WEIGHTS 1 x",
            "ZUNIONSTORE d 2 a b AGGREGATE AVG",
            "ZUNIONSTORE d 2 a b WITHSCORES",
            "ZADD inf inf m",
            "ZUNION 2 inf inf WEIGHTS 1 -1 WITHSCORES",
            "ZUNION 1 inf WEIGHTS 0 WITHSCORES",
            "SET str v",
            "ZUNION 2 a str",
            "ZUNIONSTORE d 2 a str",
            "ZRANGESTORE d a 0 1",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZRANGESTORE d a (1 +inf BYSCORE LIMIT 0 1",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZRANGESTORE d none 0 -1",
            "EXISTS d",
            "ZRANGESTORE d a 0 -1 WITHSCORES",
            "ZRANGESTORE str a 0 0",
            "TYPE str",
        ]),
        c(&[
            "ZADD z 1 b 2.5 a 3 c 1e20 d",
            "ZSCAN z 0",
            "ZSCAN z 0 MATCH [ab]",
            "ZSCAN none 0",
            "ZSCAN z x",
            "SET str v",
            "ZSCAN str 0",
            "ZADD str 1 a",
            "ZRANGE str 0 -1",
            "ZCARD str",
            "ZSCORE str a",
            "ZPOPMIN str",
            "ZUNION 1 str",
            "TYPE z",
            "GET z",
            "SADD z x",
            "RENAME z y",
            "ZRANGE y 0 -1 WITHSCORES",
            "COPY y w",
            "ZRANGE w 0 -1 WITHSCORES",
            "EXPIRE w 100",
            "TTL w",
            "ZADD", "ZADD z", "ZCARD", "ZRANGE z 0", "ZRANGESTORE d s 0", "ZCOUNT z 1", "ZUNION 1",
        ]),
        c(&[
            "RPUSH l a b c",
            "BLPOP none l 0",
            "BRPOP l 0",
            "BLPOP none 0.05",
            "BLMOVE l m LEFT RIGHT 0",
            "BRPOPLPUSH none m 0.01",
            "BLMPOP 0.01 2 none m LEFT COUNT 5",
            "BLMPOP 0.01 1 none RIGHT",
            "LMPOP 1 none LEFT",
            "RPUSH l x y",
            "LMPOP 2 none l RIGHT COUNT 1",
            "LMPOP 0 l LEFT",
            "LMPOP 1 l MIDDLE",
            "BLPOP l x",
            "BLPOP l -1",
            "BLMOVE l m UP RIGHT 0",
            "BLMPOP x 1 l LEFT",
            "ZADD z 1 a 2 b 3 c",
            "BZPOPMIN none z 0",
            "BZPOPMAX z 0",
            "BZMPOP 0 1 z MIN COUNT 5",
            "BZPOPMIN z 0.01",
            "BZMPOP 0.01 1 z MAX",
            "SET s v",
            "BLPOP s 0",
            "BZPOPMIN s 0",
            "BLMOVE s l LEFT LEFT 0",
            "MULTI",
            "BLPOP none 0",
            "BLMOVE none l LEFT LEFT 0",
            "EXEC",
        ]),
        c(&[
            "RPUSH p a b c a b c a",
            "LPOS p a",
            "LPOS p a RANK 2",
            "LPOS p a RANK -1",
            "LPOS p a COUNT 0",
            "LPOS p a COUNT 2 RANK -2",
            "LPOS p a MAXLEN 3 COUNT 0",
            "LPOS p x",
            "LPOS p x COUNT 1",
            "LPOS none a",
            "LPOS none a COUNT 1",
            "LPOS p a RANK 0",
            "LPOS p a COUNT -1",
            "LPOS p a MAXLEN -1",
            "LPOS p a FOO",
            "LPOS p a RANK",
            "LPOS p a RANK x",
            "SET s v",
            "LPOS s a",
        ]),
        c(&[
            "SET f 10.5",
            "INCRBYFLOAT f 0.1",
            "INCRBYFLOAT f 5.0e3",
            "INCRBYFLOAT f -5010.60000000000000009",
            "INCRBYFLOAT n 1.23456789012345678901",
            "INCRBYFLOAT n 0x10",
            "INCRBYFLOAT big 1e300",
            "INCRBYFLOAT tiny 3.0e-300",
            "INCRBYFLOAT f inf",
            "INCRBYFLOAT f abc",
            "INCRBYFLOAT f 1e5000",
            "SET s abc",
            "INCRBYFLOAT s 1",
            "SET t 5 EX 100",
            "INCRBYFLOAT t 1.5",
            "TTL t",
            "HSET h i 10 s x",
            "HINCRBYFLOAT h i 0.5",
            "HINCRBYFLOAT h new -1.25",
            "HINCRBYFLOAT h s 1",
            "HINCRBYFLOAT h i inf",
            "HINCRBYFLOAT h i nope",
            "HINCRBYFLOAT f i 1",
            "HSET h inf inf",
            "HINCRBYFLOAT h inf 1",
            "HGETALL h",
            "LPUSH l x",
            "INCRBYFLOAT l 1",
        ]),
        c(&[
            "SET k0 a",
            "SELECT 3",
            "GET k0",
            "SET k3 b",
            "DBSIZE",
            "KEYS *",
            "MOVE k3 0",
            "MOVE k3 0",
            "MOVE nope 1",
            "MOVE k3 3",
            "MOVE k3 16",
            "MOVE k3 x",
            "SELECT 0",
            "GET k3",
            "MOVE k3 5",
            "SELECT 5",
            "GET k3",
            "COPY k3 c DB 7",
            "COPY k3 c DB 7",
            "COPY k3 k3 DB 5",
            "COPY k3 k3 DB 16",
            "SELECT 7",
            "GET c",
            "FLUSHDB",
            "DBSIZE",
            "SELECT 5",
            "DBSIZE",
            "SELECT 16",
            "SELECT -1",
            "INFO keyspace",
            "MULTI",
            "SELECT 2",
            "SET m 1",
            "EXEC",
            "GET m",
            "SELECT 0",
            "GET m",
            "WATCH w",
            "SELECT 1",
            "SET w x",
            "SELECT 0",
            "MULTI",
            "PING",
            "EXEC",
            "FLUSHALL",
            "INFO keyspace",
        ]),
        c(&["SET k v", "WAIT 0 0", "WAIT 1 50", "WAIT x 0", "WAIT 1 x", "WAIT 1 -1", "WAIT 1", "GET k"]),
        c(&["PING", "QUIT", "PING"]),
        b"*1\r\n$-5\r\n".to_vec(),
        b"*abc\r\n".to_vec(),
        b"*1\r\n:5\r\n".to_vec(),
        b"*2\r\n$3\r\nGET\r\n$999999999999\r\n".to_vec(),
        b"PING\r\nSET \"unbalanced\r\nPING\r\n".to_vec(),
    ];
    // Pipelined: many writes and reads in one go.
    let mut p = Vec::new();
    for i in 0..200 {
        p.extend(cmd(&format!("SET p{i} v{i}")));
        p.extend(cmd("INCR ctr"));
        p.extend(cmd(&format!("GET p{}", i / 2)));
    }
    v.push(p);
    // A hash past 128 fields (Redis then keeps it in a table: only order-free answers here).
    let mut h = Vec::new();
    for i in 0..200 {
        h.extend(cmd(&format!("HSET wide f{i} {i}")));
    }
    h.extend(cmd("HLEN wide"));
    h.extend(cmd("HGET wide f150"));
    h.extend(cmd("HDEL wide f1 f2 f150 nope"));
    h.extend(cmd("HLEN wide"));
    h.extend(cmd("HINCRBY wide f3 100"));
    v.push(h);
    // A sorted set past 128 members (a skiplist in Redis; the order is the same).
    let mut z = Vec::new();
    for i in 0..300 {
        z.extend(cmd(&format!("ZADD big {} m{i}", (i * 37) % 101)));
    }
    for q in [
        "ZCARD big",
        "ZRANGE big 100 110 WITHSCORES",
        "ZREVRANGE big 0 5 WITHSCORES",
        "ZRANK big m150",
        "ZREVRANK big m150",
        "ZRANGEBYSCORE big (50 52 WITHSCORES",
        "ZCOUNT big 10 20",
        "ZREMRANGEBYRANK big 0 9",
        "ZPOPMAX big 3",
        "ZINCRBY big 0.25 m7",
        "ZRANGE big 95 +inf BYSCORE LIMIT 2 4 WITHSCORES",
    ] {
        z.extend(cmd(q));
    }
    v.push(z);
    v
}

#[test]
fn same_answers_as_redis_with_appendfsync_always() {
    let net = TestNet::new(1);
    let _r = redis(&net);
    let dir = Scratch::new("diff");
    let s = store(&net, &dir, &[]);
    let cases = corpus();
    let mut diffs = Vec::new();
    // Whole, then each case cut into 7-byte segments (requests and values split anywhere).
    // Whole, in 7-byte pieces, and whole again in RESP3 (HELLO 3 first).
    for (piece, resp3) in [(usize::MAX, false), (7, false), (usize::MAX, true)] {
        for (i, case) in cases.iter().enumerate() {
            if piece < case.len() && case.len() > 20_000 {
                continue;
            }
            let mut input = cmd("FLUSHALL");
            if resp3 {
                input.extend(cmd("HELLO 3"));
            }
            input.extend_from_slice(case);
            let (a, b) = (input.clone(), input.clone());
            // HELLO's reply names the connection's id, which differs between two servers.
            let same_id = |r: Vec<u8>| {
                let at = r.windows(8).position(|w| w == b"$2\r\nid\r\n");
                match at {
                    Some(p) => {
                        let end = p + 8 + r[p + 8..].windows(2).position(|w| w == b"\r\n").unwrap_or(0);
                        [&r[..p + 8], b":ID", &r[end..]].concat()
                    }
                    None => r,
                }
            };
            let theirs = same_id(in_netns(&net.cli_ns, move || exchange(SERVER, a, piece)));
            let ours = same_id(in_netns(&net.cli_ns, move || exchange(SERVER_OWN, b, piece)));
            // Redis answered (its FLUSHALL at least): the comparison is of real replies.
            assert!(theirs.starts_with(b"+OK\r\n") && theirs.len() > 5, "case {i}: Redis said {theirs:?}");
            if theirs != ours {
                let (t, o) = (String::from_utf8_lossy(&theirs), String::from_utf8_lossy(&ours));
                let at = t.chars().zip(o.chars()).take_while(|(a, b)| a == b).count().saturating_sub(80);
                let show = |s: &str| s.chars().skip(at).take(300).collect::<String>();
                diffs.push(format!(
                    "case {i} (pieces of {piece}, RESP3 {resp3}): {:?}\n  redis:   {:?}\n  sirocco: {:?}",
                    String::from_utf8_lossy(&case[..case.len().min(160)]),
                    show(&t),
                    show(&o)
                ));
            }
        }
    }
    let (status, log) = s.stop();
    assert!(diffs.is_empty(), "{} differences:\n{}", diffs.len(), diffs.join("\n"));
    assert!(status.success(), "{log}");
}

/// Every bulk string of a reply, in order (array headers dropped): SCAN's cursor and keys.
fn bulks(r: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < r.len() {
        let end = at + r[at..].windows(2).position(|w| w == b"\r\n").expect("a line");
        if r[at] == b'$' {
            let n: usize = std::str::from_utf8(&r[at + 1..end]).unwrap().parse().unwrap();
            out.push(r[end + 2..end + 2 + n].to_vec());
            at = end + 2 + n + 2;
        } else {
            at = end + 2;
        }
    }
    out
}

/// KEYS and whole SCAN iterations (with MATCH, TYPE and a COUNT hint) give the same keys as
/// Redis does on the same data; SCAN returns each key once, and a key added during the
/// iteration breaks nothing.
#[test]
fn keys_and_scan_find_what_redis_finds() {
    let net = TestNet::new(1);
    let _r = redis(&net);
    let dir = Scratch::new("scan");
    let s = store(&net, &dir, &["--queues", "1"]);
    let mut load = cmd("FLUSHALL");
    for i in 0..1500 {
        if i % 3 == 0 {
            load.extend(cmd(&format!("HSET user:{i} name n{i} age {}", i % 90)));
        } else {
            load.extend(cmd(&format!("SET item:{i}:{} v", i % 7)));
        }
    }
    let ask = |addr: &'static str, input: Vec<u8>, n: usize| {
        in_netns(&net.cli_ns, move || Client::connect(addr).ask_n(&input, n))
    };
    for addr in [SERVER, SERVER_OWN] {
        let replies = ask(addr, load.clone(), 1501);
        assert!(replies.iter().all(|r| r[0] == b'+' || r[0] == b':'), "{addr} loaded");
    }
    let sorted = |mut v: Vec<Vec<u8>>| {
        v.sort();
        v
    };
    for pattern in ["*", "user:1*", "item:*:3", "*:[0-2]", "nothing*"] {
        let theirs = sorted(bulks(&ask(SERVER, req(&[b"KEYS", pattern.as_bytes()]), 1)[0]));
        let ours = sorted(bulks(&ask(SERVER_OWN, req(&[b"KEYS", pattern.as_bytes()]), 1)[0]));
        assert_eq!(theirs.len(), ours.len(), "KEYS {pattern}");
        assert_eq!(theirs, ours, "KEYS {pattern}");
    }
    let scan_all = |addr: &'static str, extra: &[&str], add_during: bool| {
        let extra: Vec<String> = extra.iter().map(|e| e.to_string()).collect();
        in_netns(&net.cli_ns, move || {
            let mut c = Client::connect(addr);
            let (mut cursor, mut keys, mut calls) = (b"0".to_vec(), Vec::new(), 0);
            loop {
                let mut args: Vec<&[u8]> = vec![b"SCAN", &cursor, b"COUNT", b"50"];
                args.extend(extra.iter().map(|e| e.as_bytes()));
                let mut got = bulks(&c.ask(&req(&args)));
                cursor = got.remove(0);
                keys.extend(got);
                calls += 1;
                if add_during && calls == 2 {
                    c.ask(&cmd("SET added:during v"));
                }
                if cursor == b"0" || calls > 10_000 {
                    break;
                }
            }
            keys
        })
    };
    for extra in [&[][..], &["MATCH", "user:*"], &["TYPE", "hash"], &["TYPE", "string", "MATCH", "*:4"]] {
        let theirs = sorted(scan_all(SERVER, extra, false));
        let ours = scan_all(SERVER_OWN, extra, false);
        let n = ours.len();
        let ours = sorted(ours);
        let mut once = ours.clone();
        once.dedup();
        assert_eq!(once.len(), n, "SCAN {extra:?} returned a key twice");
        assert_eq!(theirs, ours, "SCAN {extra:?}");
    }
    let during = scan_all(SERVER_OWN, &[], true);
    assert!(during.len() >= 1500, "every key present throughout is returned: {}", during.len());
    let (status, log) = s.stop();
    assert!(status.success(), "{log}");
}

/// With a password (Redis's `requirepass`), sirocco answers AUTH, HELLO, CLIENT and the
/// commands before and after authentication as Redis 7.0.15 does, byte for byte.
#[test]
fn requirepass_auth_and_client_answer_as_redis() {
    let net = TestNet::new(1);
    let _r = redis_with(&net, &["--requirepass", "s3cret"]);
    let dir = Scratch::new("auth");
    let s = store(&net, &dir, &["--requirepass", "s3cret"]);
    let c = |list: &[&str]| list.iter().flat_map(|w| cmd(w)).collect::<Vec<u8>>();
    let cases = [
        c(&["PING", "GET k", "AUTH", "AUTH wrong", "AUTH default wrong", "AUTH nobody s3cret", "AUTH a b c", "QUIT"]),
        c(&["HELLO 2 AUTH default wrong", "HELLO 4", "HELLO x", "CLIENT GETNAME", "QUIT"]),
        c(&["AUTH s3cret", "PING", "SET k v", "GET k", "AUTH default s3cret", "CLIENT GETNAME"]),
        c(&["AUTH s3cret", "CLIENT SETNAME app", "CLIENT GETNAME", "CLIENT SETNAME 'a b'", "CLIENT SETNAME ''"]),
        c(&[
            "AUTH s3cret",
            "CLIENT GETNAME",
            "CLIENT FOO",
            "CLIENT",
            "CLIENT GETNAME x",
            "HELLO 2 FOO",
            "HELLO 2 AUTH",
        ]),
        c(&["AUTH s3cret", "CONFIG GET requirepass", "MULTI", "SET a 1", "EXEC", "GET a"]),
    ];
    let mut diffs = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let (a, b) = (case.clone(), case.clone());
        let theirs = in_netns(&net.cli_ns, move || exchange(SERVER, a, usize::MAX));
        let ours = in_netns(&net.cli_ns, move || exchange(SERVER_OWN, b, usize::MAX));
        assert!(theirs.len() > 10, "case {i}: Redis said {:?}", String::from_utf8_lossy(&theirs));
        if theirs != ours {
            diffs.push(format!(
                "case {i}:\n  redis:   {:?}\n  sirocco: {:?}",
                String::from_utf8_lossy(&theirs),
                String::from_utf8_lossy(&ours)
            ));
        }
    }
    // HELLO's reply differs only in the connection's id.
    let hello = |addr: &'static str| {
        in_netns(&net.cli_ns, move || Client::connect(addr).ask(&cmd("HELLO 2 AUTH default s3cret SETNAME x")))
    };
    let (theirs, ours) = (bulks(&hello(SERVER)), bulks(&hello(SERVER_OWN)));
    assert_eq!(theirs[..4], ours[..4], "server and version");
    let (status, log) = s.stop();
    assert!(diffs.is_empty(), "{} differences:\n{}", diffs.len(), diffs.join("\n"));
    assert!(status.success(), "{log}");
}

#[test]
fn redis_cli_and_redis_benchmark_work() {
    let net = TestNet::new(1);
    let dir = Scratch::new("tools");
    let s = store(&net, &dir, &[]);
    let cli = |args: &[&str]| {
        let mut a = vec!["timeout", "20", "redis-cli", "-h", SERVER_OWN];
        a.extend_from_slice(args);
        let out = net.exec(&net.cli_ns, &a);
        assert!(out.status.success(), "redis-cli {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(cli(&["ping"]), "PONG");
    assert_eq!(cli(&["set", "greeting", "hello world"]), "OK");
    assert_eq!(cli(&["get", "greeting"]), "hello world");
    assert_eq!(cli(&["incrby", "n", "5"]), "5");
    assert_eq!(cli(&["mget", "greeting", "none", "n"]), "hello world\n\n5");
    assert!(cli(&["info", "persistence"]).contains("appendfsync:always"));
    let out = net.exec(
        &net.cli_ns,
        &["timeout", "120", "redis-benchmark", "-h", SERVER_OWN, "-t", "set,get,incr,mset", "-n", "5000", "-c", "20"],
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "redis-benchmark: {text}");
    for t in ["SET", "GET", "INCR", "MSET"] {
        assert!(text.contains(&format!("====== {t}")), "no {t} run: {text}");
    }
    assert!(!text.to_lowercase().contains("error"), "{text}");
    // redis-benchmark's INCRs all landed, durably: 5000 on its counter key.
    assert_eq!(cli(&["get", "counter:__rand_int__"]), "5000");
    let info = cli(&["info"]);
    let commits: u64 = info.lines().find_map(|l| l.strip_prefix("log_commits:")).unwrap().trim().parse().unwrap();
    assert!(commits > 0, "{info}");
    let (status, log) = s.stop();
    assert!(status.success(), "{log}");
}

/// A small xorshift generator (the seed is printed with any failure).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What the writers know: values acknowledged, and what may or may not have landed.
#[derive(Default)]
struct Model {
    /// Key → its acknowledged value (None: acknowledged deleted).
    acked: HashMap<String, Option<Vec<u8>>>,
    /// Key → values sent and not acknowledged when the server died (either may be there).
    maybe: HashMap<String, Vec<Option<Vec<u8>>>>,
    /// Counter → (acknowledged value, increments sent in all).
    counters: HashMap<String, (i64, i64)>,
    /// Transactions (MULTI, SET a, HSET b f, EXEC of one value): after any crash both keys
    /// hold it or neither does.
    pairs: Vec<(String, String)>,
    /// Lists (one per connection and round) → (pushes acknowledged, values pushed in order):
    /// after any crash a list holds the acknowledged values and then a prefix of the rest.
    lists: HashMap<String, (usize, Vec<Vec<u8>>)>,
}

/// A transaction's model key ("T string-key hash-key") → the keys it wrote, as the model
/// names them.
fn tx_keys(k: &str) -> Option<(String, String)> {
    let (a, b) = k.strip_prefix("T ")?.split_once(' ')?;
    Some((a.to_string(), format!("H {b} f")))
}

/// A batch's ops that the model does not keep (MULTI's +OK, +QUEUED) are named so.
const TX_STEP: &str = "-";

/// What an op not acknowledged may have left: the model's "maybe".
fn unacked(m: &mut Model, ctr: &str, k: String, v: Option<Vec<u8>>) {
    if k == ctr || k == TX_STEP || k.starts_with("L ") {
        return;
    }
    if let Some((a, b)) = tx_keys(&k) {
        m.maybe.entry(a.clone()).or_default().push(v.clone());
        m.maybe.entry(b.clone()).or_default().push(v);
        m.pairs.push((a, b));
        return;
    }
    m.maybe.entry(k).or_default().push(v);
}

/// One writer connection until the server dies: pipelined batches of SET (unique and
/// overwritten keys, values of many sizes), INCR, DEL, HSET/HDEL of fields of a few hashes
/// (modelled per field, as "H key field"), SADD/SREM and ZADD/ZREM (per member), RPUSH and
/// transactions; every reply checked.
fn write_until_dead(conn: usize, round: usize, seed: u64) -> Model {
    let mut m = Model::default();
    let mut rng = Rng(seed | 1);
    let Ok(s) = TcpStream::connect((SERVER_OWN, 6379)) else { return m };
    let mut c = Client(s);
    c.0.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let ctr = format!("ctr{conn}");
    let t = Instant::now();
    let mut n = 0;
    while t.elapsed() < Duration::from_secs(20) {
        let mut batch = Vec::new();
        let mut ops: Vec<(String, Option<Vec<u8>>)> = Vec::new();
        for _ in 0..1 + rng.below(16) {
            n += 1;
            let r = rng.below(19);
            if r >= 17 {
                // A sorted set's member, modelled as "Z key member": its score, or absent.
                let (key, member) = (format!("c{conn}z{}", rng.below(2)), format!("m{}", rng.below(8)));
                if r == 17 {
                    let score = format!("{}", rng.below(1000));
                    batch.extend(req(&[b"ZADD", key.as_bytes(), score.as_bytes(), member.as_bytes()]));
                    ops.push((format!("Z {key} {member}"), Some(score.into_bytes())));
                } else {
                    batch.extend(req(&[b"ZREM", key.as_bytes(), member.as_bytes()]));
                    ops.push((format!("Z {key} {member}"), None));
                }
            } else if r >= 15 {
                // A set's member, modelled as "S key member": present (an empty value) or not.
                let (key, member) = (format!("c{conn}s{}", rng.below(2)), format!("{}", rng.below(8)));
                let verb: &[u8] = if r == 15 { b"SADD" } else { b"SREM" };
                batch.extend(req(&[verb, key.as_bytes(), member.as_bytes()]));
                ops.push((format!("S {key} {member}"), (r == 15).then(Vec::new)));
            } else if r == 14 {
                let key = format!("r{round}c{conn}list");
                let val = format!("{n}-{}", rng.below(1000)).into_bytes();
                batch.extend(req(&[b"RPUSH", key.as_bytes(), &val]));
                m.lists.entry(key.clone()).or_default().1.push(val.clone());
                ops.push((format!("L {key}"), Some(val)));
            } else if r == 13 {
                let (a, b) = (format!("r{round}c{conn}t{n}a"), format!("r{round}c{conn}t{n}b"));
                let val = format!("tx{round}-{n}").into_bytes();
                batch.extend(cmd("MULTI"));
                batch.extend(req(&[b"SET", a.as_bytes(), &val]));
                batch.extend(req(&[b"HSET", b.as_bytes(), b"f", &val]));
                batch.extend(cmd("EXEC"));
                for _ in 0..3 {
                    ops.push((TX_STEP.to_string(), None));
                }
                ops.push((format!("T {a} {b}"), Some(val)));
            } else if r >= 10 {
                let (key, field) = (format!("c{conn}h{}", rng.below(3)), format!("f{}", rng.below(6)));
                let model_key = format!("H {key} {field}");
                if r < 12 {
                    let val: Vec<u8> = (0..rng.below(200)).map(|i| (i as u8) ^ (n as u8)).collect();
                    batch.extend(req(&[b"HSET", key.as_bytes(), field.as_bytes(), &val]));
                    ops.push((model_key, Some(val)));
                } else {
                    batch.extend(req(&[b"HDEL", key.as_bytes(), field.as_bytes()]));
                    ops.push((model_key, None));
                }
            } else if r < 6 {
                let key = format!("r{round}c{conn}k{n}");
                let val: Vec<u8> = (0..rng.below(3000)).map(|i| (i as u8) ^ (n as u8)).collect();
                batch.extend(req(&[b"SET", key.as_bytes(), &val]));
                ops.push((key, Some(val)));
            } else if r < 8 {
                // Overwrites a key of its own.
                let key = format!("c{conn}hot{}", rng.below(5));
                let val = format!("{round}-{n}").into_bytes();
                batch.extend(req(&[b"SET", key.as_bytes(), &val]));
                ops.push((key, Some(val)));
            } else if r < 9 {
                batch.extend(req(&[b"INCR", ctr.as_bytes()]));
                ops.push((ctr.clone(), None));
                m.counters.entry(ctr.clone()).or_default().1 += 1;
            } else {
                let key = format!("c{conn}hot{}", rng.below(5));
                batch.extend(req(&[b"DEL", key.as_bytes()]));
                ops.push((key, None));
            }
        }
        if c.0.write_all(&batch).is_err() {
            for (k, v) in ops {
                unacked(&mut m, &ctr, k, v);
            }
            break;
        }
        let mut buf = Vec::new();
        let mut b = vec![0u8; 1 << 16];
        let mut i = 0;
        let mut dead = false;
        while i < ops.len() {
            if let Some(len) = reply_len(&buf) {
                let reply: Vec<u8> = buf.drain(..len).collect();
                let (k, v) = &ops[i];
                if *k == ctr {
                    let got: i64 = std::str::from_utf8(&reply[1..len - 2]).unwrap().parse().unwrap();
                    m.counters.get_mut(&ctr).unwrap().0 = got;
                } else if let Some(key) = k.strip_prefix("L ") {
                    assert_eq!(reply[0], b':', "seed {seed}: RPUSH {key}");
                    m.lists.get_mut(key).unwrap().0 += 1;
                } else if k == TX_STEP {
                    let ok = reply == b"+OK\r\n" || reply == b"+QUEUED\r\n";
                    assert!(ok, "seed {seed}: {:?}", String::from_utf8_lossy(&reply));
                } else if let Some((a, b)) = tx_keys(k) {
                    assert_eq!(reply, b"*2\r\n+OK\r\n:1\r\n", "seed {seed}: EXEC of {k}");
                    for key in [a, b] {
                        m.acked.insert(key.clone(), v.clone());
                        m.maybe.remove(&key);
                    }
                } else {
                    // SET answers +OK; HSET, HDEL, SADD, SREM, ZADD, ZREM and DEL a count.
                    let counts = ["H ", "S ", "Z "].iter().any(|p| k.starts_with(p)) || v.is_none();
                    let ok = if counts { reply[0] == b':' } else { reply == b"+OK\r\n" };
                    assert!(ok, "seed {seed}: {k}: {:?}", String::from_utf8_lossy(&reply));
                    m.acked.insert(k.clone(), v.clone());
                    m.maybe.remove(k);
                }
                i += 1;
                continue;
            }
            match c.0.read(&mut b) {
                Ok(n) if n > 0 => buf.extend_from_slice(&b[..n]),
                _ => {
                    dead = true;
                    break;
                }
            }
        }
        if dead {
            for (k, v) in ops.drain(i..) {
                unacked(&mut m, &ctr, k, v);
            }
            break;
        }
    }
    m
}

/// Checks every key of the model against the restarted store.
fn check(model: &Model, seed: u64, round: usize) {
    let mut c = Client::connect(SERVER_OWN);
    let keys: Vec<&String> = model.acked.keys().chain(model.maybe.keys()).collect();
    for chunk in keys.chunks(200) {
        let mut b = Vec::new();
        for k in chunk {
            if let Some((key, member)) = k.strip_prefix("S ").and_then(|x| x.split_once(' ')) {
                b.extend(req(&[b"SISMEMBER", key.as_bytes(), member.as_bytes()]));
                continue;
            }
            if let Some((key, member)) = k.strip_prefix("Z ").and_then(|x| x.split_once(' ')) {
                b.extend(req(&[b"ZSCORE", key.as_bytes(), member.as_bytes()]));
                continue;
            }
            match k.strip_prefix("H ").and_then(|hf| hf.split_once(' ')) {
                Some((key, field)) => b.extend(req(&[b"HGET", key.as_bytes(), field.as_bytes()])),
                None => b.extend(req(&[b"GET", k.as_bytes()])),
            }
        }
        let replies = c.ask_n(&b, chunk.len());
        for (k, r) in chunk.iter().zip(replies) {
            let got = if r == b"$-1\r\n" || r == b":0\r\n" {
                None
            } else if r == b":1\r\n" {
                Some(Vec::new())
            } else {
                Some(r[r.iter().position(|&x| x == b'\n').unwrap() + 1..r.len() - 2].to_vec())
            };
            let mut ok: Vec<&Option<Vec<u8>>> = Vec::new();
            let never: Option<Vec<u8>> = None;
            match model.acked.get(*k) {
                Some(v) => ok.push(v),
                None => ok.push(&never),
            }
            if let Some(m) = model.maybe.get(*k) {
                ok.extend(m.iter());
            }
            assert!(
                ok.contains(&&got),
                "seed {seed} round {round}: {k} is {:?}, acknowledged {:?}",
                got.as_ref().map(|g| String::from_utf8_lossy(&g[..g.len().min(40)]).into_owned()),
                model
                    .acked
                    .get(*k)
                    .map(|v| v.as_ref().map(|g| String::from_utf8_lossy(&g[..g.len().min(40)]).into_owned()))
            );
        }
    }
    for (key, (acked, sent)) in &model.lists {
        let got = bulks(&c.ask(&req(&[b"LRANGE", key.as_bytes(), b"0", b"-1"])));
        assert!(
            got.len() >= *acked && got.len() <= sent.len() && got[..] == sent[..got.len()],
            "seed {seed} round {round}: list {key} holds {} values, {acked} acknowledged of {} pushed, or not in order",
            got.len(),
            sent.len()
        );
    }
    for (a, b) in &model.pairs {
        let (hk, field) = b.strip_prefix("H ").and_then(|x| x.split_once(' ')).unwrap();
        let got =
            c.ask_n(&[req(&[b"GET", a.as_bytes()]), req(&[b"HGET", hk.as_bytes(), field.as_bytes()])].concat(), 2);
        assert_eq!(got[0], got[1], "seed {seed} round {round}: half a transaction: {a} and {b}");
    }
    for (k, (acked, sent)) in &model.counters {
        let r = c.ask(&req(&[b"GET", k.as_bytes()]));
        let v: i64 =
            if r == b"$-1\r\n" { 0 } else { String::from_utf8_lossy(&r).lines().nth(1).unwrap().parse().unwrap() };
        assert!(v >= *acked && v <= *sent, "seed {seed} round {round}: {k} = {v}, acknowledged {acked}, sent {sent}");
    }
}

fn merge(into: &mut Model, m: Model) {
    for (k, v) in m.acked {
        into.maybe.remove(&k);
        into.acked.insert(k, v);
    }
    for (k, v) in m.maybe {
        into.maybe.entry(k).or_default().extend(v);
    }
    for (k, (a, s)) in m.counters {
        let e = into.counters.entry(k).or_default();
        e.0 = e.0.max(a);
        e.1 += s;
    }
    into.pairs.extend(m.pairs);
    into.lists.extend(m.lists);
}

#[test]
fn acknowledged_writes_survive_sigkill_round_after_round() {
    let net = TestNet::new(1);
    let dir = Scratch::new("crash");
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let mut rng = Rng(seed | 1);
    let mut model = Model::default();
    let mut compactions = 0;
    let mut mid_compaction = 0;
    for round in 0..8 {
        // Compacting past 1 MB of log: several compactions a round, and kills in the middle
        // of some.
        // Every third round with two log lanes: logs written with either replay together.
        let lanes = if round % 3 == 2 { "2" } else { "1" };
        let s = store(&net, &dir, &["--compact-mb", "1", "--compact-percent", "0", "--log-lanes", lanes]);
        if round > 0 {
            // What the last rounds acknowledged is all there (and the counters kept counting).
            let m = std::mem::take(&mut model);
            model = in_netns(&net.cli_ns, move || {
                check(&m, seed, round);
                m
            });
        }
        // Four writers, killed mid-burst after 50-600 ms.
        let writers: Vec<_> = (0..4)
            .map(|conn| {
                let (ns, wseed) = (net.cli_ns.clone(), rng.next());
                std::thread::spawn(move || in_netns(&ns, move || write_until_dead(conn, round, wseed)))
            })
            .collect();
        if round % 2 == 0 {
            std::thread::sleep(Duration::from_millis(50 + rng.below(550)));
        } else {
            // Aimed at a compaction: killed as soon as INFO shows one running (bounded).
            let t = Instant::now();
            let mut c = in_netns(&net.cli_ns, || Client::connect(SERVER_OWN));
            while t.elapsed() < Duration::from_secs(3) {
                let info = c.ask(&cmd("INFO persistence"));
                if String::from_utf8_lossy(&info).contains("aof_rewrite_in_progress:1") {
                    mid_compaction += 1;
                    break;
                }
            }
        }
        compactions += s.log().matches("log compacted").count();
        s.kill9();
        for w in writers {
            let m = w.join().expect("writer");
            merge(&mut model, m);
        }
        assert!(!model.acked.is_empty(), "seed {seed}: nothing was acknowledged in round {round}");
        eprintln!(
            "round {round}: {compactions} compactions so far ({mid_compaction} kills in one), {} keys acknowledged, {} writes unacknowledged at the kill, counters {:?}",
            model.acked.len(),
            model.maybe.values().map(Vec::len).sum::<usize>(),
            model.counters.values().collect::<Vec<_>>()
        );
    }
    assert!(
        compactions > 0 && mid_compaction > 0,
        "seed {seed}: {compactions} compactions, {mid_compaction} kills in one"
    );
    let s = store(&net, &dir, &[]);
    let log = s.log();
    assert!(log.contains("keys recovered"), "{log}");
    let m = std::mem::take(&mut model);
    in_netns(&net.cli_ns, move || check(&m, seed, 8));
    let (status, log) = s.stop();
    assert!(status.success(), "{log}");
}

/// The last non-zero block of the newest log segment of `dir`.
fn last_written_block(dir: &Path) -> (PathBuf, usize) {
    let mut segs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("log-"))
        .collect();
    segs.sort();
    for p in segs.iter().rev() {
        let b = std::fs::read(p).unwrap();
        if let Some(i) = (0..b.len() / 4096).rev().find(|&i| b[i * 4096..(i + 1) * 4096].iter().any(|&x| x != 0)) {
            return (p.clone(), i);
        }
    }
    panic!("no log data in {}", dir.display());
}

fn flip(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    b[at] ^= 0x5a;
    std::fs::write(path, b).unwrap();
}

#[test]
fn a_torn_tail_is_cut_and_damage_before_it_stops_the_start() {
    let net = TestNet::new(1);
    let dir = Scratch::new("damage");
    let s = store(&net, &dir, &[]);
    // One commit per key: each SET waits for its reply.
    in_netns(&net.cli_ns, || {
        let mut c = Client::connect(SERVER_OWN);
        for i in 0..50 {
            assert_eq!(c.ask(&cmd(&format!("SET k{i} v{i}"))), b"+OK\r\n");
        }
        assert_eq!(c.ask(&cmd("SET last v")), b"+OK\r\n");
    });
    s.kill9();
    // The tail: the last commit's block damaged, as a write torn by a crash would leave it.
    let (seg, block) = last_written_block(&dir.0);
    flip(&seg, block * 4096 + 100);
    let s = store(&net, &dir, &[]);
    let log = s.log();
    assert_eq!(log.lines().filter(|l| l.contains("torn write")).count(), 1, "{log}");
    in_netns(&net.cli_ns, || {
        let mut c = Client::connect(SERVER_OWN);
        assert_eq!(c.ask(&cmd("GET k49")), b"$3\r\nv49\r\n");
        assert_eq!(c.ask(&cmd("GET last")), b"$-1\r\n");
        assert_eq!(c.ask(&cmd("DBSIZE")), b":50\r\n");
        // Later writes follow good data and survive the next start.
        assert_eq!(c.ask(&cmd("SET after v")), b"+OK\r\n");
        assert_eq!(c.ask(&cmd("SET k0 changed")), b"+OK\r\n");
    });
    s.kill9();
    let s = store(&net, &dir, &[]);
    assert!(!s.log().contains("torn"), "{}", s.log());
    in_netns(&net.cli_ns, || {
        let mut c = Client::connect(SERVER_OWN);
        assert_eq!(c.ask(&cmd("GET after")), b"$1\r\nv\r\n");
        assert_eq!(c.ask(&cmd("GET k0")), b"$7\r\nchanged\r\n");
        for i in 0..20 {
            assert_eq!(c.ask(&cmd(&format!("SET m{i} v"))), b"+OK\r\n");
        }
    });
    s.kill9();
    // Damage to the first commit of this run's log, with good commits after it: acknowledged
    // data is gone, and the store must not start as if nothing happened.
    let mut segs: Vec<PathBuf> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("log-"))
        .collect();
    segs.sort();
    let first = segs.iter().find(|p| std::fs::read(p).unwrap().iter().any(|&x| x != 0)).unwrap().clone();
    flip(&first, 60);
    let out = net.exec(
        &net.srv_ns,
        &[sirocco(), "store", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--dir", dir.path(), "--duration", "5"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started on a damaged log: {err}");
    assert!(err.contains("refusing to start") && err.lines().count() == 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!net.server_has_xdp());
}

#[test]
fn bad_input_gets_errors_or_a_close_and_others_are_served() {
    let net = TestNet::new(1);
    let dir = Scratch::new("bad");
    let s = store(&net, &dir, &[]);
    in_netns(&net.cli_ns, || {
        let mut good = Client::connect(SERVER_OWN);
        assert_eq!(good.ask(&cmd("SET k v")), b"+OK\r\n");
        let bad: [&[u8]; 6] = [
            b"*1\r\n$536870913\r\n",
            b"*2\r\n$4\r\nECHO\r\n$-2\r\n",
            b"*99999999999999999999\r\n",
            b"*1\r\nGET\r\n",
            b"\"unterminated\r\n",
            &[b'x'; 70_000],
        ];
        for b in bad {
            let mut c = Client::connect(SERVER_OWN);
            c.0.write_all(b).unwrap();
            let mut out = Vec::new();
            let _ = c.0.read_to_end(&mut out);
            assert!(out.starts_with(b"-ERR Protocol error: "), "{:?}", String::from_utf8_lossy(&out));
        }
        // Declared huge, then gone half-way; and half a command, then gone.
        for b in [&b"*2\r\n$4\r\nECHO\r\n$500000000\r\nabc"[..], b"*3\r\n$3\r\nSET\r\n$1\r\nk"] {
            let mut c = Client::connect(SERVER_OWN);
            c.0.write_all(b).unwrap();
        }
        assert_eq!(good.ask(&cmd("GET k")), b"$1\r\nv\r\n");
    });
    let (status, log) = s.stop();
    assert!(status.success(), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn with_two_queues_every_key_is_seen_and_counted_once() {
    let net = TestNet::new(2);
    let dir = Scratch::new("queues");
    let s = store(&net, &dir, &["--queues", "2"]);
    in_netns(&net.cli_ns, || {
        let mut conns: Vec<Client> = (0..16).map(|_| Client::connect(SERVER_OWN)).collect();
        for (i, c) in conns.iter_mut().enumerate() {
            let mut b = Vec::new();
            for k in 0..50 {
                b.extend(cmd(&format!("SET q{i}-{k} v{i}-{k}")));
            }
            assert!(c.ask_n(&b, 50).iter().all(|r| r == b"+OK\r\n"));
        }
        for (i, c) in conns.iter_mut().enumerate() {
            let other = (i + 7) % 16;
            let mut b = Vec::new();
            for k in 0..50 {
                b.extend(cmd(&format!("GET q{other}-{k}")));
            }
            for (k, r) in c.ask_n(&b, 50).into_iter().enumerate() {
                let v = format!("v{other}-{k}");
                assert_eq!(String::from_utf8_lossy(&r), format!("${}\r\n{v}\r\n", v.len()));
            }
            let incrs: Vec<u8> = (0..100).flat_map(|_| cmd("INCR ctr")).collect();
            c.ask_n(&incrs, 100);
        }
        assert_eq!(conns[3].ask(&cmd("GET ctr")), b"$4\r\n1600\r\n");
        assert_eq!(conns[5].ask(&cmd("DBSIZE")), b":801\r\n");
    });
    let (_, log) = stop_with_log(s);
    assert!(
        log.lines().filter(|l| l.contains(" store: connections ") && !l.contains("connections 0 ")).count() == 2,
        "{log}"
    );
    // Both logs replay into one keyspace.
    let s = store(&net, &dir, &["--queues", "2"]);
    in_netns(&net.cli_ns, || {
        let mut c = Client::connect(SERVER_OWN);
        assert_eq!(c.ask(&cmd("GET ctr")), b"$4\r\n1600\r\n");
        assert_eq!(c.ask(&cmd("DBSIZE")), b":801\r\n");
    });
    let (status, log) = s.stop();
    assert!(status.success(), "{log}");
}

/// The `cmdstat_<name>` line's fields other than time, from INFO commandstats.
fn cmdstat(info: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(info).into_owned();
    let line = text.lines().find(|l| l.starts_with(&format!("cmdstat_{name}:")))?.to_string();
    let keep: Vec<&str> = line
        .split([':', ','])
        .filter(|f| ["calls=", "rejected_calls=", "failed_calls="].iter().any(|p| f.starts_with(p)))
        .collect();
    Some(keep.join(","))
}

/// Issue 39, against Redis in the same network: a pipeline written whole before a reply is
/// read (Redis reads on; sirocco used to stop reading and both sides waited), a client that
/// keeps writing after a protocol error (Redis closes it, so its writes fail), and INFO's cpu
/// section and commandstats counts.
#[test]
fn pipelines_protocol_errors_and_info_as_redis() {
    let net = TestNet::new(1);
    let _r = redis(&net);
    let dir = Scratch::new("pipe");
    let s = store(&net, &dir, &[]);
    let mut stats = Vec::new();
    for addr in [SERVER, SERVER_OWN] {
        let got = in_netns(&net.cli_ns, move || {
            let mut c = Client::connect(addr);
            let mut input = Vec::new();
            // 11 MB: more than the client's socket buffer (4 MB at most) and the server's
            // window hold, so the writer finishes only if the server reads on.
            for _ in 0..300_000 {
                input.extend_from_slice(&cmd("INCR ctr"));
            }
            let mut w = c.0.try_clone().unwrap();
            w.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
            let writer = std::thread::spawn(move || w.write_all(&input).is_ok());
            assert!(writer.join().unwrap(), "{addr}: 300 000 commands written before reading any reply");
            let replies = c.read_n(300_000);
            assert_eq!(replies.last().unwrap(), b":300000\r\n", "{addr}");
            // Refused before running, and failed while running.
            assert!(c.ask(&cmd("GET")).starts_with(b"-ERR wrong number of arguments"));
            c.ask(&cmd("SET s x"));
            assert!(c.ask(&cmd("INCR s")).starts_with(b"-ERR value is not an integer"));
            let info = c.ask(&cmd("INFO commandstats"));
            let all = c.ask(&cmd("INFO everything"));
            let dflt = c.ask(&cmd("INFO"));
            for (what, text) in [("everything", &all), ("default", &dflt)] {
                let t = String::from_utf8_lossy(text);
                assert!(
                    t.contains("# CPU\r\nused_cpu_sys:") && t.contains("used_cpu_user_main_thread:"),
                    "{addr} {what}"
                );
            }
            assert!(
                !String::from_utf8_lossy(&dflt).contains("cmdstat_"),
                "{addr}: commandstats is not a default section"
            );
            assert!(String::from_utf8_lossy(&all).contains("cmdstat_incr:"), "{addr}");
            // After a protocol error the connection is closed: a client writing on finds out.
            let mut d = Client::connect(addr);
            d.0.write_all(b"*1\r\n$999999999999\r\n").unwrap();
            let t = Instant::now();
            let payload = [b'A'; 1024];
            let failed = loop {
                if d.0.write_all(&payload).is_err() {
                    break true;
                }
                if t.elapsed() > Duration::from_secs(30) {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(1));
            };
            assert!(failed, "{addr}: still taking data 30 s after a protocol error");
            ["incr", "get", "set"].map(|n| cmdstat(&info, n))
        });
        stats.push(got);
    }
    assert_eq!(stats[0], stats[1], "commandstats: Redis, then sirocco");
    assert_eq!(stats[1][0].as_deref(), Some("calls=300001,rejected_calls=0,failed_calls=1"));
    let (status, log) = s.stop();
    assert!(status.success(), "{log}");
}

/// The files of Redis 7.0.15's own suite (third_party/redis-tests) for what the store serves.
const REDIS_SUITE: [&str; 7] = [
    "unit/protocol",
    "unit/keyspace",
    "unit/expire",
    "unit/quit",
    "unit/info-command",
    "unit/type/string",
    "unit/type/incr",
];

/// Runs one file of Redis's suite against `host` (from the client namespace); the tests that
/// passed and those that failed.
fn redis_suite_file(net: &TestNet, host: &str, file: &str) -> (Vec<String>, Vec<String>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../third_party/redis-tests");
    let script = format!(
        "cd {dir} && mkdir -p tests/tmp && timeout 300 tclsh tests/test_helper.tcl --host {host} --port 6379 \
         --singledb --durable --clients 1 --timeout 60 --single {file}"
    );
    let out = net.exec(&net.cli_ns, &["sh", "-c", &script]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // Colours off: "\x1b[0;32;49mok\x1b[0m" is "ok".
    let mut plain = String::new();
    let mut in_esc = false;
    for c in text.chars() {
        match (in_esc, c) {
            (false, '\x1b') => in_esc = true,
            (true, 'm') => in_esc = false,
            (true, _) => {}
            (false, c) => plain.push(c),
        }
    }
    let (mut ok, mut err) = (Vec::new(), Vec::new());
    let mut lines = plain.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("[ok]: ") {
            ok.push(rest.rsplit_once(" (").map_or(rest, |(n, _)| n).to_string());
        } else if let Some(rest) = line.strip_prefix("[err]: ") {
            // The name, and the first line of why (the harness prints it next).
            let name = rest.rsplit_once(" in tests/").map_or(rest, |(n, _)| n).to_string();
            let why = lines.peek().filter(|l| !l.starts_with('[')).map_or("", |l| l.trim());
            err.push(format!("{name} | {why}"));
        }
    }
    assert!(!ok.is_empty() || !err.is_empty(), "{host} {file}: no results\n{plain}");
    (ok, err)
}

/// Redis's own tests (issue 39): every test of the files above that passes on Redis 7.0.15
/// passes on sirocco store too, but those `differences.txt` lists with the reason (commands
/// the store does not serve); a listed test that passes fails the check, so the list stays
/// true.
#[test]
fn redis_own_suite_passes_as_on_redis() {
    let net = TestNet::new(1);
    let _r = redis(&net);
    let dir = Scratch::new("suite");
    let s = store(&net, &dir, &[]);
    let mut diff = SuiteDiff::new("redis-tests");
    for file in REDIS_SUITE {
        let (theirs, _) = redis_suite_file(&net, SERVER, file);
        let (ours, why) = redis_suite_file(&net, SERVER_OWN, file);
        diff.file(file, &theirs, &ours, &why);
    }
    let (status, log) = s.stop();
    diff.check("Redis 7.0.15", "sirocco store");
    assert!(status.success(), "{log}");
}

/// One request to `addr:port` on a new connection; its reply (bounded).
fn ask_at(addr: &str, port: u16, request: &[u8]) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect((addr, port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(request).ok()?;
    let mut buf = Vec::new();
    let mut b = [0u8; 65536];
    loop {
        if let Some(len) = reply_len(&buf) {
            buf.truncate(len);
            return Some(buf);
        }
        let n = s.read(&mut b).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&b[..n]);
    }
}

/// `request` in database `db` of `addr:port` (a SELECT first, on one connection): its reply.
fn ask_db(addr: &str, port: u16, db: u32, request: &[u8]) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect((addr, port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(&[cmd(&format!("SELECT {db}")), request.to_vec()].concat()).ok()?;
    let mut buf = Vec::new();
    let mut b = [0u8; 65536];
    loop {
        if let Some(first) = reply_len(&buf) {
            if let Some(len) = reply_len(&buf[first..]) {
                return Some(buf[first..first + len].to_vec());
            }
        }
        let n = s.read(&mut b).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&b[..n]);
    }
}

/// Every key's type and value (sets and hashes sorted, sorted sets with scores in order,
/// whether it has an expiry), as a server at `addr:port` answers.
fn dump_at(addr: &str, port: u16) -> Vec<String> {
    let keys = ask_at(addr, port, &cmd("KEYS *")).map(|r| bulks(&r)).unwrap_or_default();
    let mut out = Vec::new();
    for k in keys {
        let ask = |words: &[&[u8]]| ask_at(addr, port, &req(words)).unwrap_or_default();
        let t = String::from_utf8_lossy(&ask(&[b"TYPE", &k])).trim().to_string();
        let mut v = match t.as_str() {
            "+string" => bulks(&ask(&[b"GET", &k])),
            "+list" => bulks(&ask(&[b"LRANGE", &k, b"0", b"-1"])),
            "+zset" => bulks(&ask(&[b"ZRANGE", &k, b"0", b"-1", b"WITHSCORES"])),
            "+set" => bulks(&ask(&[b"SMEMBERS", &k])),
            _ => {
                let flat = bulks(&ask(&[b"HGETALL", &k]));
                flat.chunks(2).map(|p| p.concat()).collect()
            }
        };
        if t == "+set" || t == "+hash" {
            v.sort();
        }
        let ttl = ask(&[b"PTTL", &k]) != b":-1\r\n";
        let v: Vec<String> = v.iter().map(|x| String::from_utf8_lossy(x).into_owned()).collect();
        out.push(format!("{} {t} ttl={ttl} {v:?}", String::from_utf8_lossy(&k)));
    }
    out.sort();
    out
}

/// A Redis replica of the store (in the client's namespace, port 6380).
fn replica(net: &TestNet, dir: &Scratch) -> Redis {
    let child = Command::new("ip")
        .args(["netns", "exec", &net.cli_ns, "redis-server", "--bind", CLIENT, "--port", "6380"])
        .args(["--replicaof", SERVER_OWN, "6379", "--save", "", "--appendonly", "no", "--repl-diskless-load"])
        .args(["disabled", "--protected-mode", "no", "--daemonize", "no", "--dir", dir.path(), "--logfile", ""])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start redis-server (apt install redis-server)");
    Redis(child, Scratch::new("replica-dir"))
}

/// Waits (bounded) until the replica's link is up and its keys are the store's.
fn in_sync(net: &TestNet, what: &str) -> Vec<String> {
    let t = Instant::now();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    while t.elapsed() < Duration::from_secs(30) {
        let (o, r) = in_netns(&net.cli_ns, || {
            let up = ask_at(CLIENT, 6380, &cmd("INFO replication"))
                .is_some_and(|r| String::from_utf8_lossy(&r).contains("master_link_status:up"));
            (dump_at(SERVER_OWN, 6379), if up { dump_at(CLIENT, 6380) } else { Vec::new() })
        });
        (ours, theirs) = (o, r);
        if !ours.is_empty() && ours == theirs {
            return ours;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{what}: the replica did not catch up in 30 s\n store:   {ours:?}\n replica: {theirs:?}");
}

fn info_field(addr: &'static str, port: u16, net: &TestNet, field: &str) -> String {
    let r = in_netns(&net.cli_ns, move || ask_at(addr, port, &cmd("INFO all")).unwrap_or_default());
    let text = String::from_utf8_lossy(&r).into_owned();
    text.lines().find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string)).unwrap_or_default()
}

/// Issue 42: a Redis 7 replica of sirocco store loads a full sync (an RDB file of every type)
/// and follows the stream of later writes of every type; a broken link continues from the
/// backlog (PSYNC, no second full sync); a replica killed and started again syncs in full;
/// ROLE and INFO replication show it; `redis-cli --rdb` gets a file `redis-check-rdb` accepts.
#[test]
fn a_redis_replica_follows_the_store_through_a_broken_link_and_a_kill() {
    let net = TestNet::new(1);
    let dir = Scratch::new("primary");
    let s = store(&net, &dir, &[]);
    let before: Vec<Vec<u8>> = [
        "SET s1 hello",
        "SET s2 world PX 600000",
        "HSET h a 1 b 2",
        "RPUSH l x y z",
        "SADD set 3 1 2",
        "SADD words b a",
        "ZADD z 1.5 a -inf b 3 c",
        "SET counter 10",
    ]
    .iter()
    .map(|c| cmd(c))
    .collect();
    in_netns(&net.cli_ns, move || {
        for r in before {
            assert!(ask_at(SERVER_OWN, 6379, &r).is_some_and(|x| x[0] != b'-'));
        }
    });
    let rdir = Scratch::new("replica");
    let mut rep = replica(&net, &rdir);
    let first = in_sync(&net, "full sync");
    assert!(first.len() >= 8, "{first:?}");
    // The stream: writes of every type, a transaction, removals and expiries.
    let writes: Vec<u8> = [
        "INCR counter",
        "APPEND s1 !",
        "HSET h c 3",
        "HDEL h a",
        "LPUSH l w",
        "LPOP l",
        "LSET l 0 Y",
        "SREM set 2",
        "SADD set 9",
        "ZINCRBY z 2 a",
        "ZREM z c",
        "ZADD z2 1 m",
        "EXPIRE h 1000",
        "DEL s2",
        "MULTI",
        "SET tx1 a",
        "RPUSH tl b",
        "EXEC",
        "SELECT 2",
        "SET in-db2 two",
        "SELECT 0",
    ]
    .iter()
    .map(|c| cmd(c))
    .collect::<Vec<_>>()
    .concat();
    let n = 21;
    in_netns(&net.cli_ns, move || {
        let mut c = Client::connect(SERVER_OWN);
        let replies = c.ask_n(&writes, n);
        assert!(replies.iter().all(|r| r[0] != b'-'), "{replies:?}");
    });
    let second = in_sync(&net, "the stream");
    assert!(second.iter().any(|k| k.starts_with("tx1 ")) && !second.iter().any(|k| k.starts_with("s2 ")));
    let db2 = in_netns(&net.cli_ns, || ask_db(CLIENT, 6380, 2, &cmd("GET in-db2")).unwrap());
    assert_eq!(db2, b"$3\r\ntwo\r\n", "a change in database 2 reaches the replica's database 2");
    let role = in_netns(&net.cli_ns, || ask_at(SERVER_OWN, 6379, &cmd("ROLE")).unwrap());
    let role = String::from_utf8_lossy(&role).into_owned();
    assert!(role.starts_with("*3\r\n$6\r\nmaster\r\n:") && role.contains(CLIENT) && role.contains("6380"), "{role}");
    assert_eq!(info_field(SERVER_OWN, 6379, &net, "connected_slaves"), "1");
    let replicas = in_netns(&net.cli_ns, || ask_at(SERVER_OWN, 6379, &cmd("CLIENT LIST TYPE replica")).unwrap());
    let replicas = String::from_utf8_lossy(&replicas).into_owned();
    assert!(replicas.contains("flags=S") && replicas.contains(CLIENT), "{replicas}");
    // WAIT: the write acknowledged by the one replica; a second one never comes (timeout).
    let waits = in_netns(&net.cli_ns, || {
        let mut c = Client::connect(SERVER_OWN);
        c.ask_n(&[cmd("SET waited 1"), cmd("WAIT 1 5000"), cmd("WAIT 2 300"), cmd("GET waited")].concat(), 4)
    });
    assert_eq!(waits, [&b"+OK\r\n"[..], b":1\r\n", b":1\r\n", b"$1\r\n1\r\n"]);
    let full = info_field(SERVER_OWN, 6379, &net, "sync_full");
    assert_eq!(full, "1");

    // A broken link: the replica drops its primary's connection and comes back with PSYNC.
    in_netns(&net.cli_ns, || {
        let r = ask_at(CLIENT, 6380, &cmd("CLIENT KILL TYPE master")).unwrap();
        assert_eq!(r, b":1\r\n");
    });
    let more: Vec<u8> = ["SET after-break 1", "ZADD z 7 late", "RPUSH l tail", "SET brief v PX 300"]
        .iter()
        .flat_map(|c| cmd(c))
        .collect();
    in_netns(&net.cli_ns, move || {
        let mut c = Client::connect(SERVER_OWN);
        c.ask_n(&more, 4);
    });
    let third = in_sync(&net, "after a broken link");
    assert!(third.iter().any(|k| k.starts_with("after-break ")));
    // A key that expires leaves the replica's memory too (a replica hides an expired key but
    // keeps it until its primary says DEL, as Redis's do).
    let t = Instant::now();
    let sizes = loop {
        let sizes = in_netns(&net.cli_ns, || {
            (ask_at(SERVER_OWN, 6379, &cmd("DBSIZE")).unwrap(), ask_at(CLIENT, 6380, &cmd("DBSIZE")).unwrap())
        });
        if (sizes.0 == sizes.1 && t.elapsed() > Duration::from_millis(500)) || t.elapsed() > Duration::from_secs(10) {
            break sizes;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(sizes.0, sizes.1, "the expired key is gone from the replica too");
    let lasting = third.iter().filter(|k| !k.starts_with("brief ")).count();
    assert_eq!(sizes.0, format!(":{lasting}\r\n").into_bytes(), "and from the store");
    assert_eq!(info_field(SERVER_OWN, 6379, &net, "sync_partial_ok"), "1", "continued from the backlog");
    assert_eq!(info_field(SERVER_OWN, 6379, &net, "sync_full"), "1", "no second full sync");

    // The replica killed (it kept nothing on disk) and started again: a full sync.
    stop_child(&mut rep.0);
    in_netns(&net.cli_ns, || {
        let mut c = Client::connect(SERVER_OWN);
        c.ask_n(&[cmd("SET while-down 1"), cmd("FLUSHALL"), cmd("SET only 1"), cmd("HSET h2 f v")].concat(), 4);
    });
    let _rep2 = replica(&net, &rdir);
    let fourth = in_sync(&net, "after the replica's restart");
    assert_eq!(fourth.len(), 2, "{fourth:?}");
    assert_eq!(info_field(SERVER_OWN, 6379, &net, "sync_full"), "2");

    // The primary killed and started again on its directory: the replica's link breaks, its
    // PSYNC names a stream the new run does not have, and a full sync brings it the
    // recovered keys (and what is written next).
    s.kill9();
    let _s2 = store(&net, &dir, &[]);
    in_netns(&net.cli_ns, || {
        let mut c = Client::connect(SERVER_OWN);
        c.ask_n(&[cmd("SET after-restart 1"), cmd("ZADD z3 2 two")].concat(), 2);
    });
    let fifth = in_sync(&net, "after the primary's restart");
    assert_eq!(fifth.len(), 4, "{fifth:?}");

    // redis-cli --rdb, checked by Redis's own checker.
    let out_dir = Scratch::new("rdb");
    let file = format!("{}/dump.rdb", out_dir.path());
    let out = Command::new("ip")
        .args(["netns", "exec", &net.cli_ns, "timeout", "20", "redis-cli", "-h", SERVER_OWN, "--rdb", &file])
        .output()
        .unwrap();
    assert!(out.status.success(), "redis-cli --rdb: {}", String::from_utf8_lossy(&out.stderr));
    let check = Command::new("redis-check-rdb").arg(&file).output().unwrap();
    let text = String::from_utf8_lossy(&check.stdout).into_owned();
    assert!(check.status.success() && text.contains("RDB looks OK"), "{text}");
}

/// A Redis primary in the client's namespace (port 6380), durable, for sirocco to follow.
fn primary(net: &TestNet, dir: &Scratch) -> Redis {
    let child = Command::new("ip")
        .args(["netns", "exec", &net.cli_ns, "redis-server", "--bind", CLIENT, "--port", "6380"])
        .args(["--save", "", "--appendonly", "yes", "--appendfsync", "always", "--repl-diskless-sync", "no"])
        .args(["--protected-mode", "no", "--daemonize", "no", "--dir", dir.path(), "--logfile", ""])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start redis-server (apt install redis-server)");
    let r = Redis(child, Scratch::new("primary-dir"));
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        if in_netns(&net.cli_ns, || ask_at(CLIENT, 6380, &cmd("PING")).is_some()) {
            return r;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("redis-server did not start");
}

/// Waits (bounded) until sirocco's keys are its primary's.
fn follows(net: &TestNet, what: &str) -> Vec<String> {
    let t = Instant::now();
    let (mut theirs, mut ours) = (Vec::new(), Vec::new());
    while t.elapsed() < Duration::from_secs(30) {
        (theirs, ours) = in_netns(&net.cli_ns, || (dump_at(CLIENT, 6380), dump_at(SERVER_OWN, 6379)));
        if !theirs.is_empty() && ours == theirs {
            return ours;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{what}: sirocco did not catch up in 30 s\n primary: {theirs:?}\n sirocco: {ours:?}");
}

/// Issue 42: `sirocco store --replicaof` follows a Redis 7 primary: a full sync of Redis's
/// compact encodings (listpacks, intsets, quicklists, integer and compressed strings), the
/// stream of every type, writes refused; a broken link continues (PSYNC); a SIGKILL of the
/// replica and a SIGKILL of the primary each end in a full sync with the keys equal again.
#[test]
fn the_store_follows_a_redis_primary_through_a_broken_link_and_kills() {
    let net = TestNet::new(1);
    let pdir = Scratch::new("redis-primary");
    let mut p = primary(&net, &pdir);
    let long = "x".repeat(5000);
    let mut setup = vec![
        "SET s1 hello".to_string(),
        "SET num 12345".to_string(),
        "SET neg -7".to_string(),
        format!("SET long {long}"),
        "SET ttl v PX 600000".to_string(),
        "HSET h a 1 b 2".to_string(),
        "RPUSH l x 2 -300 70000 zzz".to_string(),
        "SADD ints 3 1 2 -5".to_string(),
        "SADD words b a".to_string(),
        "ZADD z 1.5 a -inf b 3 c".to_string(),
    ];
    for i in 0..300 {
        setup.push(format!("HSET bigh f{i} {i}"));
        setup.push(format!("ZADD bigz {i} m{i}"));
        setup.push(format!("RPUSH bigl {i}{long}"));
        setup.push(format!("SADD bigs w{i}"));
    }
    let input: Vec<u8> = setup.iter().flat_map(|c| cmd(c)).collect();
    let n = setup.len();
    in_netns(&net.cli_ns, move || {
        let mut s = TcpStream::connect((CLIENT, 6380)).unwrap();
        s.write_all(&input).unwrap();
        let mut c = Client(s);
        c.0.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.read_n(n);
    });
    let dir = Scratch::new("replica-store");
    let s = store(&net, &dir, &["--replicaof", CLIENT, "6380"]);
    let first = follows(&net, "full sync");
    assert_eq!(
        first.len(),
        14,
        "{:?}",
        first.iter().map(|k| k.chars().take(60).collect::<String>()).collect::<Vec<_>>()
    );

    let writes: Vec<u8> = [
        "INCR num",
        "APPEND s1 !",
        "HSET h c 3",
        "HDEL h a",
        "LPUSH l w",
        "RPOP l",
        "SREM ints 2",
        "SADD words c",
        "ZINCRBY z 2 a",
        "ZREM z c",
        "DEL long",
        "EXPIRE h 1000",
        "MULTI",
        "SET tx1 a",
        "RPUSH tl b",
        "EXEC",
        "SELECT 4",
        "HSET in-db4 f v",
        "SELECT 0",
    ]
    .iter()
    .flat_map(|c| cmd(c))
    .collect();
    in_netns(&net.cli_ns, move || {
        let mut s = TcpStream::connect((CLIENT, 6380)).unwrap();
        s.write_all(&writes).unwrap();
        let mut c = Client(s);
        c.0.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.read_n(19);
    });
    follows(&net, "the stream");
    let t = Instant::now();
    let db4 = loop {
        let r = in_netns(&net.cli_ns, || ask_db(SERVER_OWN, 6379, 4, &cmd("HGET in-db4 f")).unwrap());
        if r != b"$-1\r\n" || t.elapsed() > Duration::from_secs(10) {
            break r;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(db4, b"$1\r\nv\r\n", "the primary's database 4 is the store's database 4");
    let (ro, role, info) = in_netns(&net.cli_ns, || {
        (
            ask_at(SERVER_OWN, 6379, &cmd("SET mine 1")).unwrap(),
            ask_at(SERVER_OWN, 6379, &cmd("ROLE")).unwrap(),
            ask_at(SERVER_OWN, 6379, &cmd("INFO replication")).unwrap(),
        )
    });
    assert_eq!(ro, b"-READONLY You can't write against a read only replica.\r\n");
    let role = String::from_utf8_lossy(&role).into_owned();
    assert!(role.starts_with("*5\r\n$5\r\nslave\r\n") && role.contains("connected"), "{role}");
    assert!(String::from_utf8_lossy(&info).contains("master_link_status:up"));
    // The primary's WAIT counts sirocco: it acknowledges what it has made durable.
    let waited = in_netns(&net.cli_ns, || {
        let mut st = TcpStream::connect((CLIENT, 6380)).unwrap();
        st.write_all(&[cmd("SET w 1"), cmd("WAIT 1 5000")].concat()).unwrap();
        Client(st).read_n(2)
    });
    assert_eq!(waited[1], b":1\r\n");

    // A broken link: the primary drops its replica, which continues from the backlog.
    in_netns(&net.cli_ns, || {
        assert_eq!(ask_at(CLIENT, 6380, &cmd("CLIENT KILL TYPE replica")).unwrap(), b":1\r\n");
    });
    in_netns(&net.cli_ns, || {
        let mut s = TcpStream::connect((CLIENT, 6380)).unwrap();
        s.write_all(&[cmd("SET after-break 1"), cmd("ZADD z 9 late")].concat()).unwrap();
        let mut c = Client(s);
        c.read_n(2);
    });
    follows(&net, "after a broken link");
    let partial = |net: &TestNet| {
        let r = in_netns(&net.cli_ns, || ask_at(CLIENT, 6380, &cmd("INFO stats")).unwrap());
        let text = String::from_utf8_lossy(&r).into_owned();
        let field = |f: &str| text.lines().find_map(|l| l.strip_prefix(f).map(|v| v.trim().to_string()));
        (field("sync_full:"), field("sync_partial_ok:"))
    };
    assert_eq!(partial(&net), (Some("1".into()), Some("1".into())), "one full sync, then a continuation");

    // The replica SIGKILLed and started again: its own log has the keys at once, then a
    // full sync brings it up to date.
    s.kill9();
    in_netns(&net.cli_ns, || {
        let mut st = TcpStream::connect((CLIENT, 6380)).unwrap();
        st.write_all(&[cmd("SET while-down 1"), cmd("HSET h d 4")].concat()).unwrap();
        Client(st).read_n(2);
    });
    let _s2 = store(&net, &dir, &["--replicaof", CLIENT, "6380"]);
    follows(&net, "after the replica's restart");

    // The primary SIGKILLed and started again on its append-only file: a new stream, a full
    // sync.
    let _ = p.0.kill();
    let _ = p.0.wait();
    let _p2 = Redis(
        Command::new("ip")
            .args(["netns", "exec", &net.cli_ns, "redis-server", "--bind", CLIENT, "--port", "6380"])
            .args(["--save", "", "--appendonly", "yes", "--appendfsync", "always", "--repl-diskless-sync", "no"])
            .args(["--protected-mode", "no", "--daemonize", "no", "--dir", pdir.path(), "--logfile", ""])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
        Scratch::new("primary-dir2"),
    );
    std::thread::sleep(Duration::from_millis(300));
    in_netns(&net.cli_ns, || {
        let t = Instant::now();
        while ask_at(CLIENT, 6380, &cmd("SET after-primary-restart 1")).is_none()
            && t.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let last = follows(&net, "after the primary's restart");
    assert!(last.iter().any(|k| k.starts_with("after-primary-restart ")));
}

/// Blocking pops against Redis in the same network: a connection blocked in BLPOP, BZPOPMAX
/// or BLMOVE gets what another connection pushes, its pipelined PING answered only after;
/// a timeout answers a null array; both servers answer the same bytes.
#[test]
fn blocking_pops_wait_for_a_push_as_redis_does() {
    let net = TestNet::new(1);
    let _r = redis(&net);
    let dir = Scratch::new("blocking");
    let _s = store(&net, &dir, &[]);
    let run = |addr: &'static str| {
        in_netns(&net.cli_ns, move || {
            let mut got = Vec::new();
            let mut a = Client::connect(addr);
            a.ask(&cmd("FLUSHALL"));
            for (block, push) in [
                ("BLPOP q 5", "RPUSH q x"),
                ("BZPOPMAX zq 5", "ZADD zq 1 m 2 n"),
                ("BLMOVE src dst LEFT RIGHT 5", "RPUSH src v w"),
                ("BLMPOP 5 2 none q2 RIGHT COUNT 3", "RPUSH q2 1 2"),
            ] {
                a.0.write_all(&[cmd(block), cmd("PING")].concat()).unwrap();
                std::thread::sleep(Duration::from_millis(200));
                let mut b = Client::connect(addr);
                b.ask(&cmd(push));
                got.extend(a.read_n(2));
            }
            let t = Instant::now();
            got.push(a.ask(&cmd("BLPOP nothing 0.3")));
            assert!(t.elapsed() >= Duration::from_millis(250), "{addr}: a timeout of 0.3 s answered early");
            got.push(a.ask(&cmd("LRANGE dst 0 -1")));
            got
        })
    };
    let theirs = run(SERVER);
    let ours = run(SERVER_OWN);
    let show = |v: &Vec<Vec<u8>>| v.iter().map(|r| String::from_utf8_lossy(r).into_owned()).collect::<Vec<_>>();
    assert_eq!(show(&ours), show(&theirs));
    assert!(theirs[0].starts_with(b"*2\r\n$1\r\nq\r\n$1\r\nx"), "{:?}", show(&theirs));
}

/// Several databases (issue 42): keys written in databases 0, 3 and 15 (and one FLUSHDB)
/// are where they were after a SIGKILL and a restart, through the log and through a
/// snapshot; with fewer databases configured, the keys beyond them are left out and said so.
#[test]
fn every_database_survives_sigkill_and_restart() {
    let net = TestNet::new(1);
    let dir = Scratch::new("dbs");
    let s = store(&net, &dir, &[]);
    let writes: Vec<u8> = [
        "SET zero 0",
        "SELECT 3",
        "SET three 3",
        "RPUSH l3 a b",
        "SELECT 15",
        "SET gone x",
        "FLUSHDB",
        "ZADD z15 1 m",
        "SELECT 0",
        "HSET h0 f v",
        "SWAPDB 3 5",
    ]
    .iter()
    .flat_map(|c| cmd(c))
    .collect();
    in_netns(&net.cli_ns, move || {
        let mut c = Client::connect(SERVER_OWN);
        let r = c.ask_n(&writes, 11);
        assert!(r.iter().all(|x| x[0] != b'-'), "{r:?}");
    });
    let check = |net: &TestNet| {
        in_netns(&net.cli_ns, || {
            [
                (0, "GET zero"),
                (0, "HGET h0 f"),
                (5, "GET three"),
                (5, "LRANGE l3 0 -1"),
                (15, "GET gone"),
                (15, "ZSCORE z15 m"),
                (0, "GET three"),
                (3, "DBSIZE"),
                (5, "DBSIZE"),
            ]
            .iter()
            .map(|(db, c)| String::from_utf8_lossy(&ask_db(SERVER_OWN, 6379, *db, &cmd(c)).unwrap()).into_owned())
            .collect::<Vec<_>>()
        })
    };
    let want = [
        "$1\r\n0\r\n",
        "$1\r\nv\r\n",
        "$1\r\n3\r\n",
        "*2\r\n$1\r\na\r\n$1\r\nb\r\n",
        "$-1\r\n",
        "$1\r\n1\r\n",
        "$-1\r\n",
        ":0\r\n",
        ":2\r\n",
    ];
    assert_eq!(check(&net), want);
    s.kill9();
    // From the log.
    let s = store(&net, &dir, &[]);
    assert_eq!(check(&net), want, "after a SIGKILL");
    s.kill9();
    // From the snapshot the last start wrote.
    let s = store(&net, &dir, &[]);
    assert_eq!(check(&net), want, "after a second SIGKILL");
    let (status, _) = s.stop();
    assert!(status.success());
    // Fewer databases: the keys of 5 and 15 are left out, the start says so.
    let s = store(&net, &dir, &["--databases", "2"]);
    let got = in_netns(&net.cli_ns, || {
        (
            String::from_utf8_lossy(&ask_db(SERVER_OWN, 6379, 0, &cmd("DBSIZE")).unwrap()).into_owned(),
            String::from_utf8_lossy(&ask_at(SERVER_OWN, 6379, &cmd("SELECT 3")).unwrap()).into_owned(),
        )
    });
    assert_eq!(got, (":2\r\n".to_string(), "-ERR DB index is out of range\r\n".to_string()));
    let (status, log) = s.stop();
    assert!(status.success());
    assert!(log.contains("databases beyond the 2 configured"), "{log}");
}

/// CLIENT LIST and CLIENT INFO: every connection, with Redis 7.0's fields in Redis's order
/// (checked against Redis's own answer), names, databases, last commands; the ID and TYPE
/// filters; errors as Redis's.
#[test]
fn client_list_shows_every_connection_as_redis_does() {
    let net = TestNet::new(1);
    let _r = redis(&net);
    let dir = Scratch::new("clients");
    let _s = store(&net, &dir, &[]);
    let fields =
        |line: &str| line.split(' ').map(|f| f.split('=').next().unwrap_or("").to_string()).collect::<Vec<_>>();
    let run = |addr: &'static str| {
        in_netns(&net.cli_ns, move || {
            let mut a = Client::connect(addr);
            let mut b = Client::connect(addr);
            a.ask(&cmd("CLIENT SETNAME alpha"));
            b.ask_n(&[cmd("SELECT 3"), cmd("GET x")].concat(), 2);
            let id = String::from_utf8_lossy(&a.ask(&cmd("CLIENT ID"))).trim_start_matches(':').trim().to_string();
            let list = bulks(&a.ask(&cmd("CLIENT LIST"))).concat();
            let info = bulks(&a.ask(&cmd("CLIENT INFO"))).concat();
            let only = bulks(&a.ask(&cmd(&format!("CLIENT LIST ID {id}")))).concat();
            let mut errs =
                [cmd("CLIENT LIST TYPE bogus"), cmd("CLIENT LIST ID x"), cmd("CLIENT LIST FOO"), cmd("CLIENT INFO x")]
                    .iter()
                    .map(|c| String::from_utf8_lossy(&a.ask(c)).into_owned())
                    .collect::<Vec<_>>();
            let replicas = bulks(&a.ask(&cmd("CLIENT LIST TYPE replica"))).concat();
            // CLIENT KILL: b by its id (b's connection then ends), errors as Redis's.
            let b_id = String::from_utf8_lossy(&b.ask(&cmd("CLIENT ID"))).trim_start_matches(':').trim().to_string();
            let mut kills = vec![String::from_utf8_lossy(&a.ask(&cmd(&format!("CLIENT KILL ID {b_id}")))).into_owned()];
            b.0.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut one = [0u8; 1];
            let closed = matches!(b.0.read(&mut one), Ok(0) | Err(_));
            kills.push(format!("b closed: {closed}"));
            for c in [
                "CLIENT KILL 203.0.113.1:5",
                "CLIENT KILL TYPE bogus",
                "CLIENT KILL ID x",
                "CLIENT KILL USER nobody",
                "CLIENT KILL SKIPME maybe",
                "CLIENT KILL ID 999999 SKIPME no",
                "CLIENT KILL ADDR",
                "CLIENT KILL",
            ] {
                kills.push(String::from_utf8_lossy(&a.ask(&cmd(c))).into_owned());
            }
            errs.extend(kills);
            (
                String::from_utf8_lossy(&list).into_owned(),
                String::from_utf8_lossy(&info).into_owned(),
                String::from_utf8_lossy(&only).into_owned(),
                errs,
                replicas.len(),
            )
        })
    };
    let (theirs, their_info, _, their_errs, _) = run(SERVER);
    let (ours, our_info, our_only, our_errs, our_replicas) = run(SERVER_OWN);
    let first = |t: &str| t.lines().next().unwrap_or("").to_string();
    assert_eq!(fields(&first(&ours)), fields(&first(&theirs)), "the fields, in Redis's order");
    assert_eq!(fields(our_info.trim_end()), fields(their_info.trim_end()));
    assert_eq!(our_errs, their_errs);
    assert_eq!(ours.lines().count(), 2, "{ours}");
    assert!(ours.contains("name=alpha") && ours.contains("db=3 ") && ours.contains("cmd=get "), "{ours}");
    assert!(our_info.contains("name=alpha") && our_info.contains("cmd=client "), "{our_info}");
    assert_eq!(our_only.lines().count(), 1);
    assert!(our_only.contains("name=alpha"));
    assert_eq!(our_replicas, 0);
}
