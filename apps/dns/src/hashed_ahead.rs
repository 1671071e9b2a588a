//! Filling a large hash table from a list: each item's hash is taken a few items before it
//! is placed and its slot prefetched then, so the cache misses of the slots overlap instead
//! of each insert waiting for its own (a million inserts one by one were a fifth of loading
//! a large zone). The hashes live in a ring of [`AHEAD`], not in a list as long as the
//! table's.

/// Asks the cache for slot `h & mask` of an index of (tag, number) pairs that starts at
/// address `base` (an address, not a slice: the placing borrows the index mutably).
pub fn prefetch_slot(base: usize, mask: usize, h: u64) {
    io::umem::prefetch_hint((base + (h as usize & mask) * std::mem::size_of::<(u32, u32)>()) as *const u8);
}

/// Items ahead whose slots are fetched while one is placed.
pub const AHEAD: usize = 8;

/// Calls `place(hash, item)` for each item in order, `hash(item)` taken and `prefetch(hash)`
/// called [`AHEAD`] items before.
pub fn each_hashed_ahead<T>(
    items: impl IntoIterator<Item = T>,
    hash: impl Fn(&T) -> u64,
    prefetch: impl Fn(u64),
    mut place: impl FnMut(u64, T),
) {
    let mut items = items.into_iter();
    let mut ring: std::collections::VecDeque<(u64, T)> = std::collections::VecDeque::with_capacity(AHEAD);
    let mut next = |ring: &mut std::collections::VecDeque<(u64, T)>| {
        if let Some(item) = items.next() {
            let h = hash(&item);
            prefetch(h);
            ring.push_back((h, item));
        }
    };
    for _ in 0..AHEAD {
        next(&mut ring);
    }
    while let Some((h, item)) = ring.pop_front() {
        next(&mut ring);
        place(h, item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn every_item_placed_in_order_after_its_slot_was_fetched() {
        for n in [0usize, 1, AHEAD - 1, AHEAD, AHEAD + 1, 100] {
            let fetched = RefCell::new(Vec::new());
            let mut placed = Vec::new();
            each_hashed_ahead(
                0..n,
                |&i| i as u64 * 7,
                |h| fetched.borrow_mut().push(h),
                |h, i| {
                    assert!(fetched.borrow().contains(&h), "item {i} placed before its slot was fetched");
                    placed.push((h, i));
                },
            );
            assert_eq!(placed, (0..n).map(|i| (i as u64 * 7, i)).collect::<Vec<_>>());
            assert_eq!(fetched.into_inner().len(), n);
        }
    }
}
