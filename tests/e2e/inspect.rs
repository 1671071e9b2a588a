//! `sirocco ss` and `sirocco top` against a live server: the connections a kernel client
//! holds open are listed as `ss -tin` would (and filtered), and the live view refreshes in
//! a terminal (tmux) with the engine's rates and the application's counters.

use crate::common::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A kernel client in the client namespace holding `n` keep-alive HTTP connections open
/// after one request each; killed on drop.
struct Holder(Child);

impl Holder {
    fn start(net: &TestNet, n: usize) -> Holder {
        let script = format!(
            "import socket, sys, time\n\
             socks = []\n\
             for i in range({n}):\n\
             \x20   s = socket.create_connection(('{SERVER_OWN}', 80), timeout=5)\n\
             \x20   s.sendall(b'GET /hello.txt HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n')\n\
             \x20   got = b''\n\
             \x20   while b'\\r\\n\\r\\n' not in got: got += s.recv(4096)\n\
             \x20   socks.append(s)\n\
             print('ready', flush=True)\n\
             time.sleep(30)\n"
        );
        let mut child = Command::new("ip")
            .args(["netns", "exec", &net.cli_ns, "/usr/bin/python3", "-c", &script])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        Holder(child)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A tmux session, killed on drop.
struct Tmux(String);

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.0]).status();
    }
}

fn sirocco_out(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(sirocco()).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn ss_lists_and_filters_the_connections_and_top_shows_the_engines() {
    let net = TestNet::new(1);
    let sock = std::env::temp_dir().join(format!("sirocco-inspect-{}.sock", net.name));
    let sock = sock.to_str().unwrap();
    let s = net.start(&["web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--control-socket", sock]);
    s.wait_for_log("web on port", Duration::from_secs(10));
    let holder = Holder::start(&net, 3);

    let (ok, out, err) = sirocco_out(&["ss", "--socket", sock]);
    assert!(ok, "{err}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("ESTAB")).collect();
    assert_eq!(rows.len(), 3, "three connections held open: {out}");
    let request = "GET /hello.txt HTTP/1.1\r\nHost: a\r\n\r\n".len();
    for r in &rows {
        assert!(r.contains(&format!("{SERVER_OWN}:80")) && r.contains(&format!("{CLIENT}:")), "{r}");
    }
    for detail in out.lines().filter(|l| l.starts_with("\t mss:")) {
        assert!(detail.contains(&format!("bytes_received:{request} ")), "{detail}");
        assert!(
            !detail.contains("bytes_acked:0 ") && detail.contains("retrans:0 ") && !detail.contains("rtt:-"),
            "{detail}"
        );
    }
    let count = |args: &[&str]| {
        let mut all = vec!["ss", "--socket", sock, "--json"];
        all.extend_from_slice(args);
        let (ok, out, err) = sirocco_out(&all);
        assert!(ok, "{err}");
        out.lines().count()
    };
    assert_eq!(count(&["--state", "established", "--port", "80"]), 3);
    assert_eq!(count(&["--peer", CLIENT]), 3);
    assert_eq!(count(&["--peer", "198.18.0.99"]), 0);
    assert_eq!(count(&["--state", "fin-wait-1"]), 0);
    let (ok, _, err) = sirocco_out(&["ss", "--socket", sock, "--state", "sleepy"]);
    assert!(!ok && err.contains("not a TCP state"), "{err}");

    // top, as plain frames (not a terminal): the engine and the application's counters.
    let (ok, out, err) = sirocco_out(&["top", "--socket", sock, "--interval", "0.3", "--count", "2"]);
    assert!(ok, "{err}");
    assert_eq!(out.matches("sirocco top: web on port 80").count(), 2, "{out}");
    assert!(out.contains("q0") && out.contains("sirocco_http_requests_total"), "{out}");
    let conns_col = out.lines().find(|l| l.starts_with("q0")).unwrap().split_whitespace().last().unwrap().to_string();
    assert_eq!(conns_col, "3", "{out}");

    // top in a terminal: the view refreshes in place.
    let session = Tmux(format!("sirocco-top-{}", net.name));
    let top = format!("{} top --socket {sock} --interval 0.3", sirocco());
    let started = Command::new("tmux")
        .args(["new-session", "-d", "-s", &session.0, "-x", "160", "-y", "40", &top])
        .status()
        .unwrap();
    assert!(started.success(), "tmux");
    std::thread::sleep(Duration::from_millis(1500));
    let pane = Command::new("tmux").args(["capture-pane", "-p", "-t", &session.0]).output().unwrap();
    let pane = String::from_utf8_lossy(&pane.stdout);
    assert_eq!(pane.matches("sirocco top: web on port 80").count(), 1, "one frame on screen, redrawn: {pane}");
    assert!(pane.contains("engine") && pane.contains("q0") && pane.contains("cpu%"), "{pane}");
    drop(session);

    drop(holder);
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(!std::path::Path::new(sock).exists(), "the control socket is removed at exit");
    let (ok, _, err) = sirocco_out(&["ss", "--socket", sock]);
    assert!(!ok && err.contains("is sirocco running?"), "{err}");
}
