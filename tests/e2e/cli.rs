//! Bad command lines and missing privileges: one clear line, non-zero exit, no panic, no
//! filter left behind.

use crate::common::*;
use std::process::Command;

fn assert_one_clear_line(out: &std::process::Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "must fail: {err}");
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "no panic trace: {err}");
    assert!(err.contains(needle), "expected {needle:?} in {err:?}");
}

#[test]
fn missing_interface_is_one_line() {
    require_root();
    let out = Command::new(sirocco()).args(["echo", "--iface", "nosuchif0", "--addr", "198.18.0.1"]).output().unwrap();
    assert_one_clear_line(&out, "no network interface named");
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn bad_arguments_are_refused_by_the_parser() {
    for args in [
        vec!["echo", "--iface", "lo", "--addr", "198.18.0.300"],
        vec!["echo", "--iface", "lo", "--addr", "198.18.0.1", "--port", "0"],
        vec!["echo", "--iface", "lo", "--addr", "198.18.0.1", "--batch", "0"],
        vec!["gen", "udp", "--iface", "lo", "--addr", "198.18.0.1", "--dst", "198.18.0.2", "--size", "4"],
        vec!["frobnicate"],
    ] {
        let out = Command::new(sirocco()).args(&args).output().unwrap();
        assert_one_clear_line(&out, "error");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    // --iface and --addr may come from a config file (sirocco dns), so their absence is
    // reported after parsing: still one line and a failure.
    let out = Command::new(sirocco()).args(["echo", "--iface", "lo"]).output().unwrap();
    assert_one_clear_line(&out, "--addr ADDR is required");
    assert!(!out.status.success());
    let out = Command::new(sirocco()).args(["echo", "--iface", "lo", "--addr", "198.18.0.1", "--duration=-1"]).output();
    assert_one_clear_line(&out.unwrap(), "--duration");
}

#[test]
fn too_many_queues_and_no_privilege_leave_no_filter() {
    let net = TestNet::new(1);
    let out =
        net.exec(&net.srv_ns, &[sirocco(), "echo", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--queues", "4"]);
    assert_one_clear_line(&out, "receive queue");
    assert!(!net.server_has_xdp());
    // As an unprivileged user.
    let out = net.exec(
        &net.srv_ns,
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sirocco(),
            "echo",
            "--iface",
            &net.srv_if,
            "--addr",
            SERVER_OWN,
        ],
    );
    assert_one_clear_line(&out, "needs root");
    assert!(!net.server_has_xdp());
}

#[test]
fn a_second_sirocco_on_the_same_interface_is_refused_cleanly() {
    let net = TestNet::new(1);
    let first = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let out = net.exec(&net.srv_ns, &[sirocco(), "echo", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--port", "9"]);
    assert_one_clear_line(&out, "XDP");
    let (st, log) = first.stop();
    assert!(st.success(), "the first one is unharmed: {log}");
    assert!(!net.server_has_xdp());
}

/// `sirocco kv`'s own options and config keys: one line naming what is wrong, before any
/// interface is touched.
#[test]
fn dns_limits_are_checked() {
    let base = ["dns", "--iface", "lo", "--addr", "198.18.0.1", "--zone", "/nonexistent.zone"];
    for (extra, needle) in [
        (vec!["--tcp-idle-timeout=-1"], "--tcp-idle-timeout must be"),
        (vec!["--tcp-max-clients", "0"], "--tcp-max-clients must be at least 1"),
        (vec!["--rrl-rate", "5", "--rrl-ipv4-prefix", "33"], "--rrl-ipv4-prefix must be 1 to 32"),
        (vec!["--rrl-ipv6-prefix", "0"], "--rrl-ipv6-prefix must be 1 to 128"),
        (vec!["--rrl-table-size", "1"], "--rrl-table-size must be"),
        (vec!["--allow-transfer", "198.18.0.0/40"], "allow_transfer: \"198.18.0.0/40\": bad prefix length"),
        (vec!["--notify", "198.18.0.2@0"], "notify \"198.18.0.2@0\": bad port"),
        (vec!["--notify", "secondary.example"], "not an address"),
        (vec!["--key", "nonsense"], "--key: key \"nonsense\": not [ALGORITHM:]NAME:SECRET"),
        (vec!["--key", "hmac-md5:k:c2VjcmV0"], "algorithm \"hmac-md5\" is not one of hmac-sha256"),
        (vec!["--key", "k:c2VjcmV0", "--key", "K.:c2VjcmV0"], "key \"k\" is given twice"),
        (vec!["--tsig-key", "nokey"], "tsig_key \"nokey\": no such key"),
        (vec!["--secondary", "example.com=primary.example"], "primary \"primary.example\": not an address"),
        (vec!["--secondary", "198.18.0.1"], "a zone with a primary needs its name"),
        (vec!["--secondary", "example.com=198.18.0.1@99999"], "bad port"),
        (vec!["--catalog", "catalog.invalid=primary.example"], "primary \"primary.example\": not an address"),
        (
            vec!["--rrl-rate", "5", "--rrl-exempt", "198.18.0.0/99"],
            "--rrl-exempt: \"198.18.0.0/99\": bad prefix length",
        ),
    ] {
        let out = Command::new(sirocco()).args(base).args(&extra).output().unwrap();
        assert_one_clear_line(&out, needle);
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1, "{extra:?}");
    }
    // The same keys in a config file: known to its check, and checked alike.
    let path = std::env::temp_dir().join(format!("sirocco-dns-cli-{}.toml", std::process::id()));
    for (text, needle) in [
        ("tcp_idle_timeout = 5\nrrl_rate = 5\nrrl_ipv4_prefix = 40\n", "--rrl-ipv4-prefix must be 1 to 32, not 40"),
        ("tcp_max_clients = 0\n", "--tcp-max-clients must be at least 1"),
        ("rrl_rat = 5\n", "unknown key `rrl_rat`"),
        ("[[key]]\nname = \"k\"\nsecret = \"!!\"\n", "key \"k\": the secret is not base64"),
        ("[[key]]\nname = \"k\"\nsecrt = \"c2VjcmV0\"\n", "unknown field `secrt`"),
        ("[[zone]]\nname = \"c.invalid\"\ncatalog = true\nfile = \"c.zone\"\n", "a catalog zone is followed from a primary"),
        ("[[zone]]\nname = \"c.invalid\"\nfile = \"c.zone\"\nmember_dir = \"m\"\n", "are for a catalog (catalog = true)"),
        (
            "[[zone]]\nname = \"c.invalid\"\nprimary = [\"198.18.0.1\"]\ncatalog = true\n[[zone.group]]\nname = \"g\"\ntsig_key = \"nokey\"\n",
            "zone c.invalid: group \"g\": tsig_key \"nokey\": no such key",
        ),
        (
            "[[zone]]\nname = \"c.invalid\"\nprimary = [\"198.18.0.1\"]\ncatalog = true\n[[zone.group]]\nname = \"g\"\nprimary = [\"x\"]\n",
            "\"x\": not an address",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let out = Command::new(sirocco()).args(base).args(["--config", path.to_str().unwrap()]).output().unwrap();
        assert_one_clear_line(&out, needle);
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn kv_options_and_config_are_checked() {
    let base = ["kv", "--iface", "lo", "--addr", "198.18.0.1"];
    for (extra, needle) in [
        (vec!["--memory", "0"], "--memory must be"),
        (vec!["--memory", "1"], "at least two pages"),
        (vec!["--max-item-size", "lots"], "is not a size"),
        (vec!["--max-item-size", "512"], "between 1k and 128m"),
        (vec!["--max-item-size", "4m", "--memory", "6"], "at least two pages of 4 MB"),
        (vec!["--max-conns", "0"], "--max-conns"),
    ] {
        let out = Command::new(sirocco()).args(base).args(&extra).output().unwrap();
        assert_one_clear_line(&out, needle);
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1, "{extra:?}");
    }
    let dir = std::env::temp_dir().join(format!("sirocco-kv-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (text, needle) in [
        ("memory = \"lots\"\n", "kv.toml:1"),
        ("port = 11211\nmemroy = 64\n", "unknown key `memroy`"),
        ("max_item_size = \"2x\"\n", "is not a size"),
    ] {
        let path = dir.join("kv.toml");
        std::fs::write(&path, text).unwrap();
        let out = Command::new(sirocco()).args(base).args(["--config", path.to_str().unwrap()]).output().unwrap();
        assert_one_clear_line(&out, needle);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// With no --cpus, engines go on the CPUs the process was given (taskset), not on CPU i;
/// a --cpus outside them is one clear line.
#[test]
fn engines_stay_on_the_cpus_the_process_was_given() {
    let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let net = TestNet::new(2);
    let last = (n - 1).to_string();
    let s = Sirocco::spawn(
        &net.srv_ns,
        &["taskset", "-c", &last],
        &["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--queues", "2"],
        true,
    );
    let mut engines = 0;
    for t in std::fs::read_dir(format!("/proc/{}/task", s.pid())).unwrap() {
        let dir = t.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.starts_with("sirocco-q") {
            let status = std::fs::read_to_string(dir.join("status")).unwrap();
            let allowed = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")).unwrap();
            assert_eq!(allowed.split_whitespace().nth(1), Some(last.as_str()), "{comm}: {allowed}");
            engines += 1;
        }
    }
    assert_eq!(engines, 2, "both engines found");
    assert!(one_echo(&net.cli_ns, SERVER_OWN));
    stop_and_count(s);
    // A CPU the process may not use: CPU 0 when it was given the last of several, else one
    // past the end.
    let refused = if n > 1 { "0".to_string() } else { "1".to_string() };
    let out = net.exec(
        &net.srv_ns,
        &["taskset", "-c", &last, sirocco(), "echo", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--cpus", &refused],
    );
    assert_one_clear_line(
        &out,
        &format!("--cpus: CPU {refused} is not among the CPUs this process may run on ({last};"),
    );
    assert!(!net.server_has_xdp());
}

/// `--metrics`: an address that is not one, and a port in use, before anything is touched
/// (the interface named is in a test namespace, not here, so nothing could be).
#[test]
fn a_bad_or_busy_metrics_address_is_one_clear_line() {
    let base = ["dns", "--iface", "lo", "--addr", "198.18.0.1", "--zone", "/nonexistent.zone"];
    let out = Command::new(sirocco()).args(base).args(["--metrics", "localhost"]).output().unwrap();
    assert_one_clear_line(&out, "--metrics \"localhost\": not PORT, ADDR:PORT or [ADDR]:PORT");
    let net = TestNet::new(1);
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    // In the host's namespace the port is taken; sirocco says so before touching anything.
    let zone = std::env::temp_dir().join(format!("sirocco-metrics-busy-{}.zone", std::process::id()));
    std::fs::write(&zone, "$ORIGIN t.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.3.1\n").unwrap();
    let out = Command::new(sirocco())
        .args(["dns", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--zone"])
        .arg(&zone)
        .args(["--metrics", &port])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&zone);
    assert_one_clear_line(&out, "Address already in use");
}
