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
    let s = TcpStream::connect_timeout(&format!("{dst}:7").parse().unwrap(), Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("connect to {dst}:7: {e}"));
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
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--proto", "tcp", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let bytes = 100 * 1000 * 1000;
    let verified = in_netns(&net.cli_ns, move || echo_stream(SERVER_OWN, bytes, 7));
    assert_eq!(verified, bytes, "every byte came back, then EOF");
    let c = stop_and_count(s);
    assert!(total(&c, "tcp_delivered") > (bytes / 1448) as u64);
    assert_eq!(total(&c, "drop_tcp_malformed"), 0);
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
