//! Answers from a signed zone checked by a validating tool sirocco did not write: BIND's
//! `delv`, trusting the zone's own key, validates positive answers, wildcard expansions,
//! NODATA, NXDOMAIN and empty non-terminals served by sirocco from NSEC and NSEC3 (salted,
//! iterated) zones, and rejects an answer whose signature was tampered with.

use crate::common::*;
use crate::dns_diff::{signed_rules_zone, tmpdir};
use std::path::{Path, PathBuf};

/// A delv trust anchor file for the zone's key-signing key, taken from the signed zone.
fn anchor(dir: &Path, signed: &Path) -> String {
    let zone = std::fs::read_to_string(signed).unwrap();
    let ksk = zone
        .lines()
        .find(|l| l.contains("DNSKEY") && l.split_whitespace().nth(4) == Some("257"))
        .expect("a KSK in the signed zone");
    let f: Vec<&str> = ksk.split_whitespace().collect();
    let key: String = f[7..].iter().take_while(|w| !w.starts_with(';')).copied().collect();
    let text = format!("trust-anchors {{\n  example.com. static-key 257 3 {} \"{key}\";\n}};\n", f[6]);
    let path = dir.join("anchor.conf");
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn delv_validates_what_sirocco_serves_from_a_signed_zone() {
    let net = TestNet::new(1);
    // NSEC3 with a salt and iterations: the proofs of RFC 5155 section 7.2. (With opt-out,
    // which ldns-signzone sets on every NSEC3, a validator takes wildcard answers as
    // insecure, rightly: the differential covers that chain.)
    let dir = tmpdir(&format!("delv3-{}", net.name));
    validated(&net, &dir, &["-n", "-s", "a1b2", "-t", "2"]);
    let _ = std::fs::remove_dir_all(&dir);
    // NSEC, then a signature tampered with.
    let dir = tmpdir(&format!("delv-{}", net.name));
    let signed = validated(&net, &dir, &[]);
    tampered_is_refused(&net, &dir, &signed);
    let _ = std::fs::remove_dir_all(&dir);
}

fn delv(net: &TestNet, anchors: &str, name: &str, qtype: &str) -> String {
    let server = format!("@{SERVER_OWN}");
    let out = net.exec(&net.cli_ns, &["delv", &server, "-a", anchors, "+root=example.com", "+vtrace", name, qtype]);
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn serve(net: &TestNet, zone: &Path) -> Sirocco {
    net.start_dns(&format!("example.com={}", zone.display()), &[])
}

/// Signs the rules zone with `args`, serves it and has delv validate answers of every kind.
fn validated(net: &TestNet, dir: &Path, args: &[&str]) -> PathBuf {
    let signed = signed_rules_zone(dir, args);
    let anchors = anchor(dir, &signed);
    let s = serve(net, &signed);
    for (name, qtype, want) in [
        ("www.example.com", "A", "; fully validated"),
        ("www.example.com", "AAAA", "; fully validated"),
        ("example.com", "DNSKEY", "; fully validated"),
        ("example.com", "MX", "; fully validated"),
        ("anything.wild.example.com", "A", "; fully validated"),
        ("a.b.wild.example.com", "TXT", "; fully validated"),
        ("alias.example.com", "A", "; fully validated"),
        ("towild.example.com", "A", "; fully validated"),
        ("www.example.com", "TXT", "; negative response, fully validated"),
        ("c.ent.example.com", "A", "; negative response, fully validated"),
        ("anything.wild.example.com", "MX", "; negative response, fully validated"),
        ("towild.example.com", "MX", "; fully validated"),
        ("nothing.example.com", "A", "; negative response, fully validated"),
        ("a.b.nothing.example.com", "AAAA", "; negative response, fully validated"),
        ("zzz.example.com", "A", "; negative response, fully validated"),
        ("dangling.example.com", "A", "; fully validated"),
    ] {
        let out = delv(net, &anchors, name, qtype);
        assert!(out.contains(want), "delv {name} {qtype} ({args:?}): want {want:?}:\n{out}");
        // A chain ending in a denial: the CNAME validated, then the proven absence.
        let end = match name {
            "towild.example.com" if qtype == "MX" => "NXRRSET",
            "dangling.example.com" => "NXDOMAIN",
            _ => "",
        };
        assert!(out.contains(end), "delv {name} {qtype}: {end}:\n{out}");
    }
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    signed
}

/// The zone with one signature's bytes changed: delv must refuse that answer.
fn tampered_is_refused(net: &TestNet, dir: &Path, signed: &Path) {
    let anchors = anchor(dir, signed);
    let text = std::fs::read_to_string(signed).unwrap();
    let line =
        text.lines().find(|l| l.starts_with("www.example.com.") && l.contains("RRSIG\tA ")).expect("www's RRSIG A");
    let sig = line.split_whitespace().last().unwrap();
    let mut bad = sig.as_bytes().to_vec();
    bad[10] = if bad[10] == b'A' { b'B' } else { b'A' };
    let tampered = dir.join("tampered.zone");
    std::fs::write(&tampered, text.replace(sig, std::str::from_utf8(&bad).unwrap())).unwrap();
    let s = serve(net, &tampered);
    let out = delv(net, &anchors, "www.example.com", "A");
    assert!(!out.contains("; fully validated") && out.contains("resolution failed"), "tampered: {out}");
    assert!(delv(net, &anchors, "www.example.com", "AAAA").contains("; fully validated"), "the rest still validates");
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
}
