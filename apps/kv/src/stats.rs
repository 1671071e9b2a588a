//! What the KV server counts, per engine, and memcached's `stats` view of it.
//!
//! Each engine writes only its own counters (a load and a store, no locked instruction: one
//! writer), on a cache line of its own; `stats` on any connection sums every engine's.

use std::sync::atomic::{AtomicU64, Ordering};

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
    get_expired,
    get_flushed,
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

/// Every engine's counters.
pub struct Board {
    engines: Box<[Counters]>,
}

impl Board {
    /// Counters for `engines` engines.
    pub fn new(engines: usize) -> Board {
        Board { engines: (0..engines.max(1)).map(|_| Counters::default()).collect() }
    }

    /// Engine `e`'s counters.
    pub fn engine(&self, e: usize) -> &Counters {
        &self.engines[e]
    }

    /// The counters summed over engines, by name.
    pub fn totals(&self) -> Vec<(&'static str, u64)> {
        let mut t: Vec<(&'static str, u64)> = self.engines[0].each().to_vec();
        for e in &self.engines[1..] {
            for (i, (_, v)) in e.each().iter().enumerate() {
                t[i].1 = t[i].1.wrapping_add(*v);
            }
        }
        t
    }

    /// The total of one counter.
    pub fn total(&self, name: &str) -> u64 {
        self.totals().iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
    }
}
