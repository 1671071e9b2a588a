//! A sorted set: members with scores, ordered by score and then by the members' bytes, as
//! Redis orders them in either of its encodings. A member's score is found by a hash lookup;
//! the order is a B-tree of (score, member), so a range by score or by rank from either end
//! is a walk from where it starts.
//!
//! Redis stores the score of a small sorted set as text in a listpack, where a negative zero
//! reads back as zero; here every negative zero is stored as zero.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

/// A score that is not NaN, ordered as doubles are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score(f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Score) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Score) -> Ordering {
        // Never NaN: a sorted set refuses it before it gets here.
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

/// A sorted set value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZSet {
    scores: HashMap<Box<[u8]>, Score>,
    order: BTreeSet<(Score, Box<[u8]>)>,
}

/// One end of a range by score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreBound {
    /// The score.
    pub at: f64,
    /// The score itself is out of the range.
    pub open: bool,
}

/// A range by score, as ZRANGEBYSCORE reads one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRange {
    /// The lowest.
    pub min: ScoreBound,
    /// The highest.
    pub max: ScoreBound,
}

impl ScoreRange {
    /// True if `s` is at or above the bottom.
    pub fn above_min(&self, s: f64) -> bool {
        if self.min.open {
            s > self.min.at
        } else {
            s >= self.min.at
        }
    }

    /// True if `s` is at or below the top.
    pub fn below_max(&self, s: f64) -> bool {
        if self.max.open {
            s < self.max.at
        } else {
            s <= self.max.at
        }
    }
}

/// One end of a range by member, as ZRANGEBYLEX reads one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// `-`: below every member.
    Least,
    /// `+`: above every member.
    Most,
    /// `[m`: `m` included.
    In(Vec<u8>),
    /// `(m`: `m` excluded.
    Ex(Vec<u8>),
}

impl LexBound {
    /// Reads `-`, `+`, `[member` or `(member`.
    pub fn parse(b: &[u8]) -> Option<LexBound> {
        match b.first()? {
            b'-' if b.len() == 1 => Some(LexBound::Least),
            b'+' if b.len() == 1 => Some(LexBound::Most),
            b'[' => Some(LexBound::In(b[1..].to_vec())),
            b'(' => Some(LexBound::Ex(b[1..].to_vec())),
            _ => None,
        }
    }

    fn rank(&self) -> (u8, &[u8]) {
        match self {
            LexBound::Least => (0, b""),
            LexBound::In(m) | LexBound::Ex(m) => (1, m),
            LexBound::Most => (2, b""),
        }
    }

    fn open(&self) -> bool {
        !matches!(self, LexBound::In(_))
    }
}

/// A range by member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexRange {
    /// The lowest.
    pub min: LexBound,
    /// The highest.
    pub max: LexBound,
}

impl LexRange {
    /// True if `m` is at or above the bottom.
    pub fn above_min(&self, m: &[u8]) -> bool {
        match &self.min {
            LexBound::Least => true,
            LexBound::Most => false,
            LexBound::In(b) => m >= &b[..],
            LexBound::Ex(b) => m > &b[..],
        }
    }

    /// True if `m` is at or below the top.
    pub fn below_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexBound::Most => true,
            LexBound::Least => false,
            LexBound::In(b) => m <= &b[..],
            LexBound::Ex(b) => m < &b[..],
        }
    }

    /// True if no member can be in it (min above max, or equal with an end open).
    pub fn empty(&self) -> bool {
        match self.min.rank().cmp(&self.max.rank()) {
            Ordering::Greater => true,
            Ordering::Equal => self.min.open() || self.max.open(),
            Ordering::Less => false,
        }
    }
}

/// `d` as it is stored: a negative zero as zero.
fn stored(d: f64) -> Score {
    Score(if d == 0.0 { 0.0 } else { d })
}

impl ZSet {
    /// Members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// True if it has no member (an empty sorted set is removed from the keyspace).
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The score of `m`.
    pub fn score(&self, m: &[u8]) -> Option<f64> {
        self.scores.get(m).map(|s| s.0)
    }

    /// Sets the score of `m` (not NaN); returns the one it had.
    pub fn insert(&mut self, m: &[u8], score: f64) -> Option<f64> {
        let new = stored(score);
        match self.scores.get_mut(m) {
            Some(old) => {
                let was = *old;
                if was != new {
                    *old = new;
                    let (_, key) = self.order.take(&(was, Box::from(m))).expect("in the order as in the map");
                    self.order.insert((new, key));
                }
                Some(was.0)
            }
            None => {
                self.scores.insert(m.into(), new);
                self.order.insert((new, m.into()));
                None
            }
        }
    }

    /// Removes `m`; returns its score.
    pub fn remove(&mut self, m: &[u8]) -> Option<f64> {
        let s = self.scores.remove(m)?;
        self.order.remove(&(s, Box::from(m)));
        Some(s.0)
    }

    /// Every member and score, lowest first (`.rev()` for highest first).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        self.order.iter().map(|(s, m)| (&**m, s.0))
    }

    /// The members whose score is at least `min` (above it if `open`), lowest first.
    pub fn from_score(&self, min: ScoreBound) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        let start = (Score(min.at), Box::<[u8]>::from(&b""[..]));
        self.order
            .range((Bound::Included(start), Bound::Unbounded))
            .map(|(s, m)| (&**m, s.0))
            .skip_while(move |(_, s)| min.open && *s <= min.at)
    }

    /// The members whose score is at most `max` (below it if `open`), highest first.
    pub fn to_score(&self, max: ScoreBound) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        // Every member with a score up to `max` sorts before (the next double up, "").
        let end = match max.at {
            f64::INFINITY => Bound::Unbounded,
            at => Bound::Excluded((Score(at.next_up()), Box::<[u8]>::from(&b""[..]))),
        };
        self.order
            .range((Bound::Unbounded, end))
            .rev()
            .map(|(s, m)| (&**m, s.0))
            .skip_while(move |(_, s)| max.open && *s >= max.at)
    }

    /// The rank of `m`: how many members sort before it (after it, if `rev`).
    pub fn rank(&self, m: &[u8], rev: bool) -> Option<usize> {
        let s = *self.scores.get(m)?;
        let key = (s, Box::from(m));
        let before = self.order.range(..&key).count();
        Some(if rev { self.len() - 1 - before } else { before })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn members<'a>(it: impl Iterator<Item = (&'a [u8], f64)>) -> Vec<(String, f64)> {
        it.map(|(m, s)| (String::from_utf8_lossy(m).into_owned(), s)).collect()
    }

    #[test]
    fn ordered_by_score_then_member() {
        let mut z = ZSet::default();
        z.insert(b"b", 1.0);
        z.insert(b"a", 1.0);
        z.insert(b"c", 0.5);
        assert_eq!(z.insert(b"c", 2.0), Some(0.5));
        assert_eq!(members(z.iter()), [("a".into(), 1.0), ("b".into(), 1.0), ("c".into(), 2.0)]);
        assert_eq!(z.rank(b"b", false), Some(1));
        assert_eq!(z.rank(b"b", true), Some(1));
        assert_eq!(z.rank(b"c", true), Some(0));
        z.insert(b"z", -0.0);
        assert!(z.score(b"z").unwrap().is_sign_positive(), "a negative zero is stored as zero");
        let open = ScoreBound { at: 1.0, open: true };
        assert_eq!(members(z.from_score(open)), [("c".into(), 2.0)]);
        assert_eq!(members(z.to_score(ScoreBound { at: 1.0, open: false })).len(), 3);
        assert_eq!(members(z.to_score(open)), [("z".into(), 0.0)]);
        assert_eq!(z.remove(b"a"), Some(1.0));
        assert_eq!(z.len(), 3);
    }

    proptest! {
        #[test]
        fn ranges_and_ranks_match_a_sorted_model(
            ops in proptest::collection::vec((0u8..20, -5i8..5, any::<bool>()), 0..200),
            lo in -6i8..6, hi in -6i8..6, lo_open: bool, hi_open: bool,
        ) {
            let mut z = ZSet::default();
            let mut model: HashMap<Vec<u8>, f64> = HashMap::new();
            for (m, s, add) in ops {
                let m = format!("m{m}").into_bytes();
                if add {
                    prop_assert_eq!(z.insert(&m, f64::from(s)), model.insert(m, f64::from(s)));
                } else {
                    prop_assert_eq!(z.remove(&m), model.remove(&m));
                }
            }
            let mut sorted: Vec<(Vec<u8>, f64)> = model.into_iter().collect();
            sorted.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0)));
            let mine: Vec<(Vec<u8>, f64)> = z.iter().map(|(m, s)| (m.to_vec(), s)).collect();
            prop_assert_eq!(&mine, &sorted);
            for (i, (m, _)) in sorted.iter().enumerate() {
                prop_assert_eq!(z.rank(m, false), Some(i));
                prop_assert_eq!(z.rank(m, true), Some(sorted.len() - 1 - i));
            }
            let r = ScoreRange {
                min: ScoreBound { at: f64::from(lo), open: lo_open },
                max: ScoreBound { at: f64::from(hi), open: hi_open },
            };
            let up: Vec<(Vec<u8>, f64)> = z.from_score(r.min).map(|(m, s)| (m.to_vec(), s)).collect();
            let want_up: Vec<(Vec<u8>, f64)> = sorted.iter().filter(|(_, s)| r.above_min(*s)).cloned().collect();
            prop_assert_eq!(up, want_up);
            let down: Vec<(Vec<u8>, f64)> = z.to_score(r.max).map(|(m, s)| (m.to_vec(), s)).collect();
            let want_down: Vec<(Vec<u8>, f64)> = sorted.iter().rev().filter(|(_, s)| r.below_max(*s)).cloned().collect();
            prop_assert_eq!(down, want_down);
        }
    }
}
