//! The endpoint's tables by 4-tuple (connections, and TIME-WAIT entries): open addressing
//! with linear probing, keyed by a SipHash of the tuple under the endpoint's key (peers choose
//! ports and addresses, so the hash must be keyed). Our own rather than std's `HashMap` so a
//! lookup's first slot can be named before the lookup ([`TupleTable::first_slot`]): the engine
//! prefetches it for the frames coming next in its batch, and the lookup then finds it in
//! cache (issue 20: at one request per connection, table lookups missing the cache took ~10 %
//! of the server core). Both tables share the key, so one hash serves both.
//!
//! An entry is 8 bytes, the tuple's hash and the number of the record that holds the tuple
//! (a connection's slot, a TIME-WAIT record); a lookup compares the tuple there only when the
//! hashes match, and that record is the one it reads next anyway. Entries that held the
//! tuple itself took 48 bytes, two to four per connection with the table's room: 80–140 bytes
//! of a connection's ~1.5 KB (issue 44).
//!
//! Deletion shifts later entries of the probe run back (no tombstones); the table doubles
//! past half full.

use crate::siphash::{self, Key};
use crate::tuple::Tuple;

const MIN_SLOTS: usize = 64;

/// No entry.
const EMPTY: u64 = u64::MAX;

/// A tuple's hash under a table key: computed once per segment for both tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TupleHash(u32);

impl TupleHash {
    pub(crate) fn of(key: Key, t: &Tuple) -> TupleHash {
        let (b, n) = t.bytes();
        TupleHash(siphash::hash(key, &b[..n]) as u32)
    }
}

fn entry(h: TupleHash, record: u32) -> u64 {
    debug_assert!(record != u32::MAX);
    u64::from(h.0) << 32 | u64::from(record)
}

fn hash_of(e: u64) -> u32 {
    (e >> 32) as u32
}

/// A table from tuples to the numbers of the records holding them. The records are the
/// caller's: lookups ask it whether record `i` holds the tuple sought.
pub(crate) struct TupleTable {
    slots: Vec<u64>,
    len: usize,
}

impl TupleTable {
    /// A table sized for `expected` entries without growing.
    pub(crate) fn with_capacity(expected: usize) -> Self {
        let n = expected.saturating_mul(2).next_power_of_two().max(MIN_SLOTS);
        TupleTable { slots: vec![EMPTY; n], len: 0 }
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
        (&self.slots[h.0 as usize & self.mask()] as *const u64).cast()
    }

    /// The slot of the first entry of hash `h` whose record `holds` accepts.
    fn find(&self, h: TupleHash, holds: impl Fn(u32) -> bool) -> Option<usize> {
        let m = self.mask();
        let mut i = h.0 as usize & m;
        // Never more than half full, so an empty slot ends every run.
        loop {
            let e = self.slots[i];
            if e == EMPTY {
                return None;
            }
            if hash_of(e) == h.0 && holds(e as u32) {
                return Some(i);
            }
            i = (i + 1) & m;
        }
    }

    /// The record holding the tuple of hash `h`: the one `holds` accepts.
    pub(crate) fn get(&self, h: TupleHash, holds: impl Fn(u32) -> bool) -> Option<u32> {
        self.find(h, holds).map(|i| self.slots[i] as u32)
    }

    /// Adds `record` under `h` (the caller knows the tuple is not in the table yet).
    pub(crate) fn insert(&mut self, h: TupleHash, record: u32) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        self.put(entry(h, record));
        self.len += 1;
    }

    fn put(&mut self, e: u64) {
        let m = self.mask();
        let mut i = hash_of(e) as usize & m;
        while self.slots[i] != EMPTY {
            i = (i + 1) & m;
        }
        self.slots[i] = e;
    }

    fn grow(&mut self) {
        let n = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; n]);
        for e in old.into_iter().filter(|&e| e != EMPTY) {
            self.put(e);
        }
    }

    /// The record under `h` numbered `from` is numbered `to` now (the caller moved it).
    pub(crate) fn renumber(&mut self, h: TupleHash, from: u32, to: u32) {
        if let Some(i) = self.find(h, |r| r == from) {
            self.slots[i] = entry(h, to);
        }
    }

    /// Removes `record`'s entry under `h`; false if there was none.
    pub(crate) fn remove(&mut self, h: TupleHash, record: u32) -> bool {
        let Some(mut hole) = self.find(h, |r| r == record) else { return false };
        self.slots[hole] = EMPTY;
        self.len -= 1;
        // Backward shift: an entry later in the run moves into the hole unless its home slot
        // lies after the hole (cyclically), where a lookup would no longer pass the hole.
        let m = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & m;
            let e = self.slots[j];
            if e == EMPTY {
                break;
            }
            let home = hash_of(e) as usize & m;
            if (j.wrapping_sub(home) & m) >= (j.wrapping_sub(hole) & m) {
                self.slots[hole] = e;
                self.slots[j] = EMPTY;
                hole = j;
            }
        }
        true
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
        Insert(u16, u8),
        Remove(u16, u8),
    }

    /// The records of the tests: tuple `(p, r)` lives in record `p * 3 + r`.
    fn record(k: &Tuple) -> u32 {
        u32::from(k.remote_port) * 3
            + match k.remote {
                wire::IpAddr::V4(a) => u32::from(a.0[3]),
                wire::IpAddr::V6(_) => unreachable!(),
            }
    }

    proptest! {
        /// Any sequence of inserts and removes leaves the table agreeing with std's map, with
        /// few distinct tuples so runs collide, wrap and shift.
        #[test]
        fn agrees_with_a_map(ops in proptest::collection::vec(prop_oneof![
            (0u16..40, 0u8..3).prop_map(|(p, r)| Op::Insert(p, r)),
            (0u16..40, 0u8..3).prop_map(|(p, r)| Op::Remove(p, r)),
        ], 0..400), key in any::<[u64; 2]>()) {
            let key = Key(key);
            let mut t = TupleTable::with_capacity(4);
            let mut m = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(p, r) => {
                        let k = tuple(p, r);
                        if m.insert(k.bytes(), record(&k)).is_none() {
                            t.insert(TupleHash::of(key, &k), record(&k));
                        }
                    }
                    Op::Remove(p, r) => {
                        let k = tuple(p, r);
                        prop_assert_eq!(t.remove(TupleHash::of(key, &k), record(&k)), m.remove(&k.bytes()).is_some());
                    }
                }
                prop_assert_eq!(t.len(), m.len());
            }
            for p in 0..40 {
                for r in 0..3 {
                    let k = tuple(p, r);
                    let found = t.get(TupleHash::of(key, &k), |i| i == record(&k));
                    prop_assert_eq!(found, m.get(&k.bytes()).copied());
                }
            }
        }
    }

    #[test]
    fn colliding_hashes_wrap_around_the_end_and_shift_back() {
        // Every entry with the same home (the last slot): the run wraps to the front.
        let mut t = TupleTable::with_capacity(4);
        let last = TupleHash((MIN_SLOTS - 1) as u32);
        for i in 0..5 {
            t.insert(last, i);
        }
        assert!(t.remove(last, 1));
        for i in [0, 2, 3, 4] {
            assert_eq!(t.get(last, |r| r == i), Some(i), "entry {i} still found after the shift");
        }
        assert_eq!(t.get(last, |r| r == 1), None);
        t.renumber(last, 4, 1);
        assert_eq!(t.get(last, |r| r == 1), Some(1));
        assert_eq!(t.get(last, |r| r == 4), None);
        assert_eq!(t.len(), 4);
    }
}
