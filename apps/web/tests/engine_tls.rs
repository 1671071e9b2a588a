//! HTTPS on its engine: the web server behind sirocco's TLS layer (packetised objects, and
//! stream mode from disk) against rustls clients on a second engine, over links that lose,
//! duplicate, reorder and delay. The client's AEAD checks every record, so a retransmitted
//! segment that was not sealed to the same bytes as its first sending would break the
//! connection; every body is compared with the file. No root needed.

// The crate as the rest of the workspace names it.
extern crate sirocco_web as web;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::published::Follower;
use engine::{Duration, Instant, Service, TcpService};
use io::storage::StorageConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use sim::engines::EngineNet;
use sim::replay::{self, Ran};
use sim::tls::{certs, client_config};
use sim::{Link, Rng};
use std::io::{Read, Write};
use tcp::endpoint::{App, Ctl, Handle, Source};
use tcp::{Config, End, Limits};
use web::streamer::Streamer;
use web::{Settings, Site, WebService};
use wire::Ipv4Addr;

const SRV: Ipv4Addr = Ipv4Addr([198, 18, 6, 1]);
const CLI: Ipv4Addr = Ipv4Addr([198, 18, 6, 2]);

fn listener(record_segments: usize) -> tls::Listener {
    let certs_ = CertificateDer::pem_file_iter(certs().join("server.pem")).unwrap().map(Result::unwrap).collect();
    let key = PrivateKeyDer::from_pem_file(certs().join("server.key")).unwrap();
    let config = tls::TlsConfig::from_der(certs_, key, &[b"http/1.1"]).unwrap();
    tls::Listener { config, port: 443, record_segments }
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9).wrapping_add(seed) >> 11) as u8).collect()
}

/// A rustls client over sirocco's TCP: what rustls writes is the connection's source; what
/// arrives goes through rustls; the request is written once the handshake is done.
struct TlsGet {
    tls: rustls::ClientConnection,
    out: Vec<u8>,
    req: Option<Vec<u8>>,
    got: Vec<u8>,
    id: usize,
    error: Option<String>,
    clean_eof: bool,
}

/// Whether `got` holds a whole response (head and Content-Length bytes of body).
fn complete(got: &[u8]) -> bool {
    let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
    let head = String::from_utf8_lossy(&got[..at]).to_ascii_lowercase();
    let len: usize =
        head.lines().find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap())).unwrap_or(0);
    got.len() >= at + 4 + len
}

impl TlsGet {
    fn pump_out(&mut self) {
        if let Some(req) = self.req.take_if(|_| !self.tls.is_handshaking()) {
            self.tls.writer().write_all(&req).unwrap();
        }
        while self.tls.wants_write() {
            self.tls.write_tls(&mut self.out).unwrap();
        }
    }
}

impl Source for TlsGet {
    fn end(&self) -> u64 {
        self.out.len() as u64
    }
    fn fill(&self, off: u64, dst: &mut [u8]) {
        dst.copy_from_slice(&self.out[off as usize..off as usize + dst.len()]);
    }
}

#[derive(Default)]
struct Getter {
    done: Vec<TlsGet>,
}

impl App for Getter {
    type Conn = TlsGet;
    fn accept(&mut self, _h: Handle, _port: u16, _remote: (wire::IpAddr, u16)) -> Option<TlsGet> {
        None
    }
    fn connected(&mut self, _h: Handle, c: &mut TlsGet, _ctl: &mut Ctl) {
        c.pump_out();
    }
    fn recv(&mut self, _h: Handle, c: &mut TlsGet, mut data: &[u8], ctl: &mut Ctl) {
        ctl.recv_done(data.len() as u32);
        while !data.is_empty() && c.error.is_none() {
            c.tls.read_tls(&mut data).unwrap();
            if let Err(e) = c.tls.process_new_packets() {
                c.error = Some(e.to_string());
                ctl.abort();
                return;
            }
            let mut b = [0u8; 16384];
            loop {
                match c.tls.reader().read(&mut b) {
                    Ok(0) => {
                        c.clean_eof = true;
                        break;
                    }
                    Ok(n) => c.got.extend_from_slice(&b[..n]),
                    Err(_) => break,
                }
            }
        }
        c.pump_out();
    }
    fn peer_closed(&mut self, _h: Handle, _c: &mut TlsGet, ctl: &mut Ctl) {
        ctl.close();
    }
    fn closed(&mut self, _h: Handle, c: TlsGet, _end: End) {
        self.done.push(c);
    }
}

fn body(resp: &[u8]) -> (u16, &[u8]) {
    let at = resp.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete head") + 4;
    (std::str::from_utf8(&resp[9..12]).unwrap().parse().unwrap(), &resp[at..])
}

fn root(name: &str) -> (PathBuf, Vec<Vec<u8>>) {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tls").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let files: Vec<Vec<u8>> = [0usize, 1, 1448, 15_906, 15_907, 100_003, 1_000_000]
        .iter()
        .enumerate()
        .map(|(i, &n)| pattern(n, i as u64))
        .collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(d.join(format!("f{i}.bin")), f).unwrap();
    }
    (d, files)
}

/// Runs one seed; returns the server's retransmitted segments.
/// Runs one seed asking for every file at once; returns the segments retransmitted and the
/// reads of bytes that had been let go of once sent.
fn run(seed: u64, link: Link, dir: &Path, files: &[Vec<u8>], stream: bool, record_segments: usize) -> (u64, u64) {
    let wanted: Vec<usize> = (0..files.len()).collect();
    run_many(seed, link, dir, files, &wanted, stream, record_segments, 16, false)
}

/// Runs one seed asking for `wanted` files at once through `buffers` read buffers.
#[allow(clippy::too_many_arguments)]
fn run_many(
    seed: u64,
    link: Link,
    dir: &Path,
    files: &[Vec<u8>],
    wanted: &[usize],
    stream: bool,
    record_segments: usize,
    buffers: u32,
    keep_alive: bool,
) -> (u64, u64) {
    let site = Site::load(dir, if stream { 0 } else { 1 << 30 }).unwrap();
    let mut server = WebService::new(
        Follower::fixed(Arc::new(site)),
        80,
        Config::default(),
        Limits::default(),
        Settings::default(),
        if stream { 0 } else { 1 << 30 },
        None,
        Some(listener(record_segments)),
    );
    if stream {
        let st = Streamer::new(StorageConfig { buffers, buf_size: 128 << 10, ..Default::default() })
            .unwrap_or_else(|e| panic!("{e}"));
        server = server.streaming(st);
    }
    let mut client = TcpService::client(Getter::default(), Limits::default());
    let mut net = EngineNet::new(seed);
    let srv = net.add_lending(SRV, &server, if stream { buffers as usize * (128 << 10) } else { 0 });
    net.add(CLI, &client);
    net.set_links(link);
    let name = ServerName::try_from("sirocco.test").unwrap();
    for (id, &f) in wanted.iter().enumerate() {
        let close = if keep_alive { "" } else { "Connection: close\r\n" };
        let req = format!("GET /f{f}.bin HTTP/1.1\r\nHost: sim\r\n{close}\r\n").into_bytes();
        let tls = rustls::ClientConnection::new(client_config(), name.clone()).unwrap();
        let conn = TlsGet { tls, out: Vec::new(), req: Some(req), got: Vec::new(), id, error: None, clean_eof: false };
        client
            .ep
            .connect(net.now, CLI.into(), SRV.into(), 443, Config::default(), conn, |_| true)
            .map_err(|(e, _)| e)
            .unwrap();
    }
    let limit = Instant::ZERO + Duration::from_secs(600);
    let mut ending = false;
    // Until the files are closed too: TIME-WAIT leaves the table at once, so an empty
    // endpoint no longer means the streamer has had steps to finish its closes.
    let streaming =
        |s: &WebService| s.app().stream.as_ref().is_some_and(|st| st.open_files() > 0 || st.port.in_flight() > 0);
    while client.app.done.len() < wanted.len() || !server.tcp.ep.is_empty() || streaming(&server) {
        assert!(net.now < limit, "seed {seed}: {} of {} finished", client.app.done.len(), wanted.len());
        // Keep-alive connections are ended together once every response is in: a server that
        // kept the buffers of finished responses until their connections end would stall.
        let hs = client.ep.handles();
        if keep_alive && !ending && hs.iter().all(|&h| client.ep.conn(h).is_some_and(|c| complete(&c.got))) {
            ending = true;
            for h in hs {
                if let Some(c) = client.ep.conn_mut(h) {
                    c.tls.send_close_notify();
                    c.pump_out();
                }
                client.ep.close(h);
                client.ep.kick(h);
            }
        }
        net.step(&mut [&mut server as &mut dyn Service, &mut client]);
        // The reads go to the real disk while the clock is simulated: each step with one in
        // flight waits a little real time, or a busy disk lets the simulated clock run out
        // (600 s went by while a host wrote back 10 GB).
        if server.app().stream.as_ref().is_some_and(|st| st.port.in_flight() > 0) {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
    // Buffers let go of in the last step are freed by the next.
    net.step(&mut [&mut server as &mut dyn Service, &mut client]);
    if stream && server.tls_stats().records_in_place > 0 {
        assert!(net.counters(srv).tx_gathered > 0, "records sealed in place are sent from the read buffers");
    }
    for c in &client.app.done {
        assert_eq!(c.error, None, "seed {seed} f{}: the client's TLS", c.id);
        assert!(c.clean_eof, "seed {seed} f{}: close_notify arrived", c.id);
        let (status, b) = body(&c.got);
        assert_eq!(status, 200);
        let f = &files[wanted[c.id]];
        assert!(b == f, "seed {seed} f{}: {} bytes, not the file's", wanted[c.id], b.len());
    }
    let t = server.tls_stats();
    assert_eq!((t.handshakes, t.handshake_failures, t.record_errors), (wanted.len() as u64, 0, 0));
    if let Some(st) = server.app().stream.as_ref() {
        assert_eq!(st.port.pool_ref().free_count(), buffers as usize, "every buffer back");
    }
    let rereads = server.app().stream.as_ref().map_or(0, |st| st.stats.rereads);
    (server.tcp.ep.stats().retransmits, rereads)
}

fn lossy(seed: u64) -> Link {
    let mut r = Rng::new(seed);
    Link {
        delay: Duration::from_micros(r.range(100, 10_000)),
        loss: 0.02,
        dup: 0.02,
        reorder: 0.1,
        jitter: Duration::from_millis(2),
        ..Link::default()
    }
}

#[test]
fn https_from_packetised_objects_through_loss() {
    let (dir, files) = root("packetised");
    let mut resent = 0;
    let ran = replay::seeds("engine_tls::https_from_packetised_objects_through_loss", 8, |seed| {
        resent += run(seed, lossy(seed), &dir, &files, false, 1 + 10 * (seed % 2) as usize).0;
        Ok(())
    });
    if let Ran::All(seeds) = ran {
        assert!(resent > 10 * seeds, "the links lost enough to exercise resealing: {resent}");
    }
}

#[test]
fn https_streamed_from_disk_through_loss() {
    let (dir, files) = root("stream");
    let (mut resent, mut reread) = (0, 0);
    let ran = replay::seeds("engine_tls::https_streamed_from_disk_through_loss", 8, |seed| {
        let (r, again) = run(seed, lossy(seed), &dir, &files, true, 1 + 10 * (seed % 2) as usize);
        resent += r;
        reread += again;
        Ok(())
    });
    let Ran::All(seeds) = ran else { return };
    assert!(resent > 10 * seeds, "the links lost enough to exercise resealing: {resent}");
    // Sent records are let go of; a retransmission reads and seals them again.
    assert!(reread > seeds, "retransmissions read from disk again: {reread}");
    eprintln!("{seeds} seeds, {resent} segments retransmitted, {reread} reads again");
}

/// A hundred keep-alive HTTPS streams through 6 read buffers: a connection whose response is
/// all acknowledged gives its buffers back while it stays open (a record shorter than the
/// others ends each response), and the others take them.
#[test]
fn a_hundred_keep_alive_https_streams_share_six_buffers() {
    let (dir, files) = root("many");
    let wanted: Vec<usize> = (0..100).map(|i| 3 + i % 4).collect();
    let link = Link { delay: Duration::from_millis(2), loss: 0.005, ..Link::default() };
    run_many(5, link, &dir, &files, &wanted, true, 11, 6, true);
}
