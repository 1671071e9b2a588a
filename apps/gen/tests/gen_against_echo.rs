//! The generator and the echo server on two engines joined by the in-memory port pair,
//! driven by a virtual clock: ARP resolution, open-loop sending, matching and RTTs.

use engine::{Duration, Engine, EngineConfig, Instant};
use io::mem::MemPort;
use sirocco_echo::UdpEcho;
use sirocco_gen::{GenConfig, UdpGen};
use wire::{Ipv4Addr, MacAddr};

const SRV: Ipv4Addr = Ipv4Addr([198, 18, 0, 10]);
const CLI: Ipv4Addr = Ipv4Addr([198, 18, 0, 20]);

#[test]
fn generator_gets_every_echo_back() {
    let (a, b) = MemPort::pair(512);
    let mut echo = UdpEcho::new(7);
    let mut gen = UdpGen::new(GenConfig {
        dst: SRV.into(),
        dst_port: 7,
        rate: 1_000_000,
        size: 100,
        flows: 8,
        src_port_base: 40000,
        duration: Duration::from_millis(2),
    });
    let mut srv = Engine::new(a, EngineConfig::new(SRV, MacAddr([2, 0, 0, 0, 0, 1]), true, "m0"), &echo);
    let mut cli = Engine::new(b, EngineConfig::new(CLI, MacAddr([2, 0, 0, 0, 0, 2]), true, "m1"), &gen);
    // Virtual time: 1 µs per step, bounded.
    let mut now = Instant::ZERO;
    for _ in 0..10_000 {
        now += Duration::from_micros(1);
        cli.poll(now, &mut gen);
        srv.poll(now, &mut echo);
        if gen.finished() && gen.received == gen.sent {
            break;
        }
    }
    assert!(gen.finished());
    // 2 ms at 1 Mpps, less the first microseconds spent resolving the server's MAC.
    assert!(gen.sent >= 1_900 && gen.sent <= 2_000, "sent {}", gen.sent);
    assert_eq!(gen.received, gen.sent);
    assert_eq!(gen.foreign, 0);
    assert_eq!(echo.echoed, gen.sent);
    assert_eq!(cli.counters().arp_requests, 1);
    assert_eq!(srv.counters().arp_replies, 1);
    // The reply comes in the step after the send (1 µs) at the latest within a few steps.
    assert!(gen.rtt.quantile(0.99) <= 3_000, "p99 {}", gen.rtt.quantile(0.99));
    assert_eq!(cli.counters().total_drops() + srv.counters().total_drops(), 0);
}
