//! One shard of the cache: slab pages cut into chunks of a size class, an LRU list per class,
//! and an index from key to item. Everything here runs under the shard's lock.
//!
//! Items live in their chunk as a header followed by the key and the value, so the index holds
//! only 8-byte item ids (page and offset) and the shard's memory is its pages plus the index.
//! Pages come from the cache's global budget; once it is spent, a class makes room by evicting
//! its own least-recently-used item (with memcached's second chance: an item read since it
//! was last moved goes back to the head once instead of out), and a class that has no page at
//! all takes one from the class of this shard holding the most, evicting that page's items.

use super::index::{Chain, Index};
use std::hash::BuildHasher;

/// The keyed hash of the index (keys come from clients: a keyed hash keeps them from choosing
/// collisions).
pub type Hasher = std::collections::hash_map::RandomState;

/// An item: `page << 32 | byte offset` of its chunk.
pub type ItemId = u64;
const NONE: ItemId = u64::MAX;

// Header layout (little-endian); the key follows at HDR, the value after the key.
const PREV: usize = 0;
const NEXT: usize = 8;
const CAS: usize = 16;
const EXPTIME: usize = 24;
const TIME: usize = 28;
const FLAGS: usize = 32;
const VLEN: usize = 36;
const KLEN: usize = 40;
const STATE: usize = 41;
const CLASS: usize = 42;
/// The next item in the index's chain ([`Index`]): 5 bytes, the item's page and its offset
/// in eighths (chunks are 8-byte aligned) packed by `pack`.
const CHAIN: usize = 43;
/// The end of a chain, packed.
const CHAIN_END: u64 = (1 << 40) - 1;
/// Bytes of header before the key.
pub const HDR: usize = 48;

const LINKED: u8 = 1;
const ACTIVE: u8 = 2;
const FETCHED: u8 = 4;
/// Invalidated (`md I`, `ms I`): still served, flagged `X`, until a fresh value replaces it.
const STALE: u8 = 8;
/// A client has been told it won the right to recache this item (`W`); others see `Z`.
const TOKEN_SENT: u8 = 16;

/// How many recently read tail items an allocation moves back to the head before it evicts
/// one anyway.
const SECOND_CHANCES: usize = 32;

/// Evictions in a shard between two looks at whether a page should move to the evicting class.
const AUTOMOVE_EVERY: u32 = 64;

/// The size classes: chunk sizes growing by `factor` from 96 bytes, the last one a whole page.
pub fn class_sizes(page: usize, factor: f64) -> Vec<u32> {
    let mut sizes = Vec::new();
    let mut s = 96usize;
    while (s as f64) * factor < page as f64 && sizes.len() < 62 {
        sizes.push(s as u32);
        s = ((s as f64 * factor) as usize + 7) & !7;
    }
    sizes.push(page as u32);
    sizes
}

/// A read-only view of an item found.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    /// The item.
    pub id: ItemId,
    /// The key.
    pub key: &'a [u8],
    /// The value.
    pub value: &'a [u8],
    /// The client's flags.
    pub flags: u32,
    /// The CAS unique.
    pub cas: u64,
    /// When it expires (cache time; 0 = never).
    pub exptime: u32,
    /// When it was last accessed (cache time).
    pub time: u32,
    /// Read at least once since it was stored.
    pub fetched: bool,
    /// Invalidated: its value is stale.
    pub stale: bool,
    /// The right to recache it has been handed to a client.
    pub token_sent: bool,
}

/// What a shard counts (the cache sums them for `stats`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ShardStats {
    /// Items stored now.
    pub curr_items: u64,
    /// Items ever stored.
    pub total_items: u64,
    /// Bytes of the items stored now, counted as memcached counts them.
    pub bytes: u64,
    /// Items evicted to make room while still valid.
    pub evictions: u64,
    /// ... of which were never read.
    pub evicted_unfetched: u64,
    /// Expired or flushed items whose memory was reused.
    pub reclaimed: u64,
    /// Expired items that were never read.
    pub expired_unfetched: u64,
    /// Pages moved from one class to another.
    pub slabs_moved: u64,
    /// Stores refused for want of memory.
    pub store_no_memory: u64,
    /// Lookups that found an item past its expiry time.
    pub get_expired: u64,
    /// Lookups that found an item a flush_all made invalid.
    pub get_flushed: u64,
}

struct Class {
    size: u32,
    pages: Vec<u32>,
    free: ItemId,
    /// The next never-used chunk of the class's newest page.
    bump: Option<ItemId>,
    head: ItemId,
    tail: ItemId,
    items: u64,
    /// memcached's per-class `stats items`: items evicted, chunks of dead items reused, and
    /// the bytes the live items ask for (`mem_requested`).
    evicted: u64,
    reclaimed: u64,
    requested: u64,
}

/// Where a new page comes from: the cache's budget of pages not yet handed out.
pub trait PageBudget {
    /// Takes one page from the budget, if any is left.
    fn take(&self) -> bool;
}

/// One shard.
pub struct Shard {
    page_size: usize,
    pages: Vec<Box<[u8]>>,
    classes: Vec<Class>,
    index: Index,
    /// Bits of a packed chain link that hold the offset in eighths (`pack`).
    offset_bits: u32,
    /// Pages of the shard no class holds (after a flush).
    spare: Vec<u32>,
    hasher: Hasher,
    next_cas: u64,
    cas_step: u64,
    /// Items whose time is at or before this (cache time) are flushed, from when it is reached.
    pub oldest_live: u32,
    /// What the shard counted.
    pub stats: ShardStats,
    /// Reused room for a value being rewritten (append, prepend).
    pub(crate) scratch: Vec<u8>,
    /// Evictions since the last automove decision.
    evictions_since_look: u32,
}

fn ntotal(klen: usize, vlen: usize, flags: u32) -> usize {
    // memcached's own item size (header with CAS, key and its NUL, data and its CRLF, and
    // the client flags when they are not 0): the item size limit and the `bytes` statistic
    // are in these units, as clients expect.
    56 + klen + 1 + vlen + 2 + if flags != 0 { 4 } else { 0 }
}

/// The size an item of this key, value and flags counts as.
pub fn item_size(klen: usize, vlen: usize, flags: u32) -> usize {
    ntotal(klen, vlen, flags)
}

impl Shard {
    /// A shard with the given classes, whose CAS uniques are `first`, `first + step`, ...
    pub fn new(page_size: usize, sizes: &[u32], hasher: Hasher, first_cas: u64, cas_step: u64) -> Shard {
        let classes = sizes
            .iter()
            .map(|&size| Class {
                size,
                pages: Vec::new(),
                free: NONE,
                bump: None,
                head: NONE,
                tail: NONE,
                items: 0,
                evicted: 0,
                reclaimed: 0,
                requested: 0,
            })
            .collect();
        Shard {
            page_size,
            pages: Vec::new(),
            classes,
            index: Index::default(),
            offset_bits: 64 - ((page_size - 1) >> 3).leading_zeros(),
            spare: Vec::new(),
            hasher,
            next_cas: first_cas,
            cas_step,
            oldest_live: 0,
            stats: ShardStats::default(),
            scratch: Vec::new(),
            evictions_since_look: 0,
        }
    }

    /// The smallest class whose chunk holds what is stored: the header, key and value (the
    /// flags live in the header). memcached's chunk also holds its CAS, the key's NUL and the
    /// value's CRLF, 11 bytes more: sizing by memcached's `ntotal` put a fifth of a 50-100
    /// byte mix one class up (bench/scale: 152 MB of chunks per million items instead of 138).
    /// The item-size limit and `bytes` stay in memcached's units.
    fn class_for(&self, klen: usize, vlen: usize) -> Option<usize> {
        let n = HDR + klen + vlen;
        self.classes.iter().position(|c| c.size as usize >= n)
    }

    // --- raw header access -------------------------------------------------------------

    fn at(&self, id: ItemId) -> &[u8] {
        &self.pages[(id >> 32) as usize][(id & 0xffff_ffff) as usize..]
    }
    fn at_mut(&mut self, id: ItemId) -> &mut [u8] {
        &mut self.pages[(id >> 32) as usize][(id & 0xffff_ffff) as usize..]
    }
    fn u64_at(&self, id: ItemId, f: usize) -> u64 {
        u64::from_le_bytes(self.at(id)[f..f + 8].try_into().expect("8 bytes"))
    }
    fn set_u64(&mut self, id: ItemId, f: usize, v: u64) {
        self.at_mut(id)[f..f + 8].copy_from_slice(&v.to_le_bytes());
    }
    fn u32_at(&self, id: ItemId, f: usize) -> u32 {
        u32::from_le_bytes(self.at(id)[f..f + 4].try_into().expect("4 bytes"))
    }
    fn set_u32(&mut self, id: ItemId, f: usize, v: u32) {
        self.at_mut(id)[f..f + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn state(&self, id: ItemId) -> u8 {
        self.at(id)[STATE]
    }
    fn set_state(&mut self, id: ItemId, s: u8) {
        self.at_mut(id)[STATE] = s;
    }
    fn klen(&self, id: ItemId) -> usize {
        usize::from(self.at(id)[KLEN])
    }
    fn vlen(&self, id: ItemId) -> usize {
        self.u32_at(id, VLEN) as usize
    }
    fn key(&self, id: ItemId) -> &[u8] {
        &self.at(id)[HDR..HDR + self.klen(id)]
    }
    fn class_of(&self, id: ItemId) -> usize {
        usize::from(self.at(id)[CLASS])
    }

    /// The size class of item `id` (0 is the smallest).
    pub fn class_index(&self, id: ItemId) -> usize {
        self.class_of(id)
    }

    /// The item `id` as a view.
    pub fn item(&self, id: ItemId) -> Item<'_> {
        let (k, v) = (self.klen(id), self.vlen(id));
        let b = self.at(id);
        Item {
            id,
            key: &b[HDR..HDR + k],
            value: &b[HDR + k..HDR + k + v],
            flags: self.u32_at(id, FLAGS),
            cas: self.u64_at(id, CAS),
            exptime: self.u32_at(id, EXPTIME),
            time: self.u32_at(id, TIME),
            fetched: self.state(id) & FETCHED != 0,
            stale: self.state(id) & STALE != 0,
            token_sent: self.state(id) & TOKEN_SENT != 0,
        }
    }

    /// The value of `id`, writable (an item not linked yet, or an in-place update).
    pub fn value_mut(&mut self, id: ItemId) -> &mut [u8] {
        let (k, v) = (self.klen(id), self.vlen(id));
        &mut self.at_mut(id)[HDR + k..HDR + k + v]
    }

    // --- the index and the LRU ------------------------------------------------------------

    /// The live item under `key`, or None; an expired or flushed item found is unlinked.
    pub fn find(&mut self, hash: u64, key: &[u8], now: u32) -> Option<ItemId> {
        let id = {
            let pages = &self.pages;
            let is = |id: ItemId| {
                let b = &pages[(id >> 32) as usize][(id & 0xffff_ffff) as usize..];
                let kl = usize::from(b[KLEN]);
                &b[HDR..HDR + kl] == key
            };
            let bits = self.offset_bits;
            self.index.find(hash, |id| read_link(pages, id, bits), is)?
        };
        if self.is_dead(id, now) {
            if self.state(id) & FETCHED == 0 && self.u32_at(id, EXPTIME) != 0 {
                self.stats.expired_unfetched += 1;
            }
            // As memcached's do_item_get: a flushed item counts as flushed, else as expired.
            if self.is_flushed(id, now) {
                self.stats.get_flushed += 1;
            } else {
                self.stats.get_expired += 1;
            }
            self.unlink(hash, id);
            return None;
        }
        Some(id)
    }

    fn is_dead(&self, id: ItemId, now: u32) -> bool {
        let exp = self.u32_at(id, EXPTIME);
        (exp != 0 && exp <= now) || self.is_flushed(id, now)
    }

    fn is_flushed(&self, id: ItemId, now: u32) -> bool {
        self.oldest_live != 0 && self.oldest_live <= now && self.u32_at(id, TIME) <= self.oldest_live
    }

    /// Notes a read of `id`: it gets a second chance at the LRU tail, and counts as fetched.
    pub fn touch_read(&mut self, id: ItemId, now: u32) {
        let s = self.state(id);
        self.set_state(id, s | ACTIVE | FETCHED);
        self.set_u32(id, TIME, now);
    }

    /// Notes an access to `id` that is not a read (its last-access time only).
    pub fn touch_read_time(&mut self, id: ItemId, now: u32) {
        self.set_u32(id, TIME, now);
    }

    /// Marks `id` stale (or not) and its recache token as handed out (or not).
    pub fn set_marks(&mut self, id: ItemId, stale: bool, token_sent: bool) {
        let s = self.state(id) & !(STALE | TOKEN_SENT);
        let m = if stale { STALE } else { 0 } | if token_sent { TOKEN_SENT } else { 0 };
        self.set_state(id, s | m);
    }

    /// Sets `id`'s expiry time.
    pub fn set_exptime(&mut self, id: ItemId, exptime: u32) {
        self.set_u32(id, EXPTIME, exptime);
    }

    fn lru_push_head(&mut self, id: ItemId) {
        let c = self.class_of(id);
        let old = self.classes[c].head;
        self.set_u64(id, PREV, NONE);
        self.set_u64(id, NEXT, old);
        if old != NONE {
            self.set_u64(old, PREV, id);
        } else {
            self.classes[c].tail = id;
        }
        self.classes[c].head = id;
    }

    fn lru_remove(&mut self, id: ItemId) {
        let c = self.class_of(id);
        let (p, n) = (self.u64_at(id, PREV), self.u64_at(id, NEXT));
        if p != NONE {
            self.set_u64(p, NEXT, n);
        } else {
            self.classes[c].head = n;
        }
        if n != NONE {
            self.set_u64(n, PREV, p);
        } else {
            self.classes[c].tail = p;
        }
    }

    fn hash_of(&self, id: ItemId) -> u64 {
        self.hasher.hash_one(self.key(id))
    }

    /// Bytes of the index's buckets, and whether it is growing.
    pub fn index_size(&self) -> (usize, bool) {
        (self.index.bytes(), self.index.growing())
    }

    /// The index hash of `key` (the same in every shard of a cache).
    pub fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Removes `id` from the index and its LRU and frees its chunk.
    pub fn unlink(&mut self, hash: u64, id: ItemId) {
        let mut links = LinksMut { pages: &mut self.pages, hasher: &self.hasher, offset_bits: self.offset_bits };
        self.index.remove(hash, id, &mut links);
        self.lru_remove(id);
        let c = self.class_of(id);
        self.classes[c].items -= 1;
        self.stats.curr_items -= 1;
        let n = ntotal(self.klen(id), self.vlen(id), self.u32_at(id, FLAGS)) as u64;
        self.stats.bytes -= n;
        let c = self.class_of(id);
        self.classes[c].requested -= n;
        self.free_chunk(id);
    }

    fn free_chunk(&mut self, id: ItemId) {
        let c = self.class_of(id);
        self.set_state(id, 0);
        let head = self.classes[c].free;
        self.set_u64(id, NEXT, head);
        self.classes[c].free = id;
    }

    /// Links the new item `id` under `hash` with a fresh CAS unique, replacing `old` (if any).
    pub fn link(&mut self, hash: u64, id: ItemId, old: Option<ItemId>, now: u32) -> u64 {
        if let Some(o) = old {
            self.unlink(hash, o);
        }
        let cas = self.next_cas;
        self.next_cas += self.cas_step;
        self.set_u64(id, CAS, cas);
        self.set_u32(id, TIME, now);
        self.set_state(id, LINKED);
        let mut links = LinksMut { pages: &mut self.pages, hasher: &self.hasher, offset_bits: self.offset_bits };
        self.index.insert(hash, id, &mut links);
        self.lru_push_head(id);
        let c = self.class_of(id);
        self.classes[c].items += 1;
        self.stats.curr_items += 1;
        self.stats.total_items += 1;
        let n = ntotal(self.klen(id), self.vlen(id), self.u32_at(id, FLAGS)) as u64;
        self.stats.bytes += n;
        let c = self.class_of(id);
        self.classes[c].requested += n;
        cas
    }

    /// Uses up one CAS unique.
    pub fn skip_cas(&mut self) {
        self.next_cas += self.cas_step;
    }

    /// Gives `id` (linked) a new CAS unique, after a change in place.
    pub fn recas(&mut self, id: ItemId) -> u64 {
        let cas = self.next_cas;
        self.next_cas += self.cas_step;
        self.set_u64(id, CAS, cas);
        cas
    }

    // --- allocation -----------------------------------------------------------------------

    /// A chunk for an item of this key and value size, not linked yet (its value is to be
    /// written with [`value_mut`](Self::value_mut)); None if the item is larger than a page or
    /// no memory can be found.
    #[allow(clippy::too_many_arguments)]
    pub fn alloc(
        &mut self,
        key: &[u8],
        vlen: usize,
        flags: u32,
        exptime: u32,
        now: u32,
        budget: &impl PageBudget,
    ) -> Option<ItemId> {
        let c = self.class_for(key.len(), vlen)?;
        let id = match self.take_chunk(c, now, budget) {
            Some(id) => id,
            None => {
                self.stats.store_no_memory += 1;
                return None;
            }
        };
        let b = self.at_mut(id);
        b[..HDR].fill(0);
        b[KLEN] = key.len() as u8;
        b[CLASS] = c as u8;
        b[HDR..HDR + key.len()].copy_from_slice(key);
        self.set_u32(id, FLAGS, flags);
        self.set_u32(id, EXPTIME, exptime);
        self.set_u32(id, VLEN, vlen as u32);
        Some(id)
    }

    /// Gives back a chunk taken by [`alloc`](Self::alloc) and never linked.
    pub fn discard(&mut self, id: ItemId) {
        self.free_chunk(id);
    }

    fn take_chunk(&mut self, c: usize, now: u32, budget: &impl PageBudget) -> Option<ItemId> {
        if let Some(id) = self.pop_free(c) {
            return Some(id);
        }
        // An expired or flushed item at the tail is reused before anything else.
        let tail = self.classes[c].tail;
        if tail != NONE && self.is_dead(tail, now) {
            self.stats.reclaimed += 1;
            self.classes[c].reclaimed += 1;
            if self.state(tail) & FETCHED == 0 && self.u32_at(tail, EXPTIME) != 0 {
                self.stats.expired_unfetched += 1;
            }
            let h = self.hash_of(tail);
            self.unlink(h, tail);
            return self.pop_free(c);
        }
        if let Some(p) = self.spare.pop() {
            self.give_page(c, p);
            return self.pop_free(c);
        }
        if budget.take() {
            self.add_page(c);
            return self.pop_free(c);
        }
        if self.classes[c].tail != NONE {
            self.evictions_since_look += 1;
            if self.evictions_since_look >= AUTOMOVE_EVERY {
                self.evictions_since_look = 0;
                if let Some(v) = self.automove_victim(c, now) {
                    self.move_page(v, c);
                    return self.pop_free(c);
                }
            }
            self.evict_tail(c);
            return self.pop_free(c);
        }
        // A class with no page at all takes one from the class holding the most.
        if let Some(v) = (0..self.classes.len()).filter(|&i| i != c).max_by_key(|&i| self.classes[i].pages.len()) {
            self.move_page(v, c);
        }
        self.pop_free(c)
    }

    /// Slab automove, as memcached's: a class evicting items much younger than the oldest
    /// item of another class takes a page from that class, so memory follows the sizes
    /// clients store now instead of staying with the sizes they stored first. "Much younger":
    /// the victim's least recently used item is idle at least 2 s and 5/4 as long as `c`'s,
    /// which is memcached's age ratio of 0.8; a victim keeps its last page.
    fn automove_victim(&self, c: usize, now: u32) -> Option<usize> {
        let age = |i: usize| {
            let t = self.classes[i].tail;
            (t != NONE).then(|| now.saturating_sub(self.u32_at(t, TIME)))
        };
        let mine = age(c)?;
        let (v, oldest) = (0..self.classes.len())
            .filter(|&i| i != c && self.classes[i].pages.len() > 1)
            .filter_map(|i| Some((i, age(i)?)))
            .max_by_key(|&(_, a)| a)?;
        (oldest >= 2 && u64::from(mine) * 5 < u64::from(oldest) * 4).then_some(v)
    }

    fn pop_free(&mut self, c: usize) -> Option<ItemId> {
        let f = self.classes[c].free;
        if f != NONE {
            self.classes[c].free = self.u64_at(f, NEXT);
            return Some(f);
        }
        let id = self.classes[c].bump?;
        let size = u64::from(self.classes[c].size);
        let next = id + size;
        self.classes[c].bump = ((next & 0xffff_ffff) + size <= self.page_size as u64).then_some(next);
        Some(id)
    }

    fn add_page(&mut self, c: usize) {
        let p = self.pages.len() as u32;
        // Zeroed pages come from the kernel untouched: memory is used as chunks are.
        self.pages.push(vec![0u8; self.page_size].into_boxed_slice());
        self.give_page(c, p);
    }

    fn give_page(&mut self, c: usize, p: u32) {
        self.classes[c].pages.push(p);
        let size = self.classes[c].size as usize;
        let first = u64::from(p) << 32;
        // A page that served another class (or was flushed) holds old bytes where this
        // class's chunk headers fall: every chunk starts out free, so that a later move of
        // this page does not take stale bytes for a linked item.
        let mut off = 0;
        while off + size <= self.page_size {
            self.set_state(first | off as u64, 0);
            off += size;
        }
        match self.classes[c].bump {
            // Chunks of the page are handed out from its start.
            None => self.classes[c].bump = Some(first),
            Some(_) => {
                // The class still has never-used chunks in another page: chain this page's
                // chunks onto the free list instead.
                let mut off = 0;
                while off + size <= self.page_size {
                    let id = first | off as u64;
                    self.set_u64(id, NEXT, self.classes[c].free);
                    self.classes[c].free = id;
                    off += size;
                }
            }
        }
    }

    fn evict_tail(&mut self, c: usize) {
        for _ in 0..SECOND_CHANCES {
            let t = self.classes[c].tail;
            if self.state(t) & ACTIVE == 0 {
                break;
            }
            let s = self.state(t);
            self.set_state(t, s & !ACTIVE);
            self.lru_remove(t);
            self.lru_push_head(t);
        }
        let t = self.classes[c].tail;
        self.stats.evictions += 1;
        self.classes[c].evicted += 1;
        if self.state(t) & FETCHED == 0 {
            self.stats.evicted_unfetched += 1;
        }
        let h = self.hash_of(t);
        self.unlink(h, t);
    }

    /// Takes the newest page of class `v` (evicting its items) for class `c`.
    fn move_page(&mut self, v: usize, c: usize) {
        let Some(&p) = self.classes[v].pages.last() else { return };
        let size = self.classes[v].size as usize;
        let first = u64::from(p) << 32;
        let mut off = 0;
        while off + size <= self.page_size {
            let id = first | off as u64;
            if self.state(id) & LINKED != 0 {
                self.stats.evictions += 1;
                self.classes[v].evicted += 1;
                let h = self.hash_of(id);
                self.unlink(h, id);
            }
            off += size;
        }
        // Drop the page's chunks from the victim's free list and never-used run.
        let mut kept = NONE;
        let mut f = self.classes[v].free;
        while f != NONE {
            let next = self.u64_at(f, NEXT);
            if f >> 32 != u64::from(p) {
                self.set_u64(f, NEXT, kept);
                kept = f;
            }
            f = next;
        }
        self.classes[v].free = kept;
        if self.classes[v].bump.is_some_and(|b| b >> 32 == u64::from(p)) {
            self.classes[v].bump = None;
        }
        self.classes[v].pages.pop();
        self.stats.slabs_moved += 1;
        self.give_page(c, p);
    }

    /// Frees every item (an immediate `flush_all`).
    pub fn clear(&mut self) {
        for c in &mut self.classes {
            c.pages.clear();
            c.free = NONE;
            c.bump = None;
            c.head = NONE;
            c.tail = NONE;
            c.items = 0;
            c.requested = 0;
        }
        self.index.clear();
        self.stats.curr_items = 0;
        self.stats.bytes = 0;
        // Pages stay with the shard, handed out again class by class.
        let pages = self.pages.len() as u32;
        self.spare = (0..pages).collect();
    }

    /// Up to `limit` items of class `class`, most recently used first (`stats cachedump`).
    pub fn dump_class(&self, class: usize, limit: usize, each: &mut dyn FnMut(Item<'_>)) -> usize {
        let Some(c) = self.classes.get(class) else { return 0 };
        let (mut id, mut n) = (c.head, 0);
        while id != NONE && n < limit {
            each(self.item(id));
            id = self.u64_at(id, NEXT);
            n += 1;
        }
        n
    }

    /// Per-class counts: (evicted, reclaimed, bytes requested).
    pub fn class_counts(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.classes.iter().map(|c| (c.evicted, c.reclaimed, c.requested))
    }

    /// `stats reset` for the classes: evictions and reclaims from zero.
    pub fn reset_class_counts(&mut self) {
        for c in &mut self.classes {
            c.evicted = 0;
            c.reclaimed = 0;
        }
    }

    /// Per-class figures: (chunk size, pages, items).
    pub fn classes(&self) -> impl Iterator<Item = (u32, usize, u64)> + '_ {
        self.classes.iter().map(|c| (c.size, c.pages.len(), c.items))
    }
}

/// The items' chain links, read and written (an insertion or removal; a lookup reads them
/// with `read_link`).
struct LinksMut<'a> {
    pages: &'a mut [Box<[u8]>],
    hasher: &'a Hasher,
    offset_bits: u32,
}

/// A chain link as stored: `page << offset_bits | offset / 8` in 40 bits. A cache holds at most
/// 1 TiB, so the page's number and the offset's bits together need at most 38.
fn pack(id: ItemId, offset_bits: u32) -> u64 {
    if id == NONE {
        return CHAIN_END;
    }
    let packed = (id >> 32) << offset_bits | (id & 0xffff_ffff) >> 3;
    debug_assert!(packed < CHAIN_END && (id & 7) == 0);
    packed
}

fn unpack(v: u64, offset_bits: u32) -> ItemId {
    if v == CHAIN_END {
        return NONE;
    }
    (v >> offset_bits) << 32 | (v & ((1 << offset_bits) - 1)) << 3
}

fn read_link(pages: &[Box<[u8]>], id: ItemId, offset_bits: u32) -> ItemId {
    let at = (id & 0xffff_ffff) as usize + CHAIN;
    let mut b = [0u8; 8];
    b[..5].copy_from_slice(&pages[(id >> 32) as usize][at..at + 5]);
    unpack(u64::from_le_bytes(b), offset_bits)
}

fn key_hash(pages: &[Box<[u8]>], hasher: &Hasher, id: ItemId) -> u64 {
    let b = &pages[(id >> 32) as usize][(id & 0xffff_ffff) as usize..];
    hasher.hash_one(&b[HDR..HDR + usize::from(b[KLEN])])
}

impl Chain for LinksMut<'_> {
    fn next(&self, id: ItemId) -> ItemId {
        read_link(self.pages, id, self.offset_bits)
    }
    fn set_next(&mut self, id: ItemId, next: ItemId) {
        let at = (id & 0xffff_ffff) as usize + CHAIN;
        let v = pack(next, self.offset_bits).to_le_bytes();
        self.pages[(id >> 32) as usize][at..at + 5].copy_from_slice(&v[..5]);
    }
    fn hash(&self, id: ItemId) -> u64 {
        key_hash(self.pages, self.hasher, id)
    }
}
