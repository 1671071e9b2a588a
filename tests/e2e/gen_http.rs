//! `sirocco gen http` (HTTP on sirocco's own TCP) against nginx on the kernel's TCP and
//! against sirocco web: every answer read whole, counts that agree with the server's.

use crate::common::*;
use crate::web::{demo_file, pattern, precopy_stat, web_stat, Root};
use crate::web_diff::nginx;

/// One generator run, from a client address of its own (`198.18.0.<host>`), so no run meets
/// the connections an earlier one left in TIME-WAIT at the server.
fn gen_http(net: &TestNet, host: u8, dst: &str, extra: &[&str]) -> serde_json::Value {
    let json = std::env::temp_dir().join(format!("sirocco-genhttp-{}.json", std::process::id()));
    let addr = format!("198.18.0.{host}");
    let mut args = vec![
        "netns",
        "exec",
        &net.cli_ns,
        sirocco(),
        "gen",
        "http",
        "--iface",
        &net.cli_if,
        "--addr",
        &addr,
        "--dst",
        dst,
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = std::process::Command::new("ip").args(&args).output().expect("run gen http");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "gen http {extra:?} failed:\n{text}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    v
}

fn n(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} not in {v}"))
}

/// Every response complete, 2xx, whole bodies; nothing broken.
fn clean(v: &serde_json::Value, size: u64, conns: u64) {
    let done = n(v, "completed");
    assert!(done > 50, "{v}");
    // Statuses are counted at the head: a body still arriving at the end is not complete.
    assert!(n(v, "ok") >= done && n(v, "ok") <= done + conns, "{v}");
    assert_eq!(n(v, "not_ok"), 0, "{v}");
    assert_eq!(n(v, "bad_responses"), 0, "{v}");
    assert_eq!(n(v, "broken"), 0, "{v}");
    // A connection per request cycles through the ephemeral ports in well under a second here,
    // so a new SYN can meet a tuple the server has not finished with; a few such refusals in
    // a run are TCP doing its job, not an error of the generator.
    assert!(n(v, "connect_failed") <= n(v, "opened") / 10_000, "{v}");
    // Whole bodies for the completed ones, at most one partial body per connection on top.
    let body = n(v, "body_bytes");
    assert!(body >= done * size && body <= (done + conns) * size, "{v}");
}

#[test]
fn gen_http_against_nginx_on_the_kernel_stack() {
    let root = Root::new("genhttp");
    root.write("f.bin", &pattern(10_000, 3));
    let net = TestNet::new(1);
    let _ng = nginx(&net.srv_ns, root.path());
    let keep = gen_http(&net, 20, SERVER, &["--path", "/f.bin", "--conns", "8", "--duration", "2"]);
    clean(&keep, 10_000, 8);
    // nginx closes a keep-alive connection after 1000 requests (keepalive_requests); the
    // generator honours its `Connection: close` and opens another.
    let again = n(&keep, "completed") / 1000;
    assert!(n(&keep, "opened") >= 8 && n(&keep, "opened") <= 8 + again + 8, "keep-alive: {keep}");
    let close = gen_http(&net, 21, SERVER, &["--path", "/f.bin", "--conns", "8", "--duration", "2", "--close"]);
    clean(&close, 10_000, 8);
    assert!(n(&close, "opened") >= n(&close, "completed"), "a connection per request: {close}");
    // Open loop: never more than the schedule asks for.
    let open = gen_http(&net, 22, SERVER, &["--path", "/f.bin", "--conns", "8", "--duration", "2", "--rate", "1000"]);
    clean(&open, 10_000, 8);
    assert!(n(&open, "sent") <= 2000 && n(&open, "sent") >= 1000, "{open}");
}

#[test]
fn gen_http_against_sirocco_web_counts_agree() {
    let net = TestNet::new(1);
    let s = net.start(&["web", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let keep = gen_http(&net, 23, SERVER_OWN, &["--path", "/hello.txt", "--conns", "16", "--duration", "2"]);
    let close =
        gen_http(&net, 24, SERVER_OWN, &["--path", "/hello.txt", "--conns", "16", "--duration", "2", "--close"]);
    let (_, log) = stop_with_log(s);
    let size = demo_file("hello.txt").len() as u64;
    clean(&keep, size, 16);
    clean(&close, size, 16);
    // Every request sent reached the server and was answered from prepared segments.
    assert_eq!(web_stat(&log, "requests"), n(&keep, "sent") + n(&close, "sent"), "{log}");
    // Connections still opening when a run ended never reached the server's accept.
    let opened = n(&keep, "opened") + n(&close, "opened");
    let accepted = web_stat(&log, "accepted");
    assert!(accepted <= opened && accepted + 32 >= opened, "{accepted} of {opened}: {log}");
    assert_eq!(web_stat(&log, "built"), 0, "{log}");
    assert!(precopy_stat(&log, "replica sends") >= n(&keep, "completed"), "{log}");
}
