//! A hashed timer wheel with a fixed node pool: scheduling and cancelling never allocate.
//!
//! Time is in ticks supplied by the caller (the engine passes milliseconds), so the wheel is
//! sans-IO and the simulator can drive it with a virtual clock. [`clock`] holds the time types
//! the whole data path uses; [`histogram`] the latency histogram the load generators and the
//! pipeline's Measure keep.

pub mod clock;
pub mod histogram;
pub use clock::{Duration, Instant};

/// Handle of a scheduled timer, valid until it fires or is cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerId {
    index: u32,
    generation: u32,
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Node<T: Copy> {
    deadline: u64,
    token: Option<T>,
    next: u32,
    prev: u32,
    generation: u32,
}

/// The wheel: `slots` buckets of one tick each; timers further out stay in their bucket
/// until a later lap reaches their deadline.
pub struct TimerWheel<T: Copy> {
    nodes: Vec<Node<T>>,
    heads: Vec<u32>,
    free: u32,
    now: u64,
    len: usize,
}

impl<T: Copy> TimerWheel<T> {
    /// A wheel with `slots` buckets (rounded to a power of two) and room for `capacity` timers.
    pub fn new(slots: usize, capacity: usize, now: u64) -> Self {
        let slots = slots.next_power_of_two();
        let nodes = (0..capacity)
            .map(|i| Node {
                deadline: 0,
                token: None,
                next: if i + 1 < capacity { i as u32 + 1 } else { NIL },
                prev: NIL,
                generation: 0,
            })
            .collect();
        TimerWheel { nodes, heads: vec![NIL; slots], free: if capacity > 0 { 0 } else { NIL }, now, len: 0 }
    }

    /// Timers scheduled and not yet fired or cancelled.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if no timer is scheduled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn slot(&self, t: u64) -> usize {
        (t as usize) & (self.heads.len() - 1)
    }

    /// Schedules `token` to fire at tick `at` (at the next `advance` if `at` is past).
    /// Returns None when the pool is full — the caller's policy decides what to do.
    pub fn schedule(&mut self, at: u64, token: T) -> Option<TimerId> {
        let i = self.free;
        if i == NIL {
            return None;
        }
        let at = at.max(self.now);
        self.free = self.nodes[i as usize].next;
        let s = self.slot(at);
        let head = self.heads[s];
        let n = &mut self.nodes[i as usize];
        n.deadline = at;
        n.token = Some(token);
        n.prev = NIL;
        n.next = head;
        let generation = n.generation;
        if head != NIL {
            self.nodes[head as usize].prev = i;
        }
        self.heads[s] = i;
        self.len += 1;
        Some(TimerId { index: i, generation })
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next, d) = {
            let n = &self.nodes[i as usize];
            (n.prev, n.next, n.deadline)
        };
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        } else {
            let s = self.slot(d);
            self.heads[s] = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        }
        let n = &mut self.nodes[i as usize];
        n.token = None;
        n.generation = n.generation.wrapping_add(1);
        n.next = self.free;
        self.free = i;
        self.len -= 1;
    }

    /// Cancels a timer; returns false if it already fired or was cancelled.
    pub fn cancel(&mut self, id: TimerId) -> bool {
        let Some(n) = self.nodes.get(id.index as usize) else {
            return false;
        };
        if n.generation != id.generation || n.token.is_none() {
            return false;
        }
        self.unlink(id.index);
        true
    }

    /// Moves time to `now`, calling `fire` for every timer whose deadline has come, in
    /// deadline order within each tick. Returns how many fired.
    pub fn advance(&mut self, now: u64, mut fire: impl FnMut(T)) -> usize {
        let mut fired = 0;
        if now < self.now {
            return 0;
        }
        // Visit each tick once, but never more than one lap: after a lap every slot was seen.
        let steps = (now - self.now).min(self.heads.len() as u64 - 1);
        let start = if now - self.now > steps { now - steps } else { self.now };
        for t in start..=now {
            let s = self.slot(t);
            let mut i = self.heads[s];
            while i != NIL {
                let next = self.nodes[i as usize].next;
                if self.nodes[i as usize].deadline <= now {
                    let token = self.nodes[i as usize].token.expect("linked nodes hold tokens");
                    self.unlink(i);
                    fire(token);
                    fired += 1;
                }
                i = next;
            }
        }
        self.now = now;
        fired
    }

    /// The earliest deadline, found by scanning (for idle sleeps; not on the packet path).
    pub fn next_deadline(&self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        self.nodes.iter().filter(|n| n.token.is_some()).map(|n| n.deadline).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fires_in_time_and_cancels() {
        let mut w = TimerWheel::new(8, 4, 0);
        let a = w.schedule(5, 'a').unwrap();
        w.schedule(3, 'b').unwrap();
        w.schedule(20, 'c').unwrap();
        let mut got = vec![];
        w.advance(4, |t| got.push(t));
        assert_eq!(got, vec!['b']);
        assert!(w.cancel(a));
        assert!(!w.cancel(a));
        w.advance(19, |t| got.push(t));
        assert_eq!(got, vec!['b']);
        w.advance(20, |t| got.push(t));
        assert_eq!(got, vec!['b', 'c']);
        assert!(w.is_empty());
    }

    #[test]
    fn full_pool_refuses() {
        let mut w = TimerWheel::new(4, 2, 0);
        assert!(w.schedule(1, 1).is_some());
        assert!(w.schedule(1, 2).is_some());
        assert!(w.schedule(1, 3).is_none());
        w.advance(1, |_| {});
        assert!(w.schedule(2, 3).is_some());
    }

    proptest! {
        // Against a plain list: every timer fires exactly once, at the first advance whose
        // time reaches its deadline, whatever the jumps in time.
        #[test]
        fn matches_reference(deadlines in proptest::collection::vec(0u64..500, 0..60),
                             steps in proptest::collection::vec(1u64..80, 1..40),
                             cancel in proptest::collection::vec(any::<bool>(), 60)) {
            let mut w = TimerWheel::new(16, 64, 0);
            let mut ids = vec![];
            for (i, &d) in deadlines.iter().enumerate() {
                ids.push(w.schedule(d, i).unwrap());
            }
            let mut live: Vec<bool> = vec![true; deadlines.len()];
            for (i, id) in ids.iter().enumerate() {
                if cancel[i] { prop_assert!(w.cancel(*id)); live[i] = false; }
            }
            let mut now = 0;
            for s in steps {
                now += s;
                let mut got = vec![];
                w.advance(now, |t| got.push(t));
                got.sort();
                let mut want: Vec<usize> = (0..deadlines.len()).filter(|&i| live[i] && deadlines[i] <= now).collect();
                want.sort();
                for &i in &want { live[i] = false; }
                prop_assert_eq!(got, want);
            }
        }
    }
}
