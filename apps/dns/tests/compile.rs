//! The zone compiler below the network: zone text is compiled into prepared responses, a
//! query is answered from them in a buffer, and the answer is read back with NLnet Labs'
//! `domain` parser (code sirocco did not write), section by section. Each case is one rule
//! of RFC 1034 §4.3.2 / RFC 6672 as an authoritative server applies it.

use std::path::Path;
use std::sync::Arc;

use dns_server::{zone, Catalog, CompiledZone, DnsServer};
use domain::base::iana::Rcode;
use domain::base::{Message, ParsedName};
use domain::rdata::AllRecordData;

const ZONE: &str = r#"
$ORIGIN example.
$TTL 300
@        SOA   ns1 hostmaster 2026112301 7200 3600 1209600 60
@        NS    ns1
ns1      A     198.18.0.53
www      A     198.18.0.80
www      AAAA  2001:2::80
alias    CNAME www
chain    CNAME alias
out      CNAME www.elsewhere.test.
loop1    CNAME loop2
loop2    CNAME loop1
*.wild   TXT   "wild"
a.b.c    A     198.18.0.3
sub      NS    ns.sub
ns.sub   A     198.18.0.54
old      DNAME new.example.
x.new    A     198.18.0.9
"#;

fn compiled(text: &str) -> CompiledZone {
    let z = zone::load_text(Path::new("t.zone"), text.as_bytes(), None).expect("zone loads");
    CompiledZone::compile(&z)
}

fn server(zones: &[&str]) -> DnsServer {
    DnsServer::new(Arc::new(Catalog::new(zones.iter().map(|t| compiled(t)).collect())), 53)
}

/// A response read back: header bits and each section as `owner TYPE data` lines.
#[derive(Debug)]
struct Answer {
    rcode: Rcode,
    aa: bool,
    answer: Vec<String>,
    authority: Vec<String>,
    additional: Vec<String>,
}

type Data<'a> = AllRecordData<&'a [u8], ParsedName<&'a [u8]>>;

fn lines(section: domain::base::RecordSection<'_, Vec<u8>>) -> Vec<String> {
    section
        .map(|rr| {
            let rr = rr.expect("record parses");
            let r = rr.into_any_record::<Data<'_>>().expect("record data parses");
            format!("{}. {} {}", r.owner(), r.rtype(), r.data()).to_lowercase()
        })
        .filter(|l| !l.contains(" opt "))
        .collect()
}

fn ask(s: &mut DnsServer, name: &str, qtype: u16) -> Answer {
    let mut q = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
    q.extend(dns::name::wire_from_text(name).expect("a valid name"));
    q.extend(qtype.to_be_bytes());
    q.extend([0, 1]);
    // EDNS, 4096-byte buffer: nothing here is truncated.
    q.extend([0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0]);
    let mut buf = vec![0u8; 4096];
    buf[..q.len()].copy_from_slice(&q);
    let r = s.respond(&mut buf, q.len()).expect("answered");
    buf.truncate(r.len);
    let m = Message::from_octets(buf).expect("a DNS message");
    assert_eq!(m.header().id(), 0x1234);
    assert!(m.header().qr(), "a response");
    assert!(!m.header().tc(), "not truncated");
    Answer {
        rcode: m.header().rcode(),
        aa: m.header().aa(),
        answer: lines(m.answer().unwrap()),
        authority: lines(m.authority().unwrap()),
        additional: lines(m.additional().unwrap()),
    }
}

const A: u16 = 1;
const NS: u16 = 2;
const SOA: u16 = 6;
const CNAME: u16 = 5;
const MX: u16 = 15;
const TXT: u16 = 16;
const AAAA: u16 = 28;
const DS: u16 = 43;
const ANY: u16 = 255;

fn soa_only(a: &Answer) -> bool {
    a.authority.len() == 1 && a.authority[0].starts_with("example. soa ")
}

#[test]
fn an_existing_name_and_type_is_answered_with_its_rrset() {
    let mut s = server(&[ZONE]);
    let a = ask(&mut s, "www.example.", A);
    assert_eq!((a.rcode, a.aa), (Rcode::NOERROR, true));
    assert_eq!(a.answer, ["www.example. a 198.18.0.80"]);
    let a = ask(&mut s, "www.example.", AAAA);
    assert_eq!(a.answer, ["www.example. aaaa 2001:2::80"]);
}

#[test]
fn names_match_in_any_letter_case() {
    let mut s = server(&[ZONE]);
    let a = ask(&mut s, "WwW.ExAmPlE.", A);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert_eq!(a.answer, ["www.example. a 198.18.0.80"]);
}

#[test]
fn a_missing_type_is_nodata_with_the_soa() {
    let mut s = server(&[ZONE]);
    let a = ask(&mut s, "www.example.", MX);
    assert_eq!((a.rcode, a.aa), (Rcode::NOERROR, true));
    assert!(a.answer.is_empty());
    assert!(soa_only(&a), "{a:?}");
    // The negative TTL is the SOA minimum (RFC 2308 §5): 60, less than the record's 300.
    assert!(a.authority[0].contains(" 60"), "{a:?}");
}

#[test]
fn a_missing_name_is_nxdomain_and_an_empty_non_terminal_is_not() {
    let mut s = server(&[ZONE]);
    let a = ask(&mut s, "nope.example.", A);
    assert_eq!((a.rcode, a.aa), (Rcode::NXDOMAIN, true));
    assert!(a.answer.is_empty() && soa_only(&a), "{a:?}");
    for ent in ["b.c.example.", "c.example."] {
        let a = ask(&mut s, ent, A);
        assert_eq!(a.rcode, Rcode::NOERROR, "{ent} exists: a name below it does");
        assert!(a.answer.is_empty() && soa_only(&a), "{ent}: {a:?}");
    }
    let a = ask(&mut s, "x.a.b.c.example.", A);
    assert_eq!(a.rcode, Rcode::NXDOMAIN);
}

#[test]
fn cname_chains_are_followed_inside_the_zone_and_stop_outside_it() {
    let mut s = server(&[ZONE]);
    let a = ask(&mut s, "chain.example.", A);
    assert_eq!(
        a.answer,
        ["chain.example. cname alias.example.", "alias.example. cname www.example.", "www.example. a 198.18.0.80"]
    );
    let a = ask(&mut s, "chain.example.", CNAME);
    assert_eq!(a.answer, ["chain.example. cname alias.example."], "asked for the CNAME itself");
    let a = ask(&mut s, "out.example.", A);
    assert_eq!((a.rcode, a.aa), (Rcode::NOERROR, true));
    assert_eq!(a.answer, ["out.example. cname www.elsewhere.test."]);
    // A chain whose end has no such type: the CNAMEs, then NODATA's SOA.
    let a = ask(&mut s, "alias.example.", MX);
    assert_eq!(a.answer, ["alias.example. cname www.example."]);
    assert!(soa_only(&a), "{a:?}");
}

#[test]
fn a_cname_loop_is_answered_without_looping() {
    let mut s = server(&[ZONE]);
    let a = ask(&mut s, "loop1.example.", A);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert!(!a.answer.is_empty() && a.answer.len() <= 20, "bounded: {a:?}");
    assert!(a.answer.iter().all(|l| l.contains(" cname ")), "{a:?}");
}

/// A chain's target that exists only as an empty non-terminal has no data of its own: not
/// its parent's, nor the apex's.
#[test]
fn a_cname_to_an_empty_non_terminal_ends_the_chain_with_nodata() {
    let zone = format!("{ZONE}toent CNAME b.c\ntoapex CNAME example.\n");
    let mut s = server(&[&zone]);
    for t in [NS, SOA, A] {
        let a = ask(&mut s, "toent.example.", t);
        assert_eq!(a.rcode, Rcode::NOERROR);
        assert_eq!(a.answer, ["toent.example. cname b.c.example."], "type {t}: {a:?}");
    }
    // The chain to a name with data still brings it.
    let a = ask(&mut s, "toapex.example.", NS);
    assert_eq!(a.answer, ["toapex.example. cname example.", "example. ns ns1.example."]);
}

#[test]
fn a_wildcard_answers_for_names_it_covers_under_their_own_name() {
    let mut s = server(&[ZONE]);
    for q in ["x.wild.example.", "deep.er.wild.example."] {
        let a = ask(&mut s, q, TXT);
        assert_eq!((a.rcode, a.aa), (Rcode::NOERROR, true));
        assert_eq!(a.answer, [format!("{q} txt \"wild\"")]);
    }
    let a = ask(&mut s, "x.wild.example.", A);
    assert_eq!(a.rcode, Rcode::NOERROR, "the wildcard owns the name, not the type");
    assert!(a.answer.is_empty() && soa_only(&a), "{a:?}");
    // `wild.example.` itself is an empty non-terminal, not covered by `*.wild`.
    let a = ask(&mut s, "wild.example.", TXT);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert!(a.answer.is_empty());
}

#[test]
fn a_delegation_refers_with_glue_and_is_not_authoritative() {
    let mut s = server(&[ZONE]);
    for q in ["sub.example.", "host.sub.example.", "ns.sub.example."] {
        let a = ask(&mut s, q, A);
        assert_eq!((a.rcode, a.aa), (Rcode::NOERROR, false), "{q}");
        assert!(a.answer.is_empty(), "{q}: {a:?}");
        assert_eq!(a.authority, ["sub.example. ns ns.sub.example."], "{q}");
        assert_eq!(a.additional, ["ns.sub.example. a 198.18.0.54"], "{q}: glue");
    }
    // DS lives on the parent side of the cut (RFC 4035 §3.1.4.1): authoritative NODATA here.
    let a = ask(&mut s, "sub.example.", DS);
    assert_eq!((a.rcode, a.aa), (Rcode::NOERROR, true));
    assert!(a.answer.is_empty() && soa_only(&a), "{a:?}");
}

#[test]
fn a_dname_rewrites_names_below_it() {
    let mut s = server(&[ZONE]);
    let a = ask(&mut s, "x.old.example.", A);
    assert_eq!((a.rcode, a.aa), (Rcode::NOERROR, true));
    assert_eq!(
        a.answer,
        ["old.example. dname new.example.", "x.old.example. cname x.new.example.", "x.new.example. a 198.18.0.9"]
    );
    let a = ask(&mut s, "y.old.example.", A);
    assert_eq!(a.rcode, Rcode::NXDOMAIN, "the rewritten name does not exist");
    assert_eq!(a.answer.len(), 2, "DNAME and CNAME still answered: {a:?}");
    // The DNAME owner itself is not rewritten.
    let a = ask(&mut s, "old.example.", A);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert!(a.answer.is_empty());
}

#[test]
fn any_is_answered_with_one_rrset() {
    // RFC 8482: one RRset is enough, and keeps ANY from being an amplifier.
    let mut s = server(&[ZONE]);
    let a = ask(&mut s, "www.example.", ANY);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert_eq!(a.answer.len(), 1, "{a:?}");
    assert!(a.answer[0].starts_with("www.example. a") || a.answer[0].starts_with("www.example. aaaa"));
}

#[test]
fn the_closest_zone_answers_outside_names_are_refused_and_ds_goes_to_the_parent() {
    let child = "$ORIGIN sub.example.\n$TTL 300\n@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns\nns A 198.18.0.54\nhost A 198.18.0.99\n";
    let mut s = server(&[ZONE, child]);
    let a = ask(&mut s, "host.sub.example.", A);
    assert_eq!((a.rcode, a.aa), (Rcode::NOERROR, true), "the child zone, not the parent's referral");
    assert_eq!(a.answer, ["host.sub.example. a 198.18.0.99"]);
    let a = ask(&mut s, "sub.example.", NS);
    assert_eq!((a.aa, a.answer.len()), (true, 1), "the child's apex NS, authoritatively");
    let a = ask(&mut s, "sub.example.", DS);
    assert!(soa_only(&a) && a.authority[0].starts_with("example. soa"), "DS from the parent: {a:?}");
    let a = ask(&mut s, "www.example.org.", A);
    assert_eq!(a.rcode, Rcode::REFUSED);
}

#[test]
fn identical_responses_are_stored_once() {
    let zone = |hosts: usize| {
        let mut z = String::from("$ORIGIN t.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.0.1\n");
        for i in 0..hosts {
            z.push_str(&format!("h{i} A 198.18.1.{}\n", i % 250));
        }
        compiled(&z)
    };
    let (ten, eleven) = (zone(10), zone(11));
    assert_eq!(eleven.names(), ten.names() + 1);
    // One more name adds its A answer only: its NODATA and NXDOMAIN are the zone's shared ones.
    assert_eq!(eleven.responses(), ten.responses() + 1);
    assert!(zone(1000).responses() < 1010);
}

/// A zone drafted on two threads (each half of the names against its own pool, merged)
/// answers every query exactly as the zone drafted whole: plain and signed (NSEC, NSEC3),
/// with and without DO, names that exist, do not, and fall under wildcards and cuts.
#[test]
fn a_zone_drafted_in_two_halves_answers_byte_for_byte_as_whole() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let texts = [
        ZONE.to_string(),
        std::fs::read_to_string(format!("{root}/tests/data/rules.zone")).unwrap(),
        std::fs::read_to_string(format!("{root}/fuzz/data/signed-nsec.zone")).unwrap(),
        std::fs::read_to_string(format!("{root}/fuzz/data/signed-nsec3.zone")).unwrap(),
    ];
    for text in &texts {
        let z = zone::load_text(Path::new("t.zone"), text.as_bytes(), None).expect("zone loads");
        let serve = |c: CompiledZone| DnsServer::new(Arc::new(Catalog::new(vec![c])), 53);
        let (mut whole, mut split) =
            (serve(CompiledZone::compile_split_from(&z, usize::MAX)), serve(CompiledZone::compile_split_from(&z, 0)));
        let origin = z.origin.to_string();
        let mut names: Vec<String> = z.nodes.keys().map(|k| dns::Name::from_wire(k).unwrap().to_string()).collect();
        names.sort();
        for extra in ["nothere", "a.b.nothere", "x.wild", "deep.x.wild", "y.sub", "z.old"] {
            names.push(format!("{extra}.{origin}"));
        }
        let mut asked = 0;
        for name in &names {
            for qtype in [A, NS, 6, CNAME, MX, TXT, AAAA, DS, 47, 50, ANY] {
                for dnssec in [false, true] {
                    let mut q = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
                    q.extend(dns::name::wire_from_text(name).unwrap());
                    q.extend(qtype.to_be_bytes());
                    q.extend([0, 1, 0, 0, 41, 0x10, 0, 0, 0, if dnssec { 0x80 } else { 0 }, 0, 0, 0]);
                    let answer = |s: &mut DnsServer| {
                        let mut buf = vec![0u8; 4096];
                        buf[..q.len()].copy_from_slice(&q);
                        let r = s.respond(&mut buf, q.len()).expect("answered");
                        buf.truncate(r.len);
                        buf
                    };
                    assert_eq!(answer(&mut whole), answer(&mut split), "{name} {qtype} DO {dnssec}");
                    asked += 1;
                }
            }
        }
        assert!(asked > 100, "{asked} queries");
    }
}
