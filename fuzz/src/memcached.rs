//! Fuzz targets for memcached's text and binary protocols and the KV session.

/// The text protocol's framing and command parser: total, and a line found lies in the input.
pub fn memcache_text(data: &[u8]) {
    use memcache::text::{self, Command, Line};
    match text::line(data) {
        Line::Found(l, n) => {
            assert!(n <= data.len() && l.len() < n && data.starts_with(l));
            match text::parse(l) {
                Command::Store { bytes, key, .. } => {
                    assert!(bytes <= i32::MAX as usize - 2);
                    assert!(key.len() <= text::MAX_KEY);
                }
                Command::Get { keys, .. } => assert!(keys.iter().all(|k| k.len() <= text::MAX_KEY && !k.is_empty())),
                Command::Meta(memcache::meta::Meta::Cmd { key, flags, .. }) => {
                    assert!(key.len() <= text::MAX_KEY);
                    assert!(flags.iter().count() <= memcache::meta::MAX_FLAGS);
                }
                _ => {}
            }
        }
        Line::Incomplete => assert!(!data.contains(&b'\n') && data.len() <= text::MAX_GET_LINE),
        Line::TooLong => assert!(data.len() > text::MAX_LINE),
    }
}

/// The binary protocol's header: lengths add up or are refused.
pub fn memcache_binary(data: &[u8]) {
    match memcache::binary::header(data) {
        Some(h) => {
            assert!(data.len() >= memcache::binary::HEADER);
            if let Some(v) = h.valuelen() {
                assert_eq!(v as u64 + u64::from(h.keylen) + u64::from(h.extlen), u64::from(h.bodylen));
            }
        }
        None => assert!(data.len() < memcache::binary::HEADER),
    }
}

struct KvInfo;

impl kv::session::Info for KvInfo {
    fn stats(&self, group: &[u8], _now: u32, each: &mut dyn FnMut(&str, &str)) -> bool {
        each("group", &String::from_utf8_lossy(group));
        group.is_empty()
    }
    fn version(&self) -> &str {
        "fuzz"
    }
    fn reset(&self) {}
}

fn kv_run(pieces: &[&[u8]]) -> (Vec<u8>, kv::session::Flow) {
    let cfg = kv::cache::CacheConfig { memory: 2 << 20, ..Default::default() };
    let cache = kv::cache::Cache::new(cfg, 1_800_000_000).expect("cache");
    let board = kv::stats::Board::new(1);
    let detail = kv::stats::Detail::default();
    let mut s = kv::session::Session::new();
    let mut out = Vec::new();
    let mut flow = kv::session::Flow::Open;
    for p in pieces {
        let mut ctx =
            kv::session::Ctx { cache: &cache, now: 100, counters: board.engine(0), info: &KvInfo, detail: &detail };
        flow = s.input(p, &mut ctx, &mut out);
        if flow == kv::session::Flow::Close {
            break;
        }
    }
    (out, flow)
}

/// A KV connection on arbitrary bytes, whole and cut in two at the first byte's position:
/// no panic, and the same answers however the bytes were segmented.
pub fn kv_session(data: &[u8]) {
    let (cut, data) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b) % (rest.len() + 1), rest),
        None => (0, data),
    };
    let whole = kv_run(&[data]);
    let split = kv_run(&[&data[..cut], &data[cut..]]);
    assert_eq!(whole, split, "answers depend on where the input was cut ({cut})");
}

/// Inputs this area's targets start from (None: not one of its targets).
pub(crate) fn seeds(target: &str) -> Option<Vec<Vec<u8>>> {
    Some(match target {
        "kv_session" => {
            let mut v = seeds("memcache_text")?;
            let mut b = vec![0x10];
            b.extend(seeds("memcache_binary")?.remove(0));
            b.extend_from_slice(&[0x80, 0x0c, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, b'k']);
            b.extend_from_slice(&[0x80, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0]);
            v.push(b);
            v
        }
        "memcache_text" => vec![
            b"\x05set k 5 0 3\r\nabc\r\nget k x\r\ngets k\r\nincr k 1\r\nappend k 0 0 1\r\n!\r\n".to_vec(),
            b"\x03mg k v f t c k Oab q\r\nms k 2 T9 F3 MA c\r\nhi\r\nma n N0 J9 v\r\nmd k q\r\nmn\r\nme k\r\n".to_vec(),
            b"\x00cas k 0 0 1 1\r\nx\r\ntouch k 10\r\ngat 5 k\r\ndelete k\r\nflush_all 0\r\nstats\r\nquit\r\n".to_vec(),
        ],
        "memcache_binary" => vec![{
            let mut b = vec![0x80, 0x01, 0, 1, 8, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
            b.extend_from_slice(&[0, 0, 0, 5, 0, 0, 0, 0, b'k', b'v']);
            b
        }],
        _ => return None,
    })
}
