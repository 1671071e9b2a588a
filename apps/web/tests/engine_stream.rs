//! Stream mode (Atlas) on its engine: files on the build directory's disk served with bodies
//! read through the storage port (O_DIRECT, io_uring) as each connection's window opens, to
//! a client on a second engine that compares every byte it gets with the file — over a
//! clean path and over one that loses, duplicates and reorders. No root needed.

// The crate as the rest of the workspace names it.
extern crate sirocco_web as web;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::published::Follower;
use engine::{Duration, Instant, Service, TcpService};
use io::storage::StorageConfig;
use sim::engines::EngineNet;
use sim::{Link, Rng};
use tcp::endpoint::{App, Ctl, Handle, Source};
use tcp::{Config, End, Limits};
use web::streamer::Streamer;
use web::{Settings, Site, WebService};
use wire::Ipv4Addr;

const SRV: Ipv4Addr = Ipv4Addr([198, 18, 5, 1]);
const CLI: Ipv4Addr = Ipv4Addr([198, 18, 5, 2]);

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9).wrapping_add(seed) >> 11) as u8).collect()
}

/// A document root with files of awkward sizes (empty, one byte, around a block, many blocks).
fn root(name: &str) -> (PathBuf, Vec<(String, Vec<u8>)>) {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("stream").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let files: Vec<(String, Vec<u8>)> = [0usize, 1, 4095, 4096, 100_003, 3_000_000]
        .iter()
        .enumerate()
        .map(|(i, &n)| (format!("f{i}.bin"), pattern(n, i as u64)))
        .collect();
    for (name, data) in &files {
        std::fs::write(d.join(name), data).unwrap();
    }
    (d, files)
}

/// One request per connection; the response is kept whole.
struct GetConn {
    req: Vec<u8>,
    got: Vec<u8>,
    id: usize,
}

impl Source for GetConn {
    fn end(&self) -> u64 {
        self.req.len() as u64
    }
    fn fill(&self, off: u64, dst: &mut [u8]) {
        dst.copy_from_slice(&self.req[off as usize..off as usize + dst.len()]);
    }
}

#[derive(Default)]
struct Getter {
    done: Vec<(usize, Vec<u8>, End)>,
}

impl App for Getter {
    type Conn = GetConn;
    fn accept(&mut self, _h: Handle, _port: u16, _remote: (wire::IpAddr, u16)) -> Option<GetConn> {
        None
    }
    fn recv(&mut self, _h: Handle, c: &mut GetConn, data: &[u8], ctl: &mut Ctl) {
        c.got.extend_from_slice(data);
        ctl.recv_done(data.len() as u32);
    }
    fn peer_closed(&mut self, _h: Handle, _c: &mut GetConn, ctl: &mut Ctl) {
        ctl.close();
    }
    fn closed(&mut self, _h: Handle, c: GetConn, end: End) {
        self.done.push((c.id, c.got, end));
    }
}

/// Splits a response into its status, its Content-Length and its body.
fn split(resp: &[u8]) -> (u16, u64, &[u8]) {
    let at = resp.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete head") + 4;
    let head = std::str::from_utf8(&resp[..at]).unwrap();
    let status = head[9..12].parse().unwrap();
    let len = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(|v| v.trim().parse().unwrap()))
        .expect("Content-Length");
    (status, len, &resp[at..])
}

struct Case {
    path: String,
    range: Option<(u64, u64)>,
}

fn run(seed: u64, link: Link, cases: &[Case], files: &[(String, Vec<u8>)], dir: &Path) -> web::streamer::StreamStats {
    run_with(seed, link, cases, files, dir, 12, true)
}

fn run_with(
    seed: u64,
    link: Link,
    cases: &[Case],
    files: &[(String, Vec<u8>)],
    dir: &Path,
    buffers: u32,
    lend: bool,
) -> web::streamer::StreamStats {
    let site = Site::load(dir, 0).unwrap();
    let streamer = Streamer::new(StorageConfig { buffers, buf_size: 128 << 10, ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"));
    let mut server = WebService::new(
        Follower::fixed(Arc::new(site)),
        80,
        Config::default(),
        Limits::default(),
        Settings::default(),
        0,
        None,
        None,
    )
    .streaming(streamer);
    let mut client = TcpService::client(Getter::default(), Limits::default());
    let mut net = EngineNet::new(seed);
    // Lent: the buffers live in the port's arena and segments carry them as they are.
    let srv = net.add_lending(SRV, &server, if lend { buffers as usize * (128 << 10) } else { 0 });
    net.add(CLI, &client);
    net.set_links(link);
    for (id, c) in cases.iter().enumerate() {
        let range = c.range.map_or(String::new(), |(a, b)| format!("Range: bytes={a}-{b}\r\n"));
        let req = format!("GET /{} HTTP/1.1\r\nHost: sim\r\n{range}Connection: close\r\n\r\n", c.path).into_bytes();
        let conn = GetConn { req, got: Vec::new(), id };
        client
            .ep
            .connect(net.now, CLI.into(), SRV.into(), 80, Config::default(), conn, |_| true)
            .map_err(|(e, _)| e)
            .unwrap();
    }
    let limit = Instant::ZERO + Duration::from_secs(600);
    // Until the files are closed too: TIME-WAIT leaves the table at once, so an empty
    // endpoint no longer means the streamer has had steps to finish its closes.
    let streaming =
        |s: &WebService| s.app().stream.as_ref().is_some_and(|st| st.open_files() > 0 || st.port.in_flight() > 0);
    while client.app.done.len() < cases.len() || !server.tcp.ep.is_empty() || streaming(&server) {
        assert!(net.now < limit, "seed {seed}: {} of {} finished", client.app.done.len(), cases.len());
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
    let gathered = net.counters(srv).tx_gathered;
    assert_eq!(gathered > 0, lend, "segments gathered from the read buffers: {gathered}");
    assert_eq!(server.app().stream.as_ref().unwrap().lent(), lend);
    for (id, got, end) in &client.app.done {
        let c = &cases[*id];
        let data = &files.iter().find(|f| f.0 == c.path).unwrap().1;
        assert_eq!(*end, End::Closed, "seed {seed} {}: closed cleanly", c.path);
        let (status, len, body) = split(got);
        let want = match c.range {
            Some((a, b)) => {
                assert_eq!(status, 206, "{}", c.path);
                &data[a as usize..=b as usize]
            }
            None => {
                assert_eq!(status, 200, "{}", c.path);
                &data[..]
            }
        };
        assert_eq!(len, want.len() as u64, "seed {seed} {}", c.path);
        assert!(body == want, "seed {seed} {}: {} bytes, not the file's", c.path, body.len());
    }
    let st = server.app().stream.as_ref().unwrap();
    assert_eq!(st.port.in_flight(), 0);
    assert_eq!(st.port.pool_ref().free_count(), buffers as usize, "every buffer back");
    assert_eq!(st.open_files(), 0, "every file closed");
    assert!(st.stats.reads > 0 && st.stats.read_errors == 0, "{:?}", st.stats);
    st.stats
}

fn every_file(files: &[(String, Vec<u8>)]) -> Vec<Case> {
    let mut cases: Vec<Case> = files.iter().map(|f| Case { path: f.0.clone(), range: None }).collect();
    cases.push(Case { path: "f5.bin".into(), range: Some((1000, 200_000)) });
    cases.push(Case { path: "f4.bin".into(), range: Some((4095, 4096)) });
    cases
}

#[test]
fn every_byte_streams_from_disk_on_a_clean_path() {
    let (dir, files) = root("clean");
    run(1, Link { delay: Duration::from_millis(1), ..Link::default() }, &every_file(&files), &files, &dir);
}

#[test]
fn every_byte_streams_from_disk_copied_when_the_port_lends_no_memory() {
    let (dir, files) = root("copied");
    let link = Link { delay: Duration::from_millis(1), loss: 0.01, ..Link::default() };
    run_with(2, link, &every_file(&files), &files, &dir, 12, false);
}

#[test]
fn every_byte_streams_from_disk_through_loss_and_reordering() {
    let (dir, files) = root("lossy");
    let name = "engine_stream::every_byte_streams_from_disk_through_loss_and_reordering";
    sim::replay::seeds(name, 6, |seed| {
        let mut r = Rng::new(seed);
        let link = Link {
            delay: Duration::from_micros(r.range(100, 10_000)),
            loss: 0.02,
            dup: 0.02,
            reorder: 0.1,
            jitter: Duration::from_millis(2),
            ..Link::default()
        };
        let st = run(seed, link, &every_file(&files), &files, &dir);
        // Atlas: sent bytes are let go of; what is lost is read from disk again.
        assert!(st.rereads > 0, "seed {seed}: retransmissions read again: {st:?}");
        Ok(())
    });
}

#[test]
fn two_hundred_streams_share_a_small_pool_by_waiting_for_buffers() {
    let (dir, files) = root("many");
    // 200 connections at once, each a file of up to 3 MB, through 6 buffers of 128 KiB.
    let cases: Vec<Case> = (0..200).map(|i| Case { path: files[2 + i % 4].0.clone(), range: None }).collect();
    let link = Link { delay: Duration::from_millis(2), loss: 0.005, ..Link::default() };
    let stats = run_with(3, link, &cases, &files, &dir, 6, true);
    assert!(stats.buffer_waits > 0, "the pool ran out and connections waited: {stats:?}");
}
