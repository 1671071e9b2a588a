//! sirocco's TCP against the Linux kernel's: kernel clients through `sirocco echo --proto tcp`.

use crate::common::*;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// A deterministic byte stream (xorshift), so both directions can be checked without keeping
/// a copy of what was sent.
struct Stream(u64);

impl Stream {
    fn fill(&mut self, b: &mut [u8]) {
        for x in b.iter_mut() {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            *x = self.0 as u8;
        }
    }
}

fn connect(dst: &str) -> TcpStream {
    let to = std::net::SocketAddr::new(dst.parse().unwrap(), 7);
    let s = TcpStream::connect_timeout(&to, Duration::from_secs(5)).unwrap_or_else(|e| panic!("connect to {to}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Sends `total` bytes and reads them back, comparing every byte; returns bytes verified.
fn echo_stream(dst: &'static str, total: usize, seed: u64) -> usize {
    let s = connect(dst);
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let mut gen = Stream(seed);
        let mut buf = vec![0u8; 64 * 1024];
        let mut left = total;
        while left > 0 {
            let n = left.min(buf.len());
            gen.fill(&mut buf[..n]);
            w.write_all(&buf[..n]).expect("write");
            left -= n;
        }
        w.shutdown(Shutdown::Write).unwrap();
    });
    let mut r = s;
    let mut want = Stream(seed);
    let mut got = vec![0u8; 64 * 1024];
    let mut exp = vec![0u8; 64 * 1024];
    let mut verified = 0;
    loop {
        let n = r.read(&mut got).expect("read");
        if n == 0 {
            break; // the server closed after echoing our FIN
        }
        want.fill(&mut exp[..n]);
        assert!(got[..n] == exp[..n], "echo differs within bytes {verified}..{}", verified + n);
        verified += n;
    }
    writer.join().unwrap();
    verified
}

#[test]
fn tcp_echo_carries_100_mb_each_way_intact() {
    hundred_mb_each_way(SERVER_OWN, &["channel", "callbacks"]);
}

#[test]
fn tcp_echo_carries_100_mb_each_way_intact_over_ipv6() {
    hundred_mb_each_way(SERVER_OWN6, &["channel"]);
}

/// 100 MB each way through the echo at `dst` (which serves both families at once), on each of
/// `apis`: the channel (the default) and level-1 callbacks.
fn hundred_mb_each_way(dst: &'static str, apis: &[&str]) {
    for &api in apis {
        let net = TestNet::new(1);
        let s = net.start_tcp_echo(&["--tcp-api", api, "--addr", SERVER_OWN, "--addr", SERVER_OWN6]);
        let bytes = 100 * 1000 * 1000;
        let verified = in_netns(&net.cli_ns, move || echo_stream(dst, bytes, 7));
        assert_eq!(verified, bytes, "{api}: every byte came back, then EOF");
        // The client has everything and its FIN is on the way: the server counts the
        // connection closed (and its last bytes acknowledged) once that FIN and the last ACKs
        // are in, which under a full test run's load came after an immediate stop.
        s.wait_until_no_connections(Duration::from_secs(30));
        let (c, log) = stop_with_log(s);
        assert!(log.contains("accepted 1 closed 1 echoed 100000000 bytes"), "{api}: {log}");
        if api == "channel" {
            // The buffers all came back, and the bytes reached the echo as views of the frames.
            assert!(log.contains("recv copied 0 bytes, buffers exhausted 0"), "{log}");
        }
        assert!(total(&c, "tcp_delivered") > (bytes / 1448) as u64);
        assert_eq!(total(&c, "drop_tcp_malformed"), 0);
    }
}

#[test]
fn thousands_of_concurrent_kernel_connections() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--proto", "tcp", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    const CONNS: usize = 3000;
    let ok = in_netns(&net.cli_ns, move || {
        raise_fd_limit(CONNS as u64 + 200);
        // All open at once, then a message on each, then every answer read back.
        let t0 = Instant::now();
        let mut conns: Vec<TcpStream> = Vec::with_capacity(CONNS);
        for _ in 0..CONNS {
            conns.push(connect(SERVER_OWN));
        }
        for (i, c) in conns.iter_mut().enumerate() {
            c.write_all(format!("connection {i:05} says hello").as_bytes()).unwrap();
        }
        let mut ok = 0;
        for (i, c) in conns.iter_mut().enumerate() {
            let want = format!("connection {i:05} says hello");
            let mut b = vec![0u8; want.len()];
            c.read_exact(&mut b).unwrap();
            ok += usize::from(b == want.as_bytes());
        }
        for c in &conns {
            c.shutdown(Shutdown::Write).unwrap();
        }
        for c in conns.iter_mut() {
            let mut b = [0u8; 1];
            assert_eq!(c.read(&mut b).unwrap(), 0, "EOF after the server closes");
        }
        assert!(t0.elapsed() < Duration::from_secs(120));
        ok
    });
    assert_eq!(ok, CONNS);
    s.wait_until_no_connections(Duration::from_secs(30));
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(log.contains(&format!("accepted {CONNS} closed {CONNS}")), "{log}");
}

fn raise_fd_limit(n: u64) {
    let lim = libc::rlimit { rlim_cur: n, rlim_max: n };
    // SAFETY: setrlimit with a valid struct; raising the limit as root.
    let r = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    assert_eq!(r, 0, "setrlimit: {}", std::io::Error::last_os_error());
}

#[test]
fn segments_to_an_unserved_port_are_refused_by_the_kernel() {
    // Only the granted port is sirocco's: a connection to another port of the address sirocco
    // owns gets a reset from nobody (refused or timed out), and the counters say so.
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--proto", "tcp", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let refused = in_netns(&net.cli_ns, || {
        TcpStream::connect_timeout(&format!("{SERVER_OWN}:9").parse().unwrap(), Duration::from_secs(1)).is_err()
    });
    assert!(refused);
    let c = stop_and_count(s);
    assert_eq!(total(&c, "tcp_delivered"), 0);
}

#[test]
fn transfers_complete_intact_with_loss_both_ways() {
    transfers_with_loss(SERVER_OWN);
}

#[test]
fn transfers_complete_intact_with_loss_both_ways_over_ipv6() {
    transfers_with_loss(SERVER_OWN6);
}

fn transfers_with_loss(dst: &'static str) {
    // sirocco drops 3% of what it receives and of what it sends: the kernel recovers what
    // sirocco dropped on receive, sirocco recovers what it dropped on send.
    let net = TestNet::new(1);
    let s = net.start_tcp_echo(&["--addr", SERVER_OWN, "--addr", SERVER_OWN6, "--impair-loss", "3"]);
    let each = 5 * 1000 * 1000;
    let verified = in_netns(&net.cli_ns, move || {
        let threads: Vec<_> = (0..4u64).map(|i| std::thread::spawn(move || echo_stream(dst, each, 100 + i))).collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum::<usize>()
    });
    assert_eq!(verified, 4 * each);
    // The client has everything and has closed, but the ACK of sirocco's FIN can be among the
    // 3 % sirocco drops on receive: the FIN then goes again after a timeout (200 ms, then
    // doubling). Give the closes 2 s (three retransmissions) before counting them.
    std::thread::sleep(Duration::from_secs(2));
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(log.contains("accepted 4 closed 4"), "{log}");
    let rtx: u64 = log
        .split("retransmits ")
        .nth(1)
        .and_then(|x| x.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .expect("retransmit count in the summary");
    assert!(rtx > 0, "losses were recovered by fast retransmit: {log}");
}

/// One connection: `n` bytes out, FIN, the same bytes back, EOF.
fn short_echo(dst: &str, n: usize) -> Result<(), String> {
    let mut s = TcpStream::connect_timeout(&format!("{dst}:7").parse().unwrap(), Duration::from_secs(10))
        .map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let port = s.local_addr().map(|a| a.port()).unwrap_or(0);
    let msg: Vec<u8> = (0..n).map(|i| i as u8).collect();
    s.write_all(&msg).map_err(|e| format!("port {port} write: {e}"))?;
    s.shutdown(Shutdown::Write).map_err(|e| format!("port {port} shutdown: {e}"))?;
    let mut got = Vec::new();
    s.read_to_end(&mut got).map_err(|e| format!("port {port} read after {} bytes: {e}", got.len()))?;
    if got != msg {
        return Err(format!("port {port}: {} bytes back, not the {n} sent", got.len()));
    }
    Ok(())
}

/// Raw SYNs from addresses nobody answers for (inside 198.18.0.0/15) to `dst:7`.
fn syn_flood(dst: [u8; 4], secs: f64) -> u64 {
    use wire::ipv4::{Ipv4Addr, Ipv4Repr, Protocol};
    use wire::tcp::{TcpFlags, TcpOptions, TcpRepr};
    // SAFETY: a raw socket; the fd is closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW) };
    assert!(fd >= 0, "raw socket: {}", std::io::Error::last_os_error());
    let to = libc::sockaddr_in {
        sin_family: libc::AF_INET as u16,
        sin_port: 0,
        sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(dst) },
        sin_zero: [0; 8],
    };
    let t0 = Instant::now();
    let mut sent = 0u64;
    let mut x = 0x1234_5678u32;
    let mut pkt = [0u8; 20 + 24];
    while t0.elapsed().as_secs_f64() < secs {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let src = Ipv4Addr([198, 19, (x >> 8) as u8, (x as u8).max(1)]);
        let syn = TcpRepr {
            src_port: 1024 + (x >> 16) as u16 % 60000,
            dst_port: 7,
            seq: x,
            ack: 0,
            flags: TcpFlags(TcpFlags::SYN),
            window: 65535,
            options: TcpOptions { mss: Some(1460), ..TcpOptions::default() },
            payload_len: 0,
        };
        Ipv4Repr {
            src,
            dst: Ipv4Addr(dst),
            protocol: Protocol::TCP,
            payload_len: 24,
            ttl: 64,
            ident: x as u16,
            tos: 0,
            dont_frag: true,
        }
        .emit(&mut pkt);
        syn.emit(&mut pkt[20..], src, Ipv4Addr(dst));
        // SAFETY: sending a buffer we own to a valid sockaddr_in.
        let r = unsafe {
            libc::sendto(
                fd,
                pkt.as_ptr().cast(),
                pkt.len(),
                0,
                (&to as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as u32,
            )
        };
        if r > 0 {
            sent += 1;
        }
    }
    // SAFETY: closing the fd opened above.
    unsafe { libc::close(fd) };
    sent
}

#[test]
fn a_syn_flood_does_not_keep_kernel_clients_out() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--proto", "tcp", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let ns = net.cli_ns.clone();
    let flood = std::thread::spawn(move || in_netns(&ns, || syn_flood([198, 18, 0, 10], 4.0)));
    std::thread::sleep(Duration::from_millis(300));
    let failures = in_netns(&net.cli_ns, || {
        let mut failures = Vec::new();
        for i in 0..50u64 {
            if let Err(e) = short_echo(SERVER_OWN, 1000) {
                failures.push(format!("connection {i}: {e}"));
            }
            std::thread::sleep(Duration::from_millis(40));
        }
        failures
    });
    let flooded = flood.join().unwrap();
    let (st, log) = s.stop();
    assert!(failures.is_empty(), "every legitimate connection goes through during the flood: {failures:?}\n{log}");
    assert!(st.success(), "{log}");
    let cookies: u64 = log
        .split("cookies ")
        .nth(1)
        .and_then(|x| x.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .expect("cookie count in the summary");
    assert!(flooded > 10_000 && cookies > 1000, "{flooded} SYNs sent, {cookies} cookies: {log}");
}

#[test]
fn tcp_source_and_discard_modes_for_bulk_tests() {
    let net = TestNet::new(1);
    let bytes = 30 * 1000 * 1000u64;
    let s = net.start(&[
        "echo",
        "--proto",
        "tcp",
        "--tcp-mode",
        "source",
        "--source-bytes",
        &bytes.to_string(),
        "--iface",
        &net.srv_if,
        "--addr",
        SERVER_OWN,
    ]);
    let got = in_netns(&net.cli_ns, move || {
        let mut c = connect(SERVER_OWN);
        let mut buf = vec![0u8; 64 * 1024];
        let mut off = 0u64;
        loop {
            let n = c.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            for (i, b) in buf[..n].iter().enumerate() {
                assert_eq!(*b, ((off + i as u64) % 251) as u8, "byte {}", off + i as u64);
            }
            off += n as u64;
        }
        off
    });
    assert_eq!(got, bytes, "the whole pattern, then FIN");
    // The server counts bytes once acknowledged: the client's last ACK may still wait in its
    // RX ring while the other test thread holds the cores. Let it be taken before stopping.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(log.contains(&format!("sent {bytes} bytes")), "{log}");

    let s =
        net.start(&["echo", "--proto", "tcp", "--tcp-mode", "discard", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    in_netns(&net.cli_ns, move || {
        let mut c = connect(SERVER_OWN);
        let buf = vec![7u8; 64 * 1024];
        let mut left = bytes as usize;
        while left > 0 {
            let n = left.min(buf.len());
            c.write_all(&buf[..n]).unwrap();
            left -= n;
        }
        c.shutdown(Shutdown::Write).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(c.read(&mut b).unwrap(), 0, "the sink closes after the client does");
    });
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(log.contains(&format!("received {bytes} bytes")), "{log}");
}

#[test]
fn a_flow_that_moves_to_another_queue_is_served_by_its_engine_not_reset() {
    // Two queues, two engines. The kernel client rehashes a socket after a retransmission
    // timeout (net.core.txrehash=1, its default), and on veth the receive queue is the
    // sender's transmit queue: a connection's later segments can reach the engine that does
    // not hold it. They must reach the one that does — a reset would kill exactly the
    // connections a lossy path already slows. 3 % loss each way gives the timeouts.
    let net = TestNet::new(2);
    let out = net.exec(&net.cli_ns, &["sysctl", "-q", "-w", "net.core.txrehash=1"]);
    assert!(out.status.success(), "sysctl: {}", String::from_utf8_lossy(&out.stderr));
    let s = net.start_tcp_echo(&["--addr", SERVER_OWN, "--queues", "2", "--impair-loss", "10"]);
    let each = 2 * 1000 * 1000;
    let verified = in_netns(&net.cli_ns, move || {
        let threads: Vec<_> =
            (0..8u64).map(|i| std::thread::spawn(move || echo_stream(SERVER_OWN, each, 300 + i))).collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum::<usize>()
    });
    assert_eq!(verified, 8 * each, "every stream intact");
    std::thread::sleep(Duration::from_secs(2));
    let (c, log) = stop_with_log(s);
    // The client did move queues, and what reached the wrong engine went round to the right one.
    assert!(total(&c, "tcp_strays_in") > 0, "segments handed between engines: {log}");
    assert_eq!(total(&c, "tcp_strays_in"), total(&c, "tcp_strays_out"));
    let resets: u64 = log
        .split("resets in/out ")
        .skip(1)
        .filter_map(|x| x.split_whitespace().next()?.split('/').nth(1)?.parse::<u64>().ok())
        .sum();
    assert!(log.matches("resets in/out ").count() == 2, "both engines report: {log}");
    // A live connection reset would have cut its stream short (every byte was verified
    // above). What may be reset is a late duplicate (a client's FIN retransmitted across our
    // last ACK, at 10 % loss) reaching a connection already closed, which RFC 9293 answers
    // with RST: at most one per connection.
    assert!(resets <= 8, "at most a late duplicate per closed connection reset: {log}");
}
