//! HTTPS (TLS 1.3 in sirocco's stack) against curl, wget, openssl s_client and a rustls
//! client: every mode byte-exact, keep-alive, KeyUpdate, transfers under loss with every
//! retransmitted record compared with its first transmission in a capture, the page cache
//! left alone in stream mode, and bad input on the TLS port costing only its connection.

use crate::common::*;
use crate::stream::{cached_pages, drop_cache};
use crate::web::{pattern, read_one_response, read_until_closed, split_response, Root};
use rustls::pki_types::ServerName;
use sim::tls::client_config;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub use sim::tls::certs;

pub fn cert_args() -> Vec<String> {
    let d = certs();
    vec![
        "--tls-cert".into(),
        d.join("server.pem").display().to_string(),
        "--tls-key".into(),
        d.join("server.key").display().to_string(),
    ]
}

/// `sirocco web` on `root` with HTTPS (the test certificate) and `extra` options.
fn start_https(net: &TestNet, root: &Root, extra: &[&str]) -> Sirocco {
    let certs = cert_args();
    let mut args = vec!["web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--root", root.path()];
    args.extend_from_slice(extra);
    args.extend(certs.iter().map(String::as_str));
    net.start(&args)
}

/// A TLS connection from the client namespace; `talk` runs on it there.
pub fn with_tls<T: Send + 'static>(
    ns: &str,
    dst: &'static str,
    port: u16,
    talk: impl FnOnce(&mut rustls::StreamOwned<rustls::ClientConnection, TcpStream>) -> T + Send + 'static,
) -> T {
    in_netns(ns, move || {
        let s = TcpStream::connect_timeout(&sockaddr(dst, port), Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("connect {dst}:{port}: {e}"));
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let c = rustls::ClientConnection::new(client_config(), ServerName::try_from("sirocco.test").unwrap()).unwrap();
        let mut tls = rustls::StreamOwned::new(c, s);
        talk(&mut tls)
    })
}

/// `raw` over TLS; everything the server sends back.
pub fn exchange_tls(ns: &str, dst: &'static str, port: u16, raw: Vec<u8>) -> Vec<u8> {
    with_tls(ns, dst, port, move |tls| {
        tls.write_all(&raw).unwrap();
        tls.flush().unwrap();
        read_until_closed(tls)
    })
}

/// curl over HTTPS with the test CA: (http code, bytes) of each URL path, on one connection.
fn curl_https(net: &TestNet, paths: &[&str], out: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let ca = certs().join("ca.pem");
    let mut args: Vec<String> = vec![
        "curl".into(),
        "-sS".into(),
        "--max-time".into(),
        "60".into(),
        "--cacert".into(),
        ca.display().to_string(),
        "--resolve".into(),
        format!("sirocco.test:443:{SERVER_OWN}"),
        "-w".into(),
        "%{http_code} %{num_connects}\\n".into(),
    ];
    for (i, p) in paths.iter().enumerate() {
        args.push(format!("https://sirocco.test{p}"));
        args.push("-o".into());
        args.push(out.join(format!("curl{i}")).display().to_string());
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = net.exec(&net.cli_ns, &a);
    assert!(o.status.success(), "curl: {}", String::from_utf8_lossy(&o.stderr));
    let w = String::from_utf8_lossy(&o.stdout).into_owned();
    let lines: Vec<&str> = w.lines().collect();
    assert_eq!(lines.len(), paths.len(), "{w}");
    // One connection for all: keep-alive works over TLS.
    assert_eq!(lines.iter().filter(|l| l.ends_with(" 1")).count(), 1, "{w}");
    (0..paths.len())
        .map(|i| {
            let f = out.join(format!("curl{i}"));
            let body = std::fs::read(&f).unwrap_or_default();
            let _ = std::fs::remove_file(&f);
            (lines[i].split(' ').next().unwrap().to_string(), body)
        })
        .collect()
}

fn tls_stat(log: &str, key: &str) -> u64 {
    let line = log.lines().find(|l| l.contains(" tls: ")).unwrap_or_else(|| panic!("no tls line in:\n{log}"));
    let at = line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len();
    line[at..].trim_start().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

const SIZES: [usize; 8] = [0, 1, 1425, 1426, 1427, 4096, 100_003, 3 << 20];

fn serve_every_size(mode: &str, extra: &[&str]) {
    let root = Root::under(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")), &format!("tls-{mode}{}", extra.len()));
    for (i, n) in SIZES.iter().enumerate() {
        root.write(&format!("f{i}.bin"), &pattern(*n, i as u64 + 3));
    }
    let net = TestNet::new(1);
    let mut opts = vec!["--mode", mode];
    opts.extend_from_slice(extra);
    let s = start_https(&net, &root, &opts);
    let paths: Vec<String> = (0..SIZES.len()).map(|i| format!("/f{i}.bin")).collect();
    let p: Vec<&str> = paths.iter().map(String::as_str).collect();
    for (i, (code, body)) in curl_https(&net, &p, &root.0).into_iter().enumerate() {
        assert_eq!(code, "200", "{mode}: file {i}");
        assert!(
            body == pattern(SIZES[i], i as u64 + 3),
            "{mode}: file {i}: {} of {} bytes differ",
            body.len(),
            SIZES[i]
        );
    }
    // The same over plain HTTP on port 80 still works beside it.
    let r =
        crate::web::get(&net.cli_ns, SERVER_OWN, 80, "GET /f6.bin HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    assert!(r.status == 200 && r.body == pattern(SIZES[6], 9));
    // wget, checking the certificate (it names the server's address) against the test CA.
    let out = root.0.join("wget.out");
    let url = format!("https://{SERVER_OWN}/f7.bin");
    let ca = certs().join("ca.pem");
    let o = net.exec(
        &net.cli_ns,
        &["wget", "-q", "-T", "30", "--ca-certificate", ca.to_str().unwrap(), "-O", out.to_str().unwrap(), &url],
    );
    assert!(o.status.success(), "wget: {}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read(&out).unwrap() == pattern(SIZES[7], 10), "wget's download");
    std::fs::remove_file(&out).unwrap();
    // openssl s_client, verifying the chain and the address.
    let o = net.exec(
        &net.cli_ns,
        &[
            "sh",
            "-c",
            &format!(
                "printf 'GET /f2.bin HTTP/1.1\\r\\nHost: a\\r\\nConnection: close\\r\\n\\r\\n' | \
                 timeout 20 openssl s_client -connect {SERVER_OWN}:443 -CAfile {} -verify_ip {SERVER_OWN} \
                 -verify_return_error -alpn http/1.1 -quiet -ign_eof",
                ca.display()
            ),
        ],
    );
    assert!(o.status.success(), "s_client: {}", String::from_utf8_lossy(&o.stderr));
    let (r, _) = split_response(&o.stdout, false).expect("a response through s_client");
    assert!(r.status == 200 && r.body == pattern(SIZES[2], 5), "s_client's response");
    let (_, log) = crate::common::stop_with_log(s);
    assert_eq!(tls_stat(&log, "failed"), 0, "{log}");
    assert_eq!(tls_stat(&log, "record errors"), 0, "{log}");
    assert!(tls_stat(&log, "handshakes") >= 1, "{log}");
}

#[test]
fn https_is_byte_exact_in_precopy_mode() {
    serve_every_size("precopy", &[]);
}

#[test]
fn https_is_byte_exact_in_memcpy_mode() {
    serve_every_size("memcpy", &[]);
}

#[test]
fn https_is_byte_exact_in_stream_mode() {
    serve_every_size("stream", &[]);
}

/// Records of one segment each, sealed in place in their TX frames.
#[test]
fn https_is_byte_exact_with_one_segment_records() {
    serve_every_size("stream", &["--tls-record-segments", "1"]);
}

/// The TCP payloads sirocco sent from `port` in a pcap it wrote: (client port, sequence
/// number, payload), in capture order.
fn sent_segments(pcap: &std::path::Path, port: u16) -> Vec<(u16, u32, Vec<u8>)> {
    let b = std::fs::read(pcap).unwrap();
    assert_eq!(&b[..4], &0xa1b2_c3d4u32.to_le_bytes(), "a little-endian pcap");
    let mut out = Vec::new();
    let mut at = 24;
    // Bounded by the file: each record moves `at` forward by at least its header.
    while at + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        let f = &b[at + 16..(at + 16 + incl).min(b.len())];
        at += 16 + incl;
        // Ethernet, IPv4 (IHL), TCP from `port`.
        if f.len() < 14 + 20 || f[12..14] != [8, 0] || f[14 + 9] != 6 {
            continue;
        }
        let ihl = usize::from(f[14] & 15) * 4;
        let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
        let t = &f[14 + ihl..14 + total];
        if u16::from_be_bytes([t[0], t[1]]) != port {
            continue;
        }
        let doff = usize::from(t[12] >> 4) * 4;
        if t.len() > doff {
            let seq = u32::from_be_bytes(t[4..8].try_into().unwrap());
            out.push((u16::from_be_bytes([t[2], t[3]]), seq, t[doff..].to_vec()));
        }
    }
    out
}

#[test]
fn https_under_loss_is_intact_uncached_and_retransmits_identical_records() {
    let root = Root::under(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")), "tls-loss");
    let n = 2 << 20;
    root.write("big.bin", &pattern(n, 77));
    let big = root.0.join("big.bin");
    drop_cache(&big);
    assert_eq!(cached_pages(&big), 0, "dropped before the test");
    let pcap = root.0.join("tls.pcap");
    let net = TestNet::new(1);
    let s = start_https(
        &net,
        &root,
        &["--mode", "stream", "--stream-memory", "4", "--impair-loss", "2", "--pcap", pcap.to_str().unwrap()],
    );
    for (code, body) in curl_https(&net, &["/big.bin", "/big.bin"], &root.0) {
        assert_eq!(code, "200");
        assert!(body == pattern(n, 77), "{} of {n} bytes, not the file's", body.len());
    }
    let (c, log) = crate::common::stop_with_log(s);
    assert_eq!(cached_pages(&big), 0, "4 MiB streamed over TLS, none of it in the page cache");
    // Sealed in place in the read buffers, and sent from there: no copy of the ciphertext.
    let gathered = crate::common::total(&c, "tx_gathered");
    assert!(gathered > 2000, "segments sent from the read buffers: {gathered}; log:\n{log}");
    // Records let go of once sent are read and sealed again for a retransmission; the check
    // below holds them to the same ciphertext.
    let line = log.lines().find(|l| l.contains("read again for retransmissions")).expect("stream line");
    let again: u64 =
        line.split("read again for retransmissions ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(again > 0, "{line}");
    // Every byte sent more than once was the same ciphertext each time.
    let segs = sent_segments(&pcap, 443);
    let _ = std::fs::remove_file(&pcap);
    let mut seen: HashMap<(u16, u32), Vec<u8>> = HashMap::new();
    let (mut again, mut bytes_again) = (0, 0);
    for (conn, seq, payload) in segs {
        match seen.get(&(conn, seq)) {
            Some(first) => {
                let k = first.len().min(payload.len());
                assert!(first[..k] == payload[..k], "retransmission at seq {seq} differs from the first sending");
                again += 1;
                bytes_again += k;
            }
            None => {
                seen.insert((conn, seq), payload);
            }
        }
    }
    eprintln!("{again} segments sent again ({bytes_again} bytes), each identical to the first sending");
    assert!(again >= 10, "2 % loss over 4 MiB retransmits (saw {again}):\n{log}");
    assert!(bytes_again > 10 * 1000, "{bytes_again}");
    assert_eq!(tls_stat(&log, "record errors"), 0, "{log}");
}

#[test]
fn bad_input_on_the_tls_port_costs_only_its_connection() {
    let root = Root::new("tls-bad");
    root.write("index.html", b"<p>hi</p>\n");
    let net = TestNet::new(1);
    let s = start_https(&net, &root, &[]);
    // Plain HTTP on the TLS port: a TLS alert record (type 21), then the connection ends.
    let r = crate::web::exchange(&net.cli_ns, SERVER_OWN, 443, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec());
    assert_eq!(r.first(), Some(&21), "an alert: {r:?}");
    // Garbage that looks like a handshake record, then random bytes.
    let r = crate::web::exchange(&net.cli_ns, SERVER_OWN, 443, vec![22, 3, 1, 0, 6, 1, 0, 0, 2, 3, 3]);
    assert!(r.is_empty() || r[0] == 21, "{r:?}");
    let r = crate::web::exchange(&net.cli_ns, SERVER_OWN, 443, pattern(3000, 1));
    assert!(r.is_empty() || r[0] == 21, "{r:?}");
    // A ClientHello offering only TLS 1.2: refused with an alert (this server is TLS 1.3 only).
    let o = net.exec(
        &net.cli_ns,
        &["sh", "-c", &format!("timeout 10 openssl s_client -connect {SERVER_OWN}:443 -tls1_2 < /dev/null")],
    );
    assert!(!o.status.success(), "TLS 1.2 is refused");
    // A good client still gets its answer, on HTTPS and HTTP.
    let raw =
        exchange_tls(&net.cli_ns, SERVER_OWN, 443, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_vec());
    let (r, _) = split_response(&raw, false).expect("a response");
    assert_eq!((r.status, &r.body[..]), (200, &b"<p>hi</p>\n"[..]));
    let r = crate::web::get(&net.cli_ns, SERVER_OWN, 80, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    assert_eq!(r.status, 200);
    let (_, log) = crate::common::stop_with_log(s);
    assert!(tls_stat(&log, "failed") >= 3, "{log}");
    assert_eq!(tls_stat(&log, "handshakes"), 1, "{log}");
}

#[test]
fn key_update_mid_connection_and_close_notify() {
    let root = Root::new("tls-ku");
    root.write("a.txt", &pattern(50_000, 4));
    let net = TestNet::new(1);
    let s = start_https(&net, &root, &[]);
    let (first, rest, clean) = with_tls(&net.cli_ns, SERVER_OWN, 443, |tls| {
        tls.write_all(b"GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        let got = read_one_response(tls);
        // Both sides move to new keys: the client asks the server to update too.
        tls.conn.refresh_traffic_keys().unwrap();
        tls.write_all(b"GET /a.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").unwrap();
        let rest = read_until_closed(tls);
        // The server ended with close_notify: the stream ends cleanly, not by a bare FIN.
        let mut tail = [0u8; 1];
        let clean = matches!(tls.read(&mut tail), Ok(0));
        (got, rest, clean)
    });
    let (r1, _) = split_response(&first, false).expect("first response");
    let (r2, _) = split_response(&rest, false).expect("second response, after the KeyUpdate");
    assert!(r1.status == 200 && r1.body == pattern(50_000, 4));
    assert!(r2.status == 200 && r2.body == pattern(50_000, 4));
    assert!(clean, "close_notify before the FIN");
    let (_, log) = crate::common::stop_with_log(s);
    assert_eq!(tls_stat(&log, "key updates"), 1, "{log}");
    assert_eq!(tls_stat(&log, "record errors"), 0, "{log}");
}

#[test]
fn bad_certificates_and_tls_options_are_one_line() {
    let net = TestNet::new(1);
    let d = certs();
    let key = d.join("server.key").display().to_string();
    let cert = d.join("server.pem").display().to_string();
    for (args, needle) in [
        (vec!["--tls-cert", &key, "--tls-key", &key], "certificate "),
        (vec!["--tls-cert", &cert, "--tls-key", &cert], "private key "),
        (vec!["--tls-cert", "/nonexistent.pem", "--tls-key", &key], "/nonexistent.pem"),
        (vec!["--tls-cert", &cert, "--tls-key", &key, "--tls-port", "80"], "also the HTTP port"),
    ] {
        let mut a = vec![env!("CARGO_BIN_EXE_sirocco"), "web", "--iface", &net.srv_if, "--addr", SERVER_OWN];
        a.extend(args);
        let o = net.exec(&net.srv_ns, &a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{a:?}");
        assert!(err.contains(needle), "{needle:?} in {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(!net.server_has_xdp(), "nothing left attached");
    }
    let o = net.exec(
        &net.srv_ns,
        &[env!("CARGO_BIN_EXE_sirocco"), "web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--tls-cert", &cert],
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--tls-key"));
}

/// A file whose every 4 KiB block says where it is (its index, repeated): any byte served
/// from the wrong offset, past 4 GiB too, changes the digest.
fn write_indexed(path: &std::path::Path, bytes: u64) {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut block = [0u8; 4096];
    for i in 0..bytes.div_ceil(4096) {
        for (k, c) in block.chunks_mut(8).enumerate() {
            c.copy_from_slice(&(i ^ (k as u64) << 48).to_le_bytes());
        }
        let n = (bytes - i * 4096).min(4096) as usize;
        f.write_all(&block[..n]).unwrap();
    }
    f.flush().unwrap();
}

fn sha256_of_file(path: &std::path::Path) -> String {
    let o = std::process::Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8_lossy(&o.stdout).split(' ').next().unwrap().to_string()
}

/// Larger than 4 GiB: stream offsets and TCP sequence numbers wrap past 32 bits, and every
/// byte is checked by SHA-256 over HTTPS; a range past 4 GiB over HTTP; nothing cached.
#[test]
fn a_file_over_four_gib_streams_intact_over_https() {
    let root = Root::under(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")), "tls-huge");
    let big = root.0.join("huge.bin");
    let size = (4u64 << 30) + 123_457;
    write_indexed(&big, size);
    let want = sha256_of_file(&big);
    drop_cache(&big);
    let net = TestNet::new(1);
    let s = start_https(&net, &root, &["--mode", "stream"]);
    let ca = certs().join("ca.pem");
    let o = net.exec(
        &net.cli_ns,
        &[
            "sh",
            "-c",
            &format!(
                "curl -sS --max-time 300 --cacert {} --resolve sirocco.test:443:{SERVER_OWN} \
                 https://sirocco.test/huge.bin | sha256sum",
                ca.display()
            ),
        ],
    );
    assert!(o.status.success(), "curl: {}", String::from_utf8_lossy(&o.stderr));
    let got = String::from_utf8_lossy(&o.stdout).split(' ').next().unwrap().to_string();
    assert_eq!(got, want, "SHA-256 of {size} bytes over HTTPS");
    // The last 100 000 bytes, past 4 GiB, over HTTP.
    let from = size - 100_000;
    let r = crate::web::get(
        &net.cli_ns,
        SERVER_OWN,
        80,
        &format!("GET /huge.bin HTTP/1.1\r\nHost: a\r\nRange: bytes={from}-\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(r.status, 206);
    let mut f = std::fs::File::open(&big).unwrap();
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(from)).unwrap();
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).unwrap();
    assert!(r.body == tail, "the range past 4 GiB");
    let (_, log) = crate::common::stop_with_log(s);
    assert_eq!(tls_stat(&log, "record errors"), 0, "{log}");
    // Only the tail this test read itself (25 pages) may be cached.
    assert!(cached_pages(&big) < 64, "4 GiB streamed, the file stays out of the page cache");
    std::fs::remove_file(&big).unwrap();
}

/// Three hundred HTTPS transfers at once (curl --parallel: a connection and a handshake
/// each), every body compared with the file.
#[test]
fn hundreds_of_concurrent_https_streams() {
    let root = Root::under(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")), "tls-many");
    let data = pattern(300_007, 21);
    root.write("f.bin", &data);
    let out = root.0.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let net = TestNet::new(1);
    let s = start_https(&net, &root, &["--mode", "stream", "--stream-memory", "8"]);
    let ca = certs().join("ca.pem");
    let o = net.exec(
        &net.cli_ns,
        &[
            "curl",
            "-sS",
            "--max-time",
            "120",
            "--parallel",
            "--parallel-max",
            "300",
            "--cacert",
            ca.to_str().unwrap(),
            "--resolve",
            &format!("sirocco.test:443:{SERVER_OWN}"),
            "-o",
            &format!("{}/f_#1", out.display()),
            "https://sirocco.test/f.bin?[1-300]",
        ],
    );
    assert!(o.status.success(), "curl: {}", String::from_utf8_lossy(&o.stderr));
    for i in 1..=300 {
        let got = std::fs::read(out.join(format!("f_{i}"))).unwrap();
        assert!(got == data, "transfer {i}: {} bytes, not the file's", got.len());
    }
    let (_, log) = crate::common::stop_with_log(s);
    assert!(tls_stat(&log, "handshakes") >= 300, "{log}");
    assert_eq!(tls_stat(&log, "failed"), 0, "{log}");
    let _ = std::fs::remove_dir_all(&out);
}

/// tlsfuzzer's TLS 1.3 scripts run here (the rest need TLS 1.2, finite-field groups, client
/// certificates or tickets, which sirocco does not offer: third_party/tlsfuzzer/README.md).
const TLSFUZZER_SUITE: &[&str] = &[
    "0rtt_garbage",
    "ccs",
    "connection_abort",
    "conversation",
    "count_tickets",
    "crfg_curves",
    "ecdhe_curves",
    "ecdsa_support",
    "eddsa",
    "empty_alert",
    "finished",
    "finished_plaintext",
    "hrr",
    "invalid_ciphers",
    "keyshare_omitted",
    "keyupdate",
    "keyupdate_from_server",
    "large_number_of_extensions",
    "legacy_version",
    "multiple_ccs_messages",
    "no_unknown_groups",
    "nociphers",
    "pkcs_signature",
    "record_layer_limits",
    "record_padding",
    "rsa_signatures",
    "serverhello_random",
    "session_resumption",
    "shuffled_extentions",
    "signature_algorithms",
    "symetric_ciphers",
    "unencrypted_alert",
    "unrecognised_groups",
    "zero_content_type",
    "zero_length_data",
];

/// The Python scripts/setup makes for tlsfuzzer (tlslite-ng and ecdsa from PyPI).
const TLSFUZZER_PYTHON: &str = "/opt/sirocco-tests/tlsfuzzer/bin/python";

/// One tlsfuzzer script against `addr`:443 from the client namespace: the tests that passed
/// (a name run more than once passes only if every run did) and why the others failed, as
/// `test | why`.
fn tlsfuzzer_file(net: &TestNet, addr: &str, module: &str) -> (Vec<String>, Vec<String>) {
    let run = format!("{}/../third_party/tlsfuzzer/run.py", env!("CARGO_MANIFEST_DIR"));
    let module = format!("test_tls13_{module}");
    // The seed makes both servers see the same randomly drawn cases.
    let out = net.exec(&net.cli_ns, &["timeout", "300", TLSFUZZER_PYTHON, &run, "7", &module, "-h", addr, "-p", "443"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("TOTAL: "),
        "{module} against {addr} did not run:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = Vec::new();
    let mut why: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    let mut failed: Vec<String> = Vec::new();
    let mut in_failed = false;
    for line in text.lines() {
        if in_failed {
            match line.strip_prefix('\t') {
                // Python's repr of the name: quoted with ' or ".
                Some(q) if q.len() >= 2 => failed.push(q[1..q.len() - 1].replace("\\'", "'")),
                _ => in_failed = false,
            }
            continue;
        }
        if line == "FAILED:" || line == "XPASSED:" {
            in_failed = true;
        } else if let Some(n) = line.strip_suffix(" ...") {
            names.push(n.to_string());
            current = Some(n.to_string());
        } else if line.starts_with("AssertionError") || line.starts_with("tlslite.errors") {
            if let Some(n) = current.take() {
                why.push(format!("{n} | {line}"));
            }
        }
    }
    names.sort();
    names.dedup();
    names.retain(|n| !failed.contains(n));
    (names, why)
}

/// tlsfuzzer's TLS 1.3 scripts against sirocco web and, in the same network, nginx with
/// OpenSSL on the same RSA certificate: every test that passes on OpenSSL passes on sirocco
/// too, but those `third_party/tlsfuzzer/differences.txt` lists with the reason.
#[test]
fn tlsfuzzer_passes_as_on_openssl() {
    assert!(
        std::path::Path::new(TLSFUZZER_PYTHON).exists(),
        "{TLSFUZZER_PYTHON} missing: run scripts/setup (it makes tlsfuzzer's Python)"
    );
    let net = TestNet::new(1);
    let root = Root::new("tlsfuzzer");
    root.write("index.html", b"<html><body>tlsfuzzer</body></html>\n");
    let (cert, key) = (certs().join("server-rsa.pem"), certs().join("server-rsa.key"));
    // TLS 1.2 stays on, as a default OpenSSL server has it: the scripts check a TLS 1.3
    // server against that.
    let _ng = crate::web_diff::nginx_tls(&net.srv_ns, root.path(), &cert, &key, "TLSv1.2 TLSv1.3");
    let (c, k) = (cert.display().to_string(), key.display().to_string());
    let s = net.start(&[
        "web",
        "--iface",
        &net.srv_if,
        "--addr",
        SERVER_OWN,
        "--root",
        root.path(),
        "--tls-cert",
        &c,
        "--tls-key",
        &k,
    ]);
    let mut diff = SuiteDiff::new("tlsfuzzer");
    for module in TLSFUZZER_SUITE {
        let (theirs, _) = tlsfuzzer_file(&net, SERVER, module);
        let (ours, why) = tlsfuzzer_file(&net, SERVER_OWN, module);
        diff.file(module, &theirs, &ours, &why);
    }
    let (status, log) = s.stop();
    assert!(status.success(), "{log}");
    diff.check("nginx with OpenSSL", "sirocco web");
}
