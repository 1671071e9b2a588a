//! sirocco as a secondary, Knot as its primary: the zone arrives by AXFR over sirocco's own
//! TCP, signed with TSIG, is stored in its file, and answers as Knot does; a reload of the
//! primary reaches sirocco by NOTIFY within seconds (the SOA refresh is an hour); a zone
//! whose primary stops answering expires; the stored file is served at the next start.

use crate::common::kdig_short as ask;
use crate::common::*;
use crate::dns_diff::tmpdir;
use crate::dns_xfr::{spawn_knot, wait_for, Knot};
use std::path::Path;
use std::time::Duration;

const PRIMARY_PORT: u16 = 5303;
const SECRET: &str = "c2lyb2NjbyBzZWNvbmRhcnkga2V5IDAxMjM0NTY3ODk=";

/// Knot in the client's namespace as the primary of `zone_file`, letting sirocco transfer
/// it with key `xfr.test` and telling sirocco of new versions.
fn primary(net: &TestNet, dir: &Path, zone_file: &Path) -> Knot {
    let d = dir.join("knot-primary");
    std::fs::create_dir_all(&d).unwrap();
    let conf = format!(
        "server:\n  listen: {CLIENT}@{PRIMARY_PORT}\n  rundir: {d}\nlog:\n  - target: stderr\n    any: info\n\
         database:\n  storage: {d}\n\
         key:\n  - id: xfr.test\n    algorithm: hmac-sha256\n    secret: {SECRET}\n\
         remote:\n  - id: sirocco\n    address: {SERVER_OWN}@53\n    key: xfr.test\n\
         acl:\n  - id: sirocco\n    address: {SERVER_OWN}\n    key: xfr.test\n    action: transfer\n\
         template:\n  - id: default\n    storage: {d}\n    journal-content: changes\n    zonefile-load: difference\n    zonefile-sync: -1\n\
         zone:\n  - domain: example.com\n    file: {f}\n    acl: sirocco\n    notify: sirocco\n",
        d = d.display(),
        f = zone_file.display()
    );
    spawn_knot(&net.cli_ns, &d, &conf)
}

/// The zone at `serial`, `www` at 2001:db8::`last`, with `timers` (refresh retry expire)
/// and enough records for a transfer of several messages. From serial 2 on, `mail` and `t5`
/// are gone and `new` is there.
fn zone_text(serial: u32, last: u8, timers: &str) -> String {
    let padding: String = (0..1500)
        .filter(|&i| serial < 2 || i != 5)
        .map(|i| format!("t{i} TXT \"{i:04} padding padding padding\"\n"))
        .collect();
    let changed = if serial < 2 { "mail MX 10 ns\n" } else { "new A 198.18.3.9\n" };
    format!(
        "$ORIGIN example.com.\n$TTL 60\n@ SOA ns h {serial} {timers} 60\n@ NS ns\nns A 198.18.3.1\n\
         www AAAA 2001:db8::{last}\n{changed}alias CNAME www\n*.wild TXT \"wildcard\"\n{padding}"
    )
}

/// sirocco's and Knot's answer and authority sections for `name` `qtype` agree.
fn same_as_primary(net: &TestNet, name: &str, qtype: &str) {
    let full = |server: &str, port: u16| {
        let out = net.exec(
            &net.cli_ns,
            &["kdig", "+noall", "+answer", "+authority", "-p", &port.to_string(), &format!("@{server}"), name, qtype],
        );
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        lines.sort();
        lines
    };
    let (ours, theirs) = (full(SERVER_OWN, 53), full(CLIENT, PRIMARY_PORT));
    assert!(!ours.is_empty() && ours == theirs, "{name} {qtype}: sirocco {ours:?} vs Knot {theirs:?}");
}

/// sirocco with a config holding the secondary zone (stored in `stored`).
fn start_secondary(net: &TestNet, dir: &Path, stored: &Path) -> Sirocco {
    let conf = dir.join("sirocco.toml");
    std::fs::write(
        &conf,
        format!(
            "[[key]]\nname = \"xfr.test\"\nsecret = \"{SECRET}\"\n\n[[zone]]\nname = \"example.com\"\n\
             primary = [\"{CLIENT}@{PRIMARY_PORT}\"]\nfile = \"{}\"\ntsig_key = \"xfr.test\"\n",
            stored.display()
        ),
    )
    .unwrap();
    let s = net.start(&["dns", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--config", conf.to_str().unwrap()]);
    s.wait_for_log("dns on port 53", Duration::from_secs(10));
    s
}

#[test]
fn a_zone_from_knot_by_signed_axfr_then_by_notify_and_stored() {
    let net = TestNet::new(1);
    let dir = tmpdir(&format!("secondary-{}", net.name));
    let primary_file = dir.join("primary.zone");
    let stored = dir.join("secondary.zone");
    std::fs::write(&primary_file, zone_text(1, 1, "3600 600 86400")).unwrap();
    let knot = primary(&net, &dir, &primary_file);
    assert!(
        wait_for(Duration::from_secs(20), || ask(&net, CLIENT, PRIMARY_PORT, "www.example.com", "AAAA")
            == "2001:db8::1"),
        "Knot serves the zone"
    );
    let s = start_secondary(&net, &dir, &stored);
    let first =
        wait_for(Duration::from_secs(20), || ask(&net, SERVER_OWN, 53, "www.example.com", "AAAA") == "2001:db8::1");
    assert!(first, "the first version transferred: {}", s.log());

    // The same answers as the primary's, for what the zone holds and what it does not.
    let names = [
        ("example.com", "SOA"),
        ("example.com", "NS"),
        ("mail.example.com", "MX"),
        ("new.example.com", "A"),
        ("t5.example.com", "TXT"),
        ("alias.example.com", "AAAA"),
        ("a.wild.example.com", "TXT"),
        ("t1499.example.com", "TXT"),
        ("nothere.example.com", "A"),
    ];
    for (name, qtype) in names {
        same_as_primary(&net, name, qtype);
    }

    // A new version on the primary reaches sirocco by NOTIFY (the refresh is an hour away),
    // as the changes since the version served (IXFR from Knot's journal).
    std::fs::write(&primary_file, zone_text(2, 2, "3600 600 86400")).unwrap();
    knot.reload();
    let second =
        wait_for(Duration::from_secs(20), || ask(&net, SERVER_OWN, 53, "www.example.com", "AAAA") == "2001:db8::2");
    assert!(second, "the NOTIFY brought the new version: {}", s.log());
    for (name, qtype) in names {
        same_as_primary(&net, name, qtype);
    }
    let stored_text = std::fs::read_to_string(&stored).unwrap_or_default();
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(
        stored_text.contains("2001:db8::2") && stored_text.contains(" 2 3600 600 86400 60"),
        "stored: {stored_text:.300}"
    );
    assert!(log.contains("zone example.com. serial 1 transferred from 198.18.0.2@5303: 1507 records"), "{log}");
    // The SOA, www, mail and t5 out; the SOA, www and new in.
    assert!(
        log.contains("zone example.com. serial 2 transferred from 198.18.0.2@5303 as 1 change(s) of 7 records (IXFR)"),
        "{log}"
    );
    let line = log.lines().find(|l| l.starts_with("dns secondary:")).unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("transferred 2 (as changes 1) failed 0 expired 0"), "{line}");
    let received: u64 =
        line.split("notify received ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    assert!(received >= 1, "{line}");
    drop(knot);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_zone_whose_primary_is_gone_expires_and_its_file_serves_at_the_next_start() {
    let net = TestNet::new(1);
    let dir = tmpdir(&format!("expire-{}", net.name));
    let primary_file = dir.join("primary.zone");
    let stored = dir.join("secondary.zone");
    // Refresh and retry 2 s, expire 8 s.
    std::fs::write(&primary_file, zone_text(7, 7, "2 2 8")).unwrap();
    let knot = primary(&net, &dir, &primary_file);
    assert!(
        wait_for(Duration::from_secs(20), || ask(&net, CLIENT, PRIMARY_PORT, "www.example.com", "AAAA")
            == "2001:db8::7"),
        "Knot serves the zone"
    );
    let s = start_secondary(&net, &dir, &stored);
    assert!(
        wait_for(Duration::from_secs(20), || ask(&net, SERVER_OWN, 53, "www.example.com", "AAAA") == "2001:db8::7"),
        "transferred: {}",
        s.log()
    );
    // NOTIFY is taken from the primary's address only, signed with the zone's key.
    let notify = |from: &str, key: Option<&str>, zone: &str| {
        let k = key.map(|k| format!("xfr.test:{k}"));
        let mut args = vec!["kdig", "+time=2", "+retry=0", "-b", from, "@198.18.0.10"];
        if let Some(k) = &k {
            args.extend(["-y", k.as_str()]);
        }
        args.extend([zone, "NOTIFY"]);
        let out = net.exec(&net.cli_ns, &args);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.split("status: ").nth(1).and_then(|r| r.split(';').next()).unwrap_or("no answer").to_string()
    };
    net.exec(&net.cli_ns, &["ip", "addr", "add", "198.18.0.3/24", "dev", &net.cli_if]);
    assert_eq!(notify(CLIENT, Some(SECRET), "example.com"), "NOERROR");
    assert_eq!(notify(CLIENT, None, "example.com"), "REFUSED", "unsigned, the zone has a key");
    assert_eq!(notify("198.18.0.3", Some(SECRET), "example.com"), "REFUSED", "not from the primary");
    assert_eq!(notify(CLIENT, Some(SECRET), "other.test"), "NOTAUTH", "not a secondary zone here");
    assert_eq!(notify(CLIENT, Some("d3Jvbmcgc2VjcmV0"), "example.com"), "BADSIG");
    // Checked every 2 s and up to date; then the primary goes.
    std::thread::sleep(Duration::from_secs(5));
    drop(knot);
    let gone = wait_for(Duration::from_secs(30), || {
        let out = net
            .exec(&net.cli_ns, &["kdig", "+time=1", "+retry=0", &format!("@{SERVER_OWN}"), "www.example.com", "AAAA"]);
        String::from_utf8_lossy(&out.stdout).contains("status: REFUSED")
    });
    let (st, log) = s.stop();
    assert!(gone, "expired: no longer served: {log}");
    assert!(st.success(), "{log}");
    assert!(log.contains("zone example.com. expired"), "{log}");
    let line = log.lines().find(|l| l.starts_with("dns secondary:")).unwrap_or_else(|| panic!("{log}"));
    let up_to_date: u64 = line.split("up to date ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    assert!(up_to_date >= 1 && line.contains("expired 1"), "{line}");
    assert!(log.contains("dns secondary: last failure: the connection was refused"), "{log}");
    assert!(line.ends_with(" refused 4"), "unsigned, stranger, other zone, bad signature: {line}");

    // The file it stored is served at the next start, before any primary answers.
    let again = start_secondary(&net, &dir, &stored);
    let served = ask(&net, SERVER_OWN, 53, "www.example.com", "AAAA");
    let (st, log) = again.stop();
    assert_eq!(served, "2001:db8::7", "{log}");
    assert!(st.success(), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
