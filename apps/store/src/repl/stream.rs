//! The replication stream, sans-IO: each logged change as the Redis commands that make the
//! same change on a replica — the stream a Redis primary sends, built from sirocco's log
//! records (which hold the state a change leaves or an idempotent delta, never "run this
//! again").

use crate::log::record::{Change, ListOp};

/// Appends one command of `args` in RESP.
pub fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A score as Redis reads one back: `%.17g`, or "inf"/"-inf".
fn score_text(d: f64) -> Vec<u8> {
    if d.is_infinite() {
        return if d > 0.0 { b"inf".to_vec() } else { b"-inf".to_vec() };
    }
    let mut v = Vec::with_capacity(24);
    resp::float::format_g17(d, &mut v);
    v
}

/// A key made anew: what it held goes first.
fn fresh(out: &mut Vec<u8>, key: &[u8]) {
    command(out, &[b"DEL", key]);
}

/// Its expiry, where a new value has one.
fn expiry(out: &mut Vec<u8>, key: &[u8], at_ms: i64) {
    if at_ms != 0 {
        command(out, &[b"PEXPIREAT", key, at_ms.to_string().as_bytes()]);
    }
}

/// A command of `verb key` and `items`, unless there are none (Redis refuses an empty one).
fn with_items(out: &mut Vec<u8>, verb: &[u8], key: &[u8], items: &[&[u8]]) {
    if items.is_empty() {
        return;
    }
    let mut args = Vec::with_capacity(items.len() + 2);
    args.push(verb);
    args.push(key);
    args.extend_from_slice(items);
    command(out, &args);
}

/// Appends the commands that make `change` on a replica.
pub fn commands_of(change: &Change<'_>, out: &mut Vec<u8>) {
    match change {
        Change::Sets(items) => {
            for (k, v, at) in items {
                if *at == 0 {
                    command(out, &[b"SET", k, v]);
                } else {
                    command(out, &[b"SET", k, v, b"PXAT", at.to_string().as_bytes()]);
                }
            }
        }
        Change::Del(keys) if keys.is_empty() => {}
        Change::Del(keys) => {
            let mut args: Vec<&[u8]> = vec![b"DEL"];
            args.extend_from_slice(keys);
            command(out, &args);
        }
        Change::Expire(k, 0) => command(out, &[b"PERSIST", k]),
        Change::Expire(k, at) => command(out, &[b"PEXPIREAT", k, at.to_string().as_bytes()]),
        Change::Flush => command(out, &[b"FLUSHALL"]),
        Change::FlushDb => command(out, &[b"FLUSHDB"]),
        Change::SwapDb(a, b) => command(out, &[b"SWAPDB", a.to_string().as_bytes(), b.to_string().as_bytes()]),
        Change::HashSet { key, fresh: made, expire_ms, fields } => {
            if *made {
                fresh(out, key);
            }
            let flat: Vec<&[u8]> = fields.iter().flat_map(|(f, v)| [*f, *v]).collect();
            with_items(out, b"HSET", key, &flat);
            if *made {
                expiry(out, key, *expire_ms);
            }
        }
        Change::HashDel { key, fields } => with_items(out, b"HDEL", key, fields),
        Change::List { key, fresh: made, expire_ms, op, .. } => {
            if *made {
                fresh(out, key);
            }
            match op {
                ListOp::Push { left, values } => {
                    with_items(out, if *left { b"LPUSH" } else { b"RPUSH" }, key, values);
                }
                ListOp::Pop { left, count } => {
                    command(out, &[if *left { b"LPOP" } else { b"RPOP" }, key, count.to_string().as_bytes()]);
                }
                ListOp::Set { index, value } => command(out, &[b"LSET", key, index.to_string().as_bytes(), value]),
                ListOp::Insert { before, pivot, value } => {
                    command(out, &[b"LINSERT", key, if *before { b"BEFORE" } else { b"AFTER" }, pivot, value]);
                }
                ListOp::Remove { count, value } => command(out, &[b"LREM", key, count.to_string().as_bytes(), value]),
                ListOp::Trim { start, stop } => {
                    command(out, &[b"LTRIM", key, start.to_string().as_bytes(), stop.to_string().as_bytes()]);
                }
            }
            if *made {
                expiry(out, key, *expire_ms);
            }
        }
        Change::Members { key, fresh: made, expire_ms, add, members, .. } => {
            if *made {
                fresh(out, key);
            }
            with_items(out, if *add { b"SADD" } else { b"SREM" }, key, members);
            if *made {
                expiry(out, key, *expire_ms);
            }
        }
        Change::Scores { key, fresh: made, expire_ms, set, removed, .. } => {
            if *made {
                fresh(out, key);
            }
            let scores: Vec<Vec<u8>> = set.iter().map(|(_, bits)| score_text(f64::from_bits(*bits))).collect();
            let flat: Vec<&[u8]> = set.iter().zip(&scores).flat_map(|((m, _), s)| [&s[..], *m]).collect();
            with_items(out, b"ZADD", key, &flat);
            with_items(out, b"ZREM", key, removed);
            if *made {
                expiry(out, key, *expire_ms);
            }
        }
        Change::Commit { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(c: &Change<'_>) -> String {
        let mut v = Vec::new();
        commands_of(c, &mut v);
        String::from_utf8(v).unwrap().replace("\r\n", " ")
    }

    #[test]
    fn changes_as_commands() {
        assert_eq!(text(&Change::Sets(vec![(b"k", b"v", 0)])), "*3 $3 SET $1 k $1 v ");
        assert_eq!(text(&Change::Sets(vec![(b"k", b"v", 7)])), "*5 $3 SET $1 k $1 v $4 PXAT $1 7 ");
        assert_eq!(text(&Change::Expire(b"k", 0)), "*2 $7 PERSIST $1 k ");
        let z = Change::Scores {
            key: b"z",
            fresh: true,
            gone: false,
            expire_ms: 9,
            set: vec![(b"a", 1.5f64.to_bits()), (b"b", f64::NEG_INFINITY.to_bits())],
            removed: vec![],
        };
        assert_eq!(text(&z), "*2 $3 DEL $1 z *6 $4 ZADD $1 z $3 1.5 $1 a $4 -inf $1 b *3 $9 PEXPIREAT $1 z $1 9 ");
        let l = Change::List {
            key: b"l",
            fresh: false,
            gone: true,
            expire_ms: 0,
            op: ListOp::Pop { left: true, count: 2 },
        };
        assert_eq!(text(&l), "*3 $4 LPOP $1 l $1 2 ");
        assert_eq!(text(&Change::Del(vec![])), "");
    }
}
