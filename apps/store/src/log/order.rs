//! The store's one order of changes, and how much of it is durable.
//!
//! Every change gets the next sequence number, taken under the lock of the keys it changes,
//! so the numbers order conflicting changes as they happened. Each engine writes its changes
//! to its own log; the durable prefix is every number below the lowest one some engine has
//! taken and not yet made durable. A reply is sent only when everything it depends on (the
//! change it made, the value it read) is inside that prefix — so a crash can only lose
//! changes no client saw the effect of, and the replay (which stops at the first missing
//! number) gets exactly a prefix of the order.

use std::sync::atomic::{AtomicU64, Ordering};

/// Nothing pending.
const NONE: u64 = u64::MAX;

/// One engine's slot, on its own cache line (every engine writes its own, all read all).
#[repr(align(128))]
struct Pending(AtomicU64);

/// The order of changes, shared by every engine.
pub struct Order {
    /// The next number to hand out.
    next: AtomicU64,
    /// Per engine: the lowest number it took that is not durable yet (at most that), or NONE.
    pending: Vec<Pending>,
}

impl Order {
    /// An order for `engines` engines whose durable prefix ends at `last` (what was replayed).
    pub fn new(engines: usize, last: u64) -> Order {
        Order { next: AtomicU64::new(last + 1), pending: (0..engines).map(|_| Pending(AtomicU64::new(NONE))).collect() }
    }

    /// Engine `e` is about to take numbers while it has none pending: from now until
    /// [`Order::settled`], nothing at or above what it may take counts as durable.
    pub fn open(&self, e: usize) {
        // Published before the number is taken, so whoever sees the number sees this.
        self.pending[e].0.store(self.next.load(Ordering::SeqCst), Ordering::SeqCst);
    }

    /// The next number (call [`Order::open`] first if the engine had none pending).
    pub fn take(&self) -> u64 {
        self.next.fetch_add(1, Ordering::SeqCst)
    }

    /// Engine `e`'s numbers below `first_pending` are durable (`None`: all of them).
    pub fn settled(&self, e: usize, first_pending: Option<u64>) {
        self.pending[e].0.store(first_pending.unwrap_or(NONE), Ordering::SeqCst);
    }

    /// The highest number such that it and every one below it are durable.
    pub fn durable(&self) -> u64 {
        // `next` first: any number below it was taken after its engine's slot was set.
        let next = self.next.load(Ordering::SeqCst);
        let low = self.pending.iter().map(|p| p.0.load(Ordering::SeqCst)).min().unwrap_or(NONE);
        next.min(low) - 1
    }

    /// The last number handed out.
    pub fn last(&self) -> u64 {
        self.next.load(Ordering::SeqCst) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_waits_for_the_slowest_engine() {
        let o = Order::new(2, 10);
        assert_eq!(o.durable(), 10);
        o.open(0);
        assert_eq!(o.take(), 11);
        o.open(1);
        assert_eq!(o.take(), 12);
        assert_eq!(o.durable(), 10);
        o.settled(1, None);
        assert_eq!(o.durable(), 10, "11 is not durable yet");
        assert_eq!(o.take(), 13); // engine 0 again, still pending from 11
        o.settled(0, Some(13));
        assert_eq!(o.durable(), 12);
        o.settled(0, None);
        assert_eq!(o.durable(), 13);
        assert_eq!(o.last(), 13);
    }
}
