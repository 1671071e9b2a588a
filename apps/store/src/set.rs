//! A set's members. As in Redis 7.0, a set of up to 512 members that are all integers (in
//! their canonical decimal form) is kept as sorted integers (Redis's intset), so SMEMBERS and
//! friends answer in the order Redis does; any other member, or the 513th, moves it to a
//! table for good (whose order, as Redis's hashtable's, is its own).

use resp::num::{format_i64, parse_i64};
use std::collections::HashSet;

/// Members an integer set holds at most (Redis's `set-max-intset-entries`).
pub const INTSET_ENTRIES: usize = 512;

/// A set value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Set {
    /// Sorted integers.
    Ints(Vec<i64>),
    /// Any members.
    Table(HashSet<Box<[u8]>>),
}

impl Default for Set {
    fn default() -> Set {
        Set::Ints(Vec::new())
    }
}

/// `m` as an integer, if it is one in canonical form ("7", "-3"; not "07", "+1", " 1").
fn int_of(m: &[u8]) -> Option<i64> {
    let n = parse_i64(m)?;
    let mut b = [0u8; 20];
    (format_i64(n, &mut b) == m).then_some(n)
}

impl Set {
    /// Members.
    pub fn len(&self) -> usize {
        match self {
            Set::Ints(v) => v.len(),
            Set::Table(t) => t.len(),
        }
    }

    /// True if it has no member (an empty set is removed from the keyspace).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True if `m` is a member.
    pub fn contains(&self, m: &[u8]) -> bool {
        match self {
            Set::Ints(v) => int_of(m).is_some_and(|n| v.binary_search(&n).is_ok()),
            Set::Table(t) => t.contains(m),
        }
    }

    /// Adds `m`; true if it is new.
    pub fn add(&mut self, m: &[u8]) -> bool {
        if let Set::Ints(v) = self {
            if let Some(n) = int_of(m) {
                match v.binary_search(&n) {
                    Ok(_) => return false,
                    Err(at) if v.len() < INTSET_ENTRIES => {
                        v.insert(at, n);
                        return true;
                    }
                    Err(_) => {}
                }
            }
            let mut b = [0u8; 20];
            let t: HashSet<Box<[u8]>> = v.iter().map(|&n| Box::from(format_i64(n, &mut b))).collect();
            *self = Set::Table(t);
        }
        match self {
            Set::Table(t) => t.insert(m.into()),
            Set::Ints(_) => unreachable!("moved to a table above"),
        }
    }

    /// Removes `m`; true if it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self {
            Set::Ints(v) => match int_of(m).map(|n| v.binary_search(&n)) {
                Some(Ok(at)) => {
                    v.remove(at);
                    true
                }
                _ => false,
            },
            Set::Table(t) => t.remove(m),
        }
    }

    /// Every member, in the set's order.
    pub fn members(&self) -> Vec<Box<[u8]>> {
        match self {
            Set::Ints(v) => {
                let mut b = [0u8; 20];
                v.iter().map(|&n| Box::from(format_i64(n, &mut b))).collect()
            }
            Set::Table(t) => t.iter().cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn integers_stay_sorted_until_a_word_or_the_513th() {
        let mut s = Set::default();
        for m in ["5", "-2", "10", "5"] {
            s.add(m.as_bytes());
        }
        assert_eq!(s.members(), vec![Box::from(&b"-2"[..]), Box::from(&b"5"[..]), Box::from(&b"10"[..])]);
        assert!(s.contains(b"10") && !s.contains(b"010"));
        assert!(s.add(b"07"), "not canonical: a word");
        assert!(matches!(s, Set::Table(_)));
        assert!(s.contains(b"5") && s.contains(b"07"));
        let mut big = Set::default();
        for i in 0..=INTSET_ENTRIES {
            big.add(i.to_string().as_bytes());
        }
        assert!(matches!(big, Set::Table(_)));
        assert_eq!(big.len(), INTSET_ENTRIES + 1);
    }

    proptest! {
        #[test]
        fn behaves_as_a_set(ops in proptest::collection::vec((any::<bool>(), 0u16..700, any::<bool>()), 0..900)) {
            let mut s = Set::default();
            let mut model = BTreeSet::new();
            for (add, n, word) in ops {
                let m = if word { format!("w{n}") } else { n.to_string() }.into_bytes();
                if add {
                    prop_assert_eq!(s.add(&m), model.insert(m.clone()));
                } else {
                    prop_assert_eq!(s.remove(&m), model.remove(&m));
                }
                prop_assert_eq!(s.len(), model.len());
            }
            let mine: BTreeSet<Vec<u8>> = s.members().into_iter().map(|m| m.to_vec()).collect();
            prop_assert_eq!(mine, model);
        }
    }
}
