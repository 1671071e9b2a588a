//! Sequence numbers: 32-bit values compared modulo 2^32 (RFC 9293 §3.4).

use std::cmp::Ordering;
use std::ops::{Add, Sub};

/// A TCP sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Seq(pub u32);

impl Seq {
    /// Bytes from `other` up to `self` (which must not be before it).
    pub fn since(self, other: Seq) -> u32 {
        self.0.wrapping_sub(other.0)
    }

    /// The later of two sequence numbers.
    pub fn max(self, other: Seq) -> Seq {
        if self > other {
            self
        } else {
            other
        }
    }

    /// The earlier of two sequence numbers.
    pub fn min(self, other: Seq) -> Seq {
        if self < other {
            self
        } else {
            other
        }
    }

    /// True if `lo <= self < hi` in sequence space.
    pub fn in_range(self, lo: Seq, hi: Seq) -> bool {
        self.since(lo) < hi.since(lo)
    }
}

impl PartialOrd for Seq {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

// A total order is only valid within half the sequence space, which is what TCP guarantees for
// any two numbers it compares; `Ord` lets callers use max/min/sort on such sets.
impl Ord for Seq {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.0.wrapping_sub(other.0) as i32).cmp(&0)
    }
}

impl Add<u32> for Seq {
    type Output = Seq;
    fn add(self, n: u32) -> Seq {
        Seq(self.0.wrapping_add(n))
    }
}

impl Sub<u32> for Seq {
    type Output = Seq;
    fn sub(self, n: u32) -> Seq {
        Seq(self.0.wrapping_sub(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps() {
        let a = Seq(u32::MAX - 10);
        let b = a + 20;
        assert!(a < b);
        assert!(b.cmp(&a).is_gt());
        assert_eq!(b.since(a), 20);
        assert!(Seq(5).in_range(a, b));
        assert!(!b.in_range(a, b));
        assert!(a.in_range(a, b));
        assert_eq!(a.max(b), b);
    }
}
