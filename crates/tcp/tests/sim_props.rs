//! Properties over many seeds: every byte stream arrives intact and in order, every connection
//! finishes, nothing leaks (connections, reassembly buffers, timers), nothing stalls. Each
//! seed draws its own network (loss 0–30 %, reordering, duplication, corruption, delay,
//! bandwidth, an MTU drop), options on each side, congestion control, window sizes and
//! stream sizes. `SIM_SEEDS` sets how many seeds run (default 1000); `SIM_SEED` runs one
//! seed (with a packet trace if `SIM_TRACE` is set).

mod sim;

use sim::net::{Link, Sim};
use sim::rng::Rng;
use sim::stream::Spec;
use tcp::endpoint::Limits;
use tcp::tcb::End;
use tcp::{CcKind, Config};

fn config(r: &mut Rng) -> Config {
    Config {
        mss: [536, 1200, 1460][r.range(0, 2) as usize],
        rcv_buf: [4096, 16_384, 65_535, 262_144][r.range(0, 3) as usize],
        window_scale: r.chance(0.8),
        sack: r.chance(0.7),
        timestamps: r.chance(0.7),
        cc: if r.chance(0.5) { CcKind::Cubic } else { CcKind::NewReno },
        syn_retries: 14,
        retries: 30,
        rto_max: 8_000_000,
        time_wait: 60_000_000,
        fin_wait2: 600_000_000,
        ..Config::default()
    }
}

fn size(r: &mut Rng) -> u32 {
    match r.range(0, 9) {
        0 => 0,
        1..=4 => r.range(1, 3000) as u32,
        5..=7 => r.range(3000, 60_000) as u32,
        _ => r.range(60_000, 300_000) as u32,
    }
}

/// Runs one seed; Err describes the first property that failed.
fn run(seed: u64, trace: bool) -> Result<String, String> {
    let mut r = Rng::new(seed);
    let hosts = r.range(2, 3) as usize;
    let limits = Limits { ooo_buffers: r.range(1, 8) as usize, ..Limits::default() };
    let hold = if r.chance(0.3) { 0.3 } else { 0.0 };
    let mut sim = Sim::new(r.next(), hosts, limits, hold);
    sim.trace = trace;
    sim.tx_room = r.range(1, 64) as usize;
    let lossy = r.chance(0.8);
    let link = Link {
        delay: r.range(100, 50_000),
        loss: if lossy { [0.0, 0.01, 0.05, 0.1, 0.2, 0.3][r.range(0, 5) as usize] } else { 0.0 },
        dup: if r.chance(0.3) { 0.05 } else { 0.0 },
        reorder: if r.chance(0.4) { 0.2 } else { 0.0 },
        jitter: r.range(1, 30_000),
        corrupt: if r.chance(0.2) { 0.01 } else { 0.0 },
        bandwidth: if r.chance(0.5) { r.range(1, 100) * 1_000_000 } else { 0 },
        ..Link::default()
    };
    sim.set_links(link);
    let server = hosts - 1;
    let server_cfg = config(&mut r);
    sim.hosts[server].ep.listen(80, server_cfg);
    let conns = r.range(1, 8) as u32;
    for id in 0..conns {
        let from = r.range(0, server as u64 - 1) as usize;
        let spec = Spec { id, up: size(&mut r), down: size(&mut r) };
        let cfg = config(&mut r);
        sim.connect(from, server, 80, cfg, spec);
    }
    let mtu_drop = r.chance(0.2).then(|| (r.range(1_000, 2_000_000), [1280u16, 576][r.range(0, 1) as usize]));
    let everyone_done = |s: &Sim| {
        let clients: usize = s.hosts[..server].iter().map(|h| h.app.finished.len()).sum();
        clients == conns as usize && s.hosts[server].app.finished.len() == conns as usize
    };
    let limit = 3_600_000_000;
    if let Some((at, mtu)) = mtu_drop {
        sim.run_until(at, everyone_done);
        for row in &mut sim.links {
            for l in row.iter_mut() {
                l.mtu = mtu;
            }
        }
    }
    if !sim.run_until(limit, everyone_done) {
        let done: Vec<_> = sim.hosts.iter().map(|h| h.app.finished.len()).collect();
        return Err(format!("stall: finished per host {done:?} of {conns} at {} s", sim.now / 1_000_000));
    }
    for (i, h) in sim.hosts.iter().enumerate() {
        if let Some(e) = h.app.errors.first() {
            return Err(format!("host {i}: {e}"));
        }
        for f in &h.app.finished {
            if f.end != End::Closed || !f.rx_complete {
                return Err(format!("host {i}: stream {} ended {:?}, received all: {}", f.id, f.end, f.rx_complete));
            }
        }
    }
    // TIME-WAIT and the rest drain; then nothing may remain.
    let finish_at = sim.now;
    sim.run_until(sim.now + 70_000_000, |_| false);
    for (i, h) in sim.hosts.iter().enumerate() {
        let ep = &h.ep;
        if !ep.is_empty() || ep.timers() != 0 || ep.ooo_in_use() != 0 || ep.time_wait() != 0 {
            return Err(format!(
                "host {i} leaks: {} connections, {} timers, {} reassembly buffers, {} in TIME-WAIT",
                ep.len(),
                ep.timers(),
                ep.ooo_in_use(),
                ep.time_wait()
            ));
        }
    }
    let s = sim.hosts[server].ep.stats();
    Ok(format!(
        "{conns} conns, loss {:.2}, done at {:.1} s, net {:?}, server {:?}",
        link.loss,
        finish_at as f64 / 1e6,
        sim.net,
        s
    ))
}

/// Seeds that once failed, kept as regression tests (see the commit that fixed each).
const REGRESSIONS: &[u64] = &[];

#[test]
fn regression_seeds() {
    for &seed in REGRESSIONS {
        if let Err(e) = run(seed, false) {
            panic!("seed {seed}: {e}");
        }
    }
}

#[test]
fn many_seeds() {
    if let Ok(one) = std::env::var("SIM_SEED") {
        let seed: u64 = one.parse().expect("SIM_SEED is a number");
        match run(seed, std::env::var_os("SIM_TRACE").is_some()) {
            Ok(s) => eprintln!("seed {seed}: {s}"),
            Err(e) => panic!("seed {seed}: {e}"),
        }
        return;
    }
    let n: u64 = std::env::var("SIM_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let mut failures = Vec::new();
    for seed in 0..n {
        if let Err(e) = run(seed, false) {
            failures.push(format!("seed {seed}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{} of {n} seeds failed:\n{}", failures.len(), failures.join("\n"));
}
