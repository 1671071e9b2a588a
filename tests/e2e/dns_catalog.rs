//! sirocco follows a catalog zone (RFC 9432) that Knot generates from its own configuration:
//! the member zones arrive as secondaries (a group's members from the group's primary),
//! a zone added to or removed from Knot is added to or removed from sirocco without a
//! restart, a member's new version comes by NOTIFY, and the catalog and its members stored
//! in files serve at the next start with the primary gone.

use crate::common::*;
use crate::dns_diff::tmpdir;
use crate::dns_xfr::{spawn_knot, wait_for, Knot};
use std::path::Path;
use std::time::Duration;

const PORT: u16 = 5303;
/// Knot's second listening port: the primary of the `gold` group's members.
const GOLD_PORT: u16 = 5304;
const SECRET: &str = "c2lyb2NjbyBjYXRhbG9nIGtleSAwMTIzNDU2Nzg5YWI=";

fn member_zone(dir: &Path, name: &str, serial: u32, last: u8) {
    let text = format!(
        "$ORIGIN {name}.\n$TTL 60\n@ SOA ns h {serial} 3600 600 86400 60\n@ NS ns\nns A 198.18.3.1\nwww A 198.18.3.{last}\n"
    );
    std::fs::write(dir.join(format!("{name}.zone")), text).unwrap();
}

/// Knot's configuration: the catalog it generates from `members` (name, group).
fn knot_conf(d: &Path, members: &[(&str, Option<&str>)]) -> String {
    let mut zones = String::from("  - domain: catalog.invalid\n    catalog-role: generate\n");
    for (name, group) in members {
        zones.push_str(&format!(
            "  - domain: {name}\n    file: {}/{name}.zone\n    catalog-role: member\n    catalog-zone: catalog.invalid\n",
            d.display()
        ));
        if let Some(g) = group {
            zones.push_str(&format!("    catalog-group: {g}\n"));
        }
    }
    format!(
        "server:\n  listen: [ {CLIENT}@{PORT}, {CLIENT}@{GOLD_PORT} ]\n  rundir: {d}\nlog:\n  - target: stderr\n    any: info\n\
         database:\n  storage: {d}\n\
         key:\n  - id: xfr.test\n    algorithm: hmac-sha256\n    secret: {SECRET}\n\
         remote:\n  - id: sirocco\n    address: {SERVER_OWN}@53\n    key: xfr.test\n\
         acl:\n  - id: sirocco\n    address: {SERVER_OWN}\n    key: xfr.test\n    action: transfer\n\
         template:\n  - id: default\n    storage: {d}\n    acl: sirocco\n    notify: sirocco\n    zonefile-sync: -1\n\
         zone:\n{zones}",
        d = d.display()
    )
}

/// sirocco following the catalog, stored under `dir`.
fn start_sirocco(net: &TestNet, dir: &Path) -> Sirocco {
    let conf = dir.join("sirocco.toml");
    std::fs::write(
        &conf,
        format!(
            "[[key]]\nname = \"xfr.test\"\nsecret = \"{SECRET}\"\n\n[[zone]]\nname = \"catalog.invalid\"\n\
             primary = [\"{CLIENT}@{PORT}\"]\ntsig_key = \"xfr.test\"\ncatalog = true\nfile = \"catalog.zone\"\n\
             member_dir = \"members\"\n\n[[zone.group]]\nname = \"gold\"\nprimary = [\"{CLIENT}@{GOLD_PORT}\"]\n"
        ),
    )
    .unwrap();
    let s = net.start(&["dns", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--config", conf.to_str().unwrap()]);
    s.wait_for_log("dns on port 53", Duration::from_secs(10));
    s
}

/// kdig's short answer and status for `name` A at sirocco.
fn ask(net: &TestNet, name: &str) -> (String, String) {
    let out = net.exec(&net.cli_ns, &["kdig", "+time=1", "+retry=0", &format!("@{SERVER_OWN}"), name, "A"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let status = text.split("status: ").nth(1).and_then(|r| r.split(';').next()).unwrap_or("no answer").to_string();
    let answer = text
        .lines()
        .skip_while(|l| !l.contains("ANSWER SECTION"))
        .nth(1)
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_default()
        .to_string();
    (status, answer)
}

fn answers(net: &TestNet, name: &str, want: &str) -> bool {
    wait_for(Duration::from_secs(20), || ask(net, name).1 == want)
}

#[test]
fn members_of_a_catalog_from_knot_come_and_go_without_a_restart() {
    // Two queues: the primary's replies to engine 0's transfers may reach engine 1.
    let net = TestNet::new(2);
    let dir = tmpdir(&format!("catalog-{}", net.name));
    let knot_dir = dir.join("knot");
    std::fs::create_dir_all(&knot_dir).unwrap();
    for (name, last) in [("a.example", 1), ("b.example", 2), ("c.example", 3)] {
        member_zone(&knot_dir, name, 1, last);
    }
    let knot: Knot =
        spawn_knot(&net.cli_ns, &knot_dir, &knot_conf(&knot_dir, &[("a.example", Some("gold")), ("b.example", None)]));
    let s = start_sirocco(&net, &dir);
    assert!(answers(&net, "www.a.example", "198.18.3.1"), "a.example: {}", s.log());
    assert!(answers(&net, "www.b.example", "198.18.3.2"), "b.example: {}", s.log());
    assert_eq!(ask(&net, "www.c.example").0, "REFUSED", "not in the catalog yet");

    // Knot's configuration gains c.example and loses b.example: its catalog follows, and
    // its NOTIFY brings the change to sirocco.
    std::fs::write(
        knot_dir.join("knot.conf"),
        knot_conf(&knot_dir, &[("a.example", Some("gold")), ("c.example", None)]),
    )
    .unwrap();
    knot.reload();
    assert!(answers(&net, "www.c.example", "198.18.3.3"), "c.example added: {}", s.log());
    assert!(
        wait_for(Duration::from_secs(20), || ask(&net, "www.b.example").0 == "REFUSED"),
        "b.example removed: {}",
        s.log()
    );
    // A member's own new version comes by its own NOTIFY.
    member_zone(&knot_dir, "a.example", 2, 9);
    knot.reload();
    assert!(answers(&net, "www.a.example", "198.18.3.9"), "a.example serial 2: {}", s.log());

    let members = dir.join("members");
    let mut stored: Vec<String> =
        std::fs::read_dir(&members).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    stored.sort();
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert_eq!(stored, ["a.example.zone", "c.example.zone"], "b.example's file removed with it");
    assert!(log.contains("catalog catalog.invalid.: zone a.example. added"), "{log}");
    // veth has no RSS to report: the start says how the replies reach engine 0 instead.
    assert!(log.contains("secondary transfers: its driver does not report its RSS"), "{log}");
    assert!(log.contains("catalog catalog.invalid.: zone b.example. removed"), "{log}");
    // The gold group's members come from the group's primary, the others from the catalog's.
    assert!(log.contains(&format!("zone a.example. serial 1 transferred from {CLIENT}@{GOLD_PORT}")), "{log}");
    assert!(log.contains(&format!("zone c.example. serial 1 transferred from {CLIENT}@{PORT}")), "{log}");
    let line = log.lines().find(|l| l.starts_with("dns secondary:")).unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("failed 0"), "{line}");

    // With the primary gone, the stored catalog and members serve at the next start.
    drop(knot);
    let again = start_sirocco(&net, &dir);
    let (a, c, b) = (ask(&net, "www.a.example"), ask(&net, "www.c.example"), ask(&net, "www.b.example"));
    let (st, log) = again.stop();
    assert!(st.success(), "{log}");
    assert_eq!(a.1, "198.18.3.9", "{log}");
    assert_eq!(c.1, "198.18.3.3", "{log}");
    assert_eq!(b.0, "REFUSED", "{log}");
    assert!(log.contains("zone a.example. added (serial 2 from its file)"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
