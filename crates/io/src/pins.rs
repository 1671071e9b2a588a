//! Frames an application keeps for itself: Sandstorm's replicas of prepared segments, which
//! live in the buffer arena so the TX ring can take them as they are. A pinned frame never
//! goes back to the free list: when the kernel completes its transmission (or the engine drops
//! it unsent) it goes to a list the application collects, so it learns exactly when a replica
//! is no longer in the TX ring and may be rewritten for another client.

/// Which frames of an arena are pinned, and the pinned ones given back since last collected.
pub(crate) struct Pins {
    bits: Vec<u64>,
    shift: u32,
    returned: Vec<u64>,
    pinned: usize,
}

impl Pins {
    /// Tracking for `frames` frames of `frame_size` (a power of two) bytes.
    pub(crate) fn new(frames: usize, frame_size: usize) -> Pins {
        debug_assert!(frame_size.is_power_of_two());
        Pins { bits: vec![0; frames.div_ceil(64)], shift: frame_size.trailing_zeros(), returned: Vec::new(), pinned: 0 }
    }

    #[inline]
    fn at(&self, addr: u64) -> (usize, u64) {
        let i = (addr >> self.shift) as usize;
        (i / 64, 1u64 << (i % 64))
    }

    /// Takes a frame from `free` and pins it.
    pub(crate) fn take(&mut self, free: &mut Vec<u64>) -> Option<u64> {
        let addr = free.pop()?;
        self.pin(addr);
        Some(addr)
    }

    /// Unpins a frame the application holds and puts it on `free`.
    pub(crate) fn release(&mut self, addr: u64, free: &mut Vec<u64>) {
        if self.unpin(addr) {
            free.push(addr);
        }
    }

    /// Marks the frame at `addr` (its start) pinned.
    pub(crate) fn pin(&mut self, addr: u64) {
        let (w, b) = self.at(addr);
        self.bits[w] |= b;
        self.pinned += 1;
    }

    /// Clears the mark; true if it was pinned.
    pub(crate) fn unpin(&mut self, addr: u64) -> bool {
        let (w, b) = self.at(addr);
        let was = self.bits[w] & b != 0;
        self.bits[w] &= !b;
        if was {
            self.pinned -= 1;
        }
        was
    }

    /// Takes a frame coming back from the kernel or the engine: true (and kept for the
    /// application) if it is pinned, false if it belongs on the free list.
    #[inline]
    pub(crate) fn give_back(&mut self, addr: u64) -> bool {
        if self.pinned == 0 {
            return false;
        }
        let (w, b) = self.at(addr);
        if self.bits[w] & b == 0 {
            return false;
        }
        self.returned.push(addr);
        true
    }

    /// Hands every pinned frame given back since the last call to `each`.
    pub(crate) fn drain(&mut self, each: &mut dyn FnMut(u64)) {
        for a in self.returned.drain(..) {
            each(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pinned_frames_come_back() {
        let mut p = Pins::new(100, 4096);
        assert!(!p.give_back(4096 * 7));
        p.pin(4096 * 7);
        assert!(p.give_back(4096 * 7));
        assert!(!p.give_back(4096 * 8));
        let mut got = Vec::new();
        p.drain(&mut |a| got.push(a));
        assert_eq!(got, vec![4096 * 7]);
        assert!(p.unpin(4096 * 7));
        assert!(!p.unpin(4096 * 7));
        assert!(!p.give_back(4096 * 7));
    }
}
