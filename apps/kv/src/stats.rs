//! What the KV server counts, per engine, and memcached's `stats` view of it.
//!
//! Each engine writes only its own counters (a load and a store, no locked instruction: one
//! writer), on a cache line of its own; `stats` on any connection sums every engine's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// A counter with one writer.
#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n` (only the owning engine calls this).
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }
    /// Adds one.
    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }
    /// Subtracts one (gauges).
    #[inline]
    pub fn dec(&self) {
        self.0.store(self.0.load(Ordering::Relaxed).wrapping_sub(1), Ordering::Relaxed);
    }
    /// The value now.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

macro_rules! counters {
    ($($name:ident),* $(,)?) => {
        /// One engine's counters, named as memcached's `stats` names them.
        #[derive(Default)]
        #[repr(align(128))]
        #[allow(missing_docs)]
        pub struct Counters { $(pub $name: Counter,)* }

        impl Counters {
            /// Every counter: its name and value.
            pub fn each(&self) -> [(&'static str, u64); counters!(@count $($name)*)] {
                [$((stringify!($name), self.$name.get()),)*]
            }
        }
    };
    (@count) => { 0 };
    (@count $x:ident $($rest:ident)*) => { 1 + counters!(@count $($rest)*) };
}

counters!(
    curr_connections,
    total_connections,
    rejected_connections,
    cmd_get,
    cmd_set,
    cmd_flush,
    cmd_touch,
    cmd_meta,
    get_hits,
    get_misses,
    delete_misses,
    delete_hits,
    incr_misses,
    incr_hits,
    decr_misses,
    decr_hits,
    cas_misses,
    cas_hits,
    cas_badval,
    touch_hits,
    touch_misses,
    store_too_large,
    store_no_memory,
    auth_cmds,
    auth_errors,
    bytes_read,
    bytes_written,
    protocol_errors,
    conns_closed_backlog,
);

/// Counters `stats reset` leaves alone: gauges, not counts.
const GAUGES: [&str; 1] = ["curr_connections"];

/// Every engine's counters.
pub struct Board {
    engines: Box<[Counters]>,
    /// What the totals were at the last `stats reset`: each engine writes only its own
    /// counters, so a reset from any connection cannot zero them; it moves the baseline
    /// that every reader subtracts, and takes effect for the very next `stats` anywhere.
    base: Mutex<Vec<u64>>,
}

impl Board {
    /// Counters for `engines` engines.
    pub fn new(engines: usize) -> Board {
        let engines: Box<[Counters]> = (0..engines.max(1)).map(|_| Counters::default()).collect();
        let base = Mutex::new(vec![0; engines[0].each().len()]);
        Board { engines, base }
    }

    /// Engine `e`'s counters.
    pub fn engine(&self, e: usize) -> &Counters {
        &self.engines[e]
    }

    fn raw(&self) -> Vec<(&'static str, u64)> {
        let mut t: Vec<(&'static str, u64)> = self.engines[0].each().to_vec();
        for e in &self.engines[1..] {
            for (i, (_, v)) in e.each().iter().enumerate() {
                t[i].1 = t[i].1.wrapping_add(*v);
            }
        }
        t
    }

    /// The counters summed over engines since the last reset, by name.
    pub fn totals(&self) -> Vec<(&'static str, u64)> {
        let mut t = self.raw();
        let base = self.base.lock().unwrap_or_else(|p| p.into_inner());
        for (i, (_, v)) in t.iter_mut().enumerate() {
            *v = v.wrapping_sub(base[i]);
        }
        t
    }

    /// `stats reset`: every count starts again from zero (the gauges stay).
    pub fn reset(&self) {
        let now = self.raw();
        let mut base = self.base.lock().unwrap_or_else(|p| p.into_inner());
        for (i, (name, v)) in now.iter().enumerate() {
            if !GAUGES.contains(name) {
                base[i] = *v;
            }
        }
    }

    /// The total of one counter.
    pub fn total(&self, name: &str) -> u64 {
        self.totals().iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
    }
}

/// What `stats detail` counts for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetailOp {
    /// A get, and whether it hit.
    Get(bool),
    /// A store command.
    Set,
    /// A delete.
    Delete,
}

/// memcached's `stats detail`: gets, hits, sets and deletes per key prefix (the key up to its
/// first ':'; keys without one are not counted), kept only while switched on with `stats
/// detail on`, shown by `stats detail dump`, cleared by `stats reset`. Off, it costs one
/// relaxed load per command; on, a lock per counted command, as memcached's.
#[derive(Default)]
pub struct Detail {
    on: AtomicBool,
    prefixes: Mutex<HashMap<Vec<u8>, [u64; 4]>>,
}

impl Detail {
    /// `stats detail on|off`.
    pub fn set_on(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// Counts `op` on `key` if detail is on.
    #[inline]
    pub fn record(&self, key: &[u8], op: DetailOp) {
        if self.on.load(Ordering::Relaxed) {
            self.record_slow(key, op);
        }
    }

    fn record_slow(&self, key: &[u8], op: DetailOp) {
        let Some(end) = key.iter().position(|&b| b == b':') else { return };
        let mut m = self.prefixes.lock().unwrap_or_else(|p| p.into_inner());
        let c = m.entry(key[..end].to_vec()).or_default();
        match op {
            DetailOp::Get(hit) => {
                c[0] += 1;
                c[1] += u64::from(hit);
            }
            DetailOp::Set => c[2] += 1,
            DetailOp::Delete => c[3] += 1,
        }
    }

    /// `stats detail dump`: a `PREFIX` line per prefix (by name), then `END`.
    pub fn dump(&self) -> Vec<u8> {
        let m = self.prefixes.lock().unwrap_or_else(|p| p.into_inner());
        let mut names: Vec<&Vec<u8>> = m.keys().collect();
        names.sort();
        let mut out = Vec::new();
        for n in names {
            let c = m[n];
            out.extend_from_slice(b"PREFIX ");
            out.extend_from_slice(n);
            out.extend_from_slice(format!(" get {} hit {} set {} del {}\r\n", c[0], c[1], c[2], c[3]).as_bytes());
        }
        out.extend_from_slice(b"END\r\n");
        out
    }

    /// `stats reset` forgets every prefix.
    pub fn reset(&self) {
        self.prefixes.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}
