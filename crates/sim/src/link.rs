//! One-way links with seeded impairments, and the packets in flight on them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use timer::{Duration, Instant};

use crate::rng::Rng;

/// One direction of a path.
#[derive(Debug, Clone, Copy)]
pub struct Link {
    /// Propagation delay.
    pub delay: Duration,
    /// Probability that a packet is lost.
    pub loss: f64,
    /// Probability that a packet arrives twice.
    pub dup: f64,
    /// Probability that a packet is held back by up to `jitter` (reordering).
    pub reorder: f64,
    /// Most extra delay of a reordered or duplicated packet.
    pub jitter: Duration,
    /// Probability that one bit of a packet flips.
    pub corrupt: f64,
    /// Bits per second; 0 is unlimited.
    pub bandwidth: u64,
    /// Packets queued beyond this much time are tail-dropped.
    pub queue_limit: Duration,
    /// IP MTU: larger packets do not pass ([`Fate::TooBig`]).
    pub mtu: u16,
    /// Everything is lost (a link that died).
    pub down: bool,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            delay: Duration::from_millis(5),
            loss: 0.0,
            dup: 0.0,
            reorder: 0.0,
            jitter: Duration::ZERO,
            corrupt: 0.0,
            bandwidth: 0,
            queue_limit: Duration::from_millis(200),
            mtu: 1500,
            down: false,
        }
    }
}

/// Counts of what the links did.
#[derive(Debug, Default, Clone, Copy)]
pub struct NetStats {
    /// Packets put on a link.
    pub sent: u64,
    /// Lost (or sent on a link that is down).
    pub lost: u64,
    /// Delivered twice.
    pub dups: u64,
    /// Held back.
    pub reordered: u64,
    /// A bit flipped.
    pub corrupted: u64,
    /// Refused by the receiving host for a bad checksum or header (counted by the host side).
    pub bad_checksum: u64,
    /// Larger than the link's MTU.
    pub too_big: u64,
    /// Dropped at a full queue.
    pub queue_drops: u64,
}

/// What became of a packet put on a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// On its way (perhaps twice, perhaps corrupted).
    Scheduled,
    /// Lost.
    Lost,
    /// Larger than the MTU: the sender may be told (ICMP), after the link's delay.
    TooBig,
    /// Tail-dropped at the link's queue.
    QueueFull,
}

/// Links between every pair of hosts, and the events in flight in time order: packets, or
/// whatever else a simulation schedules (`E`).
pub struct Net<E> {
    /// `links[from][to]`.
    pub links: Vec<Vec<Link>>,
    busy: Vec<Vec<Instant>>,
    events: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    store: Vec<Option<E>>,
    free: Vec<usize>,
    n: u64,
    /// Draws every impairment.
    pub rng: Rng,
    /// What the links did.
    pub stats: NetStats,
}

impl<E> Net<E> {
    /// Links with default settings between `hosts` hosts.
    pub fn new(hosts: usize, rng: Rng) -> Net<E> {
        Net {
            links: vec![vec![Link::default(); hosts]; hosts],
            busy: vec![vec![Instant::ZERO; hosts]; hosts],
            events: BinaryHeap::new(),
            store: Vec::new(),
            free: Vec::new(),
            n: 0,
            rng,
            stats: NetStats::default(),
        }
    }

    /// Adds a host, joined to every other by default links; returns its index.
    pub fn add_host(&mut self) -> usize {
        let n = self.links.len() + 1;
        for (row, busy) in self.links.iter_mut().zip(&mut self.busy) {
            row.push(Link::default());
            busy.push(Instant::ZERO);
        }
        self.links.push(vec![Link::default(); n]);
        self.busy.push(vec![Instant::ZERO; n]);
        n - 1
    }

    /// Changes every link.
    pub fn set_all(&mut self, mut f: impl FnMut(&mut Link)) {
        self.links.iter_mut().flatten().for_each(&mut f);
    }

    /// Makes every link `l`.
    pub fn set_links(&mut self, l: Link) {
        self.set_all(|x| *x = l);
    }

    /// Schedules `e` for `at`.
    pub fn schedule(&mut self, at: Instant, e: E) {
        let i = match self.free.pop() {
            Some(i) => {
                self.store[i] = Some(e);
                i
            }
            None => {
                self.store.push(Some(e));
                self.store.len() - 1
            }
        };
        self.n += 1;
        self.events.push(Reverse((at, self.n, i)));
    }

    /// Puts `bytes`, carrying an IP packet of `ip_len` bytes, on the link `from` → `to` at
    /// `now`. Each copy that will arrive is scheduled as `arrive(bytes)`.
    pub fn transmit(
        &mut self,
        now: Instant,
        from: usize,
        to: usize,
        ip_len: usize,
        mut bytes: Vec<u8>,
        arrive: impl Fn(Vec<u8>) -> E,
    ) -> Fate {
        self.stats.sent += 1;
        let l = self.links[from][to];
        if l.down || self.rng.chance(l.loss) {
            self.stats.lost += 1;
            return Fate::Lost;
        }
        if ip_len > usize::from(l.mtu) {
            self.stats.too_big += 1;
            return Fate::TooBig;
        }
        let mut at = now;
        if let Some(us) = (ip_len as u64 * 8 * 1_000_000).checked_div(l.bandwidth) {
            let start = self.busy[from][to].max(now);
            if start.since(now) > l.queue_limit {
                self.stats.queue_drops += 1;
                return Fate::QueueFull;
            }
            let done = start + Duration::from_micros(us);
            self.busy[from][to] = done;
            at = done;
        }
        at += l.delay;
        if self.rng.chance(l.reorder) {
            self.stats.reordered += 1;
            at += Duration::from_micros(self.rng.range(1, l.jitter.as_micros().max(1)));
        }
        if self.rng.chance(l.corrupt) {
            self.stats.corrupted += 1;
            let bit = self.rng.range(0, bytes.len() as u64 * 8 - 1);
            bytes[(bit / 8) as usize] ^= 1 << (bit % 8);
        }
        if self.rng.chance(l.dup) {
            self.stats.dups += 1;
            let extra = Duration::from_micros(self.rng.range(0, l.jitter.as_micros().max(1)));
            self.schedule(at + extra, arrive(bytes.clone()));
        }
        self.schedule(at, arrive(bytes));
        Fate::Scheduled
    }

    /// When the next event is due.
    pub fn next_at(&self) -> Option<Instant> {
        self.events.peek().map(|Reverse((at, _, _))| *at)
    }

    /// The next event due by `now`, if any.
    pub fn pop_due(&mut self, now: Instant) -> Option<E> {
        let &Reverse((at, _, i)) = self.events.peek()?;
        if at > now {
            return None;
        }
        self.events.pop();
        self.free.push(i);
        self.store[i].take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_link_delivers_in_order_after_its_delay() {
        let mut net: Net<Vec<u8>> = Net::new(2, Rng::new(1));
        let t0 = Instant::from_millis(1);
        for i in 0..3u8 {
            assert_eq!(net.transmit(t0, 0, 1, 100, vec![i], |b| b), Fate::Scheduled);
        }
        assert_eq!(net.pop_due(t0), None, "in flight");
        assert_eq!(net.next_at(), Some(t0 + Duration::from_millis(5)));
        let later = t0 + Duration::from_millis(5);
        let got: Vec<_> = std::iter::from_fn(|| net.pop_due(later)).collect();
        assert_eq!(got, [vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn bandwidth_queues_and_the_queue_limit_drops() {
        let mut net: Net<()> = Net::new(2, Rng::new(1));
        // 1 Mbit/s: 1250 bytes take 10 ms; the queue holds 200 ms, about 20 packets.
        net.set_links(Link { bandwidth: 1_000_000, delay: Duration::ZERO, ..Link::default() });
        let fates: Vec<_> = (0..30).map(|_| net.transmit(Instant::ZERO, 0, 1, 1250, vec![0], |_| ())).collect();
        let queued = fates.iter().filter(|f| **f == Fate::Scheduled).count();
        assert_eq!(queued, 21);
        assert_eq!(net.stats.queue_drops, 9);
        assert_eq!(net.next_at(), Some(Instant::from_millis(10)));
    }

    #[test]
    fn too_big_and_down_links() {
        let mut net: Net<()> = Net::new(2, Rng::new(1));
        assert_eq!(net.transmit(Instant::ZERO, 0, 1, 1501, vec![0], |_| ()), Fate::TooBig);
        net.set_all(|l| l.down = true);
        assert_eq!(net.transmit(Instant::ZERO, 0, 1, 100, vec![0], |_| ()), Fate::Lost);
        assert_eq!(net.next_at(), None);
    }

    #[test]
    fn hosts_can_be_added() {
        let mut net: Net<()> = Net::new(0, Rng::new(1));
        assert_eq!((net.add_host(), net.add_host(), net.add_host()), (0, 1, 2));
        assert_eq!(net.transmit(Instant::ZERO, 2, 0, 100, vec![0], |_| ()), Fate::Scheduled);
    }
}
