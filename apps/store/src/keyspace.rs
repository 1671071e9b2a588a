//! The keys, shared by every engine: a hash map per shard behind a mutex, so a key written on
//! one engine is seen on every other. A change holds its shard's lock while it takes its
//! sequence number and writes its log record, so the order of numbers is the order in which
//! changes to a key happened. Commands on several keys lock their shards in index order.

use crate::hash::Hash;
use crate::list::List;
use crate::set::Set;
use crate::zset::ZSet;
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A key's value, of one of the types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string.
    Str(Vec<u8>),
    /// A hash.
    Hash(Hash),
    /// A list.
    List(List),
    /// A set.
    Set(Set),
    /// A sorted set.
    ZSet(ZSet),
}

impl Value {
    /// The type's name, as TYPE answers.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
        }
    }

    /// The string, if it is one.
    pub fn as_str(&self) -> Option<&Vec<u8>> {
        match self {
            Value::Str(v) => Some(v),
            _ => None,
        }
    }
}

/// A key's value and what the durability gate needs to know of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// When it expires, in Unix milliseconds (0: never).
    pub expire_ms: i64,
    /// The change that last wrote it (a reply showing it waits until that is durable).
    pub seq: u64,
}

impl Entry {
    /// True if it has expired at `now_ms`.
    pub fn expired(&self, now_ms: i64) -> bool {
        self.expire_ms != 0 && self.expire_ms <= now_ms
    }
}

/// One shard.
#[derive(Default)]
pub struct Shard {
    /// Its keys.
    pub map: HashMap<Box<[u8]>, Entry>,
    /// The last change that removed keys here (a reply saying a key is missing waits for it).
    pub removed_seq: u64,
    /// Keys given an expiry, by when: the active expiry's work list. An entry may be stale
    /// (the key since removed, persisted or given another time): the cycle checks the key
    /// before removing it, so a stale one costs a look and nothing else.
    pub expiring: BTreeSet<(i64, Box<[u8]>)>,
    /// Keys a reader found expired and removed since the last expiry cycle: replicas are
    /// told of them (a DEL in the stream) at the next cycle, as of every key that expires.
    pub lapsed: Vec<Box<[u8]>>,
}

/// Keys an expiry cycle looks at per shard at most (a bounded pause for the shard's lock).
pub const EXPIRE_BUDGET: usize = 200;

/// Keys found expired by readers kept per shard between cycles at most (beyond it replicas
/// keep an expired key until they read it: they hide it either way).
const LAPSED_MAX: usize = 4096;

impl Shard {
    /// The entry of `key` if it exists and has not expired; an expired one is removed.
    pub fn live(&mut self, key: &[u8], now_ms: i64) -> Option<&mut Entry> {
        // One lookup on the common path; an expired key costs a second, to remove it.
        let live = !self.map.get(key)?.expired(now_ms);
        if live {
            return self.map.get_mut(key);
        }
        if let Some(e) = self.map.remove(key) {
            // The miss now shown rests on the change that set the expiry.
            self.removed_seq = self.removed_seq.max(e.seq);
            if self.lapsed.len() < LAPSED_MAX {
                self.lapsed.push(key.into());
            }
        }
        None
    }

    /// Notes that `key` now expires at `at_ms` (0: never, nothing to note).
    pub fn note_expiry(&mut self, key: &[u8], at_ms: i64) {
        if at_ms != 0 {
            self.expiring.insert((at_ms, key.into()));
        }
    }

    /// Removes keys whose expiry has passed at `now_ms`, looking at `budget` entries of the
    /// work list at most; returns how many keys went. Not logged: a key past its expiry is
    /// gone for every reader and at every restart anyway; the miss a reader now sees waits for
    /// the change that set the expiry, as with a key found expired when touched.
    pub fn expire_due(&mut self, now_ms: i64, budget: usize, removed: &mut Vec<Box<[u8]>>) -> usize {
        let mut gone = 0;
        for _ in 0..budget {
            match self.expiring.first() {
                Some((at, _)) if *at <= now_ms => {}
                _ => break,
            }
            let Some((at, key)) = self.expiring.pop_first() else { break };
            if self.map.get(&key).is_some_and(|e| e.expire_ms == at) {
                if let Some(e) = self.map.remove(&key) {
                    self.removed_seq = self.removed_seq.max(e.seq);
                    gone += 1;
                    removed.push(key);
                }
            }
        }
        gone
    }

    /// Removes every key (FLUSHALL, FLUSHDB).
    pub fn clear(&mut self, seq: u64) {
        self.map.clear();
        self.expiring.clear();
        self.removed_seq = seq;
    }

    /// The sequence number a reply about `key` (found or not) waits for.
    pub fn seq_of(&self, key: &[u8]) -> u64 {
        self.map.get(key).map_or(self.removed_seq, |e| e.seq)
    }
}

/// Most shards (a set of shards is a bit mask).
pub const MAX_SHARDS: usize = 64;

/// One database's keys (SELECT picks one of a store's [`Databases`]).
pub struct Keyspace {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    /// Every command runs holding it shared; EXEC holds it alone, so a transaction's commands
    /// run with no other engine's change between them, and take consecutive numbers. One gate
    /// for all of a store's databases (a transaction may SELECT another).
    gate: Arc<RwLock<()>>,
    /// Its number (SELECT's).
    index: usize,
}

/// A store's databases (Redis's `databases`, SELECT 0 to N-1).
pub struct Databases {
    dbs: Box<[Keyspace]>,
    /// SWAPDBs so far: a snapshot copied while one ran is not a state the log can continue.
    swaps: std::sync::atomic::AtomicU64,
}

impl Databases {
    /// `count` databases (at least one) of `shards` shards each, under one gate.
    pub fn new(count: usize, shards: usize) -> Databases {
        let gate = Arc::new(RwLock::new(()));
        // One hasher for all: a key has the same shard in every database, so SWAPDB swaps
        // shard for shard.
        let hasher = RandomState::new();
        let dbs =
            (0..count.max(1)).map(|index| Keyspace::with_gate(shards, gate.clone(), index, hasher.clone())).collect();
        Databases { dbs, swaps: std::sync::atomic::AtomicU64::new(0) }
    }

    /// SWAPDBs so far.
    pub fn swaps(&self) -> u64 {
        self.swaps.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Database `i`, if there is one.
    pub fn db(&self, i: usize) -> Option<&Keyspace> {
        self.dbs.get(i)
    }

    /// Database 0 (there always is one).
    pub fn first(&self) -> &Keyspace {
        &self.dbs[0]
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.dbs.len()
    }

    /// Never: there is always database 0.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Every database, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Keyspace> {
        self.dbs.iter()
    }

    /// Keys stored, all databases.
    pub fn keys(&self) -> usize {
        self.dbs.iter().map(Keyspace::len).sum()
    }

    /// Swaps the contents of databases `a` and `b` (SWAPDB): every shard of both held at once
    /// (the lower database's first, in shard order: the order every command locks in), the
    /// change numbered by `number` while they are held, then traded shard for shard.
    pub fn swap(&self, a: usize, b: usize, number: impl FnOnce() -> u64) -> u64 {
        let (Some(x), Some(y)) = (self.db(a.min(b)), self.db(a.max(b))) else { return 0 };
        let mut first = x.lock_set(x.all());
        let mut second = (a != b).then(|| y.lock_set(y.all()));
        let seq = number();
        let Some(second) = second.as_mut() else { return seq };
        self.swaps.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        for (s, t) in first.each().zip(second.each()) {
            std::mem::swap(s, t);
            // Whatever a reader saw of either database rests on the swap now.
            for sh in [s, t] {
                sh.removed_seq = sh.removed_seq.max(seq);
                for e in sh.map.values_mut() {
                    e.seq = e.seq.max(seq);
                }
            }
        }
        seq
    }
}

/// Several shards locked together, in index order.
pub struct Locked<'a> {
    guards: [Option<MutexGuard<'a, Shard>>; MAX_SHARDS],
}

impl<'a> Locked<'a> {
    /// The locked shard `i` (which must be in the set locked).
    pub fn shard(&mut self, i: usize) -> &mut Shard {
        self.guards[i].as_deref_mut().expect("shard locked")
    }

    /// Every locked shard.
    pub fn each(&mut self) -> impl Iterator<Item = &mut Shard> + use<'_, 'a> {
        self.guards.iter_mut().filter_map(|g| g.as_deref_mut())
    }
}

impl Keyspace {
    /// An empty keyspace of `shards` shards (1 to [`MAX_SHARDS`]): database 0 of a store of
    /// one.
    pub fn new(shards: usize) -> Keyspace {
        Keyspace::with_gate(shards, Arc::new(RwLock::new(())), 0, RandomState::new())
    }

    fn with_gate(shards: usize, gate: Arc<RwLock<()>>, index: usize, hasher: RandomState) -> Keyspace {
        let n = shards.clamp(1, MAX_SHARDS);
        Keyspace { shards: (0..n).map(|_| Mutex::new(Shard::default())).collect(), hasher, gate, index }
    }

    /// Its number.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Held while one command runs (other commands may run meanwhile on other engines).
    pub fn shared(&self) -> RwLockReadGuard<'_, ()> {
        self.gate.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Held while a transaction runs: no other command runs meanwhile.
    pub fn exclusive(&self) -> RwLockWriteGuard<'_, ()> {
        self.gate.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Shards.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// The shard of `key`.
    pub fn shard_of(&self, key: &[u8]) -> usize {
        if self.shards.len() == 1 {
            return 0;
        }
        (self.hasher.hash_one(key) % self.shards.len() as u64) as usize
    }

    /// Locks shard `i`.
    pub fn lock(&self, i: usize) -> MutexGuard<'_, Shard> {
        // A panic while a shard was held leaves it as the panic found it: every change is
        // applied in one step after its checks, so the map is consistent either way.
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Locks the shard of `key`.
    pub fn lock_key(&self, key: &[u8]) -> MutexGuard<'_, Shard> {
        self.lock(self.shard_of(key))
    }

    /// Locks the shards in `mask` (bit i: shard i), in index order.
    pub fn lock_set(&self, mask: u64) -> Locked<'_> {
        let mut guards = [const { None }; MAX_SHARDS];
        for (i, g) in guards.iter_mut().enumerate().take(self.shards.len()) {
            if mask & (1 << i) != 0 {
                *g = Some(self.lock(i));
            }
        }
        Locked { guards }
    }

    /// The set of shards of `keys`.
    pub fn mask_of<'k>(&self, keys: impl Iterator<Item = &'k [u8]>) -> u64 {
        keys.fold(0, |m, k| m | 1 << self.shard_of(k))
    }

    /// Every shard.
    pub fn all(&self) -> u64 {
        if self.shards.len() == 64 {
            u64::MAX
        } else {
            (1 << self.shards.len()) - 1
        }
    }

    /// Keys stored (including expired ones not yet removed, as Redis counts them).
    pub fn len(&self) -> usize {
        (0..self.shards.len()).map(|i| self.lock(i).map.len()).sum()
    }

    /// True if no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys with an expiry.
    pub fn with_expiry(&self) -> usize {
        (0..self.shards.len()).map(|i| self.lock(i).map.values().filter(|e| e.expire_ms != 0).count()).sum()
    }

    /// Calls `f` with every key and entry, a shard at a time (for a snapshot).
    pub fn for_each(&self, mut f: impl FnMut(&[u8], &Entry)) {
        for i in 0..self.shards.len() {
            let s = self.lock(i);
            for (k, e) in &s.map {
                f(k, e);
            }
        }
    }

    /// One round of active expiry over the shards `which` picks (an engine takes its share):
    /// each loses the keys whose time has passed, [`EXPIRE_BUDGET`] looked at per shard at
    /// most. Returns how many keys went. Where replicas are fed (`journal`), the keys that
    /// expired — here or found so by a reader since the last round, and not made again since
    /// — are logged as removed, under the shard's lock, so the DEL takes its place in the
    /// order before any later change to them.
    pub fn expire_cycle(
        &self,
        now_ms: i64,
        which: impl Fn(usize) -> bool,
        mut journal: Option<&mut dyn crate::command::Journal>,
    ) -> usize {
        let mut gone = 0;
        let mut removed = Vec::new();
        for i in (0..self.shards.len()).filter(|&i| which(i)) {
            let mut s = self.lock(i);
            removed.clear();
            gone += s.expire_due(now_ms, EXPIRE_BUDGET, &mut removed);
            let lapsed = std::mem::take(&mut s.lapsed);
            if let Some(j) = journal.as_deref_mut() {
                removed.extend(lapsed.into_iter().filter(|k| !s.map.contains_key(k)));
                if !removed.is_empty() {
                    let keys: Vec<&[u8]> = removed.iter().map(|k| &**k).collect();
                    j.select(self.index);
                    j.del(&keys);
                }
            }
        }
        gone
    }

    /// Removes every key that has expired at `now_ms`; returns how many.
    pub fn drop_expired(&self, now_ms: i64) -> usize {
        let mut n = 0;
        for i in 0..self.shards.len() {
            let mut s = self.lock(i);
            let before = s.map.len();
            s.map.retain(|_, e| !e.expired(now_ms));
            n += before - s.map.len();
        }
        n
    }
}
