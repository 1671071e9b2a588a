//! Per-segment cost of the TCP endpoint as the number of connections grows: opens N
//! connections (real handshakes through the endpoint), then times data segments to random
//! connections through `input` and `output` (delayed ACKs included). The requirement:
//! 100 000 connections must cost the same per packet as 10.
//!
//! `cargo run --release -p sirocco-tcp --example table_cost [N...]`

use std::time;

use tcp::endpoint::{App, Ctl, Endpoint, Handle, Limits, Output, Source};
use tcp::{Config, Duration, End, Instant};
use wire::tcp::{TcpFlags, TcpOptions, TcpPacket, TcpRepr};
use wire::{IpAddr, Ipv4Addr};

struct Sink;
struct Empty;

impl Source for Empty {
    fn end(&self) -> u64 {
        0
    }
    fn fill(&self, _: u64, _: &mut [u8]) {}
}

impl App for Sink {
    type Conn = Empty;
    fn accept(&mut self, _: Handle, _: u16, _: (IpAddr, u16)) -> Option<Empty> {
        Some(Empty)
    }
    fn recv(&mut self, _: Handle, _: &mut Empty, data: &[u8], ctl: &mut Ctl) {
        ctl.recv_done(data.len() as u32);
    }
    fn closed(&mut self, _: Handle, _: Empty, _: End) {}
}

/// Keeps only the SYN-ACKs' sequence numbers (to complete handshakes); counts the rest.
struct Out {
    isn: Vec<(u16, IpAddr, u32)>,
    sent: u64,
}

impl Output for Out {
    fn room(&self) -> usize {
        256
    }
    fn send(&mut self, _: IpAddr, remote: IpAddr, len: usize, write: &mut dyn FnMut(&mut [u8])) {
        let mut b = [0u8; 128];
        write(&mut b[..len.min(128)]);
        let p = TcpPacket::new_unchecked(&b[..]);
        if p.flags().has(TcpFlags::SYN) {
            self.isn.push((p.dst_port(), remote, p.seq()));
        }
        self.sent += 1;
    }
}

const US: IpAddr = IpAddr::V4(Ipv4Addr([198, 18, 0, 10]));

fn peer(i: usize) -> (IpAddr, u16) {
    (IpAddr::V4(Ipv4Addr([198, 18, 1 + (i / 50_000) as u8, 1])), 10_000 + (i % 50_000) as u16)
}

fn seg(port: u16, seq: u32, ack: u32, flags: u8, len: usize) -> TcpRepr {
    TcpRepr {
        src_port: port,
        dst_port: 80,
        seq,
        ack,
        flags: TcpFlags(flags),
        window: 65_535,
        options: TcpOptions { mss: (flags & TcpFlags::SYN != 0).then_some(1460), ..TcpOptions::default() },
        payload_len: len,
    }
}

fn run(n: usize) -> f64 {
    let limits = Limits { max_conns: n + 16, syn_backlog: n as u32 + 16, max_time_wait: 16, ..Limits::default() };
    let mut ep: Endpoint<Sink> = Endpoint::new(limits, Instant::ZERO);
    let mut app = Sink;
    ep.listen(80, Config { timestamps: false, ..Config::default() });
    let mut out = Out { isn: Vec::new(), sent: 0 };
    let mut isn = vec![0u32; n];
    for i in 0..n {
        let (ip, port) = peer(i);
        ep.input(&mut app, Instant::ZERO, ip, US, &seg(port, 1000, 0, TcpFlags::SYN, 0), &[]);
        if i % 200 == 199 || i == n - 1 {
            ep.output(&mut app, Instant::ZERO, &mut out);
            for (p, ip, s) in out.isn.drain(..) {
                let idx = (usize::from(ip.octets()[2]) - 1) * 50_000 + usize::from(p) - 10_000;
                isn[idx] = s;
            }
        }
    }
    for (i, &s) in isn.iter().enumerate() {
        let (ip, port) = peer(i);
        ep.input(&mut app, Instant::from_micros(1), ip, US, &seg(port, 1001, s.wrapping_add(1), TcpFlags::ACK, 0), &[]);
    }
    ep.output(&mut app, Instant::from_micros(1), &mut out);
    assert_eq!(ep.len(), n, "all established");
    let payload = [0x5au8; 64];
    let mut next = vec![1001u32; n];
    let rounds = 2_000_000usize;
    let mut x = 0x2545_f491u64;
    let t0 = time::Instant::now();
    let mut now = Instant::from_millis(2);
    for r in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = (x % n as u64) as usize;
        let (ip, port) = peer(i);
        let s = seg(port, next[i], isn[i].wrapping_add(1), TcpFlags::ACK | TcpFlags::PSH, 64);
        next[i] = next[i].wrapping_add(64);
        ep.input(&mut app, now, ip, US, &s, &payload);
        if r % 64 == 63 {
            now += Duration::from_micros(10); // a batch of 64 every 10 µs
            ep.advance(&mut app, now);
            ep.output(&mut app, now, &mut out);
        }
    }
    t0.elapsed().as_nanos() as f64 / rounds as f64
}

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![10, 1_000, 100_000] } else { sizes };
    println!("connections  ns/segment (input + delayed-ACK output, 64-byte segments)");
    for n in sizes {
        println!("{n:>11}  {:.0}", run(n));
    }
}
