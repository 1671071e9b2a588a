//! Differential test: the same requests to `sirocco web` and to nginx (one worker, sendfile)
//! serving the same root; status, the headers that matter and the body bytes must agree.

use crate::common::*;
use crate::web::{get, pattern, split_response, Root};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub struct Nginx(Child, std::path::PathBuf);

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM is nginx's fast shutdown. It runs as one process (master_process off), so no
        // worker can be left behind.
        stop_child(&mut self.0);
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

pub fn nginx(ns: &str, root: &str) -> Nginx {
    let c = crate::tls::certs();
    nginx_tls(ns, root, &c.join("server.pem"), &c.join("server.key"), "TLSv1.3")
}

/// nginx on `root` with HTTPS from `cert` and `key`, speaking `protocols`.
pub fn nginx_tls(ns: &str, root: &str, cert: &std::path::Path, key: &std::path::Path, protocols: &str) -> Nginx {
    let dir = std::env::temp_dir().join(format!("sirocco-nginx-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let conf = format!(
        "master_process off;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n include /etc/nginx/mime.types;\n default_type application/octet-stream;\n access_log off;\n\
         sendfile on;\n server_tokens off;\n client_body_temp_path {d};\n proxy_temp_path {d};\n fastcgi_temp_path {d};\n\
         uwsgi_temp_path {d};\n scgi_temp_path {d};\n\
         server {{ listen {SERVER}:80; listen {SERVER}:443 ssl; listen [{SERVER6}]:80; listen [{SERVER6}]:443 ssl;\n\
         ssl_protocols {protocols};\n\
         ssl_certificate {cert}; ssl_certificate_key {key};\n\
         root {root}; index index.html; }}\n}}\n",
        d = dir.display(),
        cert = cert.display(),
        key = key.display(),
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", ns, "nginx", "-c", path.to_str().unwrap()])
        .spawn()
        .expect("start nginx");
    let n = Nginx(child, dir);
    // Wait (bounded) until it listens.
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        let out = Command::new("ip").args(["netns", "exec", ns, "ss", "-ltn"]).output().unwrap();
        let listening = String::from_utf8_lossy(&out.stdout).into_owned();
        let all =
            [format!("{SERVER}:80"), format!("{SERVER}:443"), format!("[{SERVER6}]:80"), format!("[{SERVER6}]:443")];
        if all.iter().all(|a| listening.contains(a)) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nginx did not start");
}

/// sirocco's address and nginx's, of one family.
type Family = (&'static str, &'static str);
const V4: Family = (SERVER_OWN, SERVER);
const V6: Family = (SERVER_OWN6, SERVER6);

#[test]
fn same_answers_as_nginx() {
    diff_against_nginx("diff", &[], false, V4);
}

/// Over IPv6: pre-packetised segments with IPv6's pseudo-header (copied: pre-copy replicas
/// serve IPv4 only), and over HTTPS.
#[test]
fn same_answers_as_nginx_over_ipv6() {
    diff_against_nginx("diff6", &[], false, V6);
    diff_against_nginx("diff6-tls", &[], true, V6);
}

/// Stream mode (bodies read from disk as the window opens) answers as the packetised modes do.
#[test]
fn stream_mode_gives_the_same_answers_as_nginx() {
    diff_against_nginx("diff-stream", &["--mode", "stream"], false, V4);
}

/// Over HTTPS, against nginx with OpenSSL (TLS 1.3) on the same root: stream mode, and the
/// default (pre-copy) mode, whose TLS connections seal their own segments.
#[test]
fn https_gives_the_same_answers_as_nginx() {
    diff_against_nginx("diff-tls-stream", &["--mode", "stream"], true, V4);
    diff_against_nginx("diff-tls", &[], true, V4);
}

fn diff_against_nginx(tag: &str, mode: &[&str], tls: bool, (ours_addr, theirs_addr): Family) {
    let root = Root::new(tag);
    root.write("index.html", b"<html><body>root index</body></html>\n");
    root.write("a b.txt", b"space in the name\n");
    root.write("style.css", b"body { color: red }\n");
    root.write("app.js", b"console.log(1)\n");
    root.write("img/logo.png", &pattern(3000, 7));
    root.write("img/photo.jpg", &pattern(20_000, 8));
    root.write("data.json", b"{\"a\": 1}\n");
    root.write("big.bin", &pattern(300_000, 9));
    root.write("noext", b"no extension\n");
    root.write("docs/index.html", b"<p>docs</p>\n");
    root.write("noindex/file.txt", b"x\n");
    let net = TestNet::new(1);
    let _ng = nginx(&net.srv_ns, root.path());
    let mut args =
        vec!["web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--addr", SERVER_OWN6, "--root", root.path()];
    args.extend_from_slice(mode);
    let certs = crate::tls::cert_args();
    if tls {
        args.extend(certs.iter().map(String::as_str));
    }
    let s = net.start(&args);
    let get = |ns: &str, dst: &'static str, port: u16, req: &str| {
        if !tls {
            return get(ns, dst, port, req);
        }
        let raw = crate::tls::exchange_tls(ns, dst, 443, req.as_bytes().to_vec());
        split_response(&raw, req.starts_with("HEAD "))
            .unwrap_or_else(|| panic!("no response to {req:?}: {:?}", String::from_utf8_lossy(&raw)))
            .0
    };

    // An ETag and a date to ask with, from nginx.
    let first = get(&net.cli_ns, theirs_addr, 80, "GET /style.css HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let etag = first.headers["etag"].clone();
    let lm = first.headers["last-modified"].clone();
    let h = "Host: a\r\nConnection: close\r\n";
    let mut corpus: Vec<String> = Vec::new();
    for p in [
        "/",
        "/index.html",
        "/a%20b.txt",
        "/style.css",
        "/app.js",
        "/img/logo.png",
        "/img/photo.jpg",
        "/data.json",
        "/big.bin",
        "/noext",
        "/docs/",
        "/docs",
        "/docs/index.html",
        "/noindex/",
        "/missing",
        "/img/",
        "/img/missing.png",
        "/style.css?v=3",
        "/./style.css",
        "/img/../style.css",
        "/img//logo.png",
        "/%73tyle.css",
        "/../style.css",
        "/%2e%2e/style.css",
        "/style.css/",
        "/index.html/x",
    ] {
        corpus.push(format!("GET {p} HTTP/1.1\r\n{h}\r\n"));
        corpus.push(format!("HEAD {p} HTTP/1.1\r\n{h}\r\n"));
    }
    // Left out on purpose, answered 200 with the whole file as RFC 9110 §14.2 allows where
    // nginx differs: several ranges (nginx: 206 multipart/byteranges) and a last byte before
    // the first (nginx: 416; the RFC calls the header invalid, to be ignored).
    for r in
        ["bytes=0-9", "bytes=-5", "bytes=10-", "bytes=19-19", "bytes=20-", "bytes=100-200", "lines=1-2", "bytes=-0"]
    {
        corpus.push(format!("GET /style.css HTTP/1.1\r\n{h}Range: {r}\r\n\r\n"));
    }
    corpus.push(format!("GET /big.bin HTTP/1.1\r\n{h}Range: bytes=100000-250000\r\n\r\n"));
    for (k, v) in [
        ("If-None-Match", etag.clone()),
        ("If-None-Match", "\"nope\"".to_string()),
        ("If-None-Match", "*".to_string()),
        ("If-None-Match", format!("\"x\", {etag}")),
        ("If-Modified-Since", lm.clone()),
        ("If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT".to_string()),
        ("If-Modified-Since", "not a date".to_string()),
    ] {
        corpus.push(format!("GET /style.css HTTP/1.1\r\n{h}{k}: {v}\r\n\r\n"));
    }
    corpus.push(format!("GET /style.css HTTP/1.1\r\n{h}Range: bytes=0-3\r\nIf-Range: {etag}\r\n\r\n"));
    corpus.push(format!("GET /style.css HTTP/1.1\r\n{h}Range: bytes=0-3\r\nIf-Range: \"old\"\r\n\r\n"));
    corpus.push("GET /style.css HTTP/1.0\r\n\r\n".to_string());
    corpus.push("GET /style.css HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".to_string());
    corpus.push(format!("DELETE /style.css HTTP/1.1\r\n{h}\r\n"));
    corpus.push(format!("PUT /x HTTP/1.1\r\n{h}Content-Length: 0\r\n\r\n"));
    corpus.push("GET /style.css HTTP/1.1\r\nConnection: close\r\n\r\n".to_string());
    corpus.push(format!("GET /style.css HTTP/1.1\r\n{h}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"));
    corpus.push(format!("GET /{} HTTP/1.1\r\n{h}\r\n", "a".repeat(10_000)));
    corpus.push("GET /style.css HTTP/2.0\r\nHost: a\r\n\r\n".to_string());
    // An http: absolute-form target: served by its path as on port 80; nginx answers it 404
    // on its TLS port (a scheme that is not the connection's), so it is compared only there.
    if !tls {
        corpus.push("GET http://example.com/style.css HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_string());
    }
    corpus.push("garbage\r\n\r\n".to_string());

    let mut diffs = Vec::new();
    for req in &corpus {
        let ours = get(&net.cli_ns, ours_addr, 80, req);
        let theirs = get(&net.cli_ns, theirs_addr, 80, req);
        let shown = req.lines().next().unwrap_or("").chars().take(80).collect::<String>();
        if ours.status != theirs.status {
            diffs.push(format!("{shown}: status {} vs nginx {}", ours.status, theirs.status));
            continue;
        }
        if ![200, 206, 304, 416].contains(&ours.status) {
            continue; // error pages differ in their HTML, by design
        }
        for k in ["content-type", "content-length", "last-modified", "etag", "content-range"] {
            let (a, b) = (ours.headers.get(k), theirs.headers.get(k));
            // A 416's page is HTML of each server's own.
            if ours.status == 416 && k != "content-range" {
                continue;
            }
            // nginx leaves Content-Type out of 304 and HEAD of errors; compare what both send.
            if a != b && !(ours.status == 304 && k == "content-type") {
                diffs.push(format!("{shown}: {k} {a:?} vs nginx {b:?}"));
            }
        }
        if ours.body != theirs.body && ours.status != 416 {
            diffs.push(format!("{shown}: body differs ({} vs {} bytes)", ours.body.len(), theirs.body.len()));
        }
    }
    for (r, want) in [("bytes=0-0,3-4", 200), ("bytes=5-4", 200)] {
        let ours = get(&net.cli_ns, ours_addr, 80, &format!("GET /style.css HTTP/1.1\r\n{h}Range: {r}\r\n\r\n"));
        assert_eq!(ours.status, want, "{r}");
    }
    drop(s);
    assert!(diffs.is_empty(), "{} of {} requests differ:\n{}", diffs.len(), corpus.len(), diffs.join("\n"));
}
