use super::*;
use proptest::prelude::*;

fn r(s: &str) -> Route {
    Route::parse(s).unwrap()
}

#[test]
fn the_longest_prefix_wins_whatever_the_order() {
    let t = Dir24::build(&[
        r("198.18.1.128/25 3"),
        r("0.0.0.0/0 0"),
        r("198.18.0.0/16 1"),
        r("198.18.1.0/24 2"),
        r("198.18.1.129/32 4"),
    ])
    .unwrap();
    let at = |s: &str| t.lookup(u32::from(s.parse::<std::net::Ipv4Addr>().unwrap()));
    assert_eq!(at("127.0.0.1"), Some(0));
    assert_eq!(at("198.18.7.7"), Some(1));
    assert_eq!(at("198.18.1.5"), Some(2));
    assert_eq!(at("198.18.1.200"), Some(3));
    assert_eq!(at("198.18.1.129"), Some(4));
    assert_eq!(t.groups(), 1);
}

#[test]
fn no_route_is_a_miss_and_bad_routes_are_refused() {
    let t = Dir24::build(&[r("198.18.1.0/24 2")]).unwrap();
    assert_eq!(t.lookup(0x0a00_0001), None);
    for bad in ["198.18.1.0 1", "198.18.1.0/33 1", "198.18.1.0/24", "300.1.1.1/8 1", "1.1.1.1/8 40000", "1.1.1.1/8 1 2"]
    {
        assert!(Route::parse(bad).is_err(), "{bad} should be refused");
    }
}

/// The reference: scan every route, keep the longest that covers the address (the last of
/// equal ones).
fn naive(routes: &[Route], addr: u32) -> Option<u32> {
    let mut best: Option<&Route> = None;
    for r in routes {
        if addr & r.mask() == r.prefix & r.mask() && best.is_none_or(|b| r.len >= b.len) {
            best = Some(r);
        }
    }
    best.map(|r| r.hop)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    #[test]
    fn agrees_with_a_linear_scan(
        routes in proptest::collection::vec((any::<u32>(), 0u8..=32, 0u32..100), 1..60),
        probes in proptest::collection::vec(any::<u32>(), 200),
    ) {
        // Probe addresses near the prefixes too, where the boundaries are.
        let routes: Vec<Route> = routes.into_iter().map(|(p, len, hop)| Route { prefix: 0xc612_0000 | (p & 0xffff), len, hop }).collect();
        let t = Dir24::build(&routes).unwrap();
        for (i, &a) in probes.iter().enumerate() {
            let a = if i % 2 == 0 { routes[i % routes.len()].prefix ^ (a & 0x1ff) } else { a };
            prop_assert_eq!(t.lookup(a), naive(&routes, a), "address {:#x}", a);
        }
    }
}
