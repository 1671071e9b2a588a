//! The Debian package: built by scripts/package, installed on this machine with dpkg, its
//! units checked by systemd-analyze, and the DNS unit's service run as the unit runs it —
//! a user that is not root holding only the unit's capabilities, with the unit's command and
//! the packaged configuration — answering kdig, then stopped with the filter gone; then
//! purged. systemd itself does not run on the test machines (a container): where it does,
//! `systemctl start sirocco-dns` runs the same command line under the same limits.

use crate::common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Purges the package when the test ends, passed or not.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["--purge", "sirocco"]).output();
    }
}

/// A key of the unit's [Service] section.
fn unit_key(unit: &str, key: &str) -> String {
    unit.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key} in the unit"))
        .to_string()
}

#[test]
fn the_package_installs_and_its_dns_unit_serves_without_root() {
    // Left by a failed run: the next one starts clean.
    let _ = Command::new("dpkg").args(["--purge", "sirocco"]).output();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let built = Command::new("bash").arg(root.join("scripts/package")).env("SIROCCO_BIN", sirocco()).output().unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let deb = root.join(String::from_utf8_lossy(&built.stdout).trim());
    let info = Command::new("dpkg-deb").arg("--info").arg(&deb).output().unwrap();
    assert!(String::from_utf8_lossy(&info.stdout).contains("Package: sirocco"));

    let _installed = Installed;
    let inst = Command::new("dpkg").arg("-i").arg(&deb).output().unwrap();
    assert!(inst.status.success(), "dpkg -i: {}", String::from_utf8_lossy(&inst.stderr));
    let version = Command::new("/usr/bin/sirocco").arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("sirocco "));
    for page in ["sirocco", "sirocco-dns", "sirocco-top", "sirocco-ss", "sirocco-web"] {
        assert!(Path::new(&format!("/usr/share/man/man1/{page}.1.gz")).exists(), "{page}(1)");
    }
    let units = ["dns", "web", "kv", "store", "echo"].map(|s| format!("/lib/systemd/system/sirocco-{s}.service"));
    let verify = Command::new("systemd-analyze").args(["verify", "--man=no"]).args(&units).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&verify.stdout), String::from_utf8_lossy(&verify.stderr));
    assert!(said.trim().is_empty(), "systemd-analyze verify: {said}");
    let check = Command::new("/usr/bin/sirocco")
        .args(["dns", "--config", "/etc/sirocco/dns.toml", "--iface", "lo", "--check"])
        .output()
        .unwrap();
    assert!(check.status.success(), "the packaged configuration: {}", String::from_utf8_lossy(&check.stderr));

    // The unit's command, capabilities and user (not root), in a test namespace.
    let unit = std::fs::read_to_string(&units[0]).unwrap();
    let caps: Vec<String> = unit_key(&unit, "AmbientCapabilities")
        .split_whitespace()
        .map(|c| format!("+{}", c.to_ascii_lowercase().trim_start_matches("cap_")))
        .collect();
    let caps = caps.join(",");
    let exec = unit_key(&unit, "ExecStart");
    let control = Path::new("/run/sirocco/dns/control.sock");
    std::fs::create_dir_all(control.parent().unwrap()).unwrap();
    let _ = Command::new("chown").args(["65534:65534", "/run/sirocco/dns"]).status();
    let net = TestNet::new(1);
    let (ifc, own) = (net.srv_if.clone(), SERVER_OWN.to_string());
    let (inh, amb) = (format!("--inh-caps={caps}"), format!("--ambient-caps={caps}"));
    let prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", inh.as_str(), amb.as_str()];
    let mut words = exec.split_whitespace();
    let bin = words.next().unwrap();
    assert_eq!(bin, "/usr/bin/sirocco");
    let mut args: Vec<&str> = words.collect();
    args.extend(["--iface", &ifc, "--addr", &own]);
    let s = Sirocco::spawn_bin(&net.srv_ns, &prefix, bin, &args, false);
    s.wait_for_log("dns on port 53", Duration::from_secs(10));
    let out = net.exec(&net.cli_ns, &["kdig", "+short", "+time=2", &format!("@{SERVER_OWN}"), "www.example.com", "A"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "198.18.0.80", "{}", s.log());
    // The unit's socket by its path: other tests may have servers of their own running.
    let sock = control.to_str().unwrap();
    let ss = Command::new("/usr/bin/sirocco")
        .args(["top", "--socket", sock, "--count", "1", "--interval", "0.2"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ss.stdout).contains("dns on port 53"),
        "top finds the unit's socket: {}",
        String::from_utf8_lossy(&ss.stderr)
    );
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(!net.server_has_xdp(), "the filter is gone when the service stops");
    assert!(!control.exists(), "its control socket too");
    let _ = std::fs::remove_dir_all("/run/sirocco/dns");
}
