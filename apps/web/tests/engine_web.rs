//! The web server as it runs in production — engine, TCP, prepared segments (copied, or sent
//! from pinned replicas) — against the HTTP load generator on a second engine, over lossy,
//! reordering, duplicating links, on a virtual clock. Every response must come back whole
//! and right (status, length, body bytes), in both send modes, at any seed.

// The crate as the rest of the workspace names it.
extern crate sirocco_web as web;

use std::sync::Arc;

use engine::published::Follower;
use engine::{ChannelService, Duration, Service};
use gen::http::{HttpGen, HttpGenConfig};
use sim::engines::EngineNet;
use sim::replay::Ran;
use sim::{Link, Rng};
use tcp::channel::Buffers;
use tcp::{Config, Limits};
use web::{Settings, Site, WebService};
use wire::Ipv4Addr;

const SRV: Ipv4Addr = Ipv4Addr([198, 18, 3, 1]);
const CLI: Ipv4Addr = Ipv4Addr([198, 18, 3, 2]);

struct Outcome {
    completed: u64,
    ok: u64,
    body_bytes: u64,
    bad: u64,
    broken: u64,
    retransmits: u64,
}

fn run(seed: u64, path: &str, precopy: Option<usize>) -> Outcome {
    let mut r = Rng::new(seed);
    let site = Site::demo(1_700_000_000);
    let mut server = WebService::new(
        Follower::fixed(Arc::new(site)),
        80,
        Config::default(),
        Limits::default(),
        Settings::default(),
        1 << 30,
        precopy,
        None,
    );
    let cfg = HttpGenConfig {
        local: CLI.into(),
        dst: SRV.into(),
        port: 80,
        host: "sim".into(),
        paths: vec![format!("/{path}")],
        conns: r.range(1, 16) as usize,
        keep_alive: r.chance(0.7),
        rate: 0,
        duration: Duration::from_secs(3),
        drain: Duration::from_secs(20),
    };
    let gen = HttpGen::new(cfg);
    let mut client = ChannelService::client(gen, Config::default(), Limits::default(), Buffers::new(32, 2048));
    let mut net = EngineNet::new(r.next_u64());
    net.add(SRV, &server);
    net.add(CLI, &client);
    net.set_links(Link {
        delay: Duration::from_micros(r.range(100, 10_000)),
        loss: [0.0, 0.01, 0.03][r.range(0, 2) as usize],
        dup: if r.chance(0.3) { 0.02 } else { 0.0 },
        reorder: if r.chance(0.4) { 0.1 } else { 0.0 },
        jitter: Duration::from_micros(r.range(1, 5_000)),
        ..Link::default()
    });
    // Asking stops after 3 virtual seconds; then every connection closes and the last
    // answers drain. Bounded in virtual time and in steps.
    for _ in 0..2_000_000 {
        if client.server.finished() && client.ch.endpoint().is_empty() && server.tcp.ep.is_empty() {
            break;
        }
        net.step(&mut [&mut server as &mut dyn Service, &mut client]);
    }
    assert!(client.server.finished(), "seed {seed}: the generator finished");
    let s = &client.server.stats;
    Outcome {
        completed: s.completed,
        ok: s.ok,
        body_bytes: s.body_bytes,
        bad: s.bad_responses,
        broken: s.broken,
        retransmits: server.tcp.ep.stats().retransmits,
    }
}

fn size_of(path: &str) -> u64 {
    web::demo::FILES.iter().find(|f| f.0 == path).map(|f| f.1.len() as u64).expect("a demo file")
}

#[test]
fn every_response_comes_back_whole_over_lossy_paths_in_both_send_modes() {
    let mut retransmitted = 0;
    let name = "engine_web::every_response_comes_back_whole_over_lossy_paths_in_both_send_modes";
    let ran = sim::replay::seeds(name, 12, |seed| {
        for (path, precopy) in [("index.html", None), ("app.js", Some(256)), ("logo.svg", None)] {
            let o = run(seed, path, precopy);
            let what = format!("seed {seed} {path} precopy {precopy:?}");
            assert!(o.completed > 20, "{what}: {} responses", o.completed);
            assert_eq!((o.ok, o.bad), (o.completed, 0), "{what}");
            assert_eq!(o.body_bytes, o.completed * size_of(path), "{what}: every body whole");
            // Requests cut off by the end of the run or a lossy close are counted broken,
            // never answered wrongly.
            assert!(o.broken <= 16, "{what}: {} broken", o.broken);
            retransmitted += o.retransmits;
        }
        Ok(())
    });
    if matches!(ran, Ran::All(n) if n >= 12) {
        assert!(retransmitted > 0, "the paths were lossy enough to exercise recovery");
    }
}
