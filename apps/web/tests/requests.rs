//! The web server's HTTP behaviour, scripted below the network: requests go in as bytes,
//! the connection's response stream comes out as bytes, and each response is taken apart
//! and checked against RFC 9110/9112 — conditionals, ranges, HEAD, pipelining, errors.

use sirocco_web::conn::Conn;
use sirocco_web::store::Store;
use sirocco_web::{Settings, Site, WebApp};
use std::sync::Arc;
use tcp::App as _;

/// The demo site's files carry this modification time.
const MTIME: u64 = 1_000_000;
const HELLO: &[u8] = include_bytes!("../demo/hello.txt");

fn app() -> WebApp {
    let mut store = Store::new(Arc::new(Site::demo(MTIME)), 1448, 1 << 20, 2_000_000);
    store.preload();
    WebApp::new(store, Settings::default())
}

#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Sends `requests` on one connection and returns every response on its stream, split by
/// the response boundaries the connection records.
fn exchange(app: &mut WebApp, requests: &[u8]) -> Vec<Response> {
    let mut c = Conn::new(tcp::Instant::ZERO);
    app.take(&mut c, requests);
    let mut stream = vec![0u8; c.end as usize];
    if !stream.is_empty() {
        app.fill(&c, 0, &mut stream);
    }
    let out = c
        .resps
        .iter()
        .map(|r| {
            let bytes = &stream[r.start as usize..(r.start + r.len) as usize];
            let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
            let head = std::str::from_utf8(&bytes[..head_end]).expect("an ASCII head");
            let mut lines = head.split("\r\n");
            let status_line = lines.next().unwrap();
            assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
            let status = status_line[9..12].parse().unwrap();
            let headers = lines
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let (k, v) = l.split_once(": ").expect("name: value");
                    (k.to_string(), v.trim().to_string()) // OWS is not part of the value
                })
                .collect();
            Response { status, headers, body: bytes[head_end..].to_vec() }
        })
        .collect();
    app.closed_for_fuzz(c);
    out
}

fn get(app: &mut WebApp, path: &str, extra: &str) -> Response {
    let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n{extra}\r\n");
    let mut r = exchange(app, req.as_bytes());
    assert_eq!(r.len(), 1, "one response to one request");
    r.remove(0)
}

#[test]
fn a_file_comes_whole_with_its_validators() {
    let mut a = app();
    let r = get(&mut a, "/hello.txt", "");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, HELLO);
    assert_eq!(r.header("Content-Length"), Some(HELLO.len().to_string().as_str()));
    assert!(r.header("Content-Type").is_some_and(|t| t.starts_with("text/plain")), "{r:?}");
    assert_eq!(r.header("Last-Modified"), Some(http::date::to_string(MTIME).as_str()));
    assert!(r.header("ETag").is_some_and(|e| e.starts_with('"')), "{r:?}");
}

#[test]
fn conditional_requests_answer_304_without_a_body() {
    let mut a = app();
    let etag = get(&mut a, "/hello.txt", "").header("ETag").unwrap().to_string();
    let r = get(&mut a, "/hello.txt", &format!("If-None-Match: {etag}\r\n"));
    assert_eq!((r.status, r.body.len()), (304, 0));
    assert_eq!(r.header("ETag"), Some(etag.as_str()));
    let r = get(&mut a, "/hello.txt", "If-None-Match: \"other\", W/\"x\"\r\n");
    assert_eq!(r.status, 200, "no tag matches");
    let r = get(&mut a, "/hello.txt", "If-None-Match: *\r\n");
    assert_eq!(r.status, 304);
    let since = http::date::to_string(MTIME);
    assert_eq!(get(&mut a, "/hello.txt", &format!("If-Modified-Since: {since}\r\n")).status, 304);
    let before = http::date::to_string(MTIME - 1);
    assert_eq!(get(&mut a, "/hello.txt", &format!("If-Modified-Since: {before}\r\n")).status, 200);
    // If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2).
    let r = get(&mut a, "/hello.txt", &format!("If-None-Match: \"other\"\r\nIf-Modified-Since: {since}\r\n"));
    assert_eq!(r.status, 200);
}

#[test]
fn single_ranges_answer_206_and_bad_ones_416() {
    let mut a = app();
    let n = HELLO.len();
    let r = get(&mut a, "/hello.txt", "Range: bytes=0-4\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(r.body, &HELLO[..5]);
    assert_eq!(r.header("Content-Range"), Some(format!("bytes 0-4/{n}").as_str()));
    assert_eq!(r.header("Content-Length"), Some("5"));
    let r = get(&mut a, "/hello.txt", "Range: bytes=-3\r\n");
    assert_eq!((r.status, &r.body[..]), (206, &HELLO[n - 3..]));
    let r = get(&mut a, "/hello.txt", "Range: bytes=10-\r\n");
    assert_eq!((r.status, &r.body[..]), (206, &HELLO[10..]));
    let r = get(&mut a, "/hello.txt", &format!("Range: bytes=5-{}\r\n", n + 100));
    assert_eq!(r.header("Content-Range"), Some(format!("bytes 5-{}/{n}", n - 1).as_str()), "clamped to the end");
    let r = get(&mut a, "/hello.txt", &format!("Range: bytes={n}-\r\n"));
    assert_eq!(r.status, 416);
    assert_eq!(r.header("Content-Range"), Some(format!("bytes */{n}").as_str()));
    assert_eq!(get(&mut a, "/hello.txt", "Range: lines=1-2\r\n").status, 200, "unknown unit ignored");
}

#[test]
fn if_range_serves_the_part_only_for_the_current_representation() {
    let mut a = app();
    let etag = get(&mut a, "/hello.txt", "").header("ETag").unwrap().to_string();
    let r = get(&mut a, "/hello.txt", &format!("Range: bytes=0-1\r\nIf-Range: {etag}\r\n"));
    assert_eq!(r.status, 206);
    let r = get(&mut a, "/hello.txt", "Range: bytes=0-1\r\nIf-Range: \"stale\"\r\n");
    assert_eq!((r.status, r.body.len()), (200, HELLO.len()), "a changed file comes whole");
}

#[test]
fn head_has_the_get_headers_and_no_body() {
    let mut a = app();
    let r = exchange(&mut a, b"HEAD /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n").remove(0);
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    assert_eq!(r.header("Content-Length"), Some(HELLO.len().to_string().as_str()));
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let mut a = app();
    let rs = exchange(
        &mut a,
        b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /nope HTTP/1.1\r\nHost: t\r\n\r\nGET /style.css HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let statuses: Vec<u16> = rs.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 404, 200]);
    assert_eq!(rs[0].body, HELLO);
    assert!(rs[2].header("Content-Type").is_some_and(|t| t.starts_with("text/css")));
}

#[test]
fn errors_and_redirects() {
    let mut a = app();
    assert_eq!(get(&mut a, "/nope", "").status, 404);
    let r = get(&mut a, "/about", "");
    assert_eq!(r.status, 301);
    assert!(r.header("Location").is_some_and(|l| l.ends_with("/about/")), "{r:?}");
    let r = get(&mut a, "/about/", "");
    assert_eq!(r.status, 200, "a directory serves its index.html");
    let r = exchange(&mut a, b"POST /hello.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n").remove(0);
    assert_eq!(r.status, 405);
    assert!(r.header("Allow").is_some_and(|v| v.contains("GET") && v.contains("HEAD")), "{r:?}");
    let r = exchange(&mut a, b"GET /hello.txt HTTP/2.0\r\nHost: t\r\n\r\n").remove(0);
    assert_eq!(r.status, 505);
    let r = exchange(&mut a, b"GET /hello.txt HTTP/1.1\r\n\r\n").remove(0);
    assert_eq!(r.status, 400, "HTTP/1.1 without Host");
    let r = exchange(&mut a, b"GET /../../etc/passwd HTTP/1.1\r\nHost: t\r\n\r\n").remove(0);
    assert!(matches!(r.status, 400 | 403 | 404), "never outside the root: {}", r.status);
}

#[test]
fn http_1_0_and_connection_close_end_the_connection() {
    let mut a = app();
    let r = exchange(&mut a, b"GET /hello.txt HTTP/1.0\r\n\r\n").remove(0);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Connection"), Some("close"));
    let rs = exchange(
        &mut a,
        b"GET /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert_eq!(rs.len(), 1, "nothing after a response that closes");
    assert_eq!(rs[0].header("Connection"), Some("close"));
}
