//! Helpers for end-to-end tests: a test network that removes itself, sirocco processes that
//! are stopped even when a test fails, and code run inside a namespace.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const SERVER: &str = "198.18.0.1";
pub const CLIENT: &str = "198.18.0.2";
pub const SERVER_OWN: &str = "198.18.0.10";
pub const CLIENT_OWN: &str = "198.18.0.20";
pub const SERVER6: &str = "2001:2::1";
pub const CLIENT6: &str = "2001:2::2";
pub const SERVER_OWN6: &str = "2001:2::10";
pub const CLIENT_OWN6: &str = "2001:2::20";

/// `host:port` for either family (IPv6 literals need brackets in text, not here).
pub fn sockaddr(host: &str, port: u16) -> std::net::SocketAddr {
    std::net::SocketAddr::new(host.parse().unwrap_or_else(|e| panic!("{host}: {e}")), port)
}

pub fn sirocco() -> &'static str {
    env!("CARGO_BIN_EXE_sirocco")
}

pub fn require_root() {
    // SAFETY: geteuid cannot fail.
    assert_eq!(unsafe { libc::geteuid() }, 0, "end-to-end tests need root (namespaces, XDP, AF_XDP)");
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A two-namespace veth network, removed on drop.
pub struct TestNet {
    pub name: String,
    pub srv_ns: String,
    pub cli_ns: String,
    pub srv_if: String,
    pub cli_if: String,
}

impl TestNet {
    pub fn new(queues: u32) -> TestNet {
        require_root();
        let name = format!("e{}x{}", std::process::id() % 100_000, SEQ.fetch_add(1, Ordering::SeqCst));
        let out = Command::new(sirocco())
            .args(["testnet", "up", "--name", &name, "--queues", &queues.to_string()])
            .output()
            .expect("run sirocco testnet");
        assert!(out.status.success(), "testnet up: {}", String::from_utf8_lossy(&out.stderr));
        TestNet {
            srv_ns: format!("{name}-srv"),
            cli_ns: format!("{name}-cli"),
            srv_if: format!("{name}-s"),
            cli_if: format!("{name}-c"),
            name,
        }
    }

    /// Runs a command in a namespace and returns its output.
    pub fn exec(&self, ns: &str, args: &[&str]) -> Output {
        Command::new("ip").args(["netns", "exec", ns]).args(args).output().expect("ip netns exec")
    }

    /// Attaches an XDP_PASS program to the client's veth, so that frames the server's XDP
    /// program sends back with XDP_TX reach the client at once (veth flushes them only to a
    /// peer with an XDP program). Gone with the namespace.
    pub fn xdp_peer(&self) {
        self.xdp_pass_on(&self.cli_ns, &self.cli_if);
    }

    /// Attaches an XDP_PASS program (not sirocco's) to `dev` in namespace `ns`, through netlink.
    pub fn xdp_pass_on(&self, ns: &str, dev: &str) {
        static OBJ: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        let obj = OBJ.get_or_init(|| {
            let src = PathBuf::from(format!("{}/../tests/data/xdp_pass.c", env!("CARGO_MANIFEST_DIR")));
            let obj = std::env::temp_dir().join(format!("sirocco-xdp-pass-{}.o", std::process::id()));
            let arch = format!("-I/usr/include/{}-linux-gnu", std::env::consts::ARCH);
            let out = Command::new("clang")
                .args(["-O2", "-target", "bpf", &arch, "-c"])
                .arg(&src)
                .arg("-o")
                .arg(&obj)
                .output()
                .expect("run clang");
            assert!(out.status.success(), "clang: {}", String::from_utf8_lossy(&out.stderr));
            obj
        });
        let out =
            self.exec(ns, &["ip", "link", "set", "dev", dev, "xdpdrv", "obj", obj.to_str().unwrap(), "sec", "xdp"]);
        assert!(out.status.success(), "attaching XDP_PASS: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// True if an XDP program is attached to the server-side veth.
    pub fn server_has_xdp(&self) -> bool {
        let out = self.exec(&self.srv_ns, &["ip", "link", "show", "dev", &self.srv_if]);
        String::from_utf8_lossy(&out.stdout).contains("xdp")
    }

    /// Starts sirocco in the server namespace.
    /// `sirocco dns` on sirocco's own address serving `zone` (`NAME=FILE`), with `more`
    /// options, once it serves.
    pub fn start_dns(&self, zone: &str, more: &[&str]) -> Sirocco {
        let base = ["dns", "--iface", &self.srv_if, "--addr", SERVER_OWN, "--zone", zone];
        let s = self.start(&[&base[..], more].concat());
        s.wait_for_log("dns on port 53", Duration::from_secs(10));
        s
    }

    pub fn start(&self, args: &[&str]) -> Sirocco {
        Sirocco::start(&self.srv_ns, args)
    }

    /// Starts sirocco's TCP echo on the server veth with `more` options (addresses included).
    pub fn start_tcp_echo(&self, more: &[&str]) -> Sirocco {
        let mut args = vec!["echo", "--proto", "tcp", "--iface", &self.srv_if];
        args.extend_from_slice(more);
        self.start(&args)
    }
}

impl Drop for TestNet {
    fn drop(&mut self) {
        let _ = Command::new(sirocco()).args(["testnet", "down", "--name", &self.name]).output();
    }
}

/// A running sirocco; killed on drop if still running.
pub struct Sirocco {
    child: Option<Child>,
    log: PathBuf,
    pub counters: PathBuf,
}

impl Sirocco {
    pub fn start(ns: &str, args: &[&str]) -> Sirocco {
        Self::spawn(ns, &[], args, true)
    }

    /// Starts sirocco in `ns` as user `uid` (no privileges), with `--counters` if `counters`.
    pub fn start_as(ns: &str, uid: u32, args: &[&str], counters: bool) -> Sirocco {
        let (u, g) = (format!("--reuid={uid}"), format!("--regid={uid}"));
        Self::spawn(ns, &["setpriv", &u, &g, "--clear-groups"], args, counters)
    }

    /// Starts sirocco in `ns` after `prefix` (a command that execs the rest in place), with
    /// `--counters` if `counters`.
    pub fn spawn(ns: &str, prefix: &[&str], args: &[&str], with_counters: bool) -> Sirocco {
        Self::spawn_bin(ns, prefix, sirocco(), args, with_counters)
    }

    /// As [`Sirocco::spawn`], running the binary `bin` (an installed one).
    pub fn spawn_bin(ns: &str, prefix: &[&str], bin: &str, args: &[&str], with_counters: bool) -> Sirocco {
        let id = SEQ.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir();
        let log = dir.join(format!("sirocco-e2e-{}-{id}.log", std::process::id()));
        let counters = dir.join(format!("sirocco-e2e-{}-{id}.json", std::process::id()));
        let f = File::create(&log).unwrap();
        let with = if with_counters { vec!["--counters", counters.to_str().unwrap()] } else { vec![] };
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .args(prefix)
            .arg(bin)
            .args(args)
            .args(with)
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .stdin(Stdio::null())
            .spawn()
            .expect("start sirocco");
        let s = Sirocco { child: Some(child), log, counters };
        // Bounded, and over as soon as the line shows: a million-name zone loads in a few
        // seconds alone, and in more while the other test thread keeps both cores busy.
        s.wait_for_log("sirocco: ", Duration::from_secs(30));
        // A server's first line comes before its XDP filter is verified and attached; it is
        // ready when it names its control socket (the engines start then). Bounded: a server
        // that has none goes on as before.
        let server = ["dns", "web", "kv", "store", "echo", "stream"].contains(&args.first().copied().unwrap_or(""));
        if server && !args.contains(&"--quiet") {
            s.wait_for_log_or_not("control socket", Duration::from_secs(3));
        }
        s
    }

    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = File::open(&self.log) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// Waits (bounded) until the log shows `what`, then `settle`; whether it showed.
    fn waited(&self, what: &str, limit: Duration, settle: Duration) -> bool {
        let t = Instant::now();
        while t.elapsed() < limit {
            if self.log().contains(what) {
                std::thread::sleep(settle);
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// As [`Sirocco::wait_for_log`], going on without it after `limit`.
    pub fn wait_for_log_or_not(&self, what: &str, limit: Duration) {
        self.waited(what, limit, Duration::from_millis(50));
    }

    pub fn wait_for_log(&self, what: &str, limit: Duration) {
        // The engines start right after the banner line; give them a moment.
        if !self.waited(what, limit, Duration::from_millis(200)) {
            panic!("sirocco did not print {what:?} within {limit:?}; log:\n{}", self.log());
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Its exit status, if it has exited (waits at most `limit`).
    pub fn exited_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let t = Instant::now();
        loop {
            if let Some(st) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                return Some(st);
            }
            if t.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&self, sig: &str) {
        // `ip netns exec` execs sirocco in place, so the child's pid is sirocco's.
        let _ = Command::new("kill").args([sig, &self.pid().to_string()]).status();
    }

    /// Waits (bounded) until `sirocco ss` on its control socket lists no connection: a
    /// connection whose last ACK was lost closes only after its FIN is sent again.
    pub fn wait_until_no_connections(&self, limit: Duration) {
        let suffix = format!(".{}.sock", self.pid());
        let sock = std::fs::read_dir("/run/sirocco")
            .expect("/run/sirocco")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(&suffix))
            .expect("the server's control socket");
        let t = Instant::now();
        let mut listed = String::new();
        while t.elapsed() < limit {
            let out = Command::new(sirocco()).arg("ss").arg("--socket").arg(&sock).arg("--json").output().unwrap();
            assert!(out.status.success(), "sirocco ss: {}", String::from_utf8_lossy(&out.stderr));
            listed = String::from_utf8_lossy(&out.stdout).to_string();
            if listed.trim().is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("connections still open after {limit:?}:\n{listed}");
    }

    /// SIGHUP (reload).
    pub fn hup(&self) {
        self.signal("-HUP");
    }

    /// SIGTERM, wait (bounded), return the exit status and the log.
    pub fn stop(mut self) -> (std::process::ExitStatus, String) {
        self.signal("-TERM");
        let mut child = self.child.take().unwrap();
        let t = Instant::now();
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return (st, self.log());
            }
            if t.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("sirocco did not stop on SIGTERM; log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL and reap.
    pub fn kill9(mut self) {
        self.signal("-KILL");
        let mut child = self.child.take().unwrap();
        let _ = child.wait();
        forget_control_socket(child.id());
    }
}

/// Removes the control socket a sirocco killed outright left in /run/sirocco (its next
/// start would; a test leaves nothing behind).
fn forget_control_socket(pid: u32) {
    let suffix = format!(".{pid}.sock");
    if let Ok(d) = std::fs::read_dir("/run/sirocco") {
        for e in d.flatten() {
            if e.file_name().to_string_lossy().ends_with(&suffix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

impl Drop for Sirocco {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            forget_control_socket(c.id());
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Stops sirocco and returns its exit counters (asserting a clean exit).
pub fn stop_and_count(s: Sirocco) -> serde_json::Value {
    stop_with_log(s).0
}

/// As [`stop_and_count`], with the log too.
pub fn stop_with_log(s: Sirocco) -> (serde_json::Value, String) {
    let counters = s.counters.clone();
    let (st, log) = s.stop();
    assert!(st.success(), "sirocco exited with {st}; log:\n{log}");
    let text = std::fs::read_to_string(&counters).unwrap_or_else(|_| panic!("no counters file; log:\n{log}"));
    let _ = std::fs::remove_file(&counters);
    (serde_json::from_str(&text).expect("counters json"), log)
}

/// A counter from the totals (0 if absent, as zero drop reasons are left out).
pub fn total(c: &serde_json::Value, name: &str) -> u64 {
    c["total"][name].as_u64().unwrap_or(0)
}

/// A counter of engine `q`.
pub fn engine(c: &serde_json::Value, q: usize, name: &str) -> u64 {
    c["engines"][q][name].as_u64().unwrap_or(0)
}

/// Stops a reference server started as our child: SIGTERM, then SIGKILL if it has not gone
/// in 5 s, and reaps it. (`ip netns exec` executes the server in place, so the child is the
/// server itself.)
pub fn stop_child(child: &mut Child) {
    // SAFETY: a signal to our own child, which has not been waited for yet.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) && matches!(child.try_wait(), Ok(None)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The number right after `key` in the line `l` (an exit summary's counter).
pub fn number_after(l: &str, key: &str) -> u64 {
    let i = l.find(key).unwrap_or_else(|| panic!("{key:?} not in {l}")) + key.len();
    l[i..].trim_start().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

/// kdig's short answer, from the client's namespace, for `name` `qtype` at `server`:`port`
/// (one try of a second).
pub fn kdig_short(net: &TestNet, server: &str, port: u16, name: &str, qtype: &str) -> String {
    let out = net.exec(
        &net.cli_ns,
        &["kdig", "+short", "+time=1", "+retry=0", "-p", &port.to_string(), &format!("@{server}"), name, qtype],
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// How many queries `sirocco dns`'s XDP program answered, from its exit summary `log`.
pub fn answered_in_xdp(log: &str) -> u64 {
    let line = log.lines().find(|l| l.starts_with("dns in xdp:")).unwrap_or_else(|| panic!("no xdp line: {log}"));
    number_after(line, "answered ")
}

/// Runs `f` on a thread that has entered network namespace `ns`; sockets it opens live there.
pub fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on a namespace file we hold open; it only changes this thread.
        let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
    .join()
    .expect("thread in namespace")
}

/// True if a kernel UDP socket in `ns` gets an echo from `dst:7` within five tries.
pub fn one_echo(ns: &str, dst: &'static str) -> bool {
    in_netns(ns, move || {
        let u = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
        u.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let mut b = [0u8; 16];
        (0..5).any(|_| {
            u.send_to(b"alive", (dst, 7)).unwrap();
            matches!(u.recv_from(&mut b), Ok((5, _)))
        })
    })
}

/// A reference server's own test suite run against it and against sirocco, compared test by
/// test against the list of deliberate differences (`third_party/<suite>/differences.txt`:
/// `file | test | why`). A test that passes on the reference and fails on sirocco must be
/// listed; a listed one that passes is stale. Both fail the check.
pub struct SuiteDiff {
    listed: Vec<(String, String)>,
    unexplained: Vec<String>,
    stale: Vec<String>,
    theirs_ok: usize,
    ours_ok: usize,
}

impl SuiteDiff {
    /// The differences listed for `suite` (a directory of third_party/).
    pub fn new(suite: &str) -> SuiteDiff {
        let path = format!("{}/../third_party/{suite}/differences.txt", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let listed = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| {
                let mut f = l.split(" | ");
                (f.next().unwrap_or("").to_string(), f.next().unwrap_or("").to_string())
            })
            .collect();
        SuiteDiff { listed, unexplained: Vec::new(), stale: Vec::new(), theirs_ok: 0, ours_ok: 0 }
    }

    /// One file's results: the tests that passed on each, and sirocco's failures as
    /// `test | why`.
    pub fn file(&mut self, file: &str, theirs: &[String], ours: &[String], why: &[String]) {
        self.theirs_ok += theirs.len();
        self.ours_ok += ours.len();
        for t in theirs {
            let on_list = self.listed.iter().any(|(f, n)| f == file && n == t);
            let passed = ours.contains(t);
            if !passed && !on_list {
                let reason = why.iter().find_map(|w| w.strip_prefix(&format!("{t} | "))).unwrap_or("no result");
                self.unexplained.push(format!("{file} | {t} | {reason}"));
            }
            if passed && on_list {
                self.stale.push(format!("{file} | {t}"));
            }
        }
    }

    /// Says the totals and fails on any difference not listed, or listed and gone.
    pub fn check(&self, reference: &str, ours: &str) {
        eprintln!("{reference}: {} tests pass, {ours}: {}", self.theirs_ok, self.ours_ok);
        let unexplained = self.unexplained.join("\n");
        assert!(unexplained.is_empty(), "pass on {reference}, fail on {ours}, not listed:\n{unexplained}");
        assert!(self.stale.is_empty(), "listed as differences but pass on {ours}:\n{}", self.stale.join("\n"));
    }
}
