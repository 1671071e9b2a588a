//! Differential tests: sirocco dns, NSD and Knot DNS serve the same zones in the server
//! namespace; a corpus of queries goes to all three from the client namespace, and the
//! answers must agree where the RFCs say what they must be.
//!
//! Over UDP and, on one connection per server, over TCP, where no answer is truncated.
//!
//! Compared: rcode (extended included), AA, TC, the answer section (as a set), the SOA in
//! authority, the NS in authority and the glue of referrals, and the additional addresses
//! (sirocco's must be among the reference's: NSD also adds the zone's NS and their
//! addresses to positive answers, which no RFC requires). Deliberate differences:
//! - ANY (RFC 8482): every server answers one RRset of its own choosing; sirocco's must be
//!   an RRset the reference gives for that type.
//! - CHAOS TXT version.bind / id.server: NSD and Knot reveal themselves; sirocco refuses.

use crate::common::*;
use domain::base::iana::Rtype;
use domain::base::{Message, ParsedName, Record};
use domain::rdata::AllRecordData;
use std::collections::{BTreeSet, HashMap};
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NSD_PORT: u16 = 5301;
const KNOT_PORT: u16 = 5302;

/// Where the queries go, per address family: sirocco's own address, the references' (the
/// kernel's), and the client's.
#[derive(Clone, Copy)]
struct Family {
    ours: &'static str,
    theirs: &'static str,
    client: &'static str,
}

const V4: Family = Family { ours: SERVER_OWN, theirs: SERVER, client: CLIENT };
const V6: Family = Family { ours: SERVER_OWN6, theirs: SERVER6, client: CLIENT6 };

impl Family {
    fn dst(&self, port: u16) -> String {
        let host = if port == 53 { self.ours } else { self.theirs };
        std::net::SocketAddr::new(host.parse().unwrap(), port).to_string()
    }
}

/// A reference server process, killed on drop.
struct RefServer {
    name: &'static str,
    child: Child,
    port: u16,
}

impl Drop for RefServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sirocco-diff-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// nsd in `ns` in the foreground with the configuration `conf`, written in `dir` with its log
/// beside it.
pub fn spawn_nsd(ns: &str, dir: &Path, conf: &str) -> std::process::Child {
    let path = dir.join("nsd.conf");
    std::fs::write(&path, conf).unwrap();
    Command::new("ip")
        .args(["netns", "exec", ns, "nsd", "-d", "-c"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("nsd.log")).unwrap())
        .spawn()
        .expect("nsd (apt install nsd)")
}

fn start_nsd(net: &TestNet, dir: &Path, zones: &[(&str, &Path)]) -> RefServer {
    let mut conf = format!(
        "server:\n  ip-address: {SERVER}@{NSD_PORT}\n  ip-address: {SERVER6}@{NSD_PORT}\n  username: \"\"\n  zonesdir: \"{d}\"\n  database: \"\"\n  \
         pidfile: \"{d}/nsd.pid\"\n  xfrdfile: \"{d}/xfrd.state\"\n  zonelistfile: \"{d}/zone.list\"\n  \
         server-count: 1\n  rrl-ratelimit: 0\n  verbosity: 1\nremote-control:\n  control-enable: no\n",
        d = dir.display()
    );
    for (origin, file) in zones {
        conf += &format!("zone:\n  name: {origin}\n  zonefile: {}\n", file.display());
    }
    RefServer { name: "NSD", child: spawn_nsd(&net.srv_ns, dir, &conf), port: NSD_PORT }
}

fn start_knot(net: &TestNet, dir: &Path, zones: &[(&str, &Path)]) -> RefServer {
    let d = dir.join("knot");
    std::fs::create_dir_all(&d).unwrap();
    let mut conf = format!(
        "server:\n  listen: [ {SERVER}@{KNOT_PORT}, {SERVER6}@{KNOT_PORT} ]\n  rundir: {d}\nlog:\n  - target: stderr\n    any: warning\n\
         database:\n  storage: {d}\ntemplate:\n  - id: default\n    storage: {d}\n    journal-content: none\n    \
         zonefile-sync: -1\nzone:\n",
        d = d.display()
    );
    for (origin, file) in zones {
        conf += &format!("  - domain: {origin}\n    file: {}\n", file.display());
    }
    let path = dir.join("knot.conf");
    std::fs::write(&path, conf).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", &net.srv_ns, "knotd", "-c"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("knot.log")).unwrap())
        .spawn()
        .expect("knotd (apt install knot)");
    RefServer { name: "Knot", child, port: KNOT_PORT }
}

/// One question of the corpus.
#[derive(Debug, Clone)]
struct Q {
    name: String,
    qtype: u16,
    qclass: u16,
    edns: Option<u16>,
    /// The DO bit (with EDNS).
    dnssec: bool,
}

fn query(id: u16, q: &Q) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend([0, 0, 0, 1, 0, 0, 0, 0, 0, u8::from(q.edns.is_some())]);
    m.extend(dns::name::wire_from_text(&q.name).expect("a valid name"));
    m.extend(q.qtype.to_be_bytes());
    m.extend(q.qclass.to_be_bytes());
    if let Some(size) = q.edns {
        m.extend([0, 0, 41]);
        m.extend(size.to_be_bytes());
        m.extend([0, 0, if q.dnssec { 0x80 } else { 0 }, 0, 0, 0]);
    }
    m
}

/// A response reduced to what is compared.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Norm {
    rcode: u16,
    aa: bool,
    tc: bool,
    answer: BTreeSet<String>,
    soa: BTreeSet<String>,
    ns: BTreeSet<String>,
    addresses: BTreeSet<String>,
    /// DNSSEC records in the authority section: NSEC, NSEC3, DS and every RRSIG.
    dnssec: BTreeSet<String>,
    /// The DO bit of the response's OPT.
    dnssec_ok: bool,
}

type Parsed<'a> = Record<ParsedName<&'a [u8]>, AllRecordData<&'a [u8], ParsedName<&'a [u8]>>>;

fn records(msg: &Message<Vec<u8>>, section: usize) -> Vec<(Rtype, String)> {
    let sec = match section {
        0 => msg.answer().unwrap(),
        1 => msg.authority().unwrap(),
        _ => msg.additional().unwrap(),
    };
    let mut out = Vec::new();
    for rr in sec {
        let rr = rr.expect("record parses");
        let t = rr.rtype();
        if t == Rtype::OPT {
            continue;
        }
        let r: Parsed<'_> = rr.to_record().expect("record data parses").expect("known");
        out.push((t, r.to_string().to_ascii_lowercase()));
    }
    out
}

fn normalise(bytes: Vec<u8>) -> Norm {
    let msg = Message::from_octets(bytes).expect("a DNS message");
    let h = msg.header();
    let ext = msg.opt().map(|o| o.rcode(h).to_int()).unwrap_or(u16::from(h.rcode().to_int()));
    let pick = |s: usize, f: &dyn Fn(Rtype) -> bool| -> BTreeSet<String> {
        records(&msg, s).into_iter().filter(|(t, _)| f(*t)).map(|(_, r)| r).collect()
    };
    Norm {
        rcode: ext,
        aa: h.aa(),
        tc: h.tc(),
        answer: pick(0, &|_| true),
        soa: pick(1, &|t| t == Rtype::SOA),
        ns: pick(1, &|t| t == Rtype::NS),
        addresses: pick(2, &|t| t == Rtype::A || t == Rtype::AAAA),
        // The RRSIGs of the apex NS that NSD adds with the NS to positive answers are left
        // out, with the NS (a delegation's NS is never signed).
        dnssec: pick(1, &|t| matches!(t, Rtype::NSEC | Rtype::NSEC3 | Rtype::DS | Rtype::RRSIG))
            .into_iter()
            .filter(|r| !r.contains(" rrsig ns "))
            .collect(),
        dnssec_ok: msg.opt().is_some_and(|o| o.dnssec_ok()),
    }
}

/// How the corpus is sent: over UDP, or over TCP on one connection per server (RFC 7766
/// reuse), opened again if a server closed it.
struct Asker {
    sock: UdpSocket,
    fam: Family,
    tcp: Option<HashMap<u16, TcpStream>>,
}

impl Asker {
    fn ask(&mut self, port: u16, id: u16, q: &Q) -> Vec<u8> {
        let m = query(id, q);
        let dst = self.fam.dst(port);
        match &mut self.tcp {
            None => ask_udp(&self.sock, &dst, &m, id, q),
            Some(conns) => {
                for _ in 0..3 {
                    let c = match conns.entry(port) {
                        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                        std::collections::hash_map::Entry::Vacant(v) => {
                            let c = TcpStream::connect_timeout(&dst.parse().unwrap(), Duration::from_secs(5)).unwrap();
                            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                            v.insert(c)
                        }
                    };
                    match ask_tcp(c, &m, id) {
                        Ok(a) => return a,
                        Err(_) => drop(conns.remove(&port)),
                    }
                }
                panic!("no answer over TCP from port {port} to {q:?}")
            }
        }
    }
}

/// Sends `m` and waits for the matching response (three tries).
fn ask_udp(sock: &UdpSocket, dst: &str, m: &[u8], id: u16, q: &Q) -> Vec<u8> {
    let mut buf = [0u8; 65535];
    for _ in 0..3 {
        sock.send_to(m, dst).unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            match sock.recv_from(&mut buf) {
                Ok((n, _)) if n >= 2 && buf[..2] == id.to_be_bytes() => return buf[..n].to_vec(),
                Ok(_) => continue,
                Err(_) => break,
            }
        }
    }
    panic!("no answer from {dst} to {q:?}");
}

/// Sends `m` framed on `c` and reads the framed answer.
fn ask_tcp(c: &mut TcpStream, m: &[u8], id: u16) -> std::io::Result<Vec<u8>> {
    let mut framed = (m.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(m);
    c.write_all(&framed)?;
    let mut len = [0u8; 2];
    c.read_exact(&mut len)?;
    let mut a = vec![0u8; usize::from(u16::from_be_bytes(len))];
    c.read_exact(&mut a)?;
    if a.len() < 2 || a[..2] != id.to_be_bytes() {
        return Err(std::io::Error::other("answer to another query"));
    }
    Ok(a)
}

/// Compares sirocco's answer with a reference server's; Err says how they differ.
fn compare(asker: &mut Asker, (ours, theirs): (&Norm, &Norm), q: &Q, port: u16, id: u16) -> Result<(), String> {
    // For QCLASS * NSD clears AA and leaves the SOA out of NODATA; sirocco answers as Knot
    // does, and is held to Knot only there.
    let aa_matters = q.qclass != 255 || port == KNOT_PORT;
    if q.qtype == 46 && port == KNOT_PORT && ours.rcode == theirs.rcode {
        // QTYPE RRSIG: NSD answers every signature at the name, as sirocco does; Knot one
        // covered type's (which may fit where all do not).
        if !ours.tc && !theirs.answer.is_subset(&ours.answer) {
            return Err(format!("RRSIG answer {:?} is not within {:?}", theirs.answer, ours.answer));
        }
        return Ok(());
    }
    if (ours.rcode, ours.tc) != (theirs.rcode, theirs.tc) || (aa_matters && ours.aa != theirs.aa) {
        return Err(format!(
            "rcode/aa/tc {:?} vs {:?}",
            (ours.rcode, ours.aa, ours.tc),
            (theirs.rcode, theirs.aa, theirs.tc)
        ));
    }
    let through_dname = ours.answer.iter().any(|r| r.split_whitespace().nth(3) == Some("dname"));
    if q.qtype == 255 && !ours.answer.is_empty() && ours.ns.is_empty() && !through_dname {
        // RFC 8482: one RRset (with its signatures), which must be what the reference has
        // for that type.
        let rtype_of = |r: &String| r.split_whitespace().nth(3).unwrap().to_string();
        let t = ours.answer.iter().map(rtype_of).find(|t| t != "rrsig").unwrap_or_else(|| "rrsig".into());
        if ours.answer.iter().any(|r| rtype_of(r) != t && rtype_of(r) != "rrsig") {
            return Err(format!("ANY answered with more than one RRset: {:?}", ours.answer));
        }
        let qt = match t.strip_prefix("type") {
            Some(n) => n.parse().unwrap(),
            None => Rtype::from_mnemonic(t.to_ascii_uppercase().as_bytes()).map(|r| r.to_int()).unwrap(),
        };
        let direct = normalise(asker.ask(port, id ^ 0x5555, &Q { qtype: qt, ..q.clone() }));
        if theirs.answer.is_empty() || ours.answer != direct.answer {
            return Err(format!("ANY: {:?} is not the reference's {t} RRset {:?}", ours.answer, direct.answer));
        }
    } else if ours.answer != theirs.answer {
        return Err(format!("answer {:?} vs {:?}", ours.answer, theirs.answer));
    }
    if ours.soa != theirs.soa && aa_matters {
        return Err(format!("authority SOA {:?} vs {:?}", ours.soa, theirs.soa));
    }
    if ours.dnssec_ok != theirs.dnssec_ok {
        return Err(format!("DO {} vs {}", ours.dnssec_ok, theirs.dnssec_ok));
    }
    // A query for a wildcard's own name: NSD proves its NODATA as for a name the wildcard
    // stands for (with the parent's NSEC3 too); sirocco as Knot does, the name's NSEC3 alone.
    let nsd_wild = port == NSD_PORT && q.name.starts_with('*') && ours.dnssec.is_subset(&theirs.dnssec);
    if ours.dnssec != theirs.dnssec && aa_matters && !nsd_wild {
        return Err(format!("authority DNSSEC records\n  {:?}\nvs\n  {:?}", ours.dnssec, theirs.dnssec));
    }
    if !ours.aa && (ours.ns != theirs.ns || ours.addresses != theirs.addresses) {
        return Err(format!("referral {:?} {:?} vs {:?} {:?}", ours.ns, ours.addresses, theirs.ns, theirs.addresses));
    }
    if !ours.addresses.is_subset(&theirs.addresses) {
        return Err(format!("additional {:?} not in {:?}", ours.addresses, theirs.addresses));
    }
    Ok(())
}

/// Waits until a server answers the zone's SOA query.
fn wait_ready(sock: &UdpSocket, fam: Family, port: u16, origin: &str, limit: Duration) {
    let q = Q { name: origin.into(), qtype: 6, qclass: 1, edns: None, dnssec: false };
    let dst = fam.dst(port);
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    while start.elapsed() < limit {
        let _ = sock.send_to(&query(1, &q), &dst);
        if let Ok((n, _)) = sock.recv_from(&mut buf) {
            if n > 12 && buf[3] & 0x0f == 0 && buf[7] > 0 {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("server on port {port} did not load {origin} within {limit:?}");
}

/// Letter case games: every other letter upper-cased, for some queries.
fn mixed_case(s: &str, k: usize) -> String {
    if !k.is_multiple_of(3) {
        return s.to_string();
    }
    s.chars().enumerate().map(|(i, c)| if i % 2 == 0 { c.to_ascii_uppercase() } else { c }).collect()
}

/// Runs the corpus against sirocco and the references; returns every disagreement.
fn run_corpus(
    net: &TestNet,
    fam: Family,
    tcp: bool,
    refs: &[&RefServer],
    origins: &[String],
    corpus: Vec<Q>,
) -> (usize, Vec<String>) {
    let ports: Vec<(&'static str, u16)> = refs.iter().map(|r| (r.name, r.port)).collect();
    let origins = origins.to_vec();
    in_netns(&net.cli_ns, move || {
        let sock = UdpSocket::bind(std::net::SocketAddr::new(fam.client.parse().unwrap(), 0)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        for o in &origins {
            wait_ready(&sock, fam, 53, o, Duration::from_secs(120));
            for &(_, p) in &ports {
                wait_ready(&sock, fam, p, o, Duration::from_secs(300));
            }
        }
        let mut diffs = Vec::new();
        let mut asker = Asker { sock, fam, tcp: tcp.then(HashMap::new) };
        for (i, q) in corpus.iter().enumerate() {
            let id = (i as u16).wrapping_mul(7919).wrapping_add(3);
            let ours = normalise(asker.ask(53, id, q));
            for &(name, port) in &ports {
                let theirs = normalise(asker.ask(port, id, q));
                if let Err(e) = compare(&mut asker, (&ours, &theirs), q, port, id) {
                    diffs.push(format!(
                        "{name}: {} {} class {} edns {:?} do {}: {e}",
                        q.name, q.qtype, q.qclass, q.edns, q.dnssec
                    ));
                }
            }
        }
        (corpus.len(), diffs)
    })
}

/// The corpus for a zone: every name with the types it has and the common ones, names
/// below every name, letter cases, EDNS sizes, ANY, classes, and names outside.
fn corpus_for(zone: &dns_server::zone::Zone, sample: usize, dnssec: bool) -> Vec<Q> {
    let mut names: Vec<(String, Vec<u16>)> =
        zone.nodes.iter().map(|(n, sets)| (text_name(n), sets.iter().map(|s| s.rtype).collect())).collect();
    names.sort();
    let step = (names.len() / sample.max(1)).max(1);
    let common = [1u16, 28, 2, 15, 16, 6, 5, 43, 33, 255, 65534];
    let edns = match dnssec {
        false => [None, Some(1232), Some(4096), Some(512), None],
        true => [Some(1232), Some(4096), Some(1232), Some(4096), Some(1232)],
    };
    let mut out = Vec::new();
    let mut k = 0;
    for (name, types) in names.iter().step_by(step) {
        let mut ts: Vec<u16> = common.to_vec();
        ts.extend(types);
        ts.sort_unstable();
        ts.dedup();
        for t in ts {
            k += 1;
            out.push(Q { name: mixed_case(name, k), qtype: t, qclass: 1, edns: edns[k % edns.len()], dnssec });
        }
        let mut below = vec![format!("nx.{name}"), format!("a.b.{name}")];
        if let Some(parent) = name.strip_prefix("*.") {
            // Names the wildcard stands for, sorting before and after its other children.
            below.extend([format!("0.{parent}"), format!("zz.{parent}"), format!("a.b.{parent}")]);
        }
        for below in below {
            for t in [1u16, 28, 255] {
                k += 1;
                out.push(Q { name: mixed_case(&below, k), qtype: t, qclass: 1, edns: edns[k % edns.len()], dnssec });
            }
        }
        out.push(Q { name: name.to_string(), qtype: 1, qclass: 255, edns: None, dnssec: false });
        out.push(Q { name: name.to_string(), qtype: 1, qclass: 3, edns: None, dnssec: false });
    }
    let origin = zone.origin.to_string();
    for outside in ["example.org.", "org.", ".", "xn--nxasmq6b.test."] {
        if !outside.ends_with(&origin) {
            out.push(Q { name: outside.into(), qtype: 1, qclass: 1, edns: Some(1232), dnssec });
        }
    }
    out
}

/// A wire-format name as text (zone names here are plain letters, digits, '-', '_', '*').
fn text_name(w: &[u8]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while w[i] != 0 {
        let l = usize::from(w[i]);
        s.push_str(std::str::from_utf8(&w[i + 1..i + 1 + l]).unwrap());
        s.push('.');
        i += 1 + l;
    }
    if s.is_empty() {
        s.push('.');
    }
    s
}

fn data(file: &str) -> PathBuf {
    PathBuf::from(format!("{}/../tests/data/{file}", env!("CARGO_MANIFEST_DIR")))
}

fn differential(fam: Family, zones: &[(&str, PathBuf)], sample: usize) {
    differential_over(fam, false, false, zones, sample, false);
}

/// The differential with the corpus sent over TCP (`tcp`) or UDP, with the DO bit set
/// (`dnssec`) or not, answered in the XDP program where it can (`xdp`) or by the engines.
fn differential_over(fam: Family, tcp: bool, dnssec: bool, zones: &[(&str, PathBuf)], sample: usize, xdp: bool) {
    let net = TestNet::new(1);
    let dir = tmpdir(&net.name);
    let specs: Vec<(&str, &Path)> = zones.iter().map(|(o, p)| (*o, p.as_path())).collect();
    // Both families served at once, whichever the corpus uses.
    let mut args = vec!["dns", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--addr", SERVER_OWN6];
    if xdp {
        net.xdp_peer();
        args.extend(["--xdp-answers", "on"]);
    }
    let zone_args: Vec<String> = zones.iter().map(|(o, p)| format!("{o}={}", p.display())).collect();
    for z in &zone_args {
        args.extend(["--zone", z.as_str()]);
    }
    let s = net.start(&args);
    let nsd = start_nsd(&net, &dir, &specs);
    let knot = start_knot(&net, &dir, &specs);
    let mut corpus = Vec::new();
    let mut origins = Vec::new();
    for (o, p) in zones {
        let z = dns_server::zone::load(p, Some(o)).expect("zone loads");
        corpus.extend(corpus_for(&z, sample, dnssec));
        origins.push(o.to_string());
    }
    let (n, diffs) = run_corpus(&net, fam, tcp, &[&nsd, &knot], &origins, corpus);
    drop((nsd, knot));
    let (status, log) = s.stop();
    assert!(status.success(), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(n > 100, "a real corpus ({n} queries)");
    if tcp {
        let line = log.lines().find(|l| l.starts_with("dns over tcp:")).unwrap_or_else(|| panic!("{log}"));
        let answers: usize =
            line.split("| answers ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
        assert!(answers >= n, "the corpus went over TCP: {line}");
    }
    assert!(diffs.is_empty(), "{} of {n} queries disagree:\n{}", diffs.len(), diffs.join("\n"));
    if xdp {
        // Most of the corpus is answered in the program; the rest (ANY, classes, names
        // outside, NSEC chosen per name) by the engine — and with DO, signed answers that
        // grow the frame by more than veth's small buffers leave room for.
        let a = answered_in_xdp(&log) as usize;
        let part = if dnssec { 8 } else { 4 };
        assert!(a * part >= n, "{a} of {n} queries answered in XDP: {log}");
    }
    // CHAOS identity queries: refused (the deliberate difference).
}

#[test]
fn agrees_with_nsd_and_knot_on_the_rules_zone() {
    differential(V4, &[("example.com", data("rules.zone"))], usize::MAX);
}

#[test]
fn agrees_with_nsd_and_knot_on_the_rules_zone_over_tcp() {
    differential_over(V4, true, false, &[("example.com", data("rules.zone"))], usize::MAX, false);
}

/// The rules zone signed by ldns-signzone with fresh keys (NSEC, or NSEC3 with `nsec3`
/// arguments): signatures are valid from now, so the zone is signed at test time.
pub fn signed_rules_zone(dir: &Path, nsec3: &[&str]) -> PathBuf {
    let keygen = |args: &[&str]| {
        let out = Command::new("ldns-keygen")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("ldns-keygen (apt install ldnsutils)");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let ksk = keygen(&["-a", "ECDSAP256SHA256", "-k", "example.com"]);
    let zsk = keygen(&["-a", "ECDSAP256SHA256", "example.com"]);
    let mut zone = std::fs::read_to_string(data("rules.zone")).unwrap();
    for k in [&ksk, &zsk] {
        zone += &std::fs::read_to_string(dir.join(format!("{k}.key"))).unwrap();
    }
    let unsigned = dir.join("rules.zone");
    std::fs::write(&unsigned, zone).unwrap();
    let signed = dir.join("rules.zone.signed");
    let out = Command::new("ldns-signzone")
        .args(nsec3)
        .args(["-o", "example.com", "-f"])
        .arg(&signed)
        .arg(&unsigned)
        .args([&ksk, &zsk])
        .current_dir(dir)
        .output()
        .expect("ldns-signzone (apt install ldnsutils)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    signed
}

#[test]
fn agrees_with_nsd_and_knot_on_the_signed_rules_zone_with_do() {
    let dir = tmpdir("nsec");
    let zone = signed_rules_zone(&dir, &[]);
    differential_over(V4, false, true, &[("example.com", zone.clone())], usize::MAX, false);
    // The same zone without DO: answers as if unsigned.
    differential_over(V4, false, false, &[("example.com", zone)], usize::MAX, false);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn agrees_with_nsd_and_knot_on_the_nsec3_signed_rules_zone_with_do() {
    // No salt and no extra iterations (RFC 9276), then a salt, iterations and opt-out.
    for (tag, args) in [("nsec3", &["-n", "-t", "0"][..]), ("optout", &["-n", "-p", "-s", "a1b2c3", "-t", "3"][..])] {
        let dir = tmpdir(tag);
        let zone = signed_rules_zone(&dir, args);
        differential_over(V4, false, true, &[("example.com", zone)], usize::MAX, false);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn agrees_with_nsd_and_knot_on_the_rules_zone_over_ipv6() {
    differential(V6, &[("example.com", data("rules.zone"))], usize::MAX);
}

#[test]
fn agrees_with_nsd_and_knot_answered_in_xdp() {
    let rules = [("example.com", data("rules.zone"))];
    differential_over(V4, false, false, &rules, usize::MAX, true);
    differential_over(V6, false, false, &rules, usize::MAX, true);
}

#[test]
fn agrees_with_nsd_and_knot_on_signed_zones_answered_in_xdp() {
    for (tag, args) in [("xnsec", &[][..]), ("xnsec3", &["-n", "-t", "0"][..])] {
        let dir = tmpdir(tag);
        let zone = signed_rules_zone(&dir, args);
        differential_over(V4, false, true, &[("example.com", zone.clone())], usize::MAX, true);
        differential_over(V4, false, false, &[("example.com", zone)], usize::MAX, true);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Every query of `corpus` to sirocco (IPv4), each raw answer.
fn raw_answers(net: &TestNet, corpus: &[Q]) -> Vec<Vec<u8>> {
    let corpus = corpus.to_vec();
    in_netns(&net.cli_ns, move || {
        let sock = UdpSocket::bind(std::net::SocketAddr::new(V4.client.parse().unwrap(), 0)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        wait_ready(&sock, V4, 53, "example.com", Duration::from_secs(60));
        let dst = V4.dst(53);
        corpus
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let id = (i as u16).wrapping_mul(7919).wrapping_add(3);
                ask_udp(&sock, &dst, &query(id, q), id, q)
            })
            .collect()
    })
}

#[test]
fn answers_in_xdp_are_the_engines_bytes() {
    // The rules zone's corpus, each query in its letter cases, asked of the program and of
    // the engines: the same bytes back, header to OPT. Names of 32 wire bytes and less are
    // kept in an index of their own: names on both sides of that line, and longer names
    // whose closest encloser is short, are added.
    let dir = tmpdir("xdp-bytes");
    let path = dir.join("rules-long.zone");
    let mut text = std::fs::read_to_string(data("rules.zone")).unwrap();
    text += "eighteen-chars-abc A 198.18.1.11\nnineteen-chars-abcd A 198.18.1.12\n";
    text += "a-long-owner-name-for-the-long-index A 198.18.1.13\na-long-owner-name-for-the-long-index MX 10 mail\n";
    text += "*.w.a-long-owner-name-for-the-long-index A 198.18.1.14\n";
    std::fs::write(&path, text).unwrap();
    let z = dns_server::zone::load(&path, Some("example.com")).expect("zone loads");
    let mut corpus = corpus_for(&z, usize::MAX, false);
    corpus.extend(corpus_for(&z, usize::MAX, true).into_iter().filter(|q| q.dnssec));
    let zone = format!("example.com={}", path.display());
    let mut answers = Vec::new();
    for mode in ["on", "off"] {
        let net = TestNet::new(1);
        net.xdp_peer();
        let s = net.start_dns(&zone, &["--xdp-answers", mode]);
        answers.push(raw_answers(&net, &corpus));
        let (st, log) = s.stop();
        assert!(st.success(), "{log}");
        if mode == "on" {
            let a = answered_in_xdp(&log) as usize;
            assert!(a * 2 >= corpus.len(), "{a} of {} queries answered in XDP: {log}", corpus.len());
        } else {
            assert!(!log.contains("dns in xdp:"), "off means off: {log}");
        }
    }
    let differ: Vec<String> = corpus
        .iter()
        .zip(answers[0].iter().zip(&answers[1]))
        .filter(|(_, (a, b))| a != b)
        .map(|(q, (a, b))| format!("{q:?}:\n  xdp    {a:02x?}\n  engine {b:02x?}"))
        .collect();
    assert!(differ.is_empty(), "{} of {} answers differ:\n{}", differ.len(), corpus.len(), differ.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A generated zone of `n` names: addresses, IPv6, MX, CNAMEs, TXT under empty
/// non-terminals, a wildcard and delegations with glue.
fn generated_zone(dir: &Path, n: usize) -> PathBuf {
    use std::fmt::Write as _;
    let mut z = String::with_capacity(n * 30);
    z += "$ORIGIN gen.test.\n$TTL 300\n@ SOA ns1 hostmaster 1 7200 3600 1209600 60\n@ NS ns1\nns1 A 198.18.3.1\n";
    z += "*.wild A 198.18.3.2\n*.wild AAAA 2001:db8::2\n";
    for i in 0..n {
        let _ = match i % 10 {
            0..=5 => writeln!(z, "h{i} A 198.18.{}.{}", (i >> 8) & 255, i & 255),
            6 => writeln!(z, "h{i} AAAA 2001:db8::{:x}:{:x}", i >> 16, i & 0xffff),
            7 => writeln!(z, "h{i} MX 10 h{}", i - 1),
            8 => writeln!(z, "h{i} CNAME h{}", i - 8),
            _ if i % 1000 == 9 => writeln!(z, "s{i} NS ns.s{i}\nns.s{i} A 198.18.4.{}", i % 250),
            _ => writeln!(z, "h{i}.d{} TXT \"name {i}\"", i % 100),
        };
    }
    let p = dir.join("gen.zone");
    std::fs::write(&p, z).unwrap();
    p
}

#[test]
fn agrees_with_nsd_and_knot_on_a_million_names() {
    let dir = tmpdir("gen");
    let zone = generated_zone(&dir, 1_000_000);
    differential(V4, &[("gen.test", zone)], 300);
    let _ = std::fs::remove_dir_all(&dir);
}
