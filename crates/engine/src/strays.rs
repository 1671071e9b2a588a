//! Segments that reach the wrong engine. One engine serves each NIC queue and holds the
//! connections whose segments its queue receives. A real NIC hashes the 4-tuple (RSS) and
//! keeps a flow on its queue; veth delivers to the queue the *sender* transmitted on, and
//! Linux picks another transmit queue for a socket after a retransmission timeout
//! (`net.core.txrehash`). The connection's later segments then reach an engine that does not
//! hold it, which used to answer them with a reset — on exactly the lossy paths where the
//! timeouts happen.
//!
//! Engines form a ring: one whose TCP does not know a segment's connection copies the frame
//! into the inbox of the next engine, which takes it as if its own queue had received it; the
//! last engine round the ring answers as TCP says for a segment of no connection. Each inbox
//! is a single-producer single-consumer ring of fixed slots, taken from the previous engine
//! only: nothing is allocated per frame, and an engine that meets no stray touches nothing
//! but one atomic load of its inbox per loop. A handed-over segment wakes nobody: the engine
//! holding its connection sleeps at most a few milliseconds (TCP's idle wait while it has
//! connections), and an idle server is left to sleep.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Frames an inbox holds; more are dropped (counted) and TCP recovers them.
const SLOTS: usize = 256;
/// Largest frame carried (an Ethernet frame of a 1500-byte MTU with a VLAN tag, and room).
pub const MAX_FRAME: usize = 2048;

struct Slot {
    len: usize,
    hops: u8,
    data: Box<[u8; MAX_FRAME]>,
}

/// One engine's inbox: written by the engine before it in the ring, read by its own.
struct Inbox {
    // A lock per slot only lends its bytes safely: producer and consumer never hold the
    // same slot at once (the indices keep them apart), so it is never waited for.
    slots: Vec<Mutex<Slot>>,
    /// Next slot to read (written by the consumer).
    head: AtomicUsize,
    /// Next slot to write (written by the producer).
    tail: AtomicUsize,
}

/// The ring of inboxes of one server's engines.
pub struct Strays {
    inboxes: Vec<Inbox>,
}

impl Strays {
    /// Inboxes for `engines` engines (none needed for one).
    pub fn new(engines: usize) -> Arc<Strays> {
        let inboxes = (0..engines)
            .map(|_| Inbox {
                slots: (0..SLOTS)
                    .map(|_| Mutex::new(Slot { len: 0, hops: 0, data: Box::new([0; MAX_FRAME]) }))
                    .collect(),
                head: AtomicUsize::new(0),
                tail: AtomicUsize::new(0),
            })
            .collect();
        Arc::new(Strays { inboxes })
    }

    /// Engine `me`'s end of the ring.
    pub fn link(self: &Arc<Strays>, me: usize) -> StrayLink {
        StrayLink { ring: self.clone(), me }
    }
}

/// An engine's access to its inbox and to the next engine's.
#[derive(Clone)]
pub struct StrayLink {
    ring: Arc<Strays>,
    me: usize,
}

impl StrayLink {
    /// Engines in the ring.
    pub fn engines(&self) -> usize {
        self.ring.inboxes.len()
    }

    /// Hands `frame`, which has been `hops` engines already, to the next engine. False if its
    /// inbox is full or the frame too large (the frame is then lost, as on a full queue).
    pub fn forward(&self, frame: &[u8], hops: u8) -> bool {
        let n = self.engines();
        let to = &self.ring.inboxes[(self.me + 1) % n];
        if frame.len() > MAX_FRAME {
            return false;
        }
        let tail = to.tail.load(Ordering::Relaxed);
        if tail.wrapping_sub(to.head.load(Ordering::Acquire)) >= SLOTS {
            return false;
        }
        {
            let Ok(mut s) = to.slots[tail % SLOTS].lock() else { return false };
            s.data[..frame.len()].copy_from_slice(frame);
            s.len = frame.len();
            s.hops = hops;
        }
        to.tail.store(tail.wrapping_add(1), Ordering::Release);
        true
    }

    /// True if frames wait in this engine's inbox.
    pub fn pending(&self) -> bool {
        let me = &self.ring.inboxes[self.me];
        me.tail.load(Ordering::Acquire) != me.head.load(Ordering::Relaxed)
    }

    /// Takes up to `max` waiting frames, each given to `f` with the hops it has made.
    pub fn take(&self, max: usize, f: &mut dyn FnMut(&[u8], u8)) -> usize {
        let me = &self.ring.inboxes[self.me];
        let mut head = me.head.load(Ordering::Relaxed);
        let tail = me.tail.load(Ordering::Acquire);
        let mut n = 0;
        while head != tail && n < max {
            if let Ok(s) = me.slots[head % SLOTS].lock() {
                f(&s.data[..s.len], s.hops);
            }
            head = head.wrapping_add(1);
            me.head.store(head, Ordering::Release);
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_go_round_the_ring_in_order_and_a_full_inbox_refuses() {
        let ring = Strays::new(3);
        let (a, b, c) = (ring.link(0), ring.link(1), ring.link(2));
        assert!(a.forward(&[1, 2, 3], 0));
        assert!(a.forward(&[4], 1));
        assert!(!a.pending() && b.pending() && !c.pending(), "a's next is b");
        let mut got = Vec::new();
        assert_eq!(b.take(10, &mut |d, h| got.push((d.to_vec(), h))), 2);
        assert_eq!(got, vec![(vec![1, 2, 3], 0), (vec![4], 1)]);
        assert!(c.forward(&[9], 2), "the last engine's next is the first");
        assert!(a.pending());
        for i in 0..SLOTS {
            assert!(b.forward(&[i as u8], 0));
        }
        assert!(!b.forward(&[0], 0), "full");
        assert!(!b.forward(&[0; MAX_FRAME + 1], 0), "too large");
        assert_eq!(c.take(usize::MAX, &mut |_, _| {}), SLOTS);
        assert!(b.forward(&[0], 0), "room again");
    }

    #[test]
    fn a_producer_and_a_consumer_on_two_threads_lose_nothing() {
        let ring = Strays::new(2);
        let (a, b) = (ring.link(0), ring.link(1));
        let n = 100_000u32;
        let t = std::thread::spawn(move || {
            let mut i = 0u32;
            while i < n {
                if a.forward(&i.to_le_bytes(), 0) {
                    i += 1;
                }
            }
        });
        let mut next = 0u32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while next < n && std::time::Instant::now() < deadline {
            b.take(64, &mut |d, _| {
                assert_eq!(u32::from_le_bytes(d.try_into().unwrap()), next);
                next += 1;
            });
        }
        t.join().unwrap();
        assert_eq!(next, n);
    }
}
