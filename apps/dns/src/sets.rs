//! A name's RRsets: one held in place, more in a list. Most names of a large zone have a
//! single RRset; a list of one cost an allocation per name (48 bytes of heap, touched once
//! while loading and freed after).

use crate::zone::RRset;
use std::ops::{Deref, DerefMut};

/// The RRsets at one name, in the order they came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sets {
    /// Exactly one.
    One(RRset),
    /// None, or more than one.
    Many(Vec<RRset>),
}

impl Default for Sets {
    fn default() -> Sets {
        Sets::Many(Vec::new())
    }
}

impl Sets {
    /// The RRsets as a slice.
    pub fn as_slice(&self) -> &[RRset] {
        self
    }

    /// Adds `set` at the end.
    pub fn push(&mut self, set: RRset) {
        match self {
            Sets::Many(v) if v.is_empty() => *self = Sets::One(set),
            Sets::Many(v) => v.push(set),
            Sets::One(_) => {
                let Sets::One(first) = std::mem::take(self) else { unreachable!("matched One") };
                *self = Sets::Many(vec![first, set]);
            }
        }
    }

    /// Takes out the RRset at `i`.
    pub fn remove(&mut self, i: usize) -> RRset {
        match self {
            Sets::One(_) => {
                assert_eq!(i, 0, "an RRset of one name");
                let Sets::One(only) = std::mem::take(self) else { unreachable!("matched One") };
                only
            }
            Sets::Many(v) => v.remove(i),
        }
    }
}

impl Deref for Sets {
    type Target = [RRset];

    fn deref(&self) -> &[RRset] {
        match self {
            Sets::One(s) => std::slice::from_ref(s),
            Sets::Many(v) => v,
        }
    }
}

impl DerefMut for Sets {
    fn deref_mut(&mut self) -> &mut [RRset] {
        match self {
            Sets::One(s) => std::slice::from_mut(s),
            Sets::Many(v) => v,
        }
    }
}

impl IntoIterator for Sets {
    type Item = RRset;
    type IntoIter = std::vec::IntoIter<RRset>;

    fn into_iter(self) -> Self::IntoIter {
        match self {
            Sets::One(s) => vec![s].into_iter(),
            Sets::Many(v) => v.into_iter(),
        }
    }
}

impl<'a> IntoIterator for &'a Sets {
    type Item = &'a RRset;
    type IntoIter = std::slice::Iter<'a, RRset>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// An RRset of type `t` with one record, for tests.
#[cfg(test)]
pub fn test_set(t: u16) -> RRset {
    RRset { rtype: t, ttl: 60, rdatas: crate::rdatas::Rdatas::one(&[t as u8]) }
}

#[cfg(test)]
mod tests {
    use super::test_set as set;
    use super::*;

    #[test]
    fn sets_push_and_remove_like_a_list() {
        let mut s = Sets::default();
        let mut list: Vec<RRset> = Vec::new();
        assert!(s.is_empty());
        for t in 1..=4 {
            s.push(set(t));
            list.push(set(t));
            assert_eq!(&s[..], &list[..]);
            assert_eq!(matches!(s, Sets::One(_)), t == 1);
        }
        s[2].ttl = 5;
        list[2].ttl = 5;
        for i in [1, 2, 0, 0] {
            assert_eq!(s.remove(i), list.remove(i));
            assert_eq!(&s[..], &list[..]);
        }
        assert!(s.is_empty());
        s.push(set(9));
        assert!(matches!(s, Sets::One(_)));
        assert_eq!(s.remove(0), set(9));
        assert!(s.is_empty() && s.clone().into_iter().next().is_none());
    }
}
