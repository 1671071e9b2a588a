//! A bounded neighbour cache for addresses sirocco sends to first (when it owns its address
//! alone): ARP's for IPv4, neighbour discovery's for IPv6 (RFC 4861), one code for both.

use timer::{Duration, Instant};
use wire::{Ipv4Addr, Ipv6Addr, MacAddr};

/// An address a neighbour cache is keyed by.
pub trait NeighbourAddr: Copy + Eq {
    /// A well-mixed 32-bit hash of the address, for the slot it lives near.
    fn mix(&self) -> u32;
}

impl NeighbourAddr for Ipv4Addr {
    fn mix(&self) -> u32 {
        self.to_u32().wrapping_mul(0x9e37_79b1) >> 8
    }
}

impl NeighbourAddr for Ipv6Addr {
    fn mix(&self) -> u32 {
        // The interface identifier's low bits differ between neighbours on one link.
        let a = &self.0;
        let low = u32::from_be_bytes([a[12], a[13], a[14], a[15]]) ^ u32::from_be_bytes([a[8], a[9], a[10], a[11]]);
        low.wrapping_mul(0x9e37_79b1) >> 8
    }
}

/// What the cache knows of a neighbour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Resolved.
    Known(MacAddr),
    /// A request is out; wait.
    Pending,
    /// Nothing known: the caller should send a request (and call [`NeighbourCache::mark_pending`]).
    Unknown,
}

#[derive(Clone, Copy)]
struct Entry<A> {
    ip: A,
    mac: Option<MacAddr>,
    /// When the entry goes stale (resolved) or the request may be repeated.
    expires: Instant,
}

/// Fixed-size, direct-mapped-with-probing table; when full, the oldest entry in the probe
/// window is replaced.
pub struct NeighbourCache<A> {
    slots: Vec<Option<Entry<A>>>,
    ttl: Duration,
    retry: Duration,
}

const PROBE: usize = 4;

/// IPv4's neighbour cache (ARP).
pub type ArpCache = NeighbourCache<Ipv4Addr>;
/// IPv6's neighbour cache (neighbour discovery).
pub type NdCache = NeighbourCache<Ipv6Addr>;

impl<A: NeighbourAddr> NeighbourCache<A> {
    /// A cache of `capacity` entries (power of two) keeping resolutions for `ttl` and
    /// repeating an unanswered request after `retry`.
    pub fn new(capacity: usize, ttl: Duration, retry: Duration) -> Self {
        NeighbourCache { slots: vec![None; capacity.next_power_of_two().max(PROBE)], ttl, retry }
    }

    fn home(&self, ip: A) -> usize {
        ip.mix() as usize & (self.slots.len() - 1)
    }

    fn find(&self, ip: A) -> Option<usize> {
        let h = self.home(ip);
        (0..PROBE).map(|i| (h + i) & (self.slots.len() - 1)).find(|&s| self.slots[s].is_some_and(|e| e.ip == ip))
    }

    fn place(&mut self, ip: A) -> usize {
        if let Some(s) = self.find(ip) {
            return s;
        }
        let h = self.home(ip);
        let window = (0..PROBE).map(|i| (h + i) & (self.slots.len() - 1));
        window.clone().find(|&s| self.slots[s].is_none()).unwrap_or_else(|| {
            window.min_by_key(|&s| self.slots[s].map_or(Instant::ZERO, |e| e.expires)).expect("window not empty")
        })
    }

    /// What is known of `ip` at `now`.
    pub fn lookup(&self, ip: A, now: Instant) -> Lookup {
        match self.find(ip).and_then(|s| self.slots[s]) {
            Some(Entry { mac: Some(m), expires, .. }) if now < expires => Lookup::Known(m),
            Some(Entry { mac: None, expires, .. }) if now < expires => Lookup::Pending,
            _ => Lookup::Unknown,
        }
    }

    /// Records that a request for `ip` was sent at `now`.
    pub fn mark_pending(&mut self, ip: A, now: Instant) {
        let s = self.place(ip);
        self.slots[s] = Some(Entry { ip, mac: None, expires: now + self.retry });
    }

    /// Records a resolution (from a reply, or a request's sender fields).
    pub fn insert(&mut self, ip: A, mac: MacAddr, now: Instant) {
        let s = self.place(ip);
        self.slots[s] = Some(Entry { ip, mac: Some(mac), expires: now + self.ttl });
    }

    /// Records a resolution only into a free or expired slot, never pushing out another
    /// entry (for hints a sender can forge, such as a SYN's source MAC).
    pub fn insert_if_room(&mut self, ip: A, mac: MacAddr, now: Instant) {
        if self.find(ip).is_some() {
            return self.insert(ip, mac, now);
        }
        let h = self.home(ip);
        let free = (0..PROBE)
            .map(|i| (h + i) & (self.slots.len() - 1))
            .find(|&s| self.slots[s].is_none_or(|e| now >= e.expires));
        if let Some(s) = free {
            self.slots[s] = Some(Entry { ip, mac: Some(mac), expires: now + self.ttl });
        }
    }

    /// Refreshes `ip` only if it is already cached (RFC 826's merge rule for requests not
    /// addressed to us would add it; we only update, to keep the table ours).
    pub fn update_if_present(&mut self, ip: A, mac: MacAddr, now: Instant) {
        if let Some(s) = self.find(ip) {
            self.slots[s] = Some(Entry { ip, mac: Some(mac), expires: now + self.ttl });
        }
    }
}

/// The resolutions the engines of one server learn, shared: an ARP reply or neighbour
/// advertisement reaches whichever engine's queue the NIC (or the veth sender) puts it on,
/// often not the one that asked (engine 0 opening a connection to a primary, sending a
/// NOTIFY). Each engine looks here only when its own cache does not know the neighbour, and
/// writes here only when it learns one: never per packet.
pub struct SharedNeighbours {
    arp: std::sync::Mutex<ArpCache>,
    nd: std::sync::Mutex<NdCache>,
}

impl SharedNeighbours {
    /// An empty table for the engines of one server.
    pub fn new() -> std::sync::Arc<SharedNeighbours> {
        let (ttl, retry) = (Duration::from_secs(60), Duration::from_secs(1));
        std::sync::Arc::new(SharedNeighbours {
            arp: std::sync::Mutex::new(ArpCache::new(1024, ttl, retry)),
            nd: std::sync::Mutex::new(NdCache::new(1024, ttl, retry)),
        })
    }

    /// Records a resolution an engine learned.
    pub fn learned(&self, ip: wire::IpAddr, mac: MacAddr, now: Instant) {
        match ip {
            wire::IpAddr::V4(a) => self.arp.lock().unwrap_or_else(|p| p.into_inner()).insert(a, mac, now),
            wire::IpAddr::V6(a) => self.nd.lock().unwrap_or_else(|p| p.into_inner()).insert(a, mac, now),
        }
    }

    /// What some engine learned of `ip`, if still fresh at `now`.
    pub fn known(&self, ip: wire::IpAddr, now: Instant) -> Option<MacAddr> {
        let l = match ip {
            wire::IpAddr::V4(a) => self.arp.lock().unwrap_or_else(|p| p.into_inner()).lookup(a, now),
            wire::IpAddr::V6(a) => self.nd.lock().unwrap_or_else(|p| p.into_inner()).lookup(a, now),
        };
        match l {
            Lookup::Known(m) => Some(m),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Instant = Instant::from_millis;

    fn cache(capacity: usize) -> ArpCache {
        ArpCache::new(capacity, Duration::from_secs(1), Duration::from_millis(100))
    }

    #[test]
    fn what_one_engine_learns_the_others_find() {
        let shared = SharedNeighbours::new();
        let now = Instant::from_millis(1000);
        let (ip, mac) = (wire::IpAddr::V4(Ipv4Addr([198, 18, 0, 2])), MacAddr([2, 0, 0, 0, 0, 2]));
        assert_eq!(shared.known(ip, now), None);
        shared.learned(ip, mac, now);
        assert_eq!(shared.known(ip, now + Duration::from_secs(59)), Some(mac));
        assert_eq!(shared.known(ip, now + Duration::from_secs(61)), None, "stale after the TTL");
        let v6 = wire::IpAddr::V6(Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]));
        assert_eq!(shared.known(v6, now), None, "families apart");
    }

    #[test]
    fn hints_never_push_out_entries() {
        let mut c = cache(4);
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let real = Ipv4Addr([198, 18, 0, 1]);
        c.insert(real, mac, MS(0));
        for i in 0..200u8 {
            c.insert_if_room(Ipv4Addr([198, 19, i, 7]), MacAddr([2, 0, 0, 0, 1, i]), MS(1));
        }
        assert_eq!(c.lookup(real, MS(2)), Lookup::Known(mac));
    }

    #[test]
    fn lifecycle() {
        let mut c = cache(8);
        let ip = Ipv4Addr([198, 18, 0, 1]);
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        assert_eq!(c.lookup(ip, MS(0)), Lookup::Unknown);
        c.mark_pending(ip, MS(0));
        assert_eq!(c.lookup(ip, MS(50)), Lookup::Pending);
        assert_eq!(c.lookup(ip, MS(100)), Lookup::Unknown, "retry after the retry interval");
        c.insert(ip, mac, MS(100));
        assert_eq!(c.lookup(ip, MS(500)), Lookup::Known(mac));
        assert_eq!(c.lookup(ip, MS(1100)), Lookup::Unknown, "expired");
    }

    #[test]
    fn bounded_when_full() {
        let mut c = cache(4);
        for i in 0..100u8 {
            c.insert(Ipv4Addr([198, 18, 1, i]), MacAddr([2, 0, 0, 0, 0, i]), MS(u64::from(i)));
        }
        assert_eq!(c.slots.len(), 4);
        assert_eq!(c.lookup(Ipv4Addr([198, 18, 1, 99]), MS(100)), Lookup::Known(MacAddr([2, 0, 0, 0, 0, 99])));
    }
}
