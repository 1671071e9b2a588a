//! RDB files, sans-IO: the keyspace written in Redis's snapshot format (version 10, what
//! Redis 7.0 writes), which a Redis replica loads at a full sync and `redis-check-rdb`
//! accepts. Values are written in the plain encodings every Redis since 2.x loads (a list as
//! its values, a set as its members, a hash as field/value pairs, a sorted set with binary
//! scores): Redis converts them to its compact encodings as it loads them.

use crate::keyspace::{Entry, Keyspace, Value};

const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const OP_AUX: u8 = 0xfa;
const OP_RESIZEDB: u8 = 0xfb;
const OP_EXPIRETIME_MS: u8 = 0xfc;
const OP_SELECTDB: u8 = 0xfe;
const OP_EOF: u8 = 0xff;

/// Redis's CRC-64 (Jones polynomial, reflected), which ends every RDB file.
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    // 0xad93d23594c935a9, bit-reversed for the reflected form.
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5;
    static TABLE: std::sync::OnceLock<[u64; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u64; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u64;
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            }
            *e = c;
        }
        t
    });
    for &b in data {
        crc = table[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// A length in RDB's variable encoding.
pub fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// A string: its length, then its bytes (no integer or LZF encoding: every reader takes it).
pub fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

fn aux(out: &mut Vec<u8>, k: &str, v: &str) {
    out.push(OP_AUX);
    put_str(out, k.as_bytes());
    put_str(out, v.as_bytes());
}

/// One key and its value (and expiry) as an RDB entry.
fn put_entry(out: &mut Vec<u8>, key: &[u8], e: &Entry) {
    if e.expire_ms != 0 {
        out.push(OP_EXPIRETIME_MS);
        out.extend_from_slice(&(e.expire_ms as u64).to_le_bytes());
    }
    match &e.value {
        Value::Str(v) => {
            out.push(TYPE_STRING);
            put_str(out, key);
            put_str(out, v);
        }
        Value::List(l) => {
            out.push(TYPE_LIST);
            put_str(out, key);
            put_len(out, l.len() as u64);
            for v in l.iter() {
                put_str(out, v);
            }
        }
        Value::Set(s) => {
            out.push(TYPE_SET);
            put_str(out, key);
            let members = s.members();
            put_len(out, members.len() as u64);
            for m in &members {
                put_str(out, m);
            }
        }
        Value::Hash(h) => {
            out.push(TYPE_HASH);
            put_str(out, key);
            put_len(out, h.len() as u64);
            for (f, v) in h.iter() {
                put_str(out, f);
                put_str(out, v);
            }
        }
        Value::ZSet(z) => {
            out.push(TYPE_ZSET_2);
            put_str(out, key);
            put_len(out, z.len() as u64);
            for (m, s) in z.iter() {
                put_str(out, m);
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
    }
}

/// The keys of the databases `dbs` that are live at `now_ms`, as an RDB file; `stream`: a
/// replication stream follows it (in database 0, as the file says).
pub fn write<'k>(dbs: impl IntoIterator<Item = &'k Keyspace>, now_ms: i64, stream: bool) -> Vec<u8> {
    let mut out = b"REDIS0010".to_vec();
    aux(&mut out, "redis-ver", crate::server::REDIS_VERSION);
    aux(&mut out, "redis-bits", "64");
    aux(&mut out, "ctime", &(now_ms / 1000).to_string());
    aux(&mut out, "used-mem", "0");
    if stream {
        aux(&mut out, "repl-stream-db", "0");
    }
    aux(&mut out, "aof-base", "0");
    for ks in dbs {
        let mut body = Vec::new();
        let (mut keys, mut expires) = (0u64, 0u64);
        ks.for_each(|k, e| {
            if e.expired(now_ms) {
                return;
            }
            keys += 1;
            expires += u64::from(e.expire_ms != 0);
            put_entry(&mut body, k, e);
        });
        if keys > 0 {
            out.push(OP_SELECTDB);
            put_len(&mut out, ks.index() as u64);
            out.push(OP_RESIZEDB);
            put_len(&mut out, keys);
            put_len(&mut out, expires);
            out.extend_from_slice(&body);
        }
    }
    out.push(OP_EOF);
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_is_redis_s() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn lengths() {
        for (n, want) in [
            (5u64, vec![5u8]),
            (300, vec![0x41, 0x2c]),
            (70_000, vec![0x80, 0, 1, 0x11, 0x70]),
            (1 << 33, vec![0x81, 0, 0, 0, 2, 0, 0, 0, 0]),
        ] {
            let mut v = Vec::new();
            put_len(&mut v, n);
            assert_eq!(v, want, "{n}");
        }
    }
}
