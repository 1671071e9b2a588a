//! The operations every protocol (text, meta, binary) is made of, on a locked shard, with
//! memcached's semantics.

use super::shard::{Item, ItemId};
use super::Locked;

/// How a store treats an existing item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Store whatever is there.
    Set,
    /// Store only if nothing is there.
    Add,
    /// Store only if something is there.
    Replace,
    /// Add the bytes after the existing value (flags and expiry stay).
    Append,
    /// Add the bytes before the existing value.
    Prepend,
}

/// What a store did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Stored, with this CAS unique.
    Stored(u64),
    /// The mode's condition failed (add of an existing key, replace/append of a missing one).
    NotStored,
    /// The CAS unique given is not the item's.
    Exists,
    /// A CAS store of a missing key.
    NotFound,
    /// Larger than the largest item.
    TooLarge,
    /// No memory could be found for it.
    NoMemory,
}

/// What an increment or decrement did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    /// The new value, and the item's new CAS unique.
    Value(u64, u64),
    /// No such key.
    NotFound,
    /// The value is not a decimal number.
    NonNumeric,
    /// The CAS unique given is not the item's.
    Exists,
    /// No memory for the longer value.
    NoMemory,
}

/// A decimal number as memcached's `strtoull` check reads a value: optional leading blanks,
/// digits, then a blank or the end; a minus sign is refused unless the number is 0.
pub fn parse_counter(v: &[u8]) -> Option<u64> {
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r');
    let mut i = v.iter().take_while(|&&b| blank(b)).count();
    let neg = v.get(i) == Some(&b'-');
    if matches!(v.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = v[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut n: u64 = 0;
    for &b in &v[i..i + digits] {
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    let rest = &v[i + digits..];
    if !rest.is_empty() && !blank(rest[0]) {
        return None;
    }
    if neg && n != 0 {
        return None;
    }
    Some(n)
}

impl Locked<'_> {
    /// The live item under `key`.
    pub fn find(&mut self, key: &[u8], now: u32) -> Option<ItemId> {
        self.shard.find(self.hash, key, now)
    }

    /// The live item under `key`, noted as read (and with `touch`, given a new expiry).
    pub fn get(&mut self, key: &[u8], now: u32, touch: Option<u32>) -> Option<Item<'_>> {
        let id = self.shard.find(self.hash, key, now)?;
        self.shard.touch_read(id, now);
        if let Some(exp) = touch {
            self.shard.set_exptime(id, exp);
        }
        Some(self.shard.item(id))
    }

    /// Stores `value` under `key`. `cas` (non-zero) makes it a compare-and-swap: only over an
    /// item with that unique.
    #[allow(clippy::too_many_arguments)]
    pub fn store(
        &mut self,
        key: &[u8],
        mode: Mode,
        flags: u32,
        exptime: u32,
        value: &[u8],
        cas: u64,
        now: u32,
    ) -> Stored {
        self.store_parts(key, mode, flags, exptime, &[value], cas, now)
    }

    /// [`store`](Self::store) of a value given in pieces.
    #[allow(clippy::too_many_arguments)]
    pub fn store_parts(
        &mut self,
        key: &[u8],
        mode: Mode,
        flags: u32,
        exptime: u32,
        parts: &[&[u8]],
        cas: u64,
        now: u32,
    ) -> Stored {
        let vlen: usize = parts.iter().map(|p| p.len()).sum();
        if !self.cache.fits(key.len(), vlen, flags) {
            return self.refuse_too_large(key, mode, now);
        }
        let old = self.shard.find(self.hash, key, now);
        let check = |old: Option<Item<'_>>| -> Result<(), Stored> {
            match (mode, old) {
                (_, None) if cas != 0 => Err(Stored::NotFound),
                (_, Some(o)) if cas != 0 && o.cas != cas => Err(Stored::Exists),
                (Mode::Add, Some(_)) => Err(Stored::NotStored),
                (Mode::Replace | Mode::Append | Mode::Prepend, None) => Err(Stored::NotStored),
                _ => Ok(()),
            }
        };
        if let Err(e) = check(old.map(|o| self.shard.item(o))) {
            if let (Mode::Add, Some(o)) = (mode, old) {
                // memcached's add of an existing key counts as an access to it.
                self.shard.touch_read_time(o, now);
            }
            return e;
        }
        match mode {
            Mode::Append | Mode::Prepend => self.concat(key, mode == Mode::Append, parts, cas, now),
            _ => {
                let Some(id) = self.shard.alloc(key, vlen, flags, exptime, now, &self.cache.budget) else {
                    if let (Mode::Set, Some(_)) = (mode, old) {
                        if let Some(o) = self.shard.find(self.hash, key, now) {
                            self.shard.unlink(self.hash, o);
                        }
                    }
                    return Stored::NoMemory;
                };
                write_parts(self.shard.value_mut(id), parts);
                // The allocation may have evicted the old item: look again.
                let old = self.shard.find(self.hash, key, now);
                if let Err(e) = check(old.map(|o| self.shard.item(o))) {
                    self.shard.discard(id);
                    return e;
                }
                Stored::Stored(self.shard.link(self.hash, id, old, now))
            }
        }
    }

    /// `ms` with `I`: a compare-and-swap whose unique is older than the item's still stores,
    /// but the value is marked stale and keeps the item's expiry and recache token (memcached's
    /// rule, so a slow writer's late value serves until a fresh one arrives). Otherwise a
    /// plain [`store`](Self::store).
    #[allow(clippy::too_many_arguments)]
    pub fn store_invalidating(
        &mut self,
        key: &[u8],
        mode: Mode,
        flags: u32,
        exptime: u32,
        value: &[u8],
        cas: u64,
        now: u32,
    ) -> Stored {
        let older = match self.shard.find(self.hash, key, now) {
            Some(o) if mode == Mode::Set && cas != 0 && cas < self.shard.item(o).cas => Some(self.shard.item(o)),
            _ => None,
        };
        let Some(old) = older else { return self.store(key, mode, flags, exptime, value, cas, now) };
        let (exp, token) = (old.exptime, old.token_sent);
        let r = self.store(key, Mode::Set, flags, exp, value, 0, now);
        if let Stored::Stored(_) = r {
            if let Some(id) = self.shard.find(self.hash, key, now) {
                self.shard.set_marks(id, true, token);
            }
        }
        r
    }

    /// `md` with `I`: instead of removing `key`, marks it stale with a new unique (and a new
    /// expiry if given) and takes back its recache token, so the next reader wins it.
    pub fn invalidate(&mut self, key: &[u8], cas: u64, exptime: Option<u32>, now: u32) -> Stored {
        match self.shard.find(self.hash, key, now) {
            None => Stored::NotFound,
            Some(o) if cas != 0 && self.shard.item(o).cas != cas => Stored::Exists,
            Some(o) => {
                if let Some(e) = exptime {
                    self.shard.set_exptime(o, e);
                }
                self.shard.set_marks(o, true, false);
                Stored::Stored(self.shard.recas(o))
            }
        }
    }

    /// A store refused as larger than any item (also before its value has arrived): as
    /// memcached, a `set` drops what it would have replaced, so no stale value stays.
    pub fn refuse_too_large(&mut self, key: &[u8], mode: Mode, now: u32) -> Stored {
        if mode == Mode::Set {
            if let Some(o) = self.shard.find(self.hash, key, now) {
                self.shard.unlink(self.hash, o);
            }
        }
        Stored::TooLarge
    }

    fn concat(&mut self, key: &[u8], append: bool, parts: &[&[u8]], cas: u64, now: u32) -> Stored {
        let Some(o) = self.shard.find(self.hash, key, now) else { return Stored::NotStored };
        let it = self.shard.item(o);
        let (flags, exptime, olen) = (it.flags, it.exptime, it.value.len());
        let add: usize = parts.iter().map(|p| p.len()).sum();
        if !self.cache.fits(key.len(), olen + add, flags) {
            return Stored::TooLarge;
        }
        // The old value is copied aside first: making room may evict it.
        let mut old_value = std::mem::take(&mut self.shard.scratch);
        old_value.clear();
        old_value.extend_from_slice(self.shard.item(o).value);
        let Some(id) = self.shard.alloc(key, olen + add, flags, exptime, now, &self.cache.budget) else {
            self.shard.scratch = old_value;
            return Stored::NoMemory;
        };
        {
            let v = self.shard.value_mut(id);
            let (first, second) = if append { (0, olen) } else { (add, 0) };
            v[first..first + olen].copy_from_slice(&old_value);
            write_parts(&mut v[second..second + add], parts);
        }
        self.shard.scratch = old_value;
        let old = self.shard.find(self.hash, key, now);
        match old {
            None => {
                self.shard.discard(id);
                Stored::NotStored
            }
            Some(o) if cas != 0 && self.shard.item(o).cas != cas => {
                self.shard.discard(id);
                Stored::Exists
            }
            Some(_) => Stored::Stored(self.shard.link(self.hash, id, old, now)),
        }
    }

    /// Adds `delta` to the decimal value under `key` (wrapping at 2^64), or subtracts it
    /// (stopping at 0). A result as long as the value or shorter is written in place, padded
    /// with blanks, as memcached does.
    pub fn arith(&mut self, key: &[u8], incr: bool, delta: u64, cas: u64, now: u32) -> Arith {
        let Some(o) = self.shard.find(self.hash, key, now) else { return Arith::NotFound };
        let it = self.shard.item(o);
        if cas != 0 && it.cas != cas {
            return Arith::Exists;
        }
        let Some(v) = parse_counter(it.value) else { return Arith::NonNumeric };
        let n = if incr { v.wrapping_add(delta) } else { v.saturating_sub(delta) };
        let mut digits = [0u8; 20];
        let d = format_u64(n, &mut digits);
        let (old_len, flags, exptime) = (it.value.len(), it.flags, it.exptime);
        self.shard.touch_read_time(o, now);
        if d.len() <= old_len {
            let val = self.shard.value_mut(o);
            val[..d.len()].copy_from_slice(d);
            val[d.len()..old_len].fill(b' ');
            let c = self.shard.recas(o);
            return Arith::Value(n, c);
        }
        let Some(id) = self.shard.alloc(key, d.len(), flags, exptime, now, &self.cache.budget) else {
            return Arith::NoMemory;
        };
        self.shard.value_mut(id).copy_from_slice(d);
        match self.shard.find(self.hash, key, now) {
            None => {
                self.shard.discard(id);
                Arith::NotFound
            }
            old => Arith::Value(n, self.shard.link(self.hash, id, old, now)),
        }
    }

    /// [`arith`](Self::arith), but a miss (without a CAS to compare) stores `initial` with
    /// expiry `create` when that is given — the binary protocol's and `ma N`'s counters.
    #[allow(clippy::too_many_arguments)]
    pub fn arith_or_create(
        &mut self,
        key: &[u8],
        incr: bool,
        delta: u64,
        cas: u64,
        create: Option<(u64, u32)>,
        now: u32,
    ) -> Arith {
        let r = self.arith(key, incr, delta, cas, now);
        let (Arith::NotFound, 0, Some((initial, exp))) = (r, cas, create) else { return r };
        let mut d = [0u8; 20];
        let v = format_u64(initial, &mut d);
        match self.store(key, Mode::Add, 0, exp, v, 0, now) {
            Stored::Stored(c) => Arith::Value(initial, c),
            Stored::NoMemory => Arith::NoMemory,
            _ => Arith::NotFound,
        }
    }

    /// Sets a new expiry on `key`; false if there is no such item.
    pub fn touch(&mut self, key: &[u8], exptime: u32, now: u32) -> bool {
        match self.shard.find(self.hash, key, now) {
            Some(o) => {
                self.shard.touch_read(o, now);
                self.shard.set_exptime(o, exptime);
                true
            }
            None => false,
        }
    }

    /// Removes `key` (only if its unique is `cas`, when that is non-zero).
    pub fn delete(&mut self, key: &[u8], cas: u64, now: u32) -> Stored {
        match self.shard.find(self.hash, key, now) {
            None => Stored::NotFound,
            Some(o) if cas != 0 && self.shard.item(o).cas != cas => Stored::Exists,
            Some(o) => {
                self.shard.unlink(self.hash, o);
                Stored::Stored(0)
            }
        }
    }
}

fn write_parts(dst: &mut [u8], parts: &[&[u8]]) {
    let mut at = 0;
    for p in parts {
        dst[at..at + p.len()].copy_from_slice(p);
        at += p.len();
    }
}

/// `n` in decimal, in `buf`.
pub fn format_u64(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::super::{Cache, CacheConfig};
    use super::*;

    fn cache(mb: usize) -> Cache {
        Cache::new(CacheConfig { memory: mb << 20, ..CacheConfig::default() }, 1_800_000_000).unwrap()
    }

    #[test]
    fn counters_parse_as_memcached_reads_them() {
        assert_eq!(parse_counter(b"10"), Some(10));
        assert_eq!(parse_counter(b" 12"), Some(12));
        assert_eq!(parse_counter(b"99 "), Some(99));
        assert_eq!(parse_counter(b"12a"), None);
        assert_eq!(parse_counter(b"-1"), None);
        assert_eq!(parse_counter(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_counter(b"18446744073709551616"), None);
        assert_eq!(parse_counter(b""), None);
        assert_eq!(parse_counter(b" "), None);
        assert_eq!(parse_counter(b"x"), None);
    }

    #[test]
    fn store_modes_and_cas() {
        let c = cache(4);
        let mut l = c.lock(b"k");
        assert_eq!(l.store(b"k", Mode::Replace, 0, 0, b"v", 0, 100), Stored::NotStored);
        let Stored::Stored(cas) = l.store(b"k", Mode::Add, 5, 0, b"v", 0, 100) else { panic!() };
        assert_eq!(l.store(b"k", Mode::Add, 0, 0, b"w", 0, 100), Stored::NotStored);
        assert_eq!(l.store(b"k", Mode::Set, 0, 0, b"w", cas + 1, 100), Stored::Exists);
        assert!(matches!(l.store(b"k", Mode::Append, 9, 0, b"!", 0, 100), Stored::Stored(_)));
        assert!(matches!(l.store(b"k", Mode::Prepend, 9, 0, b"<", 0, 100), Stored::Stored(_)));
        let it = l.get(b"k", 100, None).unwrap();
        assert_eq!((it.value, it.flags), (&b"<v!"[..], 5), "append and prepend keep the flags");
        assert_eq!(l.store(b"x", Mode::Set, 0, 0, b"v", 7, 100), Stored::NotFound);
    }

    #[test]
    fn arithmetic_wraps_and_pads_in_place() {
        let c = cache(4);
        let mut l = c.lock(b"n");
        l.store(b"n", Mode::Set, 0, 0, b"18446744073709551615", 0, 100);
        assert!(matches!(l.arith(b"n", true, 1, 0, 100), Arith::Value(0, _)));
        assert_eq!(l.get(b"n", 100, None).unwrap().value, b"0                   ");
        l.store(b"n", Mode::Set, 0, 0, b"9", 0, 100);
        assert!(matches!(l.arith(b"n", true, 1, 0, 100), Arith::Value(10, _)));
        assert_eq!(l.get(b"n", 100, None).unwrap().value, b"10", "a longer result is a new item");
        assert!(matches!(l.arith(b"n", false, 100, 0, 100), Arith::Value(0, _)));
        l.store(b"n", Mode::Set, 0, 0, b"abc", 0, 100);
        assert_eq!(l.arith(b"n", true, 1, 0, 100), Arith::NonNumeric);
    }

    #[test]
    fn expiry_and_flush() {
        let c = cache(4);
        let exp = c.realtime(10, 100);
        assert_eq!(exp, 110);
        assert_eq!(c.realtime(-1, 100), 1);
        assert_eq!(c.realtime(c.unix_at(150), 100), 150, "absolute times above 30 days");
        c.lock(b"a").store(b"a", Mode::Set, 0, exp, b"v", 0, 100);
        assert!(c.lock(b"a").get(b"a", 109, None).is_some());
        assert!(c.lock(b"a").get(b"a", 110, None).is_none());
        c.lock(b"b").store(b"b", Mode::Set, 0, 0, b"v", 0, 100);
        c.flush_all(Some(105), 100);
        // As memcached's: invisible from a second before the time given.
        assert!(c.lock(b"b").get(b"b", 103, None).is_some());
        assert!(c.lock(b"b").get(b"b", 104, None).is_none());
        c.lock(b"b").store(b"b", Mode::Set, 0, 0, b"v", 0, 106);
        c.flush_all(None, 106);
        assert!(c.lock(b"b").get(b"b", 106, None).is_none());
        assert_eq!(c.stats().curr_items, 0);
    }

    #[test]
    fn eviction_keeps_memory_bounded_and_recent_items() {
        let c = cache(2);
        let value = [7u8; 1000];
        let mut stored = 0;
        for i in 0..20_000u32 {
            let k = format!("key:{i}");
            let r = c.lock(k.as_bytes()).store(k.as_bytes(), Mode::Set, 0, 0, &value, 0, 100);
            if matches!(r, Stored::Stored(_)) {
                stored += 1;
            }
            // Keep reading one hot key: the second chance must keep it.
            let mut h = c.lock(b"key:0");
            assert!(h.get(b"key:0", 100, None).is_some(), "the hot key was evicted at {i}");
        }
        assert_eq!(stored, 20_000);
        let st = c.stats();
        assert!(st.evictions > 15_000, "{st:?}");
        assert!(st.bytes <= 2 << 20, "{st:?}");
        assert_eq!(c.pages_free(), 0);
    }

    /// Hundreds of thousands of items over many pages (of 1 MB, and of 3 MB where items may
    /// be larger: the index's links pack page and offset by the page size) through several of
    /// the index's doublings, half of them deleted along the way: every live key is found
    /// with its own value, every deleted one is gone, and the index stays near 1.5 items a
    /// bucket.
    #[test]
    fn many_items_over_many_pages_are_all_found() {
        for (mb, max_item) in [(64, 1 << 20), (96, 3 << 20)] {
            let c = Cache::new(CacheConfig { memory: mb << 20, max_item, ..CacheConfig::default() }, 1_800_000_000)
                .unwrap();
            let n = 300_000u32;
            for i in 0..n {
                let k = format!("k{i}");
                let v = format!("value of {i} {}", "x".repeat(i as usize % 60));
                let r = c.lock(k.as_bytes()).store(k.as_bytes(), Mode::Set, 0, 0, v.as_bytes(), 0, 100);
                assert!(matches!(r, Stored::Stored(_)), "{i}");
                if i % 2 == 1 {
                    let d = format!("k{}", i / 2);
                    assert_eq!(c.lock(d.as_bytes()).delete(d.as_bytes(), 0, 100), Stored::Stored(0), "{d}");
                }
            }
            for i in 0..n {
                let k = format!("k{i}");
                let mut l = c.lock(k.as_bytes());
                let found = l.get(k.as_bytes(), 100, None).map(|it| it.value.to_vec());
                if i < n / 2 {
                    assert_eq!(found, None, "{k} was deleted");
                } else {
                    let v = format!("value of {i} {}", "x".repeat(i as usize % 60));
                    assert_eq!(found.as_deref(), Some(v.as_bytes()), "{k}");
                }
            }
            assert_eq!(c.stats().curr_items, u64::from(n / 2));
            assert_eq!(c.stats().evictions, 0);
            // 150 000 items, at most 1.5 per bucket: 2^17 buckets of 8 bytes (both tables while
            // a doubling is under way).
            let (bytes, growing) = c.index_size();
            let tables = if growing { 3 } else { 1 };
            assert!(bytes <= (tables * 8) << 17, "{bytes} {growing}");
        }
    }

    /// Pages move between classes many times under random sizes in a tiny cache: whatever
    /// is found is the value last stored under its key, and the counts add up.
    #[test]
    fn values_survive_pages_moving_between_classes() {
        use proptest::prelude::*;
        let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config::with_cases(24));
        let ops = proptest::collection::vec((0u32..300, 1usize..40_000, any::<bool>()), 1..1500);
        runner
            .run(&ops, |ops| {
                let c = cache(2);
                let mut last: std::collections::HashMap<u32, (usize, u8)> = Default::default();
                for (i, (k, len, get)) in ops.into_iter().enumerate() {
                    let key = format!("k{k}");
                    let mut l = c.lock(key.as_bytes());
                    if get {
                        if let Some(it) = l.get(key.as_bytes(), 100, None) {
                            let (n, b) = last[&k];
                            prop_assert_eq!(it.value.len(), n);
                            prop_assert!(it.value.iter().all(|&x| x == b));
                        }
                    } else {
                        let b = (i % 251) as u8;
                        let v = vec![b; len];
                        if let Stored::Stored(_) = l.store(key.as_bytes(), Mode::Set, 0, 0, &v, 0, 100) {
                            last.insert(k, (len, b));
                        }
                    }
                }
                let st = c.stats();
                let classes: u64 = c.classes().iter().map(|x| x.2).sum();
                prop_assert_eq!(st.curr_items, classes);
                prop_assert!(st.bytes <= 2 << 20);
                Ok(())
            })
            .unwrap();
    }

    /// Stores `n` items of 100 bytes, `s0`, `s1`, ...
    fn fill_small(c: &Cache, n: u32) {
        for i in 0..n {
            let k = format!("s{i}");
            c.lock(k.as_bytes()).store(k.as_bytes(), Mode::Set, 0, 0, &[1u8; 100], 0, 100);
        }
    }

    #[test]
    fn a_class_without_pages_takes_one_from_another() {
        let c = cache(2);
        fill_small(&c, 12_000);
        assert_eq!(c.pages_free(), 0);
        let big = vec![2u8; 300_000];
        assert!(matches!(c.lock(b"big").store(b"big", Mode::Set, 0, 0, &big, 0, 100), Stored::Stored(_)));
        assert_eq!(c.lock(b"big").get(b"big", 100, None).unwrap().value, &big[..]);
        assert_eq!(c.stats().slabs_moved, 1);
        let too = vec![0u8; 1 << 20];
        assert_eq!(c.lock(b"t").store(b"t", Mode::Set, 0, 0, &too, 0, 100), Stored::TooLarge);
    }

    #[test]
    fn memory_follows_the_sizes_stored_now() {
        // The cache fills with small items; then clients store only larger ones. Without
        // automove the larger class would keep the one page it took and evict within it.
        let c = cache(8);
        fill_small(&c, 100_000);
        assert_eq!(c.pages_free(), 0);
        let big = vec![2u8; 2000];
        for round in 0..10u32 {
            for i in 0..2_000u32 {
                let k = format!("b{round}-{i}");
                c.lock(k.as_bytes()).store(k.as_bytes(), Mode::Set, 0, 0, &big, 0, 110 + round);
            }
        }
        let pages =
            |size_at_least: u32| c.classes().iter().filter(|x| x.0 >= size_at_least).map(|x| x.1).sum::<usize>();
        assert!(c.stats().slabs_moved > 2, "moved {}", c.stats().slabs_moved);
        assert!(pages(2000) >= 4, "the large class holds {} of 8 pages", pages(2000));
        // The most recent large items are all there.
        for i in 0..2_000u32 {
            let k = format!("b9-{i}");
            assert!(c.lock(k.as_bytes()).get(k.as_bytes(), 120, None).is_some(), "{k} lost");
        }
        // ... and a class still in use keeps a page.
        assert!(pages(0) - pages(2000) >= 1);
    }
}
