//! Zone transfers out (AXFR over TCP): kdig's transfer from sirocco holds exactly the records
//! Knot's transfer of the same signed zone file holds; a client outside the allowed prefixes
//! is refused, a zone not served is NOTAUTH; Knot as a secondary loads the zone from sirocco
//! and then answers as sirocco does, and a reload of sirocco reaches it by NOTIFY.

use crate::common::*;
use crate::dns_diff::{signed_rules_zone, tmpdir};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const KNOT_PORT: u16 = 5302;

/// knotd, killed on drop.
pub struct Knot(Child);

impl Drop for Knot {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Knot {
    /// Reloads its zones (and sends NOTIFY for a changed serial).
    pub fn reload(&self) {
        let _ = Command::new("kill").args(["-HUP", &self.0.id().to_string()]).status();
    }
}

/// knotd in `ns` with the configuration `conf`, written in `d` with its log beside it.
pub fn spawn_knot(ns: &str, d: &Path, conf: &str) -> Knot {
    let path = d.join("knot.conf");
    std::fs::write(&path, conf).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", ns, "knotd", "-c"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(d.join("knot.log")).unwrap())
        .spawn()
        .expect("knotd (apt install knot)");
    Knot(child)
}

/// Knot in `ns` on `addr`, with `zone_conf` (its `zone:` section) and an ACL letting the
/// test client transfer.
fn knot(ns: &str, dir: &Path, addr: &str, zone_conf: &str) -> Knot {
    knot_keyed(ns, dir, addr, None, zone_conf)
}

/// As [`knot`]; with `key` (hmac-sha256 secret of key `xfr.test`), sirocco as its primary
/// and its NOTIFYs must sign with it.
fn knot_keyed(ns: &str, dir: &Path, addr: &str, key: Option<&str>, zone_conf: &str) -> Knot {
    let d = dir.join(format!("knot-{ns}"));
    std::fs::create_dir_all(&d).unwrap();
    let (keys, use_key) = match key {
        Some(secret) => (
            format!("key:\n  - id: xfr.test\n    algorithm: hmac-sha256\n    secret: {secret}\n"),
            "    key: xfr.test\n",
        ),
        None => (String::new(), ""),
    };
    let conf = format!(
        "server:\n  listen: {addr}@{KNOT_PORT}\n  rundir: {d}\nlog:\n  - target: stderr\n    any: info\n\
         database:\n  storage: {d}\n{keys}acl:\n  - id: xfr\n    address: {CLIENT}\n    action: transfer\n\
         \x20 - id: notify\n    address: {SERVER_OWN}\n    action: notify\n{use_key}\
         remote:\n  - id: sirocco\n    address: {SERVER_OWN}@53\n{use_key}\
         template:\n  - id: default\n    storage: {d}\n    journal-content: none\n    zonefile-sync: -1\nzone:\n{zone_conf}",
        d = d.display()
    );
    spawn_knot(ns, &d, &conf)
}

/// The records of `kdig AXFR` at `server`, one normalised line each; the transfer's status
/// line if it failed.
fn axfr(net: &TestNet, server: &str, port: u16) -> Result<Vec<String>, String> {
    let out = net.exec(
        &net.cli_ns,
        &["kdig", "+time=3", "+retry=1", "-p", &port.to_string(), &format!("@{server}"), "AXFR", "example.com."],
    );
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if text.contains(";; ERROR") || text.contains("failed") {
        return Err(text);
    }
    let records: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase())
        .collect();
    if records.is_empty() {
        return Err(format!("no records: {text}"));
    }
    Ok(records)
}

#[test]
fn axfr_matches_knots_and_knot_loads_the_zone_from_sirocco() {
    let net = TestNet::new(1);
    let dir = tmpdir(&format!("xfr-{}", net.name));
    let zone = signed_rules_zone(&dir, &["-n", "-t", "0"]);
    let zone_arg = format!("example.com={}", zone.display());
    let client = format!("{CLIENT}/32");
    let s = net.start_dns(&zone_arg, &["--allow-transfer", &client]);
    let reference = knot(
        &net.srv_ns,
        &dir,
        SERVER,
        &format!("  - domain: example.com\n    file: {}\n    acl: xfr\n", zone.display()),
    );

    // The transfer: SOA first and last, every record once, as Knot's of the same file.
    let ours = axfr(&net, SERVER_OWN, 53).expect("sirocco transfers the zone");
    let deadline = Instant::now() + Duration::from_secs(60);
    let theirs = loop {
        match axfr(&net, SERVER, KNOT_PORT) {
            Ok(r) => break r,
            Err(e) if Instant::now() > deadline => panic!("Knot's transfer: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(300)),
        }
    };
    assert!(ours.first().unwrap().contains(" soa ") && ours.last() == ours.first(), "SOA first and last");
    let (a, b): (BTreeSet<&String>, BTreeSet<&String>) = (ours.iter().collect(), theirs.iter().collect());
    assert!(a.len() > 150 && ours.len() == theirs.len(), "{} records vs Knot's {}", ours.len(), theirs.len());
    let only_ours: Vec<_> = a.difference(&b).collect();
    let only_theirs: Vec<_> = b.difference(&a).collect();
    assert!(only_ours.is_empty() && only_theirs.is_empty(), "only sirocco: {only_ours:?}\nonly Knot: {only_theirs:?}");
    drop(reference);

    // Knot as a secondary in the client's namespace, its primary sirocco.
    let _secondary = knot(&net.cli_ns, &dir, CLIENT, "  - domain: example.com\n    master: sirocco\n");
    let loaded = (0..100).any(|_| {
        let out = net.exec(
            &net.cli_ns,
            &["kdig", "+short", "+time=1", "+retry=0", "-p", "5302", &format!("@{CLIENT}"), "www.example.com", "AAAA"],
        );
        let ok = String::from_utf8_lossy(&out.stdout).trim() == "2001:db8::4";
        if !ok {
            std::thread::sleep(Duration::from_millis(300));
        }
        ok
    });
    assert!(loaded, "the secondary loaded the zone from sirocco");
    let signed =
        net.exec(&net.cli_ns, &["kdig", "+dnssec", "-p", "5302", &format!("@{CLIENT}"), "nothere.example.com", "A"]);
    let text = String::from_utf8_lossy(&signed.stdout);
    assert!(text.contains("NXDOMAIN") && text.contains("NSEC3"), "the signed zone whole on the secondary: {text}");

    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(log.contains("| transfers 2 (incremental 0) refused 0"), "ours and the secondary's: {log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn transfers_are_refused_outside_the_allowed_prefixes_and_for_zones_not_served() {
    let net = TestNet::new(1);
    let z = std::env::temp_dir().join(format!("sirocco-xfr-{}.zone", std::process::id()));
    std::fs::write(&z, "$ORIGIN example.com.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.3.1\n").unwrap();
    let zone_arg = format!("example.com={}", z.display());
    let s = net.start_dns(&zone_arg, &["--allow-transfer", "198.18.0.99", "--allow-transfer", "2001:2::/48"]);
    let refused = axfr(&net, SERVER_OWN, 53).expect_err("198.18.0.2 is not allowed");
    assert!(refused.contains("REFUSED"), "{refused}");
    let ok = net.exec(&net.cli_ns, &["kdig", "+time=3", &format!("@{SERVER_OWN}"), "AXFR", "other.test."]);
    let text = format!("{}{}", String::from_utf8_lossy(&ok.stdout), String::from_utf8_lossy(&ok.stderr));
    assert!(text.contains("NOTAUTH"), "a zone not served: {text}");
    // Still answering, queries over the same port.
    let q = net.exec(&net.cli_ns, &["kdig", "+short", "+tcp", &format!("@{SERVER_OWN}"), "ns.example.com", "A"]);
    assert_eq!(String::from_utf8_lossy(&q.stdout).trim(), "198.18.3.1");
    let (st, log) = s.stop();
    let _ = std::fs::remove_file(&z);
    assert!(st.success(), "{log}");
    assert!(log.contains("| transfers 0 (incremental 0) refused 2"), "{log}");
}

/// What Knot in the client's namespace answers for www.example.com AAAA.
fn secondary_answer(net: &TestNet) -> String {
    answer_at(net, KNOT_PORT)
}

pub fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

#[test]
fn a_reload_reaches_the_secondary_by_notify() {
    let net = TestNet::new(1);
    let dir = tmpdir(&format!("notify-{}", net.name));
    let zone = dir.join("example.zone");
    // A refresh interval of an hour: only a NOTIFY brings the secondary the new version soon.
    let text = |serial: u32, last: u8| {
        format!("$ORIGIN example.com.\n$TTL 60\n@ SOA ns h {serial} 3600 600 86400 60\n@ NS ns\nns A 198.18.3.1\nwww AAAA 2001:db8::{last}\n")
    };
    std::fs::write(&zone, text(1, 1)).unwrap();
    let zone_arg = format!("example.com={}", zone.display());
    let (allow, notify) = (format!("{CLIENT}/32"), format!("{CLIENT}@{KNOT_PORT}"));
    let s = net.start_dns(&zone_arg, &["--allow-transfer", &allow, "--notify", &notify]);
    let _secondary = knot(&net.cli_ns, &dir, CLIENT, "  - domain: example.com\n    master: sirocco\n    acl: notify\n");
    assert!(wait_for(Duration::from_secs(20), || secondary_answer(&net) == "2001:db8::1"), "the first version");
    std::fs::write(&zone, text(2, 2)).unwrap();
    s.hup();
    let got = wait_for(Duration::from_secs(20), || secondary_answer(&net) == "2001:db8::2");
    let (st, log) = s.stop();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(got, "the new version on the secondary within seconds: {log}");
    assert!(st.success(), "{log}");
    let line = log.lines().find(|l| l.starts_with("dns notify:")).unwrap_or_else(|| panic!("{log}"));
    let acked: u64 = line.split("acknowledged ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    // The reload's NOTIFY is acknowledged. The one sirocco sends when it first loads the zone
    // goes out before this test has started Knot, and on a loaded machine its retries can all
    // come before Knot listens: it may stay unanswered.
    assert!(acked >= 1, "the reload acknowledged: {line}");
}

/// The secret of key `xfr.test` (32 bytes, base64).
const SECRET: &str = "c2lyb2NjbyB0c2lnIHRlc3Qga2V5IDAxMjM0NTY3ODk=";

/// kdig's output (stdout and stderr) for `args`, signed with key `xfr.test` of `secret`.
fn kdig_signed(net: &TestNet, secret: &str, args: &[&str]) -> String {
    let key = format!("hmac-sha256:xfr.test:{secret}");
    let at = format!("@{SERVER_OWN}");
    let mut all = vec!["kdig", "+time=3", "+retry=0", "-y", &key, &at];
    all.extend_from_slice(args);
    let out = net.exec(&net.cli_ns, &all);
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn tsig_signs_answers_transfers_and_notify_and_knot_accepts_them() {
    let net = TestNet::new(1);
    let dir = tmpdir(&format!("tsig-{}", net.name));
    let zone = dir.join("example.zone");
    // Enough records for a transfer of several messages, each signed over the one before.
    let padding: String = (0..1500).map(|i| format!("t{i} TXT \"{i:04} padding padding padding\"\n")).collect();
    let text = |serial: u32, last: u8| {
        format!("$ORIGIN example.com.\n$TTL 60\n@ SOA ns h {serial} 3600 600 86400 60\n@ NS ns\nns A 198.18.3.1\nwww AAAA 2001:db8::{last}\n{padding}")
    };
    std::fs::write(&zone, text(1, 1)).unwrap();
    let zone_arg = format!("example.com={}", zone.display());
    let (allow, notify, key) =
        (format!("{CLIENT}/32"), format!("{CLIENT}@{KNOT_PORT}"), format!("hmac-sha256:xfr.test:{SECRET}"));
    let s = net.start_dns(
        &zone_arg,
        &["--allow-transfer", &allow, "--notify", &notify, "--key", &key, "--tsig-key", "xfr.test"],
    );

    // Signed queries over UDP and TCP: answered and signed; kdig checks the signature.
    for transport in ["+notcp", "+tcp"] {
        let out = kdig_signed(&net, SECRET, &[transport, "ns.example.com", "A"]);
        assert!(out.contains("198.18.3.1") && out.contains("TSIG PSEUDOSECTION"), "{transport}: {out}");
        assert!(
            !out.contains(";; WARNING") && !out.contains(";; ERROR") && !out.contains("failed"),
            "{transport}: {out}"
        );
    }
    // A wrong secret, an unknown key: NOTAUTH with the TSIG error (kdig shows the error as
    // the status).
    let bad = kdig_signed(&net, "d3Jvbmcgc2VjcmV0", &["ns.example.com", "A"]);
    assert!(bad.contains("status: BADSIG") && bad.contains("ANSWER: 0"), "{bad}");
    let out = net.exec(
        &net.cli_ns,
        &[
            "kdig",
            "+time=3",
            "+retry=0",
            "-y",
            &format!("other.key:{SECRET}"),
            &format!("@{SERVER_OWN}"),
            "ns.example.com",
        ],
    );
    let unknown = String::from_utf8_lossy(&out.stdout);
    assert!(unknown.contains("status: BADKEY") && unknown.contains("ANSWER: 0"), "{unknown}");

    // The zone wants its key: an unsigned transfer is refused, a signed one is whole.
    let refused = axfr(&net, SERVER_OWN, 53).expect_err("unsigned");
    assert!(refused.contains("REFUSED"), "{refused}");
    let xfr = kdig_signed(&net, SECRET, &["AXFR", "example.com."]);
    let summary = xfr.lines().find(|l| l.starts_with(";; Received")).unwrap_or_else(|| panic!("{xfr}"));
    let messages: u32 = summary.split('(').nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    assert!(summary.ends_with("messages, 1505 records)") && messages > 1, "SOA, NS, A, AAAA, 1500 TXT, SOA: {summary}");
    // kdig checks every message's signature and warns of one that fails.
    assert!(!xfr.contains(";; WARNING") && !xfr.contains(";; ERROR") && !xfr.contains("failed"), "{summary}");
    assert!(xfr.contains("\tTSIG\thmac-sha256."), "signed: {summary}");

    // Knot as a secondary with the key: it signs its SOA queries and transfer, checks our
    // signatures, and takes only signed NOTIFYs.
    let _secondary = knot_keyed(
        &net.cli_ns,
        &dir,
        CLIENT,
        Some(SECRET),
        "  - domain: example.com\n    master: sirocco\n    acl: notify\n",
    );
    assert!(wait_for(Duration::from_secs(20), || secondary_answer(&net) == "2001:db8::1"), "the first version");
    std::fs::write(&zone, text(2, 2)).unwrap();
    s.hup();
    let got = wait_for(Duration::from_secs(20), || secondary_answer(&net) == "2001:db8::2");
    let (st, log) = s.stop();
    let knot_log = std::fs::read_to_string(dir.join(format!("knot-{}/knot.log", net.cli_ns))).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(got, "the new version on the secondary by a signed NOTIFY: {log}\n{knot_log}");
    assert!(st.success(), "{log}");
    assert!(log.contains("notauth 2 "), "BADSIG and BADKEY: {log}");
    let signed: u64 =
        log.split("signed (tsig) ").nth(1).and_then(|r| r.split_whitespace().next()).unwrap().parse().unwrap();
    assert!(signed >= 4, "ours and Knot's signed queries: {log}");
    let tcp = log.lines().find(|l| l.starts_with("dns over tcp:")).unwrap_or_else(|| panic!("{log}"));
    assert!(tcp.ends_with(" refused 1"), "the unsigned transfer refused: {tcp}");
    let line = log.lines().find(|l| l.starts_with("dns notify:")).unwrap_or_else(|| panic!("{log}"));
    let acked: u64 = line.split("acknowledged ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    // The reload's signed NOTIFY is acknowledged. The one sent when sirocco first loaded the
    // zone went before Knot was started: acknowledged only if Knot listened within its
    // retries (a loaded host's full run once took longer: "sent 2 acknowledged 1").
    assert!(acked >= 1, "the reload's signed NOTIFY acknowledged: {line}");
}

/// NSD, stopped on drop with SIGTERM (it stops its children itself), then killed.
struct Nsd(Child);

impl Drop for Nsd {
    fn drop(&mut self) {
        // SAFETY: kill with the pid of a child we started.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const NSD_PORT: u16 = 5301;

/// NSD in the client's namespace as a secondary of sirocco for example.com.
fn nsd_secondary(net: &TestNet, dir: &Path) -> Nsd {
    let d = dir.join("nsd");
    std::fs::create_dir_all(&d).unwrap();
    let conf = format!(
        "server:\n  ip-address: {CLIENT}@{NSD_PORT}\n  username: \"\"\n  zonesdir: \"{d}\"\n  database: \"\"\n\
         \x20 pidfile: \"{d}/nsd.pid\"\n  xfrdfile: \"{d}/xfrd.state\"\n  zonelistfile: \"{d}/zone.list\"\n\
         \x20 xfrdir: \"{d}\"\n  verbosity: 2\nremote-control:\n  control-enable: no\n\
         zone:\n  name: example.com\n  request-xfr: {SERVER_OWN}@53 NOKEY\n  allow-notify: {SERVER_OWN} NOKEY\n",
        d = d.display()
    );
    Nsd(crate::dns_diff::spawn_nsd(&net.cli_ns, &d, &conf))
}

/// What the secondary in the client's namespace on `port` answers for www.example.com AAAA.
fn answer_at(net: &TestNet, port: u16) -> String {
    kdig_short(net, CLIENT, port, "www.example.com", "AAAA")
}

#[test]
fn reloads_reach_knot_and_nsd_by_ixfr_from_the_journal() {
    let net = TestNet::new(1);
    let dir = tmpdir(&format!("ixfr-{}", net.name));
    let zone = dir.join("example.zone");
    let text = |serial: u32, last: u8| {
        format!("$ORIGIN example.com.\n$TTL 60\n@ SOA ns h {serial} 3600 600 86400 60\n@ NS ns\nns A 198.18.3.1\nwww AAAA 2001:db8::{last}\nkeep TXT \"unchanged\"\n")
    };
    std::fs::write(&zone, text(1, 1)).unwrap();
    let zone_arg = format!("example.com={}", zone.display());
    let allow = format!("{CLIENT}/32");
    let (to_knot, to_nsd) = (format!("{CLIENT}@{KNOT_PORT}"), format!("{CLIENT}@{NSD_PORT}"));
    let s = net.start_dns(&zone_arg, &["--allow-transfer", &allow, "--notify", &to_knot, "--notify", &to_nsd]);
    let _secondary = knot(&net.cli_ns, &dir, CLIENT, "  - domain: example.com\n    master: sirocco\n    acl: notify\n");
    let _nsd = nsd_secondary(&net, &dir);
    for port in [KNOT_PORT, NSD_PORT] {
        assert!(wait_for(Duration::from_secs(30), || answer_at(&net, port) == "2001:db8::1"), "the first version");
    }
    // Two reloads, each a NOTIFY; the secondaries ask for the changes since their serial.
    for (serial, last) in [(2, 2), (3, 3)] {
        std::fs::write(&zone, text(serial, last)).unwrap();
        s.hup();
        let want = format!("2001:db8::{last}");
        for port in [KNOT_PORT, NSD_PORT] {
            let got = wait_for(Duration::from_secs(30), || answer_at(&net, port) == want);
            let nsd_log = std::fs::read_to_string(dir.join("nsd/nsd.log")).unwrap_or_default();
            assert!(got, "version {serial} on the secondary at port {port}: {nsd_log}");
        }
    }
    // kdig's IXFR from serial 1: both changes, in order, between the SOAs (RFC 1995).
    let at = format!("@{SERVER_OWN}");
    let out = net.exec(&net.cli_ns, &["kdig", &at, "+time=2", "+retry=0", "IXFR=1", "example.com"]);
    let out = String::from_utf8_lossy(&out.stdout).to_string();
    let rows: Vec<&str> = out.lines().filter(|l| !l.starts_with(';') && !l.trim().is_empty()).collect();
    let kinds: Vec<String> = rows
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            format!("{} {}", f[3], f.last().unwrap())
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "SOA 60",
            "SOA 60",
            "AAAA 2001:db8::1",
            "SOA 60",
            "AAAA 2001:db8::2",
            "SOA 60",
            "AAAA 2001:db8::2",
            "SOA 60",
            "AAAA 2001:db8::3",
            "SOA 60"
        ],
        "{out}"
    );
    // Up to date: the SOA alone.
    let out = net.exec(&net.cli_ns, &["kdig", &at, "+time=2", "+retry=0", "IXFR=3", "example.com"]);
    let out = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.lines().filter(|l| l.contains("\tSOA\t")).count(), 1, "{out}");
    let knot_log = std::fs::read_to_string(dir.join(format!("knot-{}/knot.log", net.cli_ns))).unwrap_or_default();
    let (st, log) = s.stop();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(st.success(), "{log}");
    let ixfr_lines: Vec<&str> = knot_log.lines().filter(|l| l.contains("IXFR, incoming")).collect();
    eprintln!("{}", ixfr_lines.join("\n"));
    assert!(
        ixfr_lines.iter().any(|l| l.contains("finished")) && !knot_log.contains("fallback to AXFR"),
        "Knot took the changes by IXFR: {knot_log}"
    );
    let line = log.lines().find(|l| l.starts_with("dns over tcp:")).unwrap_or_else(|| panic!("{log}"));
    let incremental = number_after(line, "(incremental ");
    assert!(incremental >= 6, "Knot's and NSD's two IXFRs each, and kdig's two: {line}\n{knot_log}");
}
