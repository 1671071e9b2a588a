//! `--check`: a configuration is checked (options, config file, zones, document root,
//! certificates, the interface) and the command exits, as `nginx -t` does: as an
//! unprivileged user, touching nothing; every error is one line naming the file and line.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A folder of test files, readable by anyone, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("sirocco-check-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let _ = Command::new("chmod").args(["755"]).arg(&d).status();
        Dir(d)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `sirocco ARGS --check` as the unprivileged user nobody.
fn check(args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", sirocco()])
        .args(args)
        .arg("--check")
        .output()
        .unwrap()
}

fn ok(out: &Output, needle: &str) {
    let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{o}{e}");
    assert!(o.contains("sirocco: configuration OK") && o.contains(needle), "{o}");
}

fn bad(out: &Output, needle: &str) {
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    let last = e.lines().last().unwrap_or_default();
    assert!(last.starts_with("sirocco: error: ") && last.contains(needle), "expected {needle:?} in {e:?}");
}

const ZONE: &str = "$ORIGIN example.com.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.3.1\n";

#[test]
fn good_configurations_pass_without_privileges_and_touch_nothing() {
    let d = Dir::new("good");
    let zone = d.file("example.zone", ZONE);
    let conf = d.file("dns.toml", &format!("iface = \"lo\"\naddr = \"198.18.0.1\"\n[[zone]]\nfile = \"{zone}\"\n"));
    ok(&check(&["dns", "--config", &conf]), "dns on port 53, 1 zone(s) compiled");
    ok(&check(&["web", "--iface", "lo", "--addr", "198.18.0.1"]), "web on port 80, 6 files");
    ok(&check(&["kv", "--iface", "lo", "--addr", "198.18.0.1", "--memory", "64"]), "64 MB of items");
    let log = d.0.join("store-log");
    ok(&check(&["store", "--iface", "lo", "--addr", "198.18.0.1", "--dir", log.to_str().unwrap()]), "redis protocol");
    assert!(!log.exists(), "the store's folder is not created by a check");
    ok(&check(&["echo", "--iface", "lo", "--addr", "198.18.0.1"]), "udp echo on port 7");
    let policy = d.file("policy.toml", "[[allow]]\nuid = 61002\naddrs = [\"198.18.0.53\"]\nports = [\"udp/53\"]\n");
    ok(&check(&["ctl", "--iface", "lo", "--config", &policy]), "sirocco ctl on lo");
    let lo = Command::new("ip").args(["link", "show", "lo"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&lo.stdout).contains("xdp"), "no XDP program on lo");
}

#[test]
fn errors_name_the_file_and_line() {
    let d = Dir::new("bad");
    let broken = d.file("broken.zone", &format!("{ZONE}www IN A 198.18.3.999\n"));
    bad(&check(&["dns", "--iface", "lo", "--addr", "198.18.0.1", "--zone", &broken]), &format!("{broken}:6"));
    let conf = d.file("dns.toml", "iface = \"lo\"\naddr = \"198.18.0.1\"\nrrl_rat = 5\n");
    bad(&check(&["dns", "--config", &conf]), &format!("{conf}:3: unknown key `rrl_rat`"));
    let zone = d.file("example.zone", ZONE);
    let keyed = d.file("keyed.toml", &format!("[[zone]]\nfile = \"{zone}\"\ntsig_key = \"nokey\"\n"));
    bad(
        &check(&["dns", "--iface", "lo", "--addr", "198.18.0.1", "--config", &keyed]),
        "tsig_key \"nokey\": no such key",
    );
    let missing = Path::new(&d.0).join("missing.pem");
    let m = missing.to_str().unwrap();
    bad(&check(&["web", "--iface", "lo", "--addr", "198.18.0.1", "--tls-cert", m, "--tls-key", m]), "missing.pem");
    bad(&check(&["web", "--iface", "lo", "--addr", "198.18.0.1", "--root", "/nonexistent-root"]), "/nonexistent-root");
    bad(&check(&["kv", "--iface", "lo", "--addr", "198.18.0.1", "--memory", "0"]), "--memory");
    let file = d.file("not-a-folder", "");
    bad(&check(&["store", "--iface", "lo", "--addr", "198.18.0.1", "--dir", &format!("{file}/log")]), "not a folder");
    bad(&check(&["echo", "--iface", "nosuchif0", "--addr", "198.18.0.1"]), "no network interface named");
    let policy =
        d.file("policy.toml", "[[allow]]\nuid = 61002\naddrs = [\"198.18.0.53\"]\nports = [\"udp/53\"]\nrate = 5\n");
    bad(&check(&["ctl", "--iface", "lo", "--config", &policy]), &policy);
    bad(
        &check(&["echo", "--iface", "lo", "--addr", "198.18.0.1", "--queues", "9"]),
        "--queues 9: lo has 1 receive queue",
    );
}

/// `--log-format json`: every log line is one JSON object with its time, level and message;
/// the text form is `sirocco: MESSAGE`, errors marked.
#[test]
fn log_lines_are_one_event_each_as_text_or_json() {
    let d = Dir::new("log");
    let zone = d.file("example.zone", ZONE);
    let args = ["dns", "--iface", "lo", "--addr", "198.18.0.1", "--zone", &zone];
    let out = check(&[&["--log-format", "json"][..], &args].concat());
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let events: Vec<serde_json::Value> =
        err.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    assert!(events.len() >= 2, "{err}");
    for e in &events {
        assert!(e["timestamp"].is_string() && e["level"] == "INFO" && e["message"].is_string(), "{e}");
    }
    assert!(events.iter().any(|e| e["message"].as_str().unwrap().starts_with("zones compiled in")), "{err}");
    let failed = check(&["--log-format", "json", "echo", "--iface", "nosuchif0", "--addr", "198.18.0.1"]);
    let line = String::from_utf8_lossy(&failed.stderr).lines().last().unwrap_or_default().to_string();
    let e: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!((e["level"].as_str(), failed.status.code()), (Some("ERROR"), Some(1)), "{line}");
    assert!(e["message"].as_str().unwrap().contains("no network interface named"), "{line}");
    let text = check(&args);
    let err = String::from_utf8_lossy(&text.stderr);
    assert!(err.lines().all(|l| l.starts_with("sirocco: ")), "{err}");
}
