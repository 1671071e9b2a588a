//! Whole engines on impaired links: a server engine and a client engine, each running TCP
//! with the self-checking stream application, exchange byte streams through ARP, IP and the
//! engine loop, with loss, reordering, duplication, delay and bandwidth limits drawn from a
//! seed. Every byte must arrive intact and in order, every connection must close, and no
//! frame, connection or timer may leak. `SIM_SEEDS` sets how many seeds run (default 100);
//! `SIM_SEED` runs one.

use engine::{DropReason, Duration, Instant, Service, TcpService};
use sim::engines::EngineNet;
use sim::stream::{Spec, StreamApp};
use sim::{Link, Rng};
use tcp::{CcKind, Config, End, Limits};
use wire::Ipv4Addr;

const SRV: Ipv4Addr = Ipv4Addr([198, 18, 2, 1]);
const CLI: Ipv4Addr = Ipv4Addr([198, 18, 2, 2]);
const PORT: u16 = 80;

type Host = TcpService<StreamApp>;

fn config(r: &mut Rng) -> Config {
    Config {
        mss: [536, 1460][r.range(0, 1) as usize],
        rcv_buf: [16_384, 65_535, 262_144][r.range(0, 2) as usize],
        sack: r.chance(0.7),
        timestamps: r.chance(0.7),
        cc: if r.chance(0.5) { CcKind::Cubic } else { CcKind::NewReno },
        rto_max: Duration::from_secs(8),
        retries: 30,
        syn_retries: 14,
        time_wait: Duration::from_secs(2),
        ..Config::default()
    }
}

/// Moves the clock one step: held deliveries that are due are released first.
fn step(net: &mut EngineNet, server: &mut Host, client: &mut Host) {
    for h in [&mut *server, &mut *client] {
        h.app.now = net.now;
        for (hd, n) in h.app.due(net.now) {
            h.ep.recv_done(hd, n);
        }
    }
    net.step(&mut [server as &mut dyn Service, client]);
}

fn run(seed: u64) -> Result<String, String> {
    let mut r = Rng::new(seed);
    let hold = if r.chance(0.3) { 0.3 } else { 0.0 };
    let server_cfg = config(&mut r);
    let mut server = TcpService::new(StreamApp::new(r.next_u64(), hold), &[PORT], server_cfg, Limits::default());
    let mut client = TcpService::client(StreamApp::new(r.next_u64(), hold), Limits::default());
    let mut net = EngineNet::new(r.next_u64());
    net.add(SRV, &server);
    net.add(CLI, &client);
    let link = Link {
        delay: Duration::from_micros(r.range(50, 20_000)),
        loss: [0.0, 0.01, 0.03, 0.1][r.range(0, 3) as usize],
        dup: if r.chance(0.3) { 0.05 } else { 0.0 },
        reorder: if r.chance(0.4) { 0.2 } else { 0.0 },
        jitter: Duration::from_micros(r.range(1, 10_000)),
        bandwidth: if r.chance(0.5) { r.range(10, 1000) * 1_000_000 } else { 0 },
        ..Link::default()
    };
    net.set_links(link);
    let conns = r.range(1, 6) as usize;
    for id in 0..conns as u32 {
        let spec = Spec { id, up: r.range(0, 200_000) as u32, down: r.range(0, 200_000) as u32 };
        let cfg = config(&mut r);
        let conn = StreamApp::client_conn(spec);
        if let Err((e, _)) = client.ep.connect(net.now, CLI.into(), SRV.into(), PORT, cfg, conn, |_| true) {
            return Err(format!("connect: {e}"));
        }
    }
    let limit = Instant::ZERO + Duration::from_secs(900);
    let done = |s: &Host, c: &Host| s.app.finished.len() == conns && c.app.finished.len() == conns;
    while !done(&server, &client) {
        if net.now > limit {
            return Err(format!(
                "stall at {}: finished {} and {} of {conns}; links {:?}",
                net.now,
                server.app.finished.len(),
                client.app.finished.len(),
                net.stats()
            ));
        }
        step(&mut net, &mut server, &mut client);
    }
    let finished_at = net.now;
    for (who, h) in [("server", &server), ("client", &client)] {
        if let Some(e) = h.app.errors.first() {
            return Err(format!("{who}: {e}"));
        }
        for f in &h.app.finished {
            if f.end != End::Closed || !f.rx_complete {
                return Err(format!("{who}: stream {} ended {:?}, received all: {}", f.id, f.end, f.rx_complete));
            }
        }
    }
    // TIME-WAIT (2 s here) drains; then nothing may remain, and every frame is back.
    net.run_for(Duration::from_secs(10), &mut [&mut server, &mut client]);
    for (who, h) in [("server", &server), ("client", &client)] {
        let ep = &h.ep;
        if !ep.is_empty() || ep.timers() != 0 || ep.ooo_in_use() != 0 {
            return Err(format!(
                "{who} leaks: {} connections, {} timers, {} buffers",
                ep.len(),
                ep.timers(),
                ep.ooo_in_use()
            ));
        }
    }
    for s in &net.stations {
        let free = s.engine.port().free_frames();
        if free != sim::engines::FRAMES {
            return Err(format!("{}: {free} of {} frames free", s.addr, sim::engines::FRAMES));
        }
    }
    Ok(format!("{conns} conns, loss {:.2}, done at {finished_at}, links {:?}", link.loss, net.stats()))
}

#[test]
fn byte_streams_between_two_engines_survive_any_path() {
    if let Ok(one) = std::env::var("SIM_SEED") {
        let seed: u64 = one.parse().expect("SIM_SEED is a number");
        match run(seed) {
            Ok(s) => eprintln!("seed {seed}: {s}"),
            Err(e) => panic!("seed {seed}: {e}"),
        }
        return;
    }
    let n: u64 = std::env::var("SIM_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let failures: Vec<String> =
        (0..n).filter_map(|seed| run(seed).err().map(|e| format!("seed {seed}: {e}"))).collect();
    assert!(failures.is_empty(), "{} of {n} seeds failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn the_first_segment_waits_for_arp_and_the_counters_show_the_path() {
    let mut server = TcpService::new(StreamApp::new(1, 0.0), &[PORT], Config::default(), Limits::default());
    let mut client = TcpService::client(StreamApp::new(2, 0.0), Limits::default());
    let mut net = EngineNet::new(7);
    net.add(SRV, &server);
    net.add(CLI, &client);
    net.set_links(Link { delay: Duration::from_millis(1), ..Link::default() });
    let spec = Spec { id: 9, up: 50_000, down: 80_000 };
    client
        .ep
        .connect(net.now, CLI.into(), SRV.into(), PORT, Config::default(), StreamApp::client_conn(spec), |_| true)
        .unwrap();
    for _ in 0..200_000 {
        if client.app.finished.len() == 1 && server.app.finished.len() == 1 {
            break;
        }
        step(&mut net, &mut server, &mut client);
    }
    assert_eq!(client.app.finished.len(), 1, "finished");
    assert!(client.app.finished[0].rx_complete && server.app.finished[0].rx_complete);
    let (s, c) = (net.stations[0].engine.counters(), net.stations[1].engine.counters());
    assert_eq!((c.arp_requests, s.arp_replies), (1, 1), "one resolution: {c:?}");
    assert_eq!(s.arp_requests, 0, "the server learnt the client from its request");
    assert!(s.tcp_delivered > 30 && c.tcp_delivered > 50, "{s:?} {c:?}");
    // The SYN found no MAC yet and was lost (counted as such); the 1 s initial RTO sent it
    // again. Nothing else is dropped on a clean path.
    assert_eq!(c.dropped(DropReason::ArpUnresolved), 1, "{c:?}");
    assert_eq!(s.total_drops() + c.total_drops(), 1, "{s:?} {c:?}");
    assert!(net.now > Instant::ZERO + Duration::from_secs(1), "{}", net.now);
}
