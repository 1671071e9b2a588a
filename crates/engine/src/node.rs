//! What the receive and transmit paths share: the engine's identity on the link (its
//! configuration), its neighbours, its counters, and the loss impairment.

use timer::Duration;

use crate::config::EngineConfig;
use crate::counters::Counters;
use crate::neighbour_cache::{ArpCache, NdCache, SharedNeighbours};
use std::sync::Arc;
use timer::Instant;
use wire::{IpAddr, MacAddr};

/// The engine's state besides its port and rings (split from them so both can be borrowed
/// at once).
pub(crate) struct Node {
    pub(crate) cfg: EngineConfig,
    pub(crate) counters: Counters,
    pub(crate) arp: ArpCache,
    pub(crate) nd: NdCache,
    /// What the server's other engines learned of their neighbours.
    pub(crate) shared: Option<Arc<SharedNeighbours>>,
    ip_ident: u16,
    rng: u64,
    /// The secret of this engine's IPv6 flow labels.
    flow_key: u64,
}

impl Node {
    pub(crate) fn new(cfg: EngineConfig) -> Node {
        Node {
            cfg,
            counters: Counters::default(),
            arp: ArpCache::new(1024, Duration::from_secs(60), Duration::from_secs(1)),
            nd: NdCache::new(1024, Duration::from_secs(60), Duration::from_secs(1)),
            shared: None,
            ip_ident: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
            flow_key: random_key(),
        }
    }

    /// The flow label of the IPv6 flow to `dst` from `src_port` to `dst_port` (RFC 6437 §3:
    /// the same for every packet of a flow, different across flows, and not predictable
    /// from outside without the engine's secret).
    #[inline]
    pub(crate) fn flow_label(&self, dst: &[u8; 16], src_port: u16, dst_port: u16) -> u32 {
        let mut h = self.flow_key ^ (u64::from(src_port) << 16 | u64::from(dst_port));
        for c in dst.chunks_exact(8) {
            h = (h ^ u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
            h ^= h >> 29;
        }
        (h >> 44) as u32 | 1 // never zero: zero says "no label"
    }

    /// Records that `ip` is at `mac`, learned from a reply to a request (ours or another
    /// engine's) or from a request for our address: in this engine's cache and the shared one.
    pub(crate) fn learned(&mut self, ip: IpAddr, mac: MacAddr, now: Instant) {
        match ip {
            IpAddr::V4(a) => self.arp.insert(a, mac, now),
            IpAddr::V6(a) => self.nd.insert(a, mac, now),
        }
        if let Some(s) = &self.shared {
            s.learned(ip, mac, now);
        }
    }

    /// What another engine learned of `ip`, taken into this engine's cache.
    pub(crate) fn learned_elsewhere(&mut self, ip: IpAddr, now: Instant) -> Option<MacAddr> {
        let m = self.shared.as_ref()?.known(ip, now)?;
        match ip {
            IpAddr::V4(a) => self.arp.insert(a, m, now),
            IpAddr::V6(a) => self.nd.insert(a, m, now),
        }
        Some(m)
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

/// 64 random bits, from the standard library's per-process hash keys (the one source of
/// randomness it offers; drawn once per engine).
fn random_key() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x5eed);
    h.finish()
}
