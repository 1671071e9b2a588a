//! What the receive and transmit paths share: the engine's identity on the link (its
//! configuration), its neighbours, its counters, and the loss impairment.

use timer::Duration;

use crate::config::EngineConfig;
use crate::counters::Counters;
use crate::neighbour_cache::{ArpCache, NdCache};

/// The engine's state besides its port and rings (split from them so both can be borrowed
/// at once).
pub(crate) struct Node {
    pub(crate) cfg: EngineConfig,
    pub(crate) counters: Counters,
    pub(crate) arp: ArpCache,
    pub(crate) nd: NdCache,
    ip_ident: u16,
    rng: u64,
}

impl Node {
    pub(crate) fn new(cfg: EngineConfig) -> Node {
        Node {
            cfg,
            counters: Counters::default(),
            arp: ArpCache::new(1024, Duration::from_secs(60), Duration::from_secs(1)),
            nd: NdCache::new(1024, Duration::from_secs(60), Duration::from_secs(1)),
            ip_ident: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
        }
    }

    /// The IPv4 identification of the next packet sent.
    #[inline]
    pub(crate) fn next_ident(&mut self) -> u16 {
        self.ip_ident = self.ip_ident.wrapping_add(1);
        self.ip_ident
    }

    /// True if the impairment drops this frame (xorshift: cheap, and reproducible per run).
    #[inline]
    pub(crate) fn impaired(&mut self) -> bool {
        if self.cfg.loss_ppm == 0 {
            return false;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % 1_000_000) < u64::from(self.cfg.loss_ppm)
    }
}
