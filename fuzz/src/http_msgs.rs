//! Fuzz targets for HTTP requests and responses, and the web server.

/// The load generator's response-head reader: no panic; a head it reads lies within the
/// input and reads the same from exactly its own bytes.
pub fn http_response(data: &[u8]) {
    if let Some(r) = gen::http::response_head(data) {
        if let Ok((len, ..)) = r {
            assert!(len <= data.len());
            assert_eq!(gen::http::response_head(&data[..len]), Some(r));
        }
    }
}

/// The HTTP request parser and what reads request parts: no panic; a complete head is
/// within the input and parses the same from exactly its own bytes; decoded paths never
/// climb out of the root.
pub fn http_request(data: &[u8]) {
    // The first byte is the web_server target's split point; both share the seeds.
    let data = data.get(1..).unwrap_or(&[]);
    match http::parse(data) {
        Ok(http::Parsed::Complete(r)) => {
            assert!(r.head_len <= data.len());
            match http::parse(&data[..r.head_len]) {
                Ok(http::Parsed::Complete(again)) => assert_eq!(again, r),
                other => panic!("prefix parses as {other:?}"),
            }
            let mut path = Vec::new();
            if http::path::decode(r.target, &mut path).is_ok() {
                assert!(!path.starts_with(b"/"));
                assert!(
                    !path.split(|&c| c == b'/').any(|s| s == b".." || s == b"." || s.is_empty()) || path.is_empty()
                );
            }
            for v in [r.range, r.if_range, r.if_modified_since].into_iter().flatten() {
                if let http::range::Ranged::Part { first, last } = http::range::evaluate(v, 1000) {
                    assert!(first <= last && last < 1000);
                }
                if let Some(t) = http::date::parse(v) {
                    let s = http::date::to_string(t);
                    if t < 253_402_300_800 {
                        assert_eq!(http::date::parse(s.as_bytes()), Some(t));
                    }
                }
            }
        }
        Ok(http::Parsed::Partial) => assert!(data.len() <= http::request::MAX_HEAD + 64),
        Err(_) => {}
    }
}

thread_local! {
    static WEB: std::cell::RefCell<web::WebApp> = std::cell::RefCell::new({
        let site = std::sync::Arc::new(web::Site::demo(1_000_000));
        let mut store = web::store::Store::new(site, 1448, 1 << 20, 2_000_000);
        store.preload();
        web::WebApp::new(store, web::Settings::default())
    });
}

/// The web server's request handling on arbitrary bytes (split in two at the first byte's
/// position): no panic, and the queued stream is a run of well-formed responses whose
/// lengths add up, read back through the same fill the TCP stack uses.
pub fn web_server(data: &[u8]) {
    use tcp::App as _;
    let (cut, data) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b) % (rest.len() + 1), rest),
        None => (0, data),
    };
    WEB.with(|w| {
        let mut app = w.borrow_mut();
        let mut c = web::conn::Conn::new(tcp::Instant::ZERO);
        app.take(&mut c, &data[..cut]);
        app.take(&mut c, &data[cut..]);
        let mut stream = vec![0u8; c.end as usize];
        if !stream.is_empty() {
            app.fill(&c, 0, &mut stream);
        }
        let mut at = 0;
        for r in c.resps.iter() {
            assert_eq!(r.start, at as u64);
            let bytes = &stream[at..at + r.len as usize];
            assert!(bytes.starts_with(b"HTTP/1.1 "), "{:?}", String::from_utf8_lossy(&bytes[..bytes.len().min(40)]));
            let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n").expect("head ends") + 4;
            let head = std::str::from_utf8(&bytes[..head_end]).expect("ascii head");
            let len: Option<usize> =
                head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).map(|v| v.trim().parse().unwrap());
            let body = bytes.len() - head_end;
            // HEAD and 304 carry no body; everything else exactly its Content-Length.
            if body > 0 {
                assert_eq!(len, Some(body), "{head}");
            }
            at += r.len as usize;
        }
        assert_eq!(at, stream.len());
        // Give back what the responses hold, as the end of the connection would.
        app.closed_for_fuzz(c);
    });
}

/// Inputs this area's targets start from (None: not one of its targets).
pub(crate) fn seeds(target: &str) -> Option<Vec<Vec<u8>>> {
    Some(match target {
        "http_response" => vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello".to_vec(),
            b"HTTP/1.1 304 Not Modified\r\nETag: \"1-2\"\r\nConnection: close\r\n\r\n".to_vec(),
        ],
        "http_request" | "web_server" => vec![
            b"\x10GET /index.html HTTP/1.1\r\nHost: a\r\nRange: bytes=0-9\r\nIf-None-Match: \"x\"\r\n\r\n".to_vec(),
            b"\x05GET / HTTP/1.1\r\nHost: a\r\n\r\nHEAD /about HTTP/1.0\r\n\r\nGET /%2e%2e/x HTTP/1.1\r\nHost: b\r\n\r\n".to_vec(),
            b"\x00GET /hello.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\nabcGET /style.css HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_vec(),
        ],
        _ => return None,
    })
}
