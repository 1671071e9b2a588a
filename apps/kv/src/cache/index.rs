//! A shard's index from key hash to item: chained buckets whose links live in the items'
//! own headers, grown a few buckets at a time.
//!
//! Why not a general hash table: one that keeps its entries in its own slots (hashbrown: 9
//! bytes a slot at most 7/8 full, so 10–21 bytes per item) cost sirocco more per item than
//! memcached's whole hash table, and doubled in one go — every item's key read again — which
//! at tens of millions of items held the shard for seconds (bench/scale: no-op round trips of
//! up to 3 s during a 10 M-item fill). Here, as in memcached, a bucket is 8 bytes and holds
//! the chain's first item, each item links to the next through 5 bytes of its header that
//! were padding, and the table doubles once it holds 1.5 items per bucket (5.3–10.7 bytes
//! per item). Growing moves two old buckets per insertion into the doubled table (lookups
//! meanwhile look in whichever table holds their bucket), so it is done after a third of the
//! insertions that will make it necessary again, and no operation waits for more than two
//! chains.

use super::shard::ItemId;

/// No item (an empty bucket, the end of a chain).
pub const NONE: ItemId = u64::MAX;

/// Buckets a new index starts with.
const FIRST_BUCKETS: usize = 256;

/// Old buckets moved per insertion while growing.
const MOVES_PER_INSERT: usize = 2;

/// What the index needs from the items: their chain links and their keys' hashes.
pub trait Chain {
    /// The item after `id` in its bucket's chain.
    fn next(&self, id: ItemId) -> ItemId;
    /// Makes `next` follow `id`.
    fn set_next(&mut self, id: ItemId, next: ItemId);
    /// The hash of `id`'s key (read again only while growing).
    fn hash(&self, id: ItemId) -> u64;
}

/// The index.
pub struct Index {
    /// The bucket heads; while growing, the doubled table.
    heads: Vec<ItemId>,
    /// While growing: the table being moved into `heads` (empty otherwise), and how many of
    /// its buckets have been moved.
    old: Vec<ItemId>,
    moved: usize,
    len: usize,
}

impl Default for Index {
    fn default() -> Self {
        Index { heads: vec![NONE; FIRST_BUCKETS], old: Vec::new(), moved: 0, len: 0 }
    }
}

impl Index {
    /// Items indexed.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes of bucket memory held (both tables while growing).
    pub fn bytes(&self) -> usize {
        (self.heads.capacity() + self.old.capacity()) * std::mem::size_of::<ItemId>()
    }

    /// Whether a doubled table is being filled.
    pub fn growing(&self) -> bool {
        !self.old.is_empty()
    }

    /// Where `hash`'s chain starts: in the old table (true) if its bucket has not been moved
    /// yet, and the bucket's number there.
    fn place(&self, hash: u64) -> (bool, usize) {
        let old = hash as usize & self.old.len().wrapping_sub(1);
        if !self.old.is_empty() && old >= self.moved {
            return (true, old);
        }
        (false, hash as usize & (self.heads.len() - 1))
    }

    fn bucket(&mut self, hash: u64) -> &mut ItemId {
        match self.place(hash) {
            (true, i) => &mut self.old[i],
            (false, i) => &mut self.heads[i],
        }
    }

    fn head(&self, hash: u64) -> ItemId {
        match self.place(hash) {
            (true, i) => self.old[i],
            (false, i) => self.heads[i],
        }
    }

    /// The first item of `hash`'s chain that `is` accepts, following the chain with `next`
    /// ([`Chain::next`]: a lookup needs only to read the items).
    pub fn find(
        &self,
        hash: u64,
        next: impl Fn(ItemId) -> ItemId,
        mut is: impl FnMut(ItemId) -> bool,
    ) -> Option<ItemId> {
        let mut c = self.head(hash);
        while c != NONE {
            if is(c) {
                return Some(c);
            }
            c = next(c);
        }
        None
    }

    /// Adds `id` (whose key hashes to `hash`).
    pub fn insert(&mut self, hash: u64, id: ItemId, chain: &mut impl Chain) {
        if !self.old.is_empty() {
            self.move_some(chain);
        } else if self.len + 1 > self.heads.len() / 2 * 3 {
            let doubled = vec![NONE; self.heads.len() * 2];
            self.old = std::mem::replace(&mut self.heads, doubled);
            self.moved = 0;
            self.move_some(chain);
        }
        let head = self.bucket(hash);
        let first = std::mem::replace(head, id);
        chain.set_next(id, first);
        self.len += 1;
    }

    /// Takes `id` (whose key hashes to `hash`) out; false if it was not there.
    pub fn remove(&mut self, hash: u64, id: ItemId, chain: &mut impl Chain) -> bool {
        let head = self.bucket(hash);
        if *head == id {
            *head = chain.next(id);
            self.len -= 1;
            return true;
        }
        let mut c = *head;
        while c != NONE {
            let n = chain.next(c);
            if n == id {
                chain.set_next(c, chain.next(id));
                self.len -= 1;
                return true;
            }
            c = n;
        }
        false
    }

    /// Forgets every item (their chunks are being freed with them).
    pub fn clear(&mut self) {
        self.heads.iter_mut().for_each(|h| *h = NONE);
        self.old = Vec::new();
        self.moved = 0;
        self.len = 0;
    }

    fn move_some(&mut self, chain: &mut impl Chain) {
        let mask = self.heads.len() - 1;
        for _ in 0..MOVES_PER_INSERT {
            let mut c = self.old[self.moved];
            while c != NONE {
                let next = chain.next(c);
                let head = &mut self.heads[chain.hash(c) as usize & mask];
                chain.set_next(c, *head);
                *head = c;
                c = next;
            }
            self.moved += 1;
            if self.moved == self.old.len() {
                self.old = Vec::new();
                self.moved = 0;
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Items as a map from id to (hash, next); hashes chosen by the test to collide.
    #[derive(Default)]
    struct Items(HashMap<ItemId, (u64, ItemId)>);

    impl Chain for Items {
        fn next(&self, id: ItemId) -> ItemId {
            self.0[&id].1
        }
        fn set_next(&mut self, id: ItemId, next: ItemId) {
            self.0.get_mut(&id).expect("known item").1 = next;
        }
        fn hash(&self, id: ItemId) -> u64 {
            self.0[&id].0
        }
    }

    proptest! {
        /// Inserts and removes, through several doublings and with colliding hashes, find
        /// exactly the items a reference set holds, and the index never waits for a whole
        /// table: growing is done a bucket at a time.
        #[test]
        fn finds_what_a_reference_holds(ops in prop::collection::vec((any::<bool>(), 0u64..3000, 0u64..64), 1..6000)) {
            let mut index = Index::default();
            let mut items = Items::default();
            let mut live: HashMap<ItemId, u64> = HashMap::new();
            for (add, id, h) in ops {
                // A few hash values shared by many ids: long chains, and every bucket's split.
                let hash = h.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (id % 7);
                if add && !live.contains_key(&id) {
                    items.0.insert(id, (hash, NONE));
                    index.insert(hash, id, &mut items);
                    live.insert(id, hash);
                } else if let Some(hash) = live.remove(&id) {
                    prop_assert!(index.remove(hash, id, &mut items));
                    items.0.remove(&id);
                }
                prop_assert_eq!(index.len(), live.len());
            }
            for (&id, &hash) in &live {
                prop_assert_eq!(index.find(hash, |c| items.next(c), |c| c == id), Some(id));
            }
            prop_assert_eq!(index.find(12345, |c| items.next(c), |c| c == 1_000_000), None);
        }
    }

    #[test]
    fn stays_near_one_and_a_half_items_per_bucket() {
        let mut index = Index::default();
        let mut items = Items::default();
        let mut seed = 1u64;
        for id in 0..1_100_000u64 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            items.0.insert(id, (seed, NONE));
            index.insert(seed, id, &mut items);
        }
        // The last doubling began at 786 433 items (1.5 per bucket of 2^19) and was moved
        // by 1 048 576 (two buckets per insertion); the next begins at 1 572 865.
        assert!(index.old.is_empty());
        assert_eq!(index.heads.len(), 1 << 20);
        assert!(index.bytes() <= 8 * 1_100_000);
    }
}
