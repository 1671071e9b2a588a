//! The endpoint's tables by 4-tuple (connections, and TIME-WAIT entries): open addressing
//! with linear probing, keyed by a SipHash of the tuple under the endpoint's key (peers choose
//! ports and addresses, so the hash must be keyed). Our own rather than std's `HashMap` so a
//! lookup's first slot can be named before the lookup ([`TupleTable::first_slot`]): the engine
//! prefetches it for the frames coming next in its batch, and the lookup then finds it in
//! cache (issue 20: at one request per connection, table lookups missing the cache took ~10 %
//! of the server core). Both tables share the key, so one hash serves both.
//!
//! Deletion shifts later entries of the probe run back (no tombstones); the table doubles
//! past half full.

use crate::siphash::{self, Key};
use crate::tuple::Tuple;

const MIN_SLOTS: usize = 64;

/// A tuple's hash under a table key: computed once per segment for both tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TupleHash(u32);

impl TupleHash {
    pub(crate) fn of(key: Key, t: &Tuple) -> TupleHash {
        let (b, n) = t.bytes();
        TupleHash(siphash::hash(key, &b[..n]) as u32)
    }
}

/// A table from tuples to `V`.
pub(crate) struct TupleTable<V> {
    slots: Vec<Option<(u32, Tuple, V)>>,
    len: usize,
}

impl<V: Copy> TupleTable<V> {
    /// A table sized for `expected` entries without growing.
    pub(crate) fn with_capacity(expected: usize) -> Self {
        let n = expected.saturating_mul(2).next_power_of_two().max(MIN_SLOTS);
        TupleTable { slots: vec![None; n], len: 0 }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The address of the first slot a lookup of `h` reads, to prefetch.
    pub(crate) fn first_slot(&self, h: TupleHash) -> *const u8 {
        (&self.slots[h.0 as usize & self.mask()] as *const Option<(u32, Tuple, V)>).cast()
    }

    fn find(&self, h: TupleHash, t: &Tuple) -> Option<usize> {
        let m = self.mask();
        let mut i = h.0 as usize & m;
        // Never more than half full, so an empty slot ends every run.
        loop {
            match &self.slots[i] {
                None => return None,
                Some((sh, st, _)) if *sh == h.0 && st == t => return Some(i),
                Some(_) => i = (i + 1) & m,
            }
        }
    }

    pub(crate) fn get(&self, h: TupleHash, t: &Tuple) -> Option<&V> {
        self.find(h, t).and_then(|i| self.slots[i].as_ref().map(|(_, _, v)| v))
    }

    pub(crate) fn get_mut(&mut self, h: TupleHash, t: &Tuple) -> Option<&mut V> {
        self.find(h, t).and_then(|i| self.slots[i].as_mut().map(|(_, _, v)| v))
    }

    pub(crate) fn contains(&self, h: TupleHash, t: &Tuple) -> bool {
        self.find(h, t).is_some()
    }

    /// Inserts or replaces.
    pub(crate) fn insert(&mut self, h: TupleHash, t: Tuple, v: V) {
        if let Some(i) = self.find(h, &t) {
            self.slots[i] = Some((h.0, t, v));
            return;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        self.put(h.0, t, v);
        self.len += 1;
    }

    fn put(&mut self, h: u32, t: Tuple, v: V) {
        let m = self.mask();
        let mut i = h as usize & m;
        while self.slots[i].is_some() {
            i = (i + 1) & m;
        }
        self.slots[i] = Some((h, t, v));
    }

    fn grow(&mut self) {
        let n = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![None; n]);
        for (h, t, v) in old.into_iter().flatten() {
            self.put(h, t, v);
        }
    }

    /// Removes `t`; returns its value if it was there.
    pub(crate) fn remove(&mut self, h: TupleHash, t: &Tuple) -> Option<V> {
        let mut hole = self.find(h, t)?;
        let out = self.slots[hole].take().map(|(_, _, v)| v);
        self.len -= 1;
        // Backward shift: an entry later in the run moves into the hole unless its home slot
        // lies after the hole (cyclically), where a lookup would no longer pass the hole.
        let m = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & m;
            let Some((eh, _, _)) = self.slots[j] else { break };
            let home = eh as usize & m;
            if (j.wrapping_sub(home) & m) >= (j.wrapping_sub(hole) & m) {
                self.slots[hole] = self.slots[j].take();
                hole = j;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use wire::Ipv4Addr;

    fn tuple(port: u16, remote: u8) -> Tuple {
        Tuple {
            local: wire::IpAddr::V4(Ipv4Addr([198, 18, 0, 10])),
            remote: wire::IpAddr::V4(Ipv4Addr([198, 18, 1, remote])),
            local_port: 80,
            remote_port: port,
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16, u8, u32),
        Remove(u16, u8),
    }

    proptest! {
        /// Any sequence of inserts and removes leaves the table agreeing with std's map, with
        /// few distinct tuples so runs collide, wrap and shift.
        #[test]
        fn agrees_with_a_map(ops in proptest::collection::vec(prop_oneof![
            (0u16..40, 0u8..3, any::<u32>()).prop_map(|(p, r, v)| Op::Insert(p, r, v)),
            (0u16..40, 0u8..3).prop_map(|(p, r)| Op::Remove(p, r)),
        ], 0..400), key in any::<[u64; 2]>()) {
            let key = Key(key);
            let mut t: TupleTable<u32> = TupleTable::with_capacity(4);
            let mut m = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(p, r, v) => {
                        let k = tuple(p, r);
                        t.insert(TupleHash::of(key, &k), k, v);
                        m.insert(k.bytes(), v);
                    }
                    Op::Remove(p, r) => {
                        let k = tuple(p, r);
                        prop_assert_eq!(t.remove(TupleHash::of(key, &k), &k), m.remove(&k.bytes()));
                    }
                }
                prop_assert_eq!(t.len(), m.len());
            }
            for p in 0..40 {
                for r in 0..3 {
                    let k = tuple(p, r);
                    prop_assert_eq!(t.get(TupleHash::of(key, &k), &k).copied(), m.get(&k.bytes()).copied());
                }
            }
        }
    }

    #[test]
    fn colliding_hashes_wrap_around_the_end_and_shift_back() {
        // Every entry with the same home (the last slot): the run wraps to the front.
        let mut t: TupleTable<u32> = TupleTable::with_capacity(4);
        let last = TupleHash((MIN_SLOTS - 1) as u32);
        let ks: Vec<Tuple> = (0..5).map(|p| tuple(p, 0)).collect();
        for (i, k) in ks.iter().enumerate() {
            t.insert(last, *k, i as u32);
        }
        assert_eq!(t.remove(last, &ks[1]), Some(1));
        for (i, k) in ks.iter().enumerate().filter(|(i, _)| *i != 1) {
            assert_eq!(t.get(last, k), Some(&(i as u32)), "entry {i} still found after the shift");
        }
        assert!(!t.contains(last, &ks[1]));
        assert_eq!(t.len(), 4);
    }
}
