use super::*;
use crate::grants::Grants;
use crate::policy::Policy;
use crate::Flow;

const POLICY: &str = r#"
[[allow]]
user = "dns"
addrs = ["198.18.0.53"]
ports = ["udp/53", "tcp/53"]
max_pps = 200000

[[allow]]
uid = 1002
addrs = ["198.18.0.80", "198.18.0.81"]
ports = ["tcp/80", "tcp/8000-8099"]
max_queues = 2
"#;

fn want(s: &str) -> Want {
    match parse(s.as_bytes()).unwrap() {
        Request::Grant(w) => w,
        r => panic!("{r:?}"),
    }
}

#[test]
fn grants_follow_the_policy_and_never_overlap() {
    let p = Policy::parse(POLICY).unwrap();
    let mut g = Grants::default();
    let dns = want(r#"{"op":"grant","app":"dns1","addr":"198.18.0.53","proto":"udp","port":53,"pps":100000}"#);
    assert_eq!(g.add(&p, 1001, Some("dns"), dns.clone()), Ok(1));
    let again = Want { app: "dns2".into(), ..dns.clone() };
    assert_eq!(g.add(&p, 1001, Some("dns"), again).unwrap_err(), "198.18.0.53 udp/53 is granted to 'dns1' already");
    let web = want(r#"{"op":"grant","app":"web","addr":"198.18.0.81","proto":"tcp","port":8080,"queues":2}"#);
    assert_eq!(g.add(&p, 1002, None, web.clone()), Ok(2));
    // The web user may not take DNS's port, nor the DNS user the web's.
    let steal = Want { app: "x".into(), ..dns.clone() };
    assert!(g.add(&p, 1002, None, steal).unwrap_err().contains("not among the grants allowed"));
    assert!(g.add(&p, 1001, Some("dns"), Want { app: "y".into(), ..web.clone() }).is_err());
    assert_eq!(
        g.add(&p, 0, Some("root"), Want { app: "z".into(), flows: vec![Flow::port(Proto::Udp, 54)], ..dns.clone() })
            .unwrap_err(),
        "user root may not be granted anything"
    );
    assert_eq!(g.owner(web.addr, Proto::Tcp, 8080).map(|g| g.id), Some(2));
    assert_eq!(g.revoke("dns1").map(|g| g.id), Some(1));
    assert_eq!(g.add(&p, 1001, Some("dns"), dns), Ok(3), "free again after the revocation");
}

#[test]
fn a_grant_of_several_flows_and_a_port_range() {
    let p = Policy::parse(&format!("{POLICY}\n[[allow]]\nuser = \"dns\"\naddrs = [\"198.18.0.54\"]\nports = [\"udp/53\", \"tcp/53\", \"tcp/32768-60999\"]\n")).unwrap();
    let mut g = Grants::default();
    let text = r#"{"op":"grant","app":"dns","addr":"198.18.0.54","flows":["udp/53","tcp/53","tcp/32768-60999"]}"#;
    let dns = want(text);
    assert_eq!(dns.flows_text(), "udp/53 tcp/53 tcp/32768-60999");
    assert_eq!(g.add(&p, 1001, Some("dns"), dns.clone()), Ok(1));
    assert_eq!(g.owner(dns.addr, Proto::Tcp, 40000).map(|g| g.id), Some(1), "inside the range");
    assert_eq!(g.owner(dns.addr, Proto::Udp, 40000), None, "another protocol");
    // Any flow overlapping one in force is refused, a range against a port too.
    let one = want(r#"{"op":"grant","app":"x","addr":"198.18.0.54","flows":["tcp/40000"]}"#);
    assert_eq!(g.add(&p, 1001, Some("dns"), one).unwrap_err(), "198.18.0.54 tcp/40000 is granted to 'dns' already");
    // Every flow must be allowed, by one entry.
    let wider = want(r#"{"op":"grant","app":"y","addr":"198.18.0.53","flows":["udp/53","tcp/1000-2000"],"pps":1}"#);
    assert_eq!(
        g.add(&p, 1001, Some("dns"), wider).unwrap_err(),
        "198.18.0.53 tcp/1000-2000 is not among the grants allowed to this user"
    );
    assert_eq!(parse(grant_request(&dns).to_string().as_bytes()), Ok(Request::Grant(dns)));
    for (req, e) in [
        (r#"{"op":"grant","app":"a","addr":"198.18.0.54","flows":[]}"#, "\"flows\" must hold 1 to 4 flows"),
        (
            r#"{"op":"grant","app":"a","addr":"198.18.0.54","flows":["udp/1","udp/2","udp/3","udp/4","udp/5"]}"#,
            "\"flows\" must hold 1 to 4",
        ),
        (
            r#"{"op":"grant","app":"a","addr":"198.18.0.54","flows":["tcp/10-20","tcp/15"]}"#,
            "\"flows\": tcp/15 overlaps tcp/10-20",
        ),
        (
            r#"{"op":"grant","app":"a","addr":"198.18.0.54","flows":["tcp/20-10"]}"#,
            "\"flows\": 'tcp/20-10': PROTO/PORT",
        ),
        (r#"{"op":"grant","app":"a","addr":"198.18.0.54","flows":"udp/53"}"#, "\"flows\" must be a list"),
    ] {
        let got = parse(req.as_bytes()).unwrap_err();
        assert!(got.starts_with(e), "{req}: {got}");
    }
}

#[test]
fn caps_are_enforced() {
    let p = Policy::parse(POLICY).unwrap();
    let mut g = Grants::default();
    let mut w = want(r#"{"op":"grant","app":"d","addr":"198.18.0.53","proto":"tcp","port":53}"#);
    assert_eq!(
        g.add(&p, 1, Some("dns"), w.clone()).unwrap_err(),
        "a rate of at most 200000 packets/s must be asked for"
    );
    w.pps = Some(300_000);
    assert_eq!(g.add(&p, 1, Some("dns"), w.clone()).unwrap_err(), "300000 packets/s asked, at most 200000 allowed");
    let many = want(r#"{"op":"grant","app":"w","addr":"198.18.0.80","proto":"tcp","port":80,"queues":3}"#);
    assert_eq!(g.add(&p, 1002, None, many).unwrap_err(), "3 queues asked, 2 allowed");
    let big = r#"{"op":"grant","app":"w","addr":"198.18.0.80","proto":"tcp","port":80,"queues":2,"memory":268435456}"#;
    assert_eq!(g.add(&p, 1002, None, want(big)).unwrap_err(), "512 MiB of packet memory asked, 256 allowed");
    let small = want(r#"{"op":"grant","app":"w","addr":"198.18.0.80","proto":"tcp","port":80,"queues":2}"#);
    assert_eq!(small.memory, crate::DEFAULT_QUEUE_MEMORY);
    assert!(g.add(&p, 1002, None, small).is_ok());
}

#[test]
fn bad_requests_and_policies_say_what_is_wrong() {
    for (req, want) in [
        ("nope", "the request is not JSON"),
        ("[1]", "the request must be a JSON object"),
        (r#"{"op":"dance"}"#, "no op 'dance' (grant, status, revoke)"),
        (r#"{"op":"grant","app":"a b","addr":"198.18.9.9","proto":"udp","port":1}"#, "\"app\" must be 1 to 32"),
        (r#"{"op":"grant","app":"a","addr":"198.18.9","proto":"udp","port":1}"#, "\"addr\" must be an IPv4 address"),
        (
            r#"{"op":"grant","app":"a","addr":"198.18.9.9","proto":"sctp","port":1}"#,
            "\"proto\" must be \"udp\" or \"tcp\"",
        ),
        (
            r#"{"op":"grant","app":"a","addr":"198.18.9.9","proto":"udp","port":0}"#,
            "\"port\" must be a number from 1 to 65535",
        ),
        (r#"{"op":"grant","app":"a","addr":"198.18.9.9","proto":"udp"}"#, "\"port\" is missing"),
        (r#"{"op":"revoke"}"#, "\"app\" is missing"),
        (
            r#"{"op":"grant","app":"a","addr":"198.18.9.9","proto":"udp","port":1,"queues":9}"#,
            "\"queues\" must be a number from 1 to 8",
        ),
        (
            r#"{"op":"grant","app":"a","addr":"198.18.9.9","proto":"udp","port":1,"bps":1000000000000}"#,
            "\"bps\" must be a number from 1 to 100000000000",
        ),
    ] {
        let e = parse(req.as_bytes()).unwrap_err();
        assert!(e.starts_with(want), "{req}: {e}");
    }
    assert_eq!(parse(br#"{"op":"status"}"#), Ok(Request::Status));
    assert!(parse(&vec![b' '; MAX_REQUEST + 1]).is_err());
    for (text, want) in [
        ("[[allow]]\naddrs = [\"198.18.9.9\"]\nports = [\"udp/53\"]", "allow entry 1: give user = \"NAME\" or uid = N"),
        ("[[allow]]\nuid = 1\naddrs = [\"198.18.9.9\"]\nports = [\"udp/0\"]", "allow entry 1: port rule 'udp/0'"),
        ("[[allow]]\nuid = 1\naddrs = []\nports = [\"udp/53\"]", "allow entry 1: addrs and ports must not be empty"),
        ("[[allow]]\nuid = 1\naddrs = [\"198.18.9.9\"]\nports = [\"udp/53\"]\nspeed = 3", "unknown field"),
    ] {
        let e = Policy::parse(text).unwrap_err();
        assert!(e.contains(want), "{text}: {e}");
    }
}

#[test]
fn a_grant_request_reads_back_as_it_was_made() {
    for text in [
        r#"{"op":"grant","app":"dns1","addr":"198.18.0.53","proto":"udp","port":53,"pps":100000}"#,
        r#"{"op":"grant","app":"w","addr":"198.18.0.80","proto":"tcp","port":80,"queues":2,"bps":5000000,"memory":67108864,"lend":33554432}"#,
    ] {
        let w = want(text);
        assert_eq!(parse(grant_request(&w).to_string().as_bytes()), Ok(Request::Grant(w)));
    }
}

#[test]
fn protocol_numbers_are_ianas() {
    assert_eq!((Proto::Udp.number(), Proto::Tcp.number()), (17, 6));
    assert_eq!((Proto::from_number(6), Proto::from_number(1)), (Some(Proto::Tcp), None));
}
