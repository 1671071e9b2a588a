//! Fuzz targets for the Redis protocol's requests and the store's log and session.

/// Requests, whole and in two pieces: the parser never panics, never claims more than it was
/// given, and a request cut anywhere parses as it does whole.
pub fn resp_request(data: &[u8]) {
    use resp::{Parsed, Parser};
    let (cut, data) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b) % (rest.len() + 1), rest),
        None => (0, data),
    };
    let mut whole = Parser::new(4096);
    let r = whole.parse(data);
    let args: Vec<Vec<u8>> = whole.args.iter(data).map(<[u8]>::to_vec).collect();
    if let Parsed::Request { consumed } = r {
        assert!(consumed <= data.len());
    }
    let mut pieces = Parser::new(4096);
    let first = pieces.parse(&data[..cut]);
    let again = if first == Parsed::Incomplete { pieces.parse(data) } else { first };
    // An error or a request found in the first piece is found whole too.
    if let (Parsed::Request { .. }, Parsed::Request { .. }) = (r, again) {
        if first == Parsed::Incomplete {
            assert_eq!(again, r);
            assert_eq!(pieces.args.iter(data).map(<[u8]>::to_vec).collect::<Vec<_>>(), args);
        }
    }
}

/// The log reader: never panics, and whatever it reads as a record encodes back to the bytes.
pub fn store_log_record(data: &[u8]) {
    use store::log::record::{encode, read, Read};
    if let Read::Record { seq, change, size } = read(data, 1 << 16) {
        let mut again = Vec::new();
        assert_eq!(encode(&mut again, seq, &change), size);
        assert_eq!(&again[..], &data[..size]);
    }
}

/// Record payloads of every kind behind a header with the right checksum (which random bytes
/// never have), so the payload parsers themselves are fuzzed: no panic, and what reads as a
/// record encodes back to the same bytes.
pub fn store_log_payload(data: &[u8]) {
    use store::log::record::HDR;
    let Some((&kind, payload)) = data.split_first() else { return };
    let mut b = vec![0u8; HDR];
    b[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    b[8..16].copy_from_slice(&1u64.to_le_bytes());
    // Every kind (1 to 10) and some that are none.
    b[16] = kind % 16;
    b.extend_from_slice(payload);
    let crc = crc32c::crc32c(&b[4..]);
    b[..4].copy_from_slice(&crc.to_le_bytes());
    store_log_record(&b);
}

/// RDB files as a Redis primary sends them at a full sync: no panic, and every key read is
/// one the store can hold (a sorted set's scores are never NaN). A file whose last eight
/// bytes are zero skips the checksum, so the fuzzer reaches the value parsers.
pub fn store_rdb(data: &[u8]) {
    use store::keyspace::Value;
    let _ = store::repl::load::load(data, 0, |k| {
        if let Value::ZSet(z) = &k.value {
            assert!(z.iter().all(|(_, s)| !s.is_nan()));
        }
    });
}

/// The replay's walk over a log of up to three segments (cut from the input at block
/// boundaries, around a valid commit so the fuzzer starts near real logs): no panic, and the
/// records it returns are in increasing order, each one readable where it says.
pub fn store_log_walk(data: &[u8]) {
    use store::log::record::{read, Read, BLOCK};
    use store::log::replay::walk;
    use store::log::stage::Stage;
    let (cuts, body) = match data.split_first() {
        Some((&c, rest)) => (c, rest),
        None => return,
    };
    let mut log = Vec::new();
    {
        use store::command::Journal;
        let order = std::sync::Arc::new(store::log::order::Order::new(1, 0));
        let mut st = Stage::new(order, 0);
        st.sets(&[(b"k", b"v", 0)]);
        st.take_commit(&mut log, 1, 0);
    }
    log.extend_from_slice(body);
    log.resize(log.len().next_multiple_of(BLOCK), 0);
    let blocks = log.len() / BLOCK;
    let a = (usize::from(cuts & 0x0f) % (blocks + 1)) * BLOCK;
    let b = a.max((usize::from(cuts >> 4) % (blocks + 1)) * BLOCK);
    let segs = vec![log[..a].to_vec(), log[a..b].to_vec(), log[b..].to_vec()];
    let names: Vec<String> = (0..3).map(|i| format!("seg{i}")).collect();
    let mut notes = Vec::new();
    if let Ok(w) = walk(&segs, &names, 1, &mut notes) {
        assert!(w.records.windows(2).all(|p| p[0].0 < p[1].0));
        for (seq, (si, off)) in w.records {
            assert!(matches!(read(&segs[si][off..], usize::MAX), Read::Record { seq: s, .. } if s == seq));
        }
    }
}

/// Replies of a store session fed `pieces` (a fresh keyspace; every change durable at once).
fn store_run(pieces: &[&[u8]]) -> Vec<u8> {
    use store::command::{Ctx, Info};
    use store::keyspace::Keyspace;
    use store::session::{Out, Session};
    struct NoInfo;
    impl Info for NoInfo {
        fn info(&self, _ks: &Keyspace, _s: &[String]) -> String {
            String::new()
        }
        fn config(&self) -> Vec<(&'static str, String)> {
            vec![("save", String::new())]
        }
    }
    struct Sent(Vec<u8>);
    impl Out for Sent {
        fn put(&mut self, b: &[u8]) {
            self.0.extend_from_slice(b);
        }
        fn backlog(&self) -> usize {
            0
        }
    }
    let ks = Keyspace::new(4);
    let order = std::sync::Arc::new(store::log::order::Order::new(1, 0));
    let mut stage = store::log::stage::Stage::new(order.clone(), 0);
    let mut out = Sent(Vec::new());
    let mut s = Session::new();
    let mut commit = Vec::new();
    for p in pieces {
        let mut ctx = Ctx { ks: &ks, journal: &mut stage, now_ms: 1_000_000, info: &NoInfo };
        if s.input(p, &mut ctx, order.durable(), &mut out) == store::session::Flow::Close {
            break;
        }
        stage.take_commit(&mut commit, 1, 0);
        stage.settled(None);
        let mut ctx = Ctx { ks: &ks, journal: &mut stage, now_ms: 1_000_000, info: &NoInfo };
        s.resume(&mut ctx, order.durable(), &mut out);
    }
    out.0
}

/// A store session on arbitrary input, whole and cut in two: no panic, and the same replies
/// either way (requests split anywhere are the same requests).
pub fn store_session(data: &[u8]) {
    let (cut, data) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b) % (rest.len() + 1), rest),
        None => (0, data),
    };
    let whole = store_run(&[data]);
    let split = store_run(&[&data[..cut], &data[cut..]]);
    // Some answers differ between two runs whatever the cut: random picks (HRANDFIELD,
    // RANDOMKEY, SRANDMEMBER, SPOP), the clock (TIME), and orders that follow a table's own
    // random hasher (KEYS, SCAN, a set's members). Inputs that may hold them are only run.
    let lower = data.to_ascii_lowercase();
    let varies = ["rand", "time", "keys", "scan", "spop", "smembers", "sinter", "sunion", "sdiff"]
        .iter()
        .any(|w| lower.windows(w.len()).any(|x| x == w.as_bytes()));
    if !varies {
        assert_eq!(whole, split, "replies depend on where the input was cut ({cut})");
    }
}

/// Inputs this area's targets start from (None: not one of its targets).
pub(crate) fn seeds(target: &str) -> Option<Vec<Vec<u8>>> {
    Some(match target {
        "resp_request" => vec![
            b"\x09*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n".to_vec(),
            b"\x04SET k \"a b\\x41\" 'c\\'d'\r\n".to_vec(),
            b"\x02*2\r\n$-1\r\n*0\r\n".to_vec(),
        ],
        "store_session" => vec![
            b"\x21*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n10\r\nINCR k\r\nGET k\r\nSET k v EX 10 NX GET\r\nTTL k\r\n"
                .to_vec(),
            b"\x10MSET a 1 b 2\r\nMGET a b c\r\nAPPEND a xyz\r\nEXPIRE a 5 GT\r\nDEL a b\r\nQUIT\r\n".to_vec(),
            b"\x08PING\r\nCONFIG GET s*\r\nFLUSHALL\r\nDBSIZE\r\nNOPE 'x y'\r\n*1\r\n$-3\r\n".to_vec(),
            b"\x30HSET h a 1 b 2\r\nHGETALL h\r\nHINCRBY h a 5\r\nHDEL h b\r\nHMGET h a b c\r\nTYPE h\r\nGET h\r\n"
                .to_vec(),
            b"\x20RPUSH l a b c\r\nLPOP l 2\r\nLINSERT l BEFORE c x\r\nLREM l 0 x\r\nLTRIM l 0 0\r\nLMOVE l m LEFT RIGHT\r\n"
                .to_vec(),
            b"\x14SADD s 1 2 x\r\nSREM s 2\r\nSINTERSTORE d s s\r\nSMOVE s d 1\r\nSMEMBERS d\r\nSPOP s 3\r\n".to_vec(),
            b"\x16ZADD z 1 a 2.5 b -inf c\r\nZRANGE z (1 +inf BYSCORE WITHSCORES LIMIT 0 2\r\nZINCRBY z 1 a\r\nZPOPMIN z\r\n"
                .to_vec(),
            b"\x0cZADD l 0 a 0 b 0 c\r\nZRANGEBYLEX l [a (c\r\nZUNIONSTORE d 2 l l WEIGHTS 2 3\r\nZREMRANGEBYRANK d 0 0\r\nZMPOP 2 x d MAX COUNT 2\r\n"
                .to_vec(),
            b"\x18WATCH k\r\nMULTI\r\nSET k 1\r\nNOPE\r\nEXEC\r\nMULTI\r\nRENAME k j\r\nGETEX j EX 5\r\nEXEC\r\nDBSIZE\r\n"
                .to_vec(),
        ],
        "store_log_payload" => {
            use store::log::record::{encode, Change, ListOp, HDR};
            let mut a = Vec::new();
            encode(&mut a, 1, &Change::HashSet { key: b"h", fresh: true, expire_ms: 5, fields: vec![(b"f", b"v")] });
            let mut b = Vec::new();
            encode(&mut b, 1, &Change::HashDel { key: b"h", fields: vec![b"f", b"g"] });
            let mut c = Vec::new();
            encode(&mut c, 1, &Change::Sets(vec![(b"k", b"value", 0)]));
            let mut d = Vec::new();
            let op = ListOp::Insert { before: true, pivot: b"p", value: b"v" };
            encode(&mut d, 1, &Change::List { key: b"l", fresh: false, gone: false, expire_ms: 0, op });
            let mut e = Vec::new();
            let m = Change::Members { key: b"s", fresh: true, gone: false, expire_ms: 0, add: true, members: vec![b"1", b"x"] };
            encode(&mut e, 1, &m);
            let mut f = Vec::new();
            let z = Change::Scores {
                key: b"z",
                fresh: true,
                gone: false,
                expire_ms: 0,
                set: vec![(b"a", 1.5f64.to_bits()), (b"b", f64::INFINITY.to_bits())],
                removed: vec![b"c"],
            };
            encode(&mut f, 1, &z);
            [(6, a), (7, b), (1, c), (8, d), (9, e), (10, f)].into_iter().map(|(k, r)| [&[k][..], &r[HDR..]].concat()).collect()
        }
        "store_rdb" => {
            use store::keyspace::{Entry, Keyspace, Value};
            let ks = Keyspace::new(1);
            let mut z = store::zset::ZSet::default();
            z.insert(b"m", 2.5);
            let mut h = store::hash::Hash::default();
            h.set(b"f", b"v");
            for (k, v) in [
                (&b"s"[..], Value::Str(b"12".to_vec())),
                (b"z", Value::ZSet(z)),
                (b"h", Value::Hash(h)),
                (b"l", Value::List([Box::from(&b"a"[..])].into_iter().collect())),
            ] {
                ks.lock(0).map.insert(k.into(), Entry { value: v, expire_ms: 5_000_000_000_000, seq: 1 });
            }
            let mut file = store::repl::rdb::write([&ks], 0, true);
            let n = file.len();
            // No checksum: the fuzzer's changes reach the parsers.
            file[n - 8..].fill(0);
            // A listpack hash (type 16), an intset (11), a quicklist of one listpack (18),
            // a compressed string, as Redis 7.0 writes them.
            let lp: &[u8] = &[13, 0, 0, 0, 2, 0, 0x81, b'f', 2, 0x81, b'v', 2, 0xff];
            let mut enc = b"REDIS0010".to_vec();
            enc.extend_from_slice(&[0xfe, 0, 16, 1, b'h', lp.len() as u8]);
            enc.extend_from_slice(lp);
            enc.extend_from_slice(&[11, 1, b'i', 12, 2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 2, 0]);
            enc.extend_from_slice(&[18, 1, b'q', 1, 2, lp.len() as u8]);
            enc.extend_from_slice(lp);
            enc.extend_from_slice(&[0, 1, b'c', 0xc3, 5, 10, 0, b'a', 7 << 5, 0, 0]);
            enc.push(0xff);
            enc.extend_from_slice(&[0; 8]);
            vec![file, enc]
        }
        "store_log_walk" => {
            use store::log::record::{encode, pad, Change};
            let mut b = vec![0x21];
            for seq in 2..5 {
                let mut body = Vec::new();
                encode(&mut body, seq, &Change::Sets(vec![(b"k", b"v", 0)]));
                let mut c = Vec::new();
                encode(&mut c, seq, &Change::Commit { len: 4096, gen: 1, prev: if seq == 2 { 1 } else { seq - 1 } });
                c.extend(body);
                pad(&mut c);
                b.extend(c);
            }
            vec![b, vec![0x10, 1, 2, 3]]
        }
        "store_log_record" => {
            use store::log::record::{encode, Change};
            let mut a = Vec::new();
            encode(&mut a, 7, &Change::Sets(vec![(b"k", b"value", 0), (b"x", b"", 1_800_000_000_000)]));
            let mut b = Vec::new();
            encode(&mut b, 9, &Change::Del(vec![b"k", b"other"]));
            let mut c = Vec::new();
            encode(&mut c, 11, &Change::Expire(b"k", 5));
            vec![a, b, c]
        }
        _ => return None,
    })
}
