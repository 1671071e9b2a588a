//! Fuzz targets for the control socket's requests and the daemon's policy file.

/// The control socket's requests: no panic; a grant request that parses asks for one to
/// four flows of real, non-overlapping ports, a name of the allowed shape, one to eight queues and less lent than its memory, and
/// the request a server would send for it reads back the same.
pub fn ctl_request(data: &[u8]) {
    if let Ok(ctl::request::Request::Grant(w)) = ctl::request::parse(data) {
        assert!((1..=ctl::MAX_FLOWS).contains(&w.flows.len()));
        for (i, f) in w.flows.iter().enumerate() {
            assert!(f.lo >= 1 && f.lo <= f.hi && !w.flows[..i].iter().any(|o| o.overlaps(f)));
        }
        assert!(w.queues >= 1 && !w.app.is_empty() && w.app.len() <= 32);
        assert!(w.app.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert!(w.lend < w.memory && w.queues <= 8);
        // What a server would send for it reads back the same.
        let again = ctl::request::parse(ctl::request::grant_request(&w).to_string().as_bytes());
        assert_eq!(again, Ok(ctl::request::Request::Grant(w)));
    }
}

/// The daemon's policy file: no panic; every entry it accepts has addresses and port rules
/// with low ≤ high and no port 0, and errors are one line.
pub fn ctl_policy(data: &[u8]) {
    match ctl::policy::Policy::parse(&String::from_utf8_lossy(data)) {
        Ok(p) => {
            for e in &p.entries {
                assert!(!e.addrs.is_empty() && e.ports.iter().all(|&(_, lo, hi)| lo >= 1 && lo <= hi));
            }
        }
        Err(e) => assert!(!e.contains('\n'), "one line: {e}"),
    }
}

/// Inputs this area's targets start from (None: not one of its targets).
pub(crate) fn seeds(target: &str) -> Option<Vec<Vec<u8>>> {
    Some(match target {
        "ctl_request" => vec![
            br#"{"op":"grant","app":"dns1","addr":"198.18.0.53","proto":"udp","port":53,"queues":1,"pps":100000}"#.to_vec(),
            br#"{"op":"grant","app":"w","addr":"198.18.0.80","proto":"tcp","port":80,"bps":9,"memory":8388608,"lend":4194304}"#.to_vec(),
            br#"{"op":"grant","app":"d","addr":"198.18.0.53","flows":["udp/53","tcp/53","tcp/32768-60999"]}"#.to_vec(),
            br#"{"op":"revoke","app":"dns1"}"#.to_vec(),
            br#"{"op":"status"}"#.to_vec(),
        ],
        "ctl_policy" => vec![
            b"[[allow]]\nuser = \"dns\"\naddrs = [\"198.18.0.53\"]\nports = [\"udp/53\", \"tcp/8000-8099\"]\nmax_pps = 1000\n".to_vec(),
        ],
        _ => return None,
    })
}
