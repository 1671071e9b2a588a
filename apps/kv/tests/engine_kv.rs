//! The KV server (`apps/kv` on `Streams` on the channel) on a whole engine, over impaired
//! links: a client engine sends a long pipelined script of memcached commands (text, meta and
//! a few large values) as its window allows, and must get back exactly what a session gives
//! for the same script handed over in one piece — whatever the loss, reordering and
//! segmentation in between. `SIM_SEEDS` sets how many seeds run (default 100);
//! `scripts/replay-seed engine_kv SEED` replays one with its packet trace.

// The crate as the rest of the workspace names it.
extern crate sirocco_kv as kv;

use std::sync::Arc;

use engine::{ChannelService, Duration, Instant};
use kv::cache::{Cache, CacheConfig};
use kv::server::{Kv, Shared};
use kv::session::{Ctx, Info, Session};
use kv::stats::Board;
use sim::engines::EngineNet;
use sim::{Link, Rng};
use tcp::channel::streams::Streams;
use tcp::channel::{Buffers, Calls, Event, Events, Outbox, Server};
use tcp::{Config, Limits};
use wire::Ipv4Addr;

const SRV: Ipv4Addr = Ipv4Addr([198, 18, 3, 1]);
const CLI: Ipv4Addr = Ipv4Addr([198, 18, 3, 2]);
const PORT: u16 = 11211;

fn script(r: &mut Rng) -> Vec<u8> {
    let mut s = Vec::new();
    for i in 0..400u32 {
        let k = format!("key{}", r.range(0, 60));
        match r.range(0, 9) {
            0..=2 => {
                let n = [1, 10, 300, 2000, 20_000][r.range(0, 4) as usize];
                s.extend_from_slice(format!("set {k} {i} 0 {n}\r\n").as_bytes());
                s.extend((0..n).map(|j| b'a' + ((i + j) % 26) as u8));
                s.extend_from_slice(b"\r\n");
            }
            3 => s.extend_from_slice(format!("get {k} key1 key2 nokey\r\n").as_bytes()),
            4 => s.extend_from_slice(format!("append {k} 0 0 3\r\n+++\r\n").as_bytes()),
            5 => s.extend_from_slice(format!("mg {k} v f s k\r\nmn\r\n").as_bytes()),
            6 => s.extend_from_slice(
                format!("delete {k}\r\nincr n{} 7\r\nadd n{} 0 0 1\r\n5\r\n", i % 3, i % 3).as_bytes(),
            ),
            7 => s.extend_from_slice(format!("ms {k} 4 T0 MA\r\nmeta\r\ngets {k}\r\n").as_bytes()),
            _ => s.extend_from_slice(format!("touch {k} 100\r\nbogus command\r\n").as_bytes()),
        }
    }
    s.extend_from_slice(b"version\r\n");
    s
}

struct NoInfo;

impl Info for NoInfo {
    fn stats(&self, _group: &[u8], _now: u32, _each: &mut dyn FnMut(&str, &str)) -> bool {
        false
    }
    fn version(&self) -> &str {
        kv::server::VERSION
    }
    fn reset(&self) {}
}

/// The answers a session gives for the whole script at once, on a fresh cache.
fn expected(script: &[u8]) -> Vec<u8> {
    let cache = Cache::new(CacheConfig { memory: 16 << 20, ..CacheConfig::default() }, 1_800_000_000).unwrap();
    let board = Board::new(1);
    let detail = kv::stats::Detail::default();
    let mut out = Vec::new();
    let now = cache.time_at(kv::server::unix_now());
    let mut ctx = Ctx { cache: &cache, now, counters: board.engine(0), info: &NoInfo, detail: &detail };
    Session::new().input(script, &mut ctx, &mut out);
    out
}

/// The client: writes the script through an outbox, reads answers, closes when all came.
struct Client {
    script: Vec<u8>,
    want: usize,
    out: Outbox,
    got: Vec<u8>,
    started: bool,
    done: bool,
}

impl Server for Client {
    fn handle(&mut self, events: &Events<'_>, calls: &mut Calls<'_>) {
        if !self.started {
            self.started = true;
            calls.connect(1, CLI.into(), SRV.into(), PORT).expect("connect");
        }
        for ev in events.iter() {
            match ev {
                Event::Connected { h, outcome: Ok(()), .. } => {
                    assert!(self.out.write(calls.buffers(), &self.script), "client buffers");
                    self.out.flush(calls, h);
                }
                Event::Sent { h, .. } => {
                    self.out.flush(calls, h);
                }
                Event::Recv { h, data, .. } => {
                    self.got.extend_from_slice(data);
                    let _ = calls.recv_done(h, data.len() as u32);
                    if self.got.len() >= self.want {
                        let _ = calls.close(h);
                    }
                }
                Event::Dead { .. } => self.done = true,
                _ => {}
            }
        }
    }
}

fn run(seed: u64) -> Result<(), String> {
    let mut r = Rng::new(seed);
    let script = script(&mut r);
    let want = expected(&script);
    let cache = Cache::new(CacheConfig { memory: 16 << 20, ..CacheConfig::default() }, kv::server::unix_now()).unwrap();
    let shared = Arc::new(Shared {
        cache,
        board: Board::new(1),
        port: PORT,
        max_conns: 10,
        engines: 1,
        started: 0,
        detail: Default::default(),
    });
    let mut server = ChannelService::new(
        Streams::new(Kv::new(shared, 0), 10),
        &[PORT],
        Config::default(),
        Limits::default(),
        Buffers::new(4096, 2048),
    );
    let client = Client { want: want.len(), script, out: Outbox::new(), got: Vec::new(), started: false, done: false };
    let mut client = ChannelService::client(client, Config::default(), Limits::default(), Buffers::new(4096, 2048));
    let mut net = EngineNet::new(r.next_u64());
    net.add(SRV, &server);
    net.add(CLI, &client);
    net.set_links(Link {
        delay: Duration::from_micros(r.range(50, 5_000)),
        loss: [0.0, 0.01, 0.05][r.range(0, 2) as usize],
        reorder: if r.chance(0.4) { 0.2 } else { 0.0 },
        dup: if r.chance(0.3) { 0.03 } else { 0.0 },
        jitter: Duration::from_micros(r.range(1, 2_000)),
        ..Link::default()
    });
    let limit = Instant::ZERO + Duration::from_secs(300);
    while !client.server.done {
        if net.now > limit {
            return Err(format!("stall: {} of {} answer bytes", client.server.got.len(), want.len()));
        }
        net.step(&mut [&mut server, &mut client]);
    }
    let got = &client.server.got;
    if *got != want {
        let at = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
        let show = |b: &[u8]| String::from_utf8_lossy(&b[at.saturating_sub(80)..(at + 80).min(b.len())]).into_owned();
        return Err(format!(
            "answers differ at byte {at} of {}/{}:\n got  {:?}\n want {:?}",
            got.len(),
            want.len(),
            show(got),
            show(&want)
        ));
    }
    Ok(())
}

#[test]
fn kv_over_impaired_links_answers_as_in_one_piece() {
    sim::replay::seeds("engine_kv::kv_over_impaired_links_answers_as_in_one_piece", 100, run);
}
