use super::*;

fn w(n: &str, s: usize) -> Attr {
    Attr::new(n, s, Mode::Write)
}
fn r(n: &str, s: usize) -> Attr {
    Attr::new(n, s, Mode::Read)
}
fn u(n: &str, s: usize) -> Attr {
    Attr::new(n, s, Mode::Update)
}

/// A chain 0 -> 1 -> ... -> n-1.
fn chain(n: usize) -> Vec<(usize, usize)> {
    (1..n).map(|i| (i - 1, i)).collect()
}

#[test]
fn a_value_keeps_one_place_from_writer_to_reader() {
    let attrs = vec![vec![w("x", 4)], vec![], vec![r("x", 4)]];
    let l = layout(&attrs, &chain(3)).unwrap();
    assert_eq!(l.offsets, vec![vec![Some(0)], vec![], vec![Some(0)]]);
    assert_eq!(l.used, 4);
    assert!(l.unwritten.is_empty());
}

#[test]
fn values_that_never_meet_share_bytes() {
    // x lives in 0..1, y in 2..3: both at offset 0.
    let attrs = vec![vec![w("x", 8)], vec![r("x", 8)], vec![w("y", 4)], vec![r("y", 4)]];
    let l = layout(&attrs, &chain(4)).unwrap();
    assert_eq!(l.offsets[1], vec![Some(0)]);
    assert_eq!(l.offsets[3], vec![Some(0)]);
    assert_eq!(l.used, 8);
}

#[test]
fn values_alive_together_get_disjoint_bytes() {
    let attrs = vec![vec![w("x", 8), w("y", 4)], vec![r("y", 4)], vec![r("x", 8)]];
    let l = layout(&attrs, &chain(3)).unwrap();
    let (x, y) = (l.offsets[0][0].unwrap(), l.offsets[0][1].unwrap());
    assert!(x + 8 <= y || y + 4 <= x, "x at {x}, y at {y}");
    assert_eq!(l.used, 12);
    assert_eq!(l.offsets[2][0], Some(x));
    assert_eq!(l.offsets[1][0], Some(y));
}

#[test]
fn a_rewrite_starts_a_new_scope_that_may_reuse_bytes() {
    // Han's Fig. 5.5 in small: x written at 0, read at 2, written anew at 3, read at 5; z is
    // written at 3 and read at 4, alive only beside the second x.
    let attrs =
        vec![vec![w("x", 4)], vec![], vec![r("x", 4)], vec![w("x", 4), w("z", 4)], vec![r("z", 4)], vec![r("x", 4)]];
    let l = layout(&attrs, &chain(6)).unwrap();
    let x2 = l.offsets[3][0].unwrap();
    let z = l.offsets[3][1].unwrap();
    assert!(x2 + 4 <= z || z + 4 <= x2);
    assert_eq!(l.offsets[5][0], Some(x2));
    assert_eq!(l.offsets[4][0], Some(z));
    // The first x and the second never meet, so the first may share bytes with either.
    assert_eq!(l.used, 8);
}

#[test]
fn a_read_no_writer_reaches_is_reported() {
    // Module 2 reads y, which only module 3 (downstream) writes.
    let attrs = vec![vec![], vec![w("x", 2)], vec![r("x", 2), r("y", 2)], vec![w("y", 2)], vec![r("y", 2)]];
    let l = layout(&attrs, &chain(5)).unwrap();
    assert_eq!(l.unwritten, vec![Unwritten { module: 2, attr: "y".into() }]);
    assert_eq!(l.offsets[2][1], None);
}

#[test]
fn a_value_nobody_reads_takes_no_space() {
    let attrs = vec![vec![w("x", 16)], vec![]];
    let l = layout(&attrs, &chain(2)).unwrap();
    assert_eq!(l.offsets[0], vec![None]);
    assert_eq!(l.used, 0);
}

#[test]
fn values_that_meet_at_a_reader_share_one_place() {
    // Two writers (0 and 1) feed one reader (2): whichever path a packet took, 2 finds x in
    // the same bytes. Another attribute alive at 0 must keep clear of it.
    let attrs = vec![vec![w("x", 4), w("a", 4)], vec![w("x", 4)], vec![r("x", 4)], vec![r("a", 4)]];
    let edges = vec![(0, 2), (1, 2), (2, 3)];
    let l = layout(&attrs, &edges).unwrap();
    let x = l.offsets[2][0];
    assert_eq!(l.offsets[0][0], x);
    assert_eq!(l.offsets[1][0], x);
    let a = l.offsets[0][1].unwrap();
    assert!(a + 4 <= x.unwrap() || x.unwrap() + 4 <= a);
}

#[test]
fn an_update_reads_and_writes_the_same_place() {
    let attrs = vec![vec![w("ttl", 1)], vec![u("ttl", 1)], vec![r("ttl", 1)]];
    let l = layout(&attrs, &chain(3)).unwrap();
    assert_eq!(l.offsets, vec![vec![Some(0)], vec![Some(0)], vec![Some(0)]]);
    // An update no writer reaches is reported, and what it writes still flows on.
    let attrs = vec![vec![u("ttl", 1)], vec![r("ttl", 1)]];
    let l = layout(&attrs, &chain(2)).unwrap();
    assert_eq!(l.unwritten, vec![Unwritten { module: 0, attr: "ttl".into() }]);
    assert_eq!(l.offsets[1], vec![Some(0)]);
}

#[test]
fn limits_are_errors() {
    let five: Vec<Attr> = (0..5).map(|i| w(&format!("a{i}"), 32)).collect();
    let reads: Vec<Attr> = (0..5).map(|i| r(&format!("a{i}"), 32)).collect();
    assert_eq!(layout(&[five, reads], &chain(2)), Err(LayoutError::TooBig { need: 160 }));
    assert_eq!(
        layout(&[vec![w("x", 4)], vec![r("x", 8)]], &chain(2)),
        Err(LayoutError::SizeMismatch { attr: "x".into() })
    );
    assert_eq!(layout(&[vec![w("x", 33)]], &[]), Err(LayoutError::BadSize { module: 0, attr: "x".into() }));
}

#[test]
fn the_thesis_example_fits_in_three_slots() {
    // Han's Fig. 5.7: six one-byte attributes whose scopes form a graph three colours cover.
    // a and b alive at 0-1, c at 1-2, d at 2-3, e at 3-4, f at 4-5 (each meets its
    // neighbours, three at most at once).
    let attrs = vec![
        vec![w("a", 1), w("b", 1)],
        vec![r("a", 1), w("c", 1)],
        vec![r("b", 1), r("c", 1), w("d", 1)],
        vec![r("d", 1), w("e", 1)],
        vec![r("e", 1), w("f", 1)],
        vec![r("f", 1)],
    ];
    let l = layout(&attrs, &chain(6)).unwrap();
    assert_eq!(l.used, 3);
}

mod walk {
    use super::*;
    use proptest::prelude::*;

    const NAMES: [&str; 4] = ["a", "b", "c", "d"];
    const SIZES: [usize; 4] = [1, 4, 8, 3];

    fn graph() -> impl Strategy<Value = (Vec<Vec<Attr>>, Vec<(usize, usize)>)> {
        (2usize..8).prop_flat_map(|n| {
            let attrs = proptest::collection::vec(proptest::collection::vec((0usize..4, 0u8..3), 0..3), n);
            let edges = proptest::collection::vec((0..n, 0..n), 0..(2 * n));
            (attrs, edges).prop_map(|(attrs, edges)| {
                let attrs: Vec<Vec<Attr>> = attrs
                    .into_iter()
                    .map(|l| {
                        let mut seen = Vec::new();
                        l.into_iter()
                            .filter(|(k, _)| {
                                let fresh = !seen.contains(k);
                                seen.push(*k);
                                fresh
                            })
                            .map(|(k, m)| {
                                let mode = [Mode::Read, Mode::Write, Mode::Update][m as usize];
                                Attr::new(NAMES[k], SIZES[k], mode)
                            })
                            .collect()
                    })
                    .collect();
                // Forward edges only: a DAG, as pipelines without queues are.
                let edges = edges.into_iter().filter(|&(a, b)| a < b).collect();
                (attrs, edges)
            })
        })
    }

    /// Walks every path from `m`, writing a token for each value written and checking every
    /// read of a value written earlier on the path.
    fn walk(
        m: usize,
        attrs: &[Vec<Attr>],
        next: &[Vec<usize>],
        l: &Layout,
        meta: &mut [u8; META_SIZE],
        live: &mut Vec<(String, u8)>,
    ) {
        for (d, a) in attrs[m].iter().enumerate() {
            if matches!(a.mode, Mode::Read | Mode::Update) {
                if let Some(&(_, token)) = live.iter().rev().find(|(n, _)| *n == a.name) {
                    let off = l.offsets[m][d].expect("a read a writer on this path reaches has a place");
                    assert!(
                        meta[off..off + a.size].iter().all(|&b| b == token),
                        "module {m} reads {} clobbered",
                        a.name
                    );
                }
            }
        }
        let saved = (*meta, live.clone());
        for (d, a) in attrs[m].iter().enumerate() {
            if matches!(a.mode, Mode::Write | Mode::Update) {
                live.retain(|(n, _)| *n != a.name);
                if let Some(off) = l.offsets[m][d] {
                    let token = (m * 8 + d + 1) as u8;
                    meta[off..off + a.size].fill(token);
                    live.push((a.name.clone(), token));
                }
            }
        }
        for &t in &next[m] {
            walk(t, attrs, next, l, meta, live);
        }
        (*meta, *live) = saved;
    }

    proptest! {
        #[test]
        fn no_value_is_clobbered_on_any_path((attrs, edges) in graph()) {
            let Ok(l) = layout(&attrs, &edges) else { return Ok(()) };
            prop_assert!(l.used <= META_SIZE);
            let n = attrs.len();
            let mut next = vec![Vec::new(); n];
            let mut has_prev = vec![false; n];
            for &(a, b) in &edges {
                if !next[a].contains(&b) {
                    next[a].push(b);
                }
                has_prev[b] = true;
            }
            for s in (0..n).filter(|&m| !has_prev[m]) {
                walk(s, &attrs, &next, &l, &mut [0u8; META_SIZE], &mut Vec::new());
            }
        }
    }
}
