//! Out-of-order reassembly with a memory bound. Segments that arrive ahead of a hole are
//! copied into a ring taken from an engine-wide pool of fixed buffers (no allocation on the
//! packet path); a connection holds a ring only while it has out-of-order data. When the pool
//! is empty, or a segment would need more ranges than a connection may track, the segment is
//! dropped and the sender retransmits it. The ranges travel with the ring, so a connection
//! with nothing out of order holds one empty pointer (issue 44: idle connections by the
//! million).

use crate::ranges::Ranges;
use crate::seq::Seq;

/// Ranges a connection may hold ahead of a hole (and report as SACK blocks).
pub const MAX_OOO_RANGES: usize = 32;

/// Fixed-size buffers shared by the connections of one engine.
pub struct OooPool {
    // Boxed: a connection takes the box itself, so lending and returning allocate nothing.
    #[allow(clippy::vec_box)]
    free: Vec<Box<Held>>,
    size: usize,
    total: usize,
}

impl OooPool {
    /// `count` buffers, each covering a receive window of at least `window` bytes.
    pub fn new(count: usize, window: usize) -> OooPool {
        // Room for the window plus the rounding of a scaled window edge (< 2^14).
        let size = (window + (1 << 14)).next_power_of_two();
        let held = |_| Box::new(Held { ring: vec![0u8; size].into_boxed_slice(), ranges: Ranges::EMPTY });
        OooPool { free: (0..count).map(held).collect(), size, total: count }
    }

    /// Buffers not lent out.
    pub fn available(&self) -> usize {
        self.free.len()
    }

    /// Buffers in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Bytes of window a buffer covers.
    pub fn window(&self) -> usize {
        self.size - (1 << 14)
    }
}

/// A pool buffer and the ranges of it in use.
pub struct Held {
    ring: Box<[u8]>,
    ranges: Ranges<MAX_OOO_RANGES>,
}

/// The out-of-order data of one connection.
#[derive(Default)]
pub struct Reassembly(Option<Box<Held>>);

static NO_RANGES: Ranges<MAX_OOO_RANGES> = Ranges::EMPTY;

impl Reassembly {
    /// The held ranges (for SACK blocks).
    pub fn ranges(&self) -> &Ranges<MAX_OOO_RANGES> {
        self.0.as_ref().map_or(&NO_RANGES, |h| &h.ranges)
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.ranges().is_empty()
    }

    /// Stores `data` at `seq`, which lies after `rcv_nxt` and inside the window the pool's
    /// buffers cover. Returns false if it was dropped.
    pub fn store(&mut self, pool: &mut OooPool, rcv_nxt: Seq, seq: Seq, data: &[u8]) -> bool {
        let end = seq + data.len() as u32;
        if data.is_empty() || end.since(rcv_nxt) as usize > pool.size {
            return false;
        }
        if self.0.is_none() {
            match pool.free.pop() {
                Some(b) => self.0 = Some(b),
                None => return false,
            }
        }
        let Held { ring, ranges } = &mut **self.0.as_mut().expect("taken above");
        if !ranges.insert(seq, end) {
            return false;
        }
        let mask = ring.len() - 1;
        let at = seq.0 as usize & mask;
        let first = data.len().min(ring.len() - at);
        ring[at..at + first].copy_from_slice(&data[..first]);
        ring[..data.len() - first].copy_from_slice(&data[first..]);
        true
    }

    /// Forgets data before `rcv_nxt` (delivered from a retransmission meanwhile) and, if held
    /// data now starts at `rcv_nxt`, passes it to `deliver` (in up to two slices, as the ring
    /// wraps) and returns its end.
    pub fn take_ready(&mut self, rcv_nxt: Seq, mut deliver: impl FnMut(&[u8])) -> Option<Seq> {
        let Held { ring, ranges } = &mut **self.0.as_mut()?;
        ranges.remove_below(rcv_nxt);
        let end = ranges.pop_at(rcv_nxt)?;
        let mask = ring.len() - 1;
        let at = rcv_nxt.0 as usize & mask;
        let len = end.since(rcv_nxt) as usize;
        let first = len.min(ring.len() - at);
        deliver(&ring[at..at + first]);
        if len > first {
            deliver(&ring[..len - first]);
        }
        Some(end)
    }

    /// Returns the ring to the pool if nothing is held (or unconditionally on `force`).
    pub fn release(&mut self, pool: &mut OooPool, force: bool) {
        if force || self.is_empty() {
            if let Some(mut b) = self.0.take() {
                b.ranges.clear();
                pool.free.push(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes_fill_and_the_ring_goes_back() {
        let mut pool = OooPool::new(1, 1000);
        let mut r = Reassembly::default();
        let base = Seq(u32::MAX - 5); // wraps in sequence space and in the ring
        assert!(r.store(&mut pool, base, base + 10, b"klmno"));
        assert!(r.store(&mut pool, base, base + 5, b"fghij"));
        assert_eq!(pool.available(), 0);
        let mut other = Reassembly::default();
        assert!(!other.store(&mut pool, base, base + 5, b"x"), "pool empty: dropped");
        let mut got = Vec::new();
        assert_eq!(r.take_ready(base, |d| got.extend_from_slice(d)), None, "hole at base");
        assert_eq!(r.take_ready(base + 5, |d| got.extend_from_slice(d)), Some(base + 15));
        assert_eq!(got, b"fghijklmno");
        r.release(&mut pool, false);
        assert_eq!(pool.available(), 1);
    }

    #[test]
    fn beyond_the_buffer_is_refused() {
        let mut pool = OooPool::new(1, 100);
        let mut r = Reassembly::default();
        let size = pool.size as u32;
        assert!(!r.store(&mut pool, Seq(0), Seq(size - 2), b"abcd"));
        assert!(r.store(&mut pool, Seq(0), Seq(size - 4), b"abcd"));
    }
}
