//! Pre-copy mode (Sandstorm's replicas): copies of master segments kept in pinned frames of
//! the TX arena, so serving a segment writes only the per-client header fields of a frame
//! that already holds its bytes. A replica in the TX ring belongs to that transmission until
//! the kernel completes it; another client needing the same segment meanwhile gets another
//! replica, made on demand up to a budget of frames. Past the budget a segment is copied from
//! its master (memcpy mode) and counted as a fallback — unless an idle replica can be taken
//! back from another segment: the one idle the longest (a cold segment's, or a spare of a hot
//! one) is copied over and serves the segment in demand. That costs the same copy a fallback
//! would, and leaves a replica where the clients are, so with more segments in use than the
//! budget holds (large files, many clients) the frames follow the demand.
//!
//! Replicas are found through the object slot and segment index, and come back by frame
//! address, so both directions are a vector index — no hashing per send.

use std::collections::VecDeque;

use crate::segment::HEADER;
use crate::store::Store;

/// Where a pinned frame's bytes come from.
#[derive(Debug, Clone, Copy)]
struct Home {
    slot: u32,
    /// The object's incarnation when the replica was made: a slot reused by another object
    /// (or the same file packetised again) must not be served from it.
    incarnation: u32,
    /// Segment list index ([`Replicas::index`]): the segment, its variant and the family.
    idx: u32,
    /// For heads: the date the copied head carries.
    stamp: u64,
    /// Times the frame left the idle lists (to send, or taken back): tells a current entry of
    /// the idle order from a stale one.
    uses: u32,
}

/// The idle replicas of one object.
#[derive(Default)]
struct ObjReplicas {
    incarnation: u32,
    idle: Vec<Vec<u64>>,
}

/// Counters.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReplicaStats {
    /// Segments sent from a replica (no payload copied).
    pub sends: u64,
    /// Replicas made (a master copied into a newly pinned frame).
    pub made: u64,
    /// Head replicas copied again because their date went stale.
    pub refreshed: u64,
    /// Segments copied from the master because no replica was idle and the budget was spent
    /// (or no frame could be pinned).
    pub fallbacks: u64,
    /// Replicas given back to the free list (their object went away).
    pub released: u64,
    /// Idle replicas taken back from another segment, the budget being spent.
    pub reclaimed: u64,
}

/// The replicas of one engine.
pub struct Replicas {
    budget: usize,
    pinned: usize,
    homes: Vec<Option<Home>>,
    objs: Vec<ObjReplicas>,
    unpin: Vec<u64>,
    /// Frames in the order they became idle, with their `uses` then; entries of frames used
    /// since are stale and skipped.
    idle_order: VecDeque<(u64, u32)>,
    /// Counters.
    pub stats: ReplicaStats,
}

/// Smallest frame size: frame addresses divided by it index the homes.
const FRAME_UNIT: u64 = 2048;

impl Replicas {
    /// Replicas in at most `budget` frames.
    pub fn new(budget: usize) -> Replicas {
        Replicas {
            budget,
            pinned: 0,
            homes: Vec::new(),
            objs: Vec::new(),
            unpin: Vec::new(),
            idle_order: VecDeque::new(),
            stats: Default::default(),
        }
    }

    /// Frames pinned now.
    pub fn pinned(&self) -> usize {
        self.pinned
    }

    /// The frame budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// The list index of segment `k`, head variant `close`.
    #[inline]
    fn index(k: u64, close: bool) -> usize {
        if k == 0 {
            usize::from(close)
        } else {
            k as usize + 1
        }
    }

    /// An idle replica of segment `k` (variant `close`) of the object at `slot`, holding the
    /// master's current bytes where a packet of its family (`v6`) carries them, or a new one
    /// made in a frame from `pin`; None when neither is possible (the caller copies from the
    /// master).
    pub fn take(
        &mut self,
        store: &Store,
        (slot, k, close): (u32, u64, bool),
        v6: bool,
        arena: &mut dyn tcp::PinnedFrames,
    ) -> Option<u64> {
        let o = store.obj(slot);
        let inc = store.incarnation(slot);
        // Each family has replicas of its own: the segment sits 20 bytes further in a frame
        // for IPv6.
        let idx = 2 * Self::index(k, close) + usize::from(v6);
        let s = slot as usize;
        if s >= self.objs.len() {
            self.objs.resize_with(s + 1, Default::default);
        }
        let r = &mut self.objs[s];
        if r.incarnation != inc {
            // Left over from an object this slot held before.
            for list in r.idle.drain(..) {
                self.unpin.extend(list);
            }
            r.incarnation = inc;
        }
        if idx >= r.idle.len() {
            r.idle.resize_with(idx + 1, Vec::new);
        }
        let stamp = if k == 0 { o.head_date() } else { 0 };
        let master = o.master(k, close);
        let frame = match r.idle[idx].pop() {
            Some(f) => {
                self.stats.sends += 1;
                let home = self.homes[(f / FRAME_UNIT) as usize].as_mut().expect("a pinned frame has a home");
                home.uses = home.uses.wrapping_add(1);
                if home.stamp == stamp {
                    // The header still holds the last client's fields, which the incremental
                    // checksum update cannot take out: start again from the template's
                    // header. The payload is already there.
                    arena.segment_mut(f, v6)[..HEADER].copy_from_slice(&master[..HEADER]);
                    return Some(f);
                }
                home.stamp = stamp;
                self.stats.refreshed += 1;
                f
            }
            None => {
                let new = if self.pinned < self.budget { arena.pin() } else { None };
                let (f, uses) = match new {
                    Some(f) => {
                        self.pinned += 1;
                        self.stats.made += 1;
                        (f, 0)
                    }
                    None => match self.reclaim() {
                        Some((f, uses)) => {
                            self.stats.reclaimed += 1;
                            (f, uses)
                        }
                        None => {
                            self.stats.fallbacks += 1;
                            return None;
                        }
                    },
                };
                self.stats.sends += 1;
                let i = (f / FRAME_UNIT) as usize;
                if i >= self.homes.len() {
                    self.homes.resize(i + 1, None);
                }
                self.homes[i] = Some(Home { slot, incarnation: inc, idx: idx as u32, stamp, uses });
                f
            }
        };
        arena.segment_mut(frame, v6)[..master.len()].copy_from_slice(master);
        Some(frame)
    }

    /// The replica idle the longest, out of its idle list, with its next `uses`.
    fn reclaim(&mut self) -> Option<(u64, u32)> {
        while let Some((f, uses)) = self.idle_order.pop_front() {
            let Some(home) = self.homes.get((f / FRAME_UNIT) as usize).copied().flatten() else {
                continue; // unpinned since
            };
            if home.uses != uses {
                continue; // used since it was idle then
            }
            let Some(list) = self.objs.get_mut(home.slot as usize).and_then(|r| r.idle.get_mut(home.idx as usize))
            else {
                continue;
            };
            // Not in its list: on its way to be unpinned (its object went away).
            let Some(at) = list.iter().position(|&x| x == f) else { continue };
            list.swap_remove(at);
            return Some((f, uses.wrapping_add(1)));
        }
        None
    }

    /// Records that `frame` became idle, keeping the order's stale entries bounded.
    fn idle_since_now(&mut self, frame: u64, uses: u32) {
        self.idle_order.push_back((frame, uses));
        if self.idle_order.len() > 2 * self.pinned + 64 {
            let homes = &self.homes;
            self.idle_order
                .retain(|&(f, u)| homes.get((f / FRAME_UNIT) as usize).copied().flatten().is_some_and(|h| h.uses == u));
        }
    }

    /// A pinned frame came back (transmitted or dropped): idle again if its object is still
    /// the one it copies, else to be unpinned.
    pub fn back(&mut self, store: &Store, frame: u64) {
        let Some(home) = self.homes.get(frame as usize / FRAME_UNIT as usize).copied().flatten() else {
            return;
        };
        let r = &mut self.objs[home.slot as usize];
        if r.incarnation == home.incarnation && store.incarnation(home.slot) == home.incarnation {
            r.idle[home.idx as usize].push(frame);
            self.idle_since_now(frame, home.uses);
        } else {
            self.unpin.push(frame);
        }
    }

    /// Releases the idle replicas of objects the store dropped.
    pub fn forget(&mut self, slot: u32) {
        if let Some(r) = self.objs.get_mut(slot as usize) {
            for list in r.idle.drain(..) {
                self.unpin.extend(list);
            }
        }
    }

    /// Hands each frame to give back to the free list to `each`.
    pub fn drain_unpins(&mut self, each: &mut dyn FnMut(u64)) {
        for f in self.unpin.drain(..) {
            if let Some(h) = self.homes.get_mut((f / FRAME_UNIT) as usize) {
                *h = None;
            }
            self.pinned -= 1;
            self.stats.released += 1;
            each(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment;
    use crate::site::Site;
    use std::sync::Arc;
    use wire::tcp::{TcpFlags, TcpOptions, TcpRepr};
    use wire::Ipv4Addr;

    /// A TX arena of 4 KB frames that records what is sent and gives frames back on demand.
    struct Arena {
        mem: Vec<u8>,
        next: u64,
        limit: u64,
        sent: Vec<(u64, Vec<u8>)>,
    }

    impl tcp::PinnedFrames for Arena {
        fn pin(&mut self) -> Option<u64> {
            (self.next < self.limit).then(|| {
                self.next += 1;
                (self.next - 1) * 4096
            })
        }
        fn segment_mut(&mut self, frame: u64, v6: bool) -> &mut [u8] {
            // The segment where the engine would put it: 20 bytes further for IPv6.
            let at = frame as usize + if v6 { 20 } else { 0 };
            &mut self.mem[at..frame as usize + 4096]
        }
        fn send(&mut self, remote: wire::IpAddr, frame: u64, len: usize, write: &mut dyn FnMut(&mut [u8])) {
            let at = frame as usize + if remote.is_ipv6() { 20 } else { 0 };
            let seg = &mut self.mem[at..at + len];
            write(seg);
            self.sent.push((frame, seg.to_vec()));
        }
    }

    fn repr(port: u16, seq: u32, len: usize) -> TcpRepr {
        TcpRepr {
            src_port: 80,
            dst_port: port,
            seq,
            ack: 7,
            flags: TcpFlags(TcpFlags::ACK),
            window: 500,
            options: TcpOptions { timestamps: Some((seq ^ 0x55, 9)), ..Default::default() },
            payload_len: len,
        }
    }

    fn send(reps: &mut Replicas, st: &Store, slot: u32, k: u64, port: u16, a: &mut Arena) -> Option<(u64, Vec<u8>)> {
        send_in(reps, st, (slot, k, port), false, a)
    }

    /// As `send`, to a client of either family.
    fn send_in(
        reps: &mut Replicas,
        st: &Store,
        (slot, k, port): (u32, u64, u16),
        v6: bool,
        a: &mut Arena,
    ) -> Option<(u64, Vec<u8>)> {
        let (src, dst): (wire::IpAddr, wire::IpAddr) = if v6 {
            let a6 = |last: u8| wire::Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last]);
            (a6(0x10).into(), a6(2).into())
        } else {
            (Ipv4Addr([198, 18, 0, 10]).into(), Ipv4Addr([198, 18, 0, 2]).into())
        };
        let f = reps.take(st, (slot, k, false), v6, a)?;
        let r = repr(port, u32::from(port) * 1000 + k as u32, st.obj(slot).seg_len(k) as usize);
        tcp::PinnedFrames::send(a, dst, f, segment::HEADER + r.payload_len, &mut |s| segment::rewrite(s, &r, src, dst));
        let (frame, bytes) = a.sent.last().cloned().unwrap();
        // What the memcpy path would have sent for the same client.
        let mut want = vec![0; bytes.len()];
        segment::write(st.obj(slot).master(k, false), &r, src, dst, &mut want);
        assert_eq!(bytes, want, "replica bytes for port {port} segment {k}");
        Some((frame, bytes))
    }

    /// The demo site packetised, its first object held, and a 64-frame arena.
    fn fixture() -> (Arc<Site>, Store, u32, Arena) {
        let site = Arc::new(Site::demo(5));
        let mut st = Store::new(site.clone(), 1448, 1 << 30, 100);
        st.preload();
        let slot = st.get(0).unwrap();
        (site, st, slot, Arena { mem: vec![0; 64 * 4096], next: 0, limit: 64, sent: Vec::new() })
    }

    #[test]
    fn a_replica_in_flight_is_never_given_to_another_client() {
        let (_, st, slot, mut a) = fixture();
        let mut reps = Replicas::new(8);
        let (f1, _) = send(&mut reps, &st, slot, 0, 1001, &mut a).unwrap();
        let (f2, _) = send(&mut reps, &st, slot, 0, 1002, &mut a).unwrap();
        assert_ne!(f1, f2, "the first is still in the TX ring");
        assert_eq!(reps.stats.made, 2);
        // Completed: the next client reuses it, header rewritten from the template.
        reps.back(&st, f1);
        let (f3, _) = send(&mut reps, &st, slot, 0, 1003, &mut a).unwrap();
        assert_eq!(f3, f1);
        assert_eq!(reps.stats.made, 2);
        assert_eq!(reps.stats.sends, 3);
    }

    #[test]
    fn stale_heads_are_copied_again_and_the_budget_bounds_frames() {
        let (_, mut st, slot, mut a) = fixture();
        st.put(slot);
        let mut reps = Replicas::new(2);
        let (f, _) = send(&mut reps, &st, slot, 0, 1001, &mut a).unwrap();
        reps.back(&st, f);
        st.set_date(101);
        let slot = st.get(0).unwrap();
        send(&mut reps, &st, slot, 0, 1002, &mut a).unwrap();
        assert_eq!(reps.stats.refreshed, 1, "the head's Date changed");
        send(&mut reps, &st, slot, 0, 1003, &mut a).unwrap();
        assert!(send(&mut reps, &st, slot, 0, 1004, &mut a).is_none(), "budget of 2 spent");
        assert_eq!(reps.stats.fallbacks, 1);
    }

    #[test]
    fn replicas_of_a_dropped_object_are_released() {
        let (site, mut st, slot, mut a) = fixture();
        let mut reps = Replicas::new(8);
        let (idle, _) = send(&mut reps, &st, slot, 0, 1001, &mut a).unwrap();
        let (busy, _) = send(&mut reps, &st, slot, 0, 1002, &mut a).unwrap();
        reps.back(&st, idle);
        st.put(slot);
        st.replace_site(site);
        st.drain_dropped(&mut |s| reps.forget(s));
        reps.back(&st, busy); // completes after the object went
        let mut freed = Vec::new();
        reps.drain_unpins(&mut |f| freed.push(f));
        freed.sort();
        assert_eq!(freed, vec![idle.min(busy), idle.max(busy)]);
        assert_eq!(reps.pinned(), 0);
    }

    #[test]
    fn past_the_budget_the_replica_idle_longest_is_taken_back() {
        let (_, st, slot, mut a) = fixture();
        assert!(st.obj(slot).segments() >= 2, "the fixture object has a body segment");
        let mut reps = Replicas::new(2);
        let (f0, _) = send(&mut reps, &st, slot, 0, 1001, &mut a).unwrap();
        let (f1, _) = send(&mut reps, &st, slot, 1, 1001, &mut a).unwrap();
        reps.back(&st, f0);
        reps.back(&st, f1);
        // The budget is spent and segment 0's close head has no replica: segment 0's
        // keep-alive head, idle the longest, is copied over (send() checks the bytes).
        let f = reps.take(&st, (slot, 0, true), false, &mut a).unwrap();
        assert_eq!(f, f0);
        assert_eq!((reps.stats.reclaimed, reps.stats.fallbacks, reps.pinned()), (1, 0, 2));
        // Segment 0 keep-alive lost its replica: it takes back the other idle one (f1).
        let (g, _) = send(&mut reps, &st, slot, 0, 1002, &mut a).unwrap();
        assert_eq!(g, f1);
        // Both frames are in flight now: nothing idle to take back, so a copy.
        assert!(send(&mut reps, &st, slot, 1, 1003, &mut a).is_none());
        assert_eq!((reps.stats.reclaimed, reps.stats.fallbacks), (2, 1));
        // Back from the ring, each is idle under its new segment.
        reps.back(&st, f);
        reps.back(&st, g);
        let (h, _) = send(&mut reps, &st, slot, 0, 1004, &mut a).unwrap();
        assert_eq!(h, g, "segment 0 keep-alive's own replica, no copy");
        assert_eq!(reps.stats.reclaimed, 2);
    }

    #[test]
    fn the_idle_order_stays_bounded_without_reclaims() {
        let (_, st, slot, mut a) = fixture();
        let mut reps = Replicas::new(8);
        for i in 0..10_000u16 {
            let (f, _) = send(&mut reps, &st, slot, 0, 1000 + i % 50, &mut a).unwrap();
            reps.back(&st, f);
        }
        assert!(reps.idle_order.len() <= 2 * reps.pinned() + 64, "{}", reps.idle_order.len());
    }

    #[test]
    fn each_family_has_replicas_of_its_own() {
        let (_, st, slot, mut a) = fixture();
        let mut reps = Replicas::new(8);
        // send_in checks each replica's bytes against the memcpy path for that client.
        let (f4, _) = send_in(&mut reps, &st, (slot, 1, 1001), false, &mut a).unwrap();
        let (f6, _) = send_in(&mut reps, &st, (slot, 1, 1002), true, &mut a).unwrap();
        assert_ne!(f4, f6, "an IPv6 client does not get the IPv4 replica");
        reps.back(&st, f4);
        reps.back(&st, f6);
        let (g6, _) = send_in(&mut reps, &st, (slot, 1, 1003), true, &mut a).unwrap();
        let (g4, _) = send_in(&mut reps, &st, (slot, 1, 1004), false, &mut a).unwrap();
        assert_eq!((g4, g6), (f4, f6), "each family reuses its own");
        assert_eq!(reps.stats.made, 2);
    }
}
