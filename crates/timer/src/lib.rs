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
    /// Linked in the far level (see [`TimerWheel`]).
    far: bool,
}

/// A hierarchical timing wheel (Varghese and Lauck) of two levels, `slots` buckets each:
/// the near level holds the timers due in the current lap of `slots` ticks, one bucket per
/// tick; the far level one bucket per lap. When a lap begins, its far bucket's timers move
/// to the near level — each timer moves at most once (beyond `slots` laps it waits another
/// round of the far level). So an idle connection's timer an hour out costs nothing until
/// its lap comes (issue 44: with one level, a million such timers were walked every lap).
pub struct TimerWheel<T: Copy> {
    nodes: Vec<Node<T>>,
    heads: Vec<u32>,
    far: Vec<u32>,
    bits: u32,
    free: u32,
    now: u64,
    len: usize,
}

impl<T: Copy> TimerWheel<T> {
    /// A wheel with `slots` buckets per level (rounded to a power of two) and room for
    /// `capacity` timers.
    pub fn new(slots: usize, capacity: usize, now: u64) -> Self {
        let slots = slots.next_power_of_two().max(2);
        let nodes = (0..capacity)
            .map(|i| Node {
                deadline: 0,
                token: None,
                next: if i + 1 < capacity { i as u32 + 1 } else { NIL },
                prev: NIL,
                generation: 0,
                far: false,
            })
            .collect();
        TimerWheel {
            nodes,
            heads: vec![NIL; slots],
            far: vec![NIL; slots],
            bits: slots.trailing_zeros(),
            free: if capacity > 0 { 0 } else { NIL },
            now,
            len: 0,
        }
    }

    /// Bytes of one timer's room (the wheel preallocates `capacity` of them).
    pub const fn node_bytes() -> usize {
        std::mem::size_of::<Node<T>>()
    }

    /// Timers scheduled and not yet fired or cancelled.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if no timer is scheduled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn mask(&self) -> u64 {
        self.heads.len() as u64 - 1
    }

    fn lap(&self, t: u64) -> u64 {
        t >> self.bits
    }

    /// The bucket head node `i` belongs in.
    fn head_of(&mut self, i: u32) -> &mut u32 {
        let n = &self.nodes[i as usize];
        let m = self.mask();
        if n.far {
            let l = (self.lap(n.deadline) & m) as usize;
            &mut self.far[l]
        } else {
            &mut self.heads[(n.deadline & m) as usize]
        }
    }

    /// Links node `i` (its deadline set) at the level its deadline calls for.
    fn link(&mut self, i: u32) {
        let far = self.lap(self.nodes[i as usize].deadline) > self.lap(self.now);
        self.nodes[i as usize].far = far;
        let head = *self.head_of(i);
        let n = &mut self.nodes[i as usize];
        n.prev = NIL;
        n.next = head;
        if head != NIL {
            self.nodes[head as usize].prev = i;
        }
        *self.head_of(i) = i;
    }

    /// Unlinks node `i` from its bucket (it stays allocated).
    fn detach(&mut self, i: u32) {
        let (prev, next) = {
            let n = &self.nodes[i as usize];
            (n.prev, n.next)
        };
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        } else {
            *self.head_of(i) = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        }
    }

    /// Schedules `token` to fire at tick `at` (at the next `advance` if `at` is past).
    /// Returns None when the pool is full — the caller's policy decides what to do.
    pub fn schedule(&mut self, at: u64, token: T) -> Option<TimerId> {
        let i = self.free;
        if i == NIL {
            return None;
        }
        self.free = self.nodes[i as usize].next;
        let n = &mut self.nodes[i as usize];
        n.deadline = at.max(self.now);
        n.token = Some(token);
        let generation = n.generation;
        self.link(i);
        self.len += 1;
        Some(TimerId { index: i, generation })
    }

    fn unlink(&mut self, i: u32) {
        self.detach(i);
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

    /// Fires the timers of near bucket `s` due by `to`.
    fn fire_near(&mut self, s: usize, to: u64, fire: &mut impl FnMut(T)) -> usize {
        let mut fired = 0;
        let mut i = self.heads[s];
        while i != NIL {
            let next = self.nodes[i as usize].next;
            if self.nodes[i as usize].deadline <= to {
                let token = self.nodes[i as usize].token.expect("linked nodes hold tokens");
                self.unlink(i);
                fire(token);
                fired += 1;
            }
            i = next;
        }
        fired
    }

    /// The far bucket of lap `lap`: timers due by `to` fire, the rest of that lap's move to
    /// the near level (with `now` already in it), later laps' stay.
    fn cascade(&mut self, lap: u64, to: u64, fire: &mut impl FnMut(T)) -> usize {
        let mut fired = 0;
        let mut i = self.far[(lap & self.mask()) as usize];
        while i != NIL {
            let next = self.nodes[i as usize].next;
            let d = self.nodes[i as usize].deadline;
            if d <= to {
                let token = self.nodes[i as usize].token.expect("linked nodes hold tokens");
                self.unlink(i);
                fire(token);
                fired += 1;
            } else if self.lap(d) <= self.lap(self.now) {
                self.detach(i);
                self.link(i);
            }
            i = next;
        }
        fired
    }

    /// Moves time to `now`, calling `fire` for every timer whose deadline has come, in
    /// deadline order within each tick. Returns how many fired.
    pub fn advance(&mut self, now: u64, mut fire: impl FnMut(T)) -> usize {
        if now < self.now {
            return 0;
        }
        let mut fired = 0;
        let from = self.now;
        if now - from > self.mask() {
            // More than a lap: the far buckets of the laps crossed (each at most once), then
            // every near bucket once.
            self.now = now;
            let laps = (self.lap(now) - self.lap(from)).min(self.far.len() as u64);
            for k in 0..laps {
                fired += self.cascade(self.lap(now) - k, now, &mut fire);
            }
            for s in 0..self.heads.len() {
                fired += self.fire_near(s, now, &mut fire);
            }
            return fired;
        }
        for t in from..=now {
            if t > from && t & self.mask() == 0 {
                self.now = t;
                fired += self.cascade(self.lap(t), now, &mut fire);
            }
            fired += self.fire_near((t & self.mask()) as usize, now, &mut fire);
        }
        self.now = now;
        fired
    }

    /// The earliest deadline, or a time before it (the start of the lap whose far bucket
    /// holds the next timers): for idle sleeps, by a scan of the buckets, not of the timers.
    pub fn next_deadline(&self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let m = self.mask();
        for t in self.now..=(self.now | m) {
            let mut i = self.heads[(t & m) as usize];
            let mut best: Option<u64> = None;
            while i != NIL {
                let d = self.nodes[i as usize].deadline;
                best = Some(best.map_or(d, |b: u64| b.min(d)));
                i = self.nodes[i as usize].next;
            }
            if best.is_some() {
                return best;
            }
        }
        let lap = self.lap(self.now);
        (1..=self.far.len() as u64)
            .find(|k| self.far[((lap + k) & m) as usize] != NIL)
            .map(|k| (lap + k) << self.bits)
            .or(Some(self.now))
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

    /// Against a plain list: advances `w` by `steps`, checking that every live timer fires
    /// exactly once, at the first advance whose time reaches its deadline, and that the sleep
    /// bound is never after the next timer nor before now.
    fn check_against_list(
        w: &mut TimerWheel<usize>,
        deadlines: &[u64],
        mut live: Vec<bool>,
        steps: &[u64],
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let mut now = 0;
        for s in steps {
            now += s;
            let mut got = vec![];
            w.advance(now, |t| got.push(t));
            got.sort();
            let want: Vec<usize> = (0..deadlines.len()).filter(|&i| live[i] && deadlines[i] <= now).collect();
            for &i in &want {
                live[i] = false;
            }
            prop_assert_eq!(got, want);
            let next = (0..deadlines.len()).filter(|&i| live[i]).map(|i| deadlines[i]).min();
            match (w.next_deadline(), next) {
                (None, None) => {}
                (Some(b), Some(d)) => prop_assert!(b <= d.max(now) && b >= now, "{b} {d} {now}"),
                (b, d) => prop_assert!(false, "bound {b:?}, next {d:?}"),
            }
        }
        Ok(())
    }

    proptest! {
        // Whatever the jumps in time, some timers cancelled.
        #[test]
        fn matches_reference(deadlines in proptest::collection::vec(0u64..500, 0..60),
                             steps in proptest::collection::vec(1u64..80, 1..40),
                             cancel in proptest::collection::vec(any::<bool>(), 60)) {
            let mut w = TimerWheel::new(16, 64, 0);
            let ids: Vec<TimerId> = deadlines.iter().enumerate().map(|(i, &d)| w.schedule(d, i).unwrap()).collect();
            let mut live: Vec<bool> = vec![true; deadlines.len()];
            for (i, id) in ids.iter().enumerate() {
                if cancel[i] { prop_assert!(w.cancel(*id)); live[i] = false; }
            }
            check_against_list(&mut w, &deadlines, live, &steps)?;
        }

        // A tiny wheel, far deadlines: timers wait several rounds of the far level.
        #[test]
        fn far_timers_fire_once_in_time(deadlines in proptest::collection::vec(0u64..2000, 0..40),
                                        steps in proptest::collection::vec(1u64..40, 1..120)) {
            let mut w = TimerWheel::new(4, 64, 0);
            for (i, &d) in deadlines.iter().enumerate() {
                w.schedule(d, i).unwrap();
            }
            check_against_list(&mut w, &deadlines, vec![true; deadlines.len()], &steps)?;
        }
    }
}
