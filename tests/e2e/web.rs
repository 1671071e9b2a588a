//! `sirocco web` against real clients: curl, wget, ab, wrk, raw kernel sockets (pipelining,
//! HTTP/1.0, half-close), and headless Chromium on the demo site; large files under loss; a
//! small cache with eviction; SIGHUP reload.

use crate::common::*;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct Resp {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

/// Splits one response off the front of `buf`: status, headers (lower-case names) and a body
/// of Content-Length bytes (none for HEAD, 304 and `no_body`).
pub fn split_response(buf: &[u8], no_body: bool) -> Option<(Resp, usize)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let mut headers = HashMap::new();
    for l in lines.filter(|l| !l.is_empty()) {
        let (k, v) = l.split_once(':')?;
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    let len: usize = if no_body || status == 304 {
        0
    } else {
        headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    if buf.len() < end + len {
        return None;
    }
    Some((Resp { status, headers, body: buf[end..end + len].to_vec() }, end + len))
}

/// Sends `raw` on a new kernel connection from the client namespace and reads until the
/// server closes (or 10 s pass); returns everything received.
pub fn exchange(ns: &str, dst: &'static str, port: u16, raw: Vec<u8>) -> Vec<u8> {
    in_netns(ns, move || {
        let mut s = TcpStream::connect_timeout(&sockaddr(dst, port), Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("connect {dst}:{port}: {e}"));
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&raw).unwrap();
        read_until_closed(&mut s)
    })
}

/// Reads until one whole response is in, the peer ends the stream, a read fails, or 10 s
/// pass.
pub fn read_one_response(r: &mut impl Read) -> Vec<u8> {
    let mut got = Vec::new();
    let mut b = [0u8; 65536];
    let t = Instant::now();
    while split_response(&got, false).is_none() && t.elapsed() < Duration::from_secs(10) {
        match r.read(&mut b) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&b[..n]),
        }
    }
    got
}

/// Reads until the peer ends the stream, a read fails, or 10 s pass.
pub fn read_until_closed(r: &mut impl Read) -> Vec<u8> {
    let mut out = Vec::new();
    let mut b = [0u8; 65536];
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        match r.read(&mut b) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&b[..n]),
        }
    }
    out
}

/// One request with `Connection: close`, parsed.
pub fn get(ns: &str, dst: &'static str, port: u16, req: &str) -> Resp {
    let raw = exchange(ns, dst, port, req.as_bytes().to_vec());
    let head = req.starts_with("HEAD ");
    split_response(&raw, head)
        .unwrap_or_else(|| panic!("no response to {req:?}: {:?}", String::from_utf8_lossy(&raw)))
        .0
}

pub fn demo_file(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../apps/web/demo").join(name)).unwrap()
}

/// The requests a wrk run made, after checking it had no socket errors and no non-2xx answers.
pub fn wrk_requests(out: &std::process::Output) -> u64 {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("Socket errors") && !text.contains("Non-2xx"), "{text}");
    text.lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{text}"))
}

/// The numbers on sirocco's `engine 0 web:` line.
pub fn web_line(log: &str) -> String {
    log.lines().find(|l| l.starts_with("engine 0 web:")).unwrap_or_else(|| panic!("no web line in:\n{log}")).to_string()
}

/// The number after `key` on the web line.
pub fn web_stat(log: &str, key: &str) -> u64 {
    number_after(&web_line(log), key)
}

/// The number after `key` on the `engine 0 precopy:` line.
pub fn precopy_stat(log: &str, key: &str) -> u64 {
    let l = log
        .lines()
        .find(|l| l.starts_with("engine 0 precopy:"))
        .unwrap_or_else(|| panic!("no precopy line in:\n{log}"));
    number_after(l, key)
}

fn curl(net: &TestNet, args: &[&str]) -> String {
    let mut a = vec!["curl", "-sS", "--max-time", "10"];
    a.extend_from_slice(args);
    let out = net.exec(&net.cli_ns, &a);
    assert!(out.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn demo_site_with_curl_wget_ab_and_raw_sockets() {
    let net = TestNet::new(1);
    let s = net.start(&["web", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let u = format!("http://{SERVER_OWN}");

    // Every demo file, byte for byte, with the headers that matter.
    for name in ["index.html", "style.css", "app.js", "logo.svg", "hello.txt", "about/index.html"] {
        let r =
            get(&net.cli_ns, SERVER_OWN, 80, &format!("GET /{name} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        assert_eq!(r.status, 200, "{name}");
        assert_eq!(r.body, demo_file(name), "{name}");
        assert_eq!(r.headers["connection"], "close");
        assert!(
            r.headers.contains_key("date") && r.headers.contains_key("etag") && r.headers.contains_key("last-modified")
        );
    }
    let root = get(&net.cli_ns, SERVER_OWN, 80, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(root.body, demo_file("index.html"));
    assert_eq!(root.headers["content-type"], "text/html");
    let etag = root.headers["etag"].clone();
    let lm = root.headers["last-modified"].clone();

    // curl: ranges, conditionals, HEAD, errors.
    assert_eq!(curl(&net, &["-r", "0-4", &format!("{u}/hello.txt")]), "Hello");
    assert_eq!(curl(&net, &["-r", "-10", &format!("{u}/hello.txt")]), "start-up.\n");
    let code = |args: &[&str]| curl(&net, &[&["-o", "/dev/null", "-w", "%{http_code}"], args].concat());
    assert_eq!(code(&["-r", "9999-", &format!("{u}/hello.txt")]), "416");
    assert_eq!(code(&["-H", &format!("If-None-Match: {etag}"), &format!("{u}/")]), "304");
    assert_eq!(code(&["-H", "If-None-Match: \"other\"", &format!("{u}/")]), "200");
    assert_eq!(code(&["-H", &format!("If-Modified-Since: {lm}"), &format!("{u}/")]), "304");
    assert_eq!(code(&["-H", "If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT", &format!("{u}/")]), "200");
    assert_eq!(code(&["-I", &format!("{u}/logo.svg")]), "200");
    assert_eq!(code(&[&format!("{u}/nothing")]), "404");
    assert_eq!(code(&[&format!("{u}/about")]), "301");
    assert_eq!(code(&["-X", "POST", &format!("{u}/")]), "405");
    assert_eq!(code(&["--path-as-is", &format!("{u}/../../etc/passwd")]), "400");
    assert_eq!(code(&["--path-as-is", &format!("{u}/%2e%2e/%2e%2e/etc/passwd")]), "400");
    let head = curl(&net, &["-sI", &format!("{u}/about")]);
    assert!(head.contains("Location: /about/"), "{head}");
    let h405 = curl(&net, &["-s", "-D", "-", "-o", "/dev/null", "-X", "DELETE", &format!("{u}/")]);
    assert!(h405.contains("Allow: GET, HEAD"), "{h405}");

    // Pipelining on one connection: three requests in one write, answered in order; the
    // HTTP/1.0 one without keep-alive ends the connection.
    let raw = exchange(
        &net.cli_ns,
        SERVER_OWN,
        80,
        b"GET /hello.txt HTTP/1.1\r\nHost: a\r\n\r\nHEAD /app.js HTTP/1.1\r\nHost: a\r\n\r\nGET /style.css HTTP/1.0\r\n\r\nGET /never HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
    );
    let (a, n1) = split_response(&raw, false).expect("first");
    let (b, n2) = split_response(&raw[n1..], true).expect("second");
    let (c, n3) = split_response(&raw[n1 + n2..], false).expect("third");
    assert_eq!((a.status, b.status, c.status), (200, 200, 200));
    assert_eq!(a.body, demo_file("hello.txt"));
    assert_eq!(b.headers["content-length"], demo_file("app.js").len().to_string());
    assert_eq!(c.body, demo_file("style.css"));
    assert_eq!(c.headers["connection"], "close");
    assert_eq!(n1 + n2 + n3, raw.len(), "nothing after the HTTP/1.0 response");

    // A request split byte by byte over many segments, then a half-close: still answered.
    let r = in_netns(&net.cli_ns, || {
        let mut s = TcpStream::connect((SERVER_OWN, 80)).unwrap();
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        for b in b"GET /hello.txt HTTP/1.1\r\nHost: a\r\n\r\n" {
            s.write_all(&[*b]).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        s.shutdown(Shutdown::Write).unwrap();
        let mut v = Vec::new();
        let _ = s.read_to_end(&mut v);
        v
    });
    assert_eq!(split_response(&r, false).expect("split request").0.body, demo_file("hello.txt"));

    // Malformed: garbage, a missing Host, a bad version, smuggling.
    for (req, want) in [
        ("BLAH\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/3.0\r\nHost: a\r\n\r\n", 505),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    ] {
        assert_eq!(get(&net.cli_ns, SERVER_OWN, 80, req).status, want, "{req:?}");
    }
    let long = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "x".repeat(9000));
    assert_eq!(get(&net.cli_ns, SERVER_OWN, 80, &long).status, 414);
    let fat = format!("GET / HTTP/1.1\r\nHost: a\r\nX-Fat: {}\r\n\r\n", "y".repeat(17000));
    assert_eq!(get(&net.cli_ns, SERVER_OWN, 80, &fat).status, 431);

    // wget, and ab with keep-alive (HTTP/1.0 + Connection: Keep-Alive) and without.
    let out = net.exec(&net.cli_ns, &["wget", "-q", "-O", "-", &format!("{u}/logo.svg")]);
    assert!(out.status.success());
    assert_eq!(out.stdout, demo_file("logo.svg"));
    for keep in [true, false] {
        let mut a = vec!["ab", "-q", "-n", "3000", "-c", "20"];
        if keep {
            a.push("-k");
        }
        let target = format!("{u}/index.html");
        a.push(&target);
        let out = net.exec(&net.cli_ns, &a);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "ab: {text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("Complete requests:      3000"), "{text}");
        assert!(text.contains("Failed requests:        0"), "{text}");
        assert!(!text.contains("Non-2xx"), "{text}");
        if keep {
            assert!(text.contains("Keep-Alive requests:    3000"), "{text}");
        }
    }

    let (_, log) = stop_with_log(s);
    // The 200s went out as prepared segments; only the formatted responses were built.
    let (ready, built, prepared, formatted) = (
        web_stat(&log, "segments ready"),
        web_stat(&log, "built"),
        web_stat(&log, "responses prepared"),
        web_stat(&log, "formatted"),
    );
    assert!(prepared > 6000, "{}", web_line(&log));
    assert!(ready >= prepared, "{}", web_line(&log));
    // A retransmission (a tail probe on a loaded host) may build its segment again.
    let resent = web_stat(&log, "tcp retransmits");
    assert!(built <= formatted * 2 + 64 + resent, "{}", web_line(&log));
    assert_eq!(web_stat(&log, "resets out"), 0, "{}", web_line(&log));
    // Pre-copy (the default): every ready segment went out from a replica, and a handful of
    // replicas served thousands of responses.
    assert_eq!(precopy_stat(&log, "replica sends"), ready, "{log}");
    assert_eq!(precopy_stat(&log, "fallbacks"), 0, "{log}");
    assert!(precopy_stat(&log, "made") < prepared / 10, "{log}");
}

/// A temp document root, removed on drop.
pub struct Root(pub PathBuf);

impl Root {
    pub fn new(tag: &str) -> Root {
        Root::under(&std::env::temp_dir(), tag)
    }
    /// A root under `base` (the build directory, for a file system that is surely not tmpfs).
    pub fn under(base: &std::path::Path, tag: &str) -> Root {
        let p = base.join(format!("sirocco-web-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Root(p)
    }
    pub fn write(&self, name: &str, bytes: &[u8]) {
        let p = self.0.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    pub fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Deterministic bytes.
pub fn pattern(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn large_files_under_loss_and_a_small_cache() {
    let root = Root::new("large");
    let sizes = [1usize, 1447, 1448, 1449, 4096, 65_536, 1 << 20, 5 << 20];
    for (i, n) in sizes.iter().enumerate() {
        root.write(&format!("f{i}.bin"), &pattern(*n, i as u64 + 1));
    }
    let net = TestNet::new(1);
    // A cache of 2 MB: the 5 MB file is over it on its own, the rest come and go.
    let s = net.start(&[
        "web",
        "--iface",
        &net.srv_if,
        "--addr",
        SERVER_OWN,
        "--root",
        root.path(),
        "--cache-bytes",
        "2000000",
        "--replica-frames",
        "200",
        "--impair-loss",
        "2",
    ]);
    for round in 0..2 {
        for (i, n) in sizes.iter().enumerate() {
            let r = get(
                &net.cli_ns,
                SERVER_OWN,
                80,
                &format!("GET /f{i}.bin HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"),
            );
            assert_eq!(r.status, 200, "round {round} file {i}");
            assert!(r.body == pattern(*n, i as u64 + 1), "round {round} file {i}: {} bytes differ", n);
        }
    }
    // Keep-alive over every file at once, through curl.
    let urls: Vec<String> = (0..sizes.len()).map(|i| format!("http://{SERVER_OWN}/f{i}.bin")).collect();
    let mut args = vec!["-o", "/dev/null", "-w", "%{http_code} %{size_download}\n"];
    let mut all = Vec::new();
    for u in &urls {
        all.extend_from_slice(&args);
        all.push(u.as_str());
    }
    args.clear();
    let out = curl(&net, &all);
    let want: String = sizes.iter().map(|n| format!("200 {n}\n")).collect();
    assert_eq!(out, want);
    let (_, log) = stop_with_log(s);
    assert!(web_stat(&log, "evicted") > 0, "{}", web_line(&log));
    assert!(web_stat(&log, "read on demand") > sizes.len() as u64, "{}", web_line(&log));
    assert!(web_stat(&log, "retransmits") > 0, "loss was applied: {}", web_line(&log));
    // 200 replica frames cannot hold the megabyte files: idle replicas were taken back for
    // the segments in demand; evicted objects gave their replicas back.
    assert!(precopy_stat(&log, "reclaimed") > 0, "{log}");
    assert!(precopy_stat(&log, "released") > 0, "{log}");
    assert!(precopy_stat(&log, "pinned") <= 200, "{log}");
}

#[test]
fn sighup_picks_up_changed_files() {
    let root = Root::new("reload");
    root.write("a.txt", b"one");
    let net = TestNet::new(1);
    let s = net.start(&["web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--root", root.path()]);
    let body = |p: &str| {
        get(&net.cli_ns, SERVER_OWN, 80, &format!("GET /{p} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"))
    };
    assert_eq!(body("a.txt").body, b"one");
    assert_eq!(body("b.txt").status, 404);
    root.write("a.txt", b"two, longer");
    root.write("b.txt", b"new");
    s.hup();
    s.wait_for_log("reloaded", Duration::from_secs(10));
    // Engines switch within their next housekeeping round (100 ms).
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(body("a.txt").body, b"two, longer");
    assert_eq!(body("b.txt").body, b"new");
    let (_, log) = stop_with_log(s);
    assert_eq!(web_stat(&log, "reloads"), 1, "{}", web_line(&log));
}

#[test]
fn slow_headers_get_408_and_idle_connections_close() {
    let net = TestNet::new(1);
    let s = net.start(&[
        "web",
        "--iface",
        &net.srv_if,
        "--addr",
        SERVER_OWN,
        "--header-timeout",
        "1",
        "--idle-timeout",
        "1",
    ]);
    let (slow, idle) = in_netns(&net.cli_ns, || {
        let mut a = TcpStream::connect((SERVER_OWN, 80)).unwrap();
        a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        a.write_all(b"GET / HTTP/1.1\r\nHo").unwrap();
        let mut b = TcpStream::connect((SERVER_OWN, 80)).unwrap();
        b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let (mut va, mut vb) = (Vec::new(), Vec::new());
        let _ = a.read_to_end(&mut va);
        let _ = b.read_to_end(&mut vb);
        (va, vb)
    });
    assert!(String::from_utf8_lossy(&slow).starts_with("HTTP/1.1 408 "), "{:?}", String::from_utf8_lossy(&slow));
    assert!(idle.is_empty(), "an idle connection is closed without a response");
    let (_, log) = stop_with_log(s);
    assert_eq!(web_stat(&log, "timeouts header"), 1, "{}", web_line(&log));
    assert!(web_stat(&log, "idle") >= 1, "{}", web_line(&log));
}

#[test]
fn a_full_connection_table_refuses_new_connections_and_keeps_the_open_ones() {
    // --max-conns 2: two keep-alive connections fill the table; a third is refused with a
    // reset at once (not left to retry its SYN), the two still answer, and once one closes a
    // new connection gets in.
    let net = TestNet::new(1);
    let s = net.start(&["web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--max-conns", "2"]);
    let (refused, kept, after) = in_netns(&net.cli_ns, || {
        let ask = |c: &mut TcpStream| {
            c.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
            split_response(&read_one_response(c), false).map(|(r, _)| r.status)
        };
        let mut a = TcpStream::connect((SERVER_OWN, 80)).unwrap();
        let mut b = TcpStream::connect((SERVER_OWN, 80)).unwrap();
        for c in [&mut a, &mut b] {
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        }
        let first = (ask(&mut a), ask(&mut b));
        // A reset, not silence: silence would end in a timeout.
        let third = TcpStream::connect_timeout(&sockaddr(SERVER_OWN, 80), Duration::from_secs(5));
        let refused = matches!(&third, Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused);
        let kept = (first, ask(&mut a), ask(&mut b));
        drop(a);
        // The slot frees once the close completes; a new connection then gets in.
        let mut after = None;
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(100));
            if let Ok(mut c) = TcpStream::connect_timeout(&sockaddr(SERVER_OWN, 80), Duration::from_secs(2)) {
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                after = ask(&mut c);
                break;
            }
        }
        (refused, kept, after)
    });
    assert!(refused, "the third connection is refused with a reset");
    assert_eq!(kept, ((Some(200), Some(200)), Some(200), Some(200)), "the open connections keep answering");
    assert_eq!(after, Some(200), "a connection gets in once one closed");
    let (_, log) = stop_with_log(s);
    assert!(web_stat(&log, "table full") >= 1, "{}", web_line(&log));
}

#[test]
fn wrk_for_a_minute_without_errors() {
    let net = TestNet::new(1);
    // memcpy mode here (the other tests run the default, pre-copy).
    let s = net.start(&["web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--mode", "memcpy"]);
    let out = net.exec(
        &net.cli_ns,
        &["wrk", "-t2", "-c100", "-d60s", "--timeout", "5s", &format!("http://{SERVER_OWN}/index.html")],
    );
    let n = wrk_requests(&out);
    assert!(n > 100_000, "{n} requests in a minute");
    let (_, log) = stop_with_log(s);
    assert!(web_stat(&log, "responses prepared") >= n, "{}", web_line(&log));
    assert!(log.contains("engine 0 memcpy:"), "{log}");
    assert!(web_stat(&log, "segments ready") >= n, "{}", web_line(&log));
}

#[test]
fn chromium_renders_the_demo_site() {
    let net = TestNet::new(1);
    let s = net.start(&["web", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let shot = std::env::temp_dir().join(format!("sirocco-demo-{}.png", std::process::id()));
    let shot_s = shot.to_str().unwrap().to_string();
    let arg = format!("--screenshot={shot_s}");
    let url = format!("http://{SERVER_OWN}/");
    let out = net.exec(
        &net.cli_ns,
        &[
            "timeout",
            "60",
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--window-size=1024,700",
            "--virtual-time-budget=3000",
            &arg,
            &url,
        ],
    );
    assert!(shot.exists(), "no screenshot: {}", String::from_utf8_lossy(&out.stderr));
    // Count the header's colour (from style.css) and the green of the box that app.js turns
    // green: the page was rendered with its stylesheet, and its script ran.
    let py = "import sys\nfrom PIL import Image\nim=Image.open(sys.argv[1]).convert('RGB')\n\
              px=list(im.getdata())\nprint(sum(1 for p in px if p==(200,100,42)), sum(1 for p in px if p==(207,232,201)))";
    let out = std::process::Command::new("/usr/bin/python3").args(["-c", py, &shot_s]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let counts: Vec<u64> = text.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    let _ = std::fs::remove_file(&shot);
    assert_eq!(counts.len(), 2, "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(counts[0] > 20_000, "header colour pixels: {}", counts[0]);
    assert!(counts[1] > 2_000, "script-status box pixels: {}", counts[1]);
    let (_, log) = stop_with_log(s);
    assert!(web_stat(&log, "responses prepared") >= 4, "{}", web_line(&log));
}
