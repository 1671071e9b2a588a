//! A small fixed-capacity set of disjoint sequence ranges, kept sorted. Used for the
//! receiver's out-of-order data (which SACK blocks report) and the sender's SACK scoreboard.
//! Each range remembers when it last grew so SACK blocks can be sent most recent first.

use crate::seq::Seq;

/// One range [left, right) and the insertion stamp that last touched it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Range {
    /// First sequence number in the range.
    pub left: Seq,
    /// One past the last.
    pub right: Seq,
    stamp: u32,
}

/// Up to `N` disjoint ranges.
#[derive(Debug, Clone, Copy)]
pub struct Ranges<const N: usize> {
    r: [Range; N],
    len: usize,
    stamp: u32,
}

/// [`Ranges`] kept off the connection while there are none: most connections never see a
/// SACK block, and an idle connection should not carry room for 64 (issue 44: a million idle
/// connections). The room is allocated when the first range comes, once per loss episode at
/// most (never per segment), and given back when the last one goes.
#[derive(Debug, Clone, Default)]
pub struct SpareRanges<const N: usize>(Option<Box<Ranges<N>>>);

impl<const N: usize> std::ops::Deref for SpareRanges<N> {
    type Target = Ranges<N>;
    fn deref(&self) -> &Ranges<N> {
        self.0.as_deref().unwrap_or(&const { Ranges::EMPTY })
    }
}

impl<const N: usize> SpareRanges<N> {
    /// As [`Ranges::insert`].
    pub fn insert(&mut self, left: Seq, right: Seq) -> bool {
        if right <= left {
            return true;
        }
        self.0.get_or_insert_with(|| Box::new(Ranges::EMPTY)).insert(left, right)
    }

    /// As [`Ranges::remove_below`].
    pub fn remove_below(&mut self, s: Seq) {
        if let Some(r) = &mut self.0 {
            r.remove_below(s);
            if r.is_empty() {
                self.0 = None;
            }
        }
    }

    /// Removes every range.
    pub fn clear(&mut self) {
        self.0 = None;
    }
}

impl<const N: usize> Default for Ranges<N> {
    fn default() -> Self {
        Ranges { r: [Range::default(); N], len: 0, stamp: 0 }
    }
}

impl<const N: usize> Ranges<N> {
    /// No range.
    pub const EMPTY: Self = Ranges { r: [Range { left: Seq(0), right: Seq(0), stamp: 0 }; N], len: 0, stamp: 0 };

    /// The ranges in sequence order.
    pub fn as_slice(&self) -> &[Range] {
        &self.r[..self.len]
    }

    /// True if there is no range.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removes every range.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Adds [left, right), merging with ranges it touches. Returns false (and changes
    /// nothing) if the result would need more than `N` ranges.
    pub fn insert(&mut self, left: Seq, right: Seq) -> bool {
        if right <= left {
            return true;
        }
        // Ranges entirely before or after the new one stay; the ones it touches merge.
        let first = self.r[..self.len].iter().position(|x| x.right >= left).unwrap_or(self.len);
        let mut last = first;
        while last < self.len && self.r[last].left <= right {
            last += 1;
        }
        let merged = last - first;
        if merged == 0 && self.len == N {
            return false;
        }
        self.stamp = self.stamp.wrapping_add(1);
        let mut m = Range { left, right, stamp: self.stamp };
        if merged > 0 {
            m.left = m.left.min(self.r[first].left);
            m.right = m.right.max(self.r[last - 1].right);
        }
        // Replace r[first..last] with m.
        let tail = self.len - last;
        if merged == 0 {
            self.r.copy_within(first..self.len, first + 1);
        } else {
            self.r.copy_within(last..self.len, first + 1);
        }
        self.r[first] = m;
        self.len = first + 1 + tail;
        true
    }

    /// Drops everything before `s`, trimming a range that straddles it.
    pub fn remove_below(&mut self, s: Seq) {
        let keep = self.r[..self.len].iter().position(|x| x.right > s).unwrap_or(self.len);
        self.r.copy_within(keep..self.len, 0);
        self.len -= keep;
        if self.len > 0 && self.r[0].left < s {
            self.r[0].left = s;
        }
    }

    /// Removes the first range if it starts at `s`, returning its end.
    pub fn pop_at(&mut self, s: Seq) -> Option<Seq> {
        if self.len > 0 && self.r[0].left == s {
            let end = self.r[0].right;
            self.remove_below(end);
            Some(end)
        } else {
            None
        }
    }

    /// Bytes covered inside [a, b).
    pub fn covered(&self, a: Seq, b: Seq) -> u32 {
        self.as_slice()
            .iter()
            .map(|x| {
                let l = x.left.max(a);
                let r = x.right.min(b);
                if r > l {
                    r.since(l)
                } else {
                    0
                }
            })
            .sum()
    }

    /// True if `s` lies in a range.
    pub fn contains(&self, s: Seq) -> bool {
        self.as_slice().iter().any(|x| s >= x.left && s < x.right)
    }

    /// The end of the highest range.
    pub fn highest(&self) -> Option<Seq> {
        self.as_slice().last().map(|x| x.right)
    }

    /// Up to `out.len()` ranges, the most recently grown first (RFC 2018 §4).
    pub fn recent_first(&self, out: &mut [(u32, u32)]) -> usize {
        let mut idx: [usize; N] = [0; N];
        for (i, x) in idx.iter_mut().enumerate().take(self.len) {
            *x = i;
        }
        let idx = &mut idx[..self.len];
        idx.sort_unstable_by_key(|&i| std::cmp::Reverse(self.r[i].stamp.wrapping_sub(self.stamp) as i32));
        let n = idx.len().min(out.len());
        for (o, &i) in out.iter_mut().zip(idx.iter()).take(n) {
            *o = (self.r[i].left.0, self.r[i].right.0);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(v: u32) -> Seq {
        Seq(v)
    }

    #[test]
    fn merges_and_trims() {
        let mut r = Ranges::<3>::default();
        assert!(r.insert(s(10), s(20)));
        assert!(r.insert(s(30), s(40)));
        assert!(r.insert(s(50), s(60)));
        assert!(!r.insert(s(70), s(80)), "a fourth disjoint range does not fit");
        assert!(r.insert(s(20), s(30)), "bridging merges");
        assert_eq!(r.as_slice().len(), 2);
        assert_eq!((r.as_slice()[0].left, r.as_slice()[0].right), (s(10), s(40)));
        assert_eq!(r.covered(s(0), s(55)), 35);
        r.remove_below(s(15));
        assert_eq!(r.as_slice()[0].left, s(15));
        assert_eq!(r.pop_at(s(15)), Some(s(40)));
        let mut out = [(0, 0); 4];
        assert_eq!(r.recent_first(&mut out), 1);
        assert_eq!(out[0], (50, 60));
    }

    #[test]
    fn recency_order() {
        let mut r = Ranges::<4>::default();
        r.insert(s(100), s(110));
        r.insert(s(300), s(310));
        r.insert(s(200), s(210));
        r.insert(s(105), s(115));
        let mut out = [(0, 0); 4];
        assert_eq!(r.recent_first(&mut out), 3);
        assert_eq!(&out[..3], &[(100, 115), (200, 210), (300, 310)]);
    }

    proptest! {
        // Against a bitmap: whatever fits is covered exactly, ranges stay sorted and disjoint.
        #[test]
        fn matches_bitmap(ops in proptest::collection::vec((0u32..200, 1u32..30), 1..40), base in any::<u32>()) {
            let mut r = Ranges::<6>::default();
            let mut bits = vec![false; 260];
            for (a, l) in ops {
                if r.insert(Seq(base) + a, Seq(base) + a + l) {
                    for b in &mut bits[a as usize..(a + l) as usize] { *b = true; }
                }
                let sl = r.as_slice();
                for w in sl.windows(2) { prop_assert!(w[0].right < w[1].left); }
                let cov = r.covered(Seq(base), Seq(base) + 260);
                prop_assert_eq!(cov as usize, bits.iter().filter(|b| **b).count());
                for (i, b) in bits.iter().enumerate() {
                    prop_assert_eq!(r.contains(Seq(base) + i as u32), *b);
                }
            }
        }
    }
}
