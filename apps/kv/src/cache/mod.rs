//! The cache every engine shares: items in slab pages, bounded by `--memory`, evicted
//! least-recently-used within their size class.
//!
//! Sharing scheme: keys are partitioned by hash into shards, each behind its own lock, so
//! engines touch the same shard only when they touch keys of the same shard at the same
//! moment; a command holds one shard's lock for the time it takes (a lookup and a copy). The
//! memory budget is global — pages are handed to shards as they need them — so an uneven key
//! distribution cannot strand memory. CAS uniques are per shard (shard `s` of `n` issues
//! `s+1, s+1+n, …`), unique across the cache without a shared counter; with one shard they
//! run 1, 2, 3, … as memcached's do.
//!
//! Time is the cache's own: seconds since the process started plus 62, as memcached keeps it
//! (so `la`/`t` figures compare), given by the caller to every operation (sans-IO).

mod index;
mod ops;
pub mod shard;

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

pub use ops::{format_u64, parse_counter, Arith, Mode, Stored};
pub use shard::{item_size, Item, ItemId, Shard, ShardStats};

/// Relative expiry times above this are absolute Unix times (memcached's 30 days).
pub const REALTIME_MAXDELTA: i64 = 60 * 60 * 24 * 30;

/// How a cache is sized.
#[derive(Debug, Clone, Copy)]
pub struct CacheConfig {
    /// Bytes of item memory (slab pages).
    pub memory: usize,
    /// Largest item, in memcached's item units ([`item_size`]).
    pub max_item: usize,
    /// Shards (locks).
    pub shards: usize,
    /// Growth factor of the size classes.
    pub factor: f64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig { memory: 64 << 20, max_item: 1 << 20, shards: 1, factor: 1.25 }
    }
}

impl CacheConfig {
    /// A cache of `memory` bytes and items up to `max_item` bytes for `engines` engines,
    /// sharded as they need. One engine needs one shard (never contended; CAS uniques then
    /// run 1, 2, 3, … as memcached's do). Several engines get four each — measured
    /// (bench/kv/sharing): two threads on one shard run 3.8× slower per operation, on two
    /// 1.6×, on eight 1.06× — but no more than one per 16 pages, as every size class in use
    /// needs a page in every shard.
    pub fn for_engines(memory: usize, max_item: usize, engines: usize) -> CacheConfig {
        let engines = engines.max(1);
        let pages = memory / max_item.max(1 << 20);
        let shards = if engines == 1 { 1 } else { (4 * engines).min(pages / 16).max(engines) };
        CacheConfig { memory, max_item, shards, factor: 1.25 }
    }
}

/// Pages not yet given to a shard.
struct Budget(AtomicUsize);

impl shard::PageBudget for Budget {
    fn take(&self) -> bool {
        self.0.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok()
    }
}

/// The shared cache.
pub struct Cache {
    shards: Box<[Mutex<Shard>]>,
    budget: Budget,
    hasher: shard::Hasher,
    cfg: CacheConfig,
    page_size: usize,
    pages: usize,
    /// Unix time (seconds) at which cache time is 0.
    epoch: i64,
}

/// A shard locked for one command, with the hash of the command's key.
pub struct Locked<'a> {
    /// The shard.
    pub shard: MutexGuard<'a, Shard>,
    /// The key's hash.
    pub hash: u64,
    cache: &'a Cache,
}

impl Cache {
    /// A cache sized by `cfg`; `now_unix` is the Unix time now (cache time starts at 62).
    pub fn new(cfg: CacheConfig, now_unix: i64) -> Result<Cache, String> {
        let page_size = cfg.max_item.max(1 << 20);
        let pages = cfg.memory / page_size;
        if pages < 2 {
            return Err(format!(
                "--memory must hold at least two pages of {} MB (the larger of 1 MB and --max-item-size)",
                page_size >> 20
            ));
        }
        let shards = cfg.shards.clamp(1, 256);
        let sizes = shard::class_sizes(page_size, cfg.factor);
        let hasher = shard::Hasher::new();
        let shards = (0..shards)
            .map(|s| Mutex::new(Shard::new(page_size, &sizes, hasher.clone(), s as u64 + 1, shards as u64)))
            .collect();
        Ok(Cache {
            shards,
            hasher,
            budget: Budget(AtomicUsize::new(pages)),
            cfg,
            page_size,
            pages,
            epoch: now_unix - 62,
        })
    }

    /// How it is sized.
    pub fn config(&self) -> &CacheConfig {
        &self.cfg
    }

    /// True if an item of this key, value and flags is no larger than the largest item.
    pub fn fits(&self, klen: usize, vlen: usize, flags: u32) -> bool {
        item_size(klen, vlen, flags) <= self.cfg.max_item
    }

    /// Bytes per slab page.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Pages not yet handed to a shard.
    pub fn pages_free(&self) -> usize {
        self.budget.0.load(Ordering::Acquire)
    }

    /// Pages in all.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Cache time (seconds) at Unix time `unix`.
    pub fn time_at(&self, unix: i64) -> u32 {
        (unix - self.epoch).clamp(1, i64::from(u32::MAX)) as u32
    }

    /// Unix time at cache time `t`.
    pub fn unix_at(&self, t: u32) -> i64 {
        self.epoch + i64::from(t)
    }

    /// A client's expiry time as cache time: 0 never; negative already past; up to 30 days
    /// relative to `now`; above that an absolute Unix time.
    pub fn realtime(&self, exptime: i64, now: u32) -> u32 {
        if exptime == 0 {
            0
        } else if exptime < 0 {
            1
        } else if exptime > REALTIME_MAXDELTA {
            if exptime <= self.epoch {
                1
            } else {
                (exptime - self.epoch).min(i64::from(u32::MAX)) as u32
            }
        } else {
            (exptime + i64::from(now)).min(i64::from(u32::MAX)) as u32
        }
    }

    /// Locks the shard of `key`.
    pub fn lock(&self, key: &[u8]) -> Locked<'_> {
        let hash = self.hasher.hash_one(key);
        let i = ((hash >> 32) as usize * self.shards.len()) >> 32;
        let shard = self.shards[i].lock().unwrap_or_else(|e| e.into_inner());
        Locked { shard, hash, cache: self }
    }

    /// `flush_all`: with no delay (or one already past) every item goes now; else items stored
    /// before the given cache time become invisible from then on.
    pub fn flush_all(&self, at: Option<u32>, now: u32) {
        for s in self.shards.iter() {
            let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
            match at {
                Some(t) if t > now => s.oldest_live = t - 1,
                _ => {
                    s.clear();
                    s.oldest_live = 0;
                    // memcached takes a CAS unique to mark an immediate flush; so do we, so
                    // that uniques after it are the same as memcached's.
                    s.skip_cas();
                }
            }
        }
    }

    /// `stats cachedump CLASS LIMIT` (memcached's debugging view): `ITEM key [N b; T s]` for
    /// up to `limit` items of class `class` (1-based, as `stats slabs` numbers them; 0 items:
    /// all), `T` the Unix time of expiry or 0, then `END`.
    pub fn cachedump(&self, class: usize, limit: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut left = if limit == 0 { usize::MAX } else { limit };
        for s in self.shards.iter() {
            if left == 0 || class == 0 {
                break;
            }
            let s = s.lock().unwrap_or_else(|e| e.into_inner());
            left -= s.dump_class(class - 1, left, &mut |it| {
                let exp = if it.exptime == 0 { 0 } else { self.unix_at(it.exptime) };
                out.extend_from_slice(b"ITEM ");
                out.extend_from_slice(it.key);
                out.extend_from_slice(format!(" [{} b; {exp} s]\r\n", it.value.len()).as_bytes());
            });
        }
        out.extend_from_slice(b"END\r\n");
        out
    }

    /// `stats reset`: the counts start again from zero; the gauges (items, bytes) stay.
    pub fn reset_stats(&self) {
        for s in self.shards.iter() {
            let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
            let st = &mut s.stats;
            *st = ShardStats { curr_items: st.curr_items, bytes: st.bytes, ..ShardStats::default() };
            s.reset_class_counts();
        }
    }

    /// The shards' counters summed.
    pub fn stats(&self) -> ShardStats {
        let mut t = ShardStats::default();
        for s in self.shards.iter() {
            let s = s.lock().unwrap_or_else(|e| e.into_inner()).stats;
            t.curr_items += s.curr_items;
            t.total_items += s.total_items;
            t.bytes += s.bytes;
            t.evictions += s.evictions;
            t.evicted_unfetched += s.evicted_unfetched;
            t.reclaimed += s.reclaimed;
            t.expired_unfetched += s.expired_unfetched;
            t.slabs_moved += s.slabs_moved;
            t.store_no_memory += s.store_no_memory;
            t.get_expired += s.get_expired;
            t.get_flushed += s.get_flushed;
        }
        t
    }

    /// Bytes of the shards' indexes, and whether any is growing (memcached's `hash_bytes`
    /// and `hash_is_expanding`).
    pub fn index_size(&self) -> (usize, bool) {
        self.shards.iter().fold((0, false), |(b, g), s| {
            let (sb, sg) = s.lock().unwrap_or_else(|e| e.into_inner()).index_size();
            (b + sb, g || sg)
        })
    }

    /// Per-class counts summed over shards: (evicted, reclaimed, bytes requested).
    pub fn class_counts(&self) -> Vec<(u64, u64, u64)> {
        let mut out: Vec<(u64, u64, u64)> = Vec::new();
        for s in self.shards.iter() {
            let s = s.lock().unwrap_or_else(|e| e.into_inner());
            for (i, (e, r, q)) in s.class_counts().enumerate() {
                if out.len() <= i {
                    out.push((0, 0, 0));
                }
                out[i] = (out[i].0 + e, out[i].1 + r, out[i].2 + q);
            }
        }
        out
    }

    /// Per-class figures summed over shards: (chunk size, pages, items).
    pub fn classes(&self) -> Vec<(u32, usize, u64)> {
        let mut out: Vec<(u32, usize, u64)> = Vec::new();
        for s in self.shards.iter() {
            let s = s.lock().unwrap_or_else(|e| e.into_inner());
            for (i, (size, pages, items)) in s.classes().enumerate() {
                if out.len() <= i {
                    out.push((size, 0, 0));
                }
                out[i].1 += pages;
                out[i].2 += items;
            }
        }
        out
    }
}

#[cfg(test)]
mod sizing_tests {
    use super::CacheConfig;

    #[test]
    fn shards_follow_the_engines_and_the_pages() {
        let mb = 1 << 20;
        assert_eq!(CacheConfig::for_engines(64 * mb, mb, 1).shards, 1);
        assert_eq!(CacheConfig::for_engines(64 * mb, mb, 0).shards, 1);
        // 1 024 pages: four shards per engine.
        assert_eq!(CacheConfig::for_engines(1024 * mb, mb, 2).shards, 8);
        // 64 pages: no more than one shard per 16 pages, but one per engine at least.
        assert_eq!(CacheConfig::for_engines(64 * mb, mb, 2).shards, 4);
        assert_eq!(CacheConfig::for_engines(16 * mb, mb, 2).shards, 2);
        // Larger items make larger pages: fewer of them.
        assert_eq!(CacheConfig::for_engines(1024 * mb, 8 * mb, 4).shards, 8);
    }
}
