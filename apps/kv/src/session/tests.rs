//! The session against a cache, with no network: exact response bytes.

use super::*;
use crate::cache::{Cache, CacheConfig};
use crate::stats::Board;

struct NoInfo;

impl Info for NoInfo {
    fn stats(&self, group: &[u8], _now: u32, each: &mut dyn FnMut(&str, &str)) -> bool {
        if group.is_empty() {
            each("pid", "1");
            true
        } else {
            false
        }
    }
    fn version(&self) -> &str {
        "1.6.18"
    }
    fn reset(&self) {}
}

struct Rig {
    cache: Cache,
    board: Board,
    detail: crate::stats::Detail,
    now: u32,
}

impl Rig {
    fn new() -> Rig {
        let cache = Cache::new(CacheConfig { memory: 8 << 20, ..CacheConfig::default() }, 1_800_000_000).unwrap();
        Rig { cache, board: Board::new(1), detail: Default::default(), now: 100 }
    }

    /// Feeds `input` in pieces of `chunk` bytes; returns all output.
    fn talk(&self, s: &mut Session, input: &[u8], chunk: usize) -> (Vec<u8>, Flow) {
        let mut out = Vec::new();
        let mut flow = Flow::Open;
        for piece in input.chunks(chunk.max(1)) {
            let mut ctx = Ctx {
                cache: &self.cache,
                now: self.now,
                counters: self.board.engine(0),
                info: &NoInfo,
                detail: &self.detail,
            };
            flow = s.input(piece, &mut ctx, &mut out);
        }
        (out, flow)
    }

    fn text(&self, input: &str) -> String {
        String::from_utf8(self.talk(&mut Session::new(), input.as_bytes(), usize::MAX).0).unwrap()
    }
}

#[test]
fn classic_commands() {
    let r = Rig::new();
    assert_eq!(r.text("set a 5 0 3\r\nabc\r\nget a b\r\n"), "STORED\r\nVALUE a 5 3\r\nabc\r\nEND\r\n");
    assert_eq!(r.text("add a 0 0 1\r\nx\r\nreplace zz 0 0 1\r\nx\r\n"), "NOT_STORED\r\nNOT_STORED\r\n");
    assert_eq!(
        r.text("append a 0 0 1\r\n!\r\nprepend a 0 0 1\r\n<\r\nget a\r\n"),
        "STORED\r\nSTORED\r\nVALUE a 5 5\r\n<abc!\r\nEND\r\n"
    );
    assert_eq!(r.text("gets a\r\n"), "VALUE a 5 5 3\r\n<abc!\r\nEND\r\n");
    assert_eq!(
        r.text("cas a 0 0 1 2\r\nx\r\ncas a 0 0 1 3\r\ny\r\ncas q 0 0 1 1\r\nz\r\n"),
        "EXISTS\r\nSTORED\r\nNOT_FOUND\r\n"
    );
    assert_eq!(
        r.text("set n 0 0 2\r\n10\r\nincr n 5\r\ndecr n 100\r\nget n\r\n"),
        "STORED\r\n15\r\n0\r\nVALUE n 0 2\r\n0 \r\nEND\r\n"
    );
    assert_eq!(
        r.text("incr a 1\r\nincr zz 1\r\n"),
        "CLIENT_ERROR cannot increment or decrement non-numeric value\r\nNOT_FOUND\r\n"
    );
    assert_eq!(r.text("touch a 10\r\ndelete a\r\ndelete a\r\n"), "TOUCHED\r\nDELETED\r\nNOT_FOUND\r\n");
    assert_eq!(r.text("set a 0 0 1 noreply\r\nx\r\nget a\r\n"), "VALUE a 0 1\r\nx\r\nEND\r\n");
    assert_eq!(
        r.text("set a 0 0 1\r\nxyz\r\nget a\r\n"),
        "CLIENT_ERROR bad data chunk\r\nERROR\r\nVALUE a 0 1\r\nx\r\nEND\r\n"
    );
    assert_eq!(
        r.text("bogus\r\nversion\r\nverbosity 1\r\nflush_all\r\nget a\r\n"),
        "ERROR\r\nVERSION 1.6.18\r\nOK\r\nOK\r\nEND\r\n"
    );
}

#[test]
fn commands_split_anywhere_give_the_same_answers() {
    let r = Rig::new();
    let script = "set k 1 0 10\r\n0123456789\r\nget k\r\nappend k 0 0 2\r\nab\r\ngets k\r\nincr k 1\r\nmg k v f t\r\nms m 3 T0 F9\r\nxyz\r\nmg m s v\r\nmn\r\n";
    let whole = r.talk(&mut Session::new(), script.as_bytes(), usize::MAX).0;
    r.cache.flush_all(None, r.now);
    for chunk in [1, 2, 3, 7, 13] {
        let split = r.talk(&mut Session::new(), script.as_bytes(), chunk).0;
        r.cache.flush_all(None, r.now);
        // CAS uniques differ run to run; compare without the `gets` line's.
        let norm = |b: &[u8]| {
            String::from_utf8_lossy(b)
                .lines()
                .map(|l| if l.starts_with("VALUE k 1 12 ") { "VALUE k 1 12 N".to_string() } else { l.to_string() })
                .collect::<Vec<_>>()
        };
        assert_eq!(norm(&split), norm(&whole), "in pieces of {chunk}");
    }
}

#[test]
fn too_large_values_are_refused_and_skipped() {
    let r = Rig::new();
    let big = vec![b'x'; 2 << 20];
    let mut input = b"set a 0 0 1\r\n1\r\nset a 0 0 2097152\r\n".to_vec();
    input.extend_from_slice(&big);
    input.extend_from_slice(b"\r\nget a\r\n");
    let (out, flow) = r.talk(&mut Session::new(), &input, 1000);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "STORED\r\nSERVER_ERROR object too large for cache\r\nEND\r\n",
        "a failed set drops the old value"
    );
    assert_eq!(flow, Flow::Open);
}

#[test]
fn long_lines_and_quit_close() {
    let r = Rig::new();
    let (_, flow) = r.talk(&mut Session::new(), &[b'x'; 3000], usize::MAX);
    assert_eq!(flow, Flow::Close);
    let (out, flow) = r.talk(&mut Session::new(), b"version\r\nquit\r\nversion\r\n", usize::MAX);
    assert_eq!((out, flow), (b"VERSION 1.6.18\r\n".to_vec(), Flow::Close));
}

#[test]
fn meta_commands() {
    let r = Rig::new();
    assert_eq!(r.text("ms k 2 T0 F5 c\r\nhi\r\n").split(' ').next(), Some("HD"));
    assert_eq!(r.text("mg k v f s k Oxy\r\n"), "VA 2 f5 s2 kk Oxy\r\nhi\r\n");
    assert_eq!(r.text("mg k h\r\nmg k h\r\n"), "HD h1\r\nHD h1\r\n");
    assert_eq!(r.text("mg nope v\r\nmg nope v q\r\nmn\r\n"), "EN\r\nMN\r\n");
    assert_eq!(r.text("ms k 1 MR q\r\nz\r\nmg k v\r\n"), "VA 1\r\nz\r\n");
    assert_eq!(r.text("ms new 1 ME\r\nz\r\nms new 1 ME\r\nz\r\n"), "HD\r\nNS\r\n");
    assert_eq!(r.text("ma cnt\r\nma cnt N0 J10 v\r\nma cnt MD D3 v\r\n"), "NF\r\nVA 2\r\n10\r\nVA 1\r\n7\r\n");
    assert_eq!(r.text("md k q\r\nmd k q\r\nmg k\r\n"), "NF\r\nEN\r\n");
    assert_eq!(r.text("mg k zz\r\n"), "CLIENT_ERROR invalid flag\r\n");
}

fn bin(opcode: u8, extras: &[u8], key: &[u8], value: &[u8], cas: u64) -> Vec<u8> {
    let mut h = vec![0x80, opcode];
    h.extend_from_slice(&(key.len() as u16).to_be_bytes());
    h.push(extras.len() as u8);
    h.extend_from_slice(&[0, 0, 0]);
    h.extend_from_slice(&((extras.len() + key.len() + value.len()) as u32).to_be_bytes());
    h.extend_from_slice(&0x1234u32.to_be_bytes());
    h.extend_from_slice(&cas.to_be_bytes());
    [h, extras.to_vec(), key.to_vec(), value.to_vec()].concat()
}

#[test]
fn binary_protocol() {
    use memcache::binary::op;
    let r = Rig::new();
    let mut s = Session::new();
    let mut input = bin(op::SET, &[0, 0, 0, 7, 0, 0, 0, 0], b"k", b"val", 0);
    input.extend(bin(op::GETQ, &[], b"missing", b"", 0));
    input.extend(bin(op::GETK, &[], b"k", b"", 0));
    input.extend(bin(op::ADD, &[0; 8], b"k", b"v", 0));
    input.extend(bin(op::NOOP, &[], b"", b"", 0));
    let (out, _) = r.talk(&mut s, &input, 5);
    // SET ok (24), GETK hit: 24 + 4 extras + 1 key + 3 value, ADD exists: 24 + 20, NOOP 24.
    assert_eq!(out.len(), 24 + 32 + 44 + 24);
    assert_eq!((out[0], out[1], out[7]), (0x81, op::SET, 0));
    assert_eq!(&out[24 + 24..24 + 32], b"\0\0\0\x07kval");
    assert_eq!((out[57], out[63]), (op::ADD, 2), "add of an existing key: exists");
    assert_eq!(&out[56 + 24..56 + 44], b"Data exists for key.");
    assert_eq!(out[101], op::NOOP);
}

#[test]
fn stats_cachedump_lists_a_class_most_recent_first() {
    let r = Rig::new();
    r.text("set a 0 0 3\r\nabc\r\nset b 0 0 2\r\nxy\r\n");
    // Both are small: the first class that holds anything holds both.
    let dumps: Vec<String> = (1..=42).map(|c| r.text(&format!("stats cachedump {c} 0\r\n"))).collect();
    let found = dumps.iter().find(|d| d != &"END\r\n").expect("a class with items");
    assert_eq!(found, "ITEM b [2 b; 0 s]\r\nITEM a [3 b; 0 s]\r\nEND\r\n");
    let c = dumps.iter().position(|d| d == found).unwrap() + 1;
    assert_eq!(r.text(&format!("stats cachedump {c} 1\r\n")), "ITEM b [2 b; 0 s]\r\nEND\r\n");
    assert_eq!(r.text("stats cachedump 64 0\r\n"), "CLIENT_ERROR Illegal slab id\r\n");
    assert_eq!(r.text("stats cachedump 1\r\n"), "CLIENT_ERROR bad command line\r\n");
}
