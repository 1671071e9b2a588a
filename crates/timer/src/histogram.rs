//! A fixed-size log-linear latency histogram (16 sub-buckets per power of two, so about 6 %
//! relative precision); recording never allocates.

const SUB: usize = 16;
const BUCKETS: usize = 64 * SUB;

/// Counts of values (nanoseconds).
#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    total: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: Box::new([0; BUCKETS]), total: 0, max: 0 }
    }
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros() as usize; // >= 4
    let sub = ((v >> (msb - 4)) & (SUB as u64 - 1)) as usize;
    (msb - 3) * SUB + sub
}

fn lower_bound(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let msb = i / SUB + 3;
    let sub = (i % SUB) as u64;
    (1u64 << msb) | (sub << (msb - 4))
}

impl Histogram {
    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[index(v)] += 1;
        self.total += 1;
        self.max = self.max.max(v);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Largest value recorded.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value at quantile `q` (0..=1): the lower bound of its bucket, or 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return lower_bound(i).min(self.max);
            }
        }
        self.max
    }

    /// Adds another histogram.
    pub fn merge(&mut self, o: &Histogram) {
        for i in 0..BUCKETS {
            self.counts[i] += o.counts[i];
        }
        self.total += o.total;
        self.max = self.max.max(o.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_values_exact() {
        let mut h = Histogram::default();
        for v in 0..16 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 7);
        assert_eq!(h.quantile(1.0), 15);
    }

    proptest! {
        #[test]
        fn bucket_bounds_contain_value(v in 16u64..u64::MAX / 2) {
            let i = index(v);
            prop_assert!(lower_bound(i) <= v);
            prop_assert!(v < lower_bound(i + 1));
            // 1/16 relative precision
            prop_assert!((v - lower_bound(i)) as f64 <= v as f64 / 16.0);
        }

        #[test]
        fn quantile_close_to_sorted(mut vals in proptest::collection::vec(1u64..10_000_000, 1..500), q in 0.01f64..1.0) {
            let mut h = Histogram::default();
            for &v in &vals { h.record(v); }
            vals.sort();
            let rank = ((q * vals.len() as f64).ceil() as usize).clamp(1, vals.len());
            let exact = vals[rank - 1];
            let got = h.quantile(q);
            prop_assert!(got <= exact && exact - got <= exact / 16 + 1, "got {} exact {}", got, exact);
        }
    }
}
