//! `sirocco gen udp`: an open-loop UDP generator running as an engine application.
//!
//! Each datagram carries a send timestamp, a sequence number and a magic word; replies are
//! matched by the magic and their round-trip time recorded. Open loop: the send schedule
//! depends only on the clock, never on replies, so a slow server shows up as loss and latency
//! instead of a slower offered load.

pub mod http;
pub mod kv;
mod timed;

use engine::{Datagram, Duration, Instant, Originate, SendError, Service, Verdict};
pub use timer::histogram::Histogram;
use wire::IpAddr;

/// Bytes of the header each generated payload carries.
pub const PAYLOAD_HEADER: usize = 20;
const MAGIC: [u8; 4] = *b"SRCG";
/// Most datagrams queued in one loop iteration.
const BURST: usize = 64;
/// Sends owed beyond this many are given up (counted as `behind`) instead of bursting.
const MAX_BACKLOG: u64 = 4096;

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// Destination address (IPv4 or IPv6; the engine needs an address of the same family).
    pub dst: IpAddr,
    /// Destination port.
    pub dst_port: u16,
    /// Datagrams per second for this engine; 0 means as fast as the ring takes them.
    pub rate: u64,
    /// UDP payload bytes (at least [`PAYLOAD_HEADER`]).
    pub size: usize,
    /// Number of flows (source ports `src_port_base..src_port_base + flows`).
    pub flows: u16,
    /// First source port.
    pub src_port_base: u16,
    /// How long to send.
    pub duration: Duration,
}

/// The generator of one engine and what it measured.
pub struct UdpGen {
    cfg: GenConfig,
    start: Option<Instant>,
    /// Datagrams queued for sending.
    pub sent: u64,
    /// Sends the schedule wanted but the generator could not make in time.
    pub behind: u64,
    /// Replies matched.
    pub received: u64,
    /// Datagrams to our ports that were not well-formed replies.
    pub foreign: u64,
    /// Round-trip times of matched replies (ns).
    pub rtt: Histogram,
    /// When the first datagram was sent, on the engine clock.
    pub first_send: Instant,
    /// When the last was.
    pub last_send: Instant,
    /// Times a send waited for address resolution.
    pub unresolved: u64,
    seq: u64,
    done: bool,
}

impl UdpGen {
    /// A generator for `cfg`; `cfg.size` is raised to [`PAYLOAD_HEADER`] if smaller.
    pub fn new(mut cfg: GenConfig) -> Self {
        cfg.size = cfg.size.max(PAYLOAD_HEADER);
        cfg.flows = cfg.flows.max(1);
        UdpGen {
            cfg,
            start: None,
            sent: 0,
            behind: 0,
            received: 0,
            foreign: 0,
            rtt: Histogram::default(),
            first_send: Instant::ZERO,
            last_send: Instant::ZERO,
            unresolved: 0,
            seq: 0,
            done: false,
        }
    }

    /// The source ports replies come back to.
    pub fn ports(&self) -> std::ops::Range<u16> {
        self.cfg.src_port_base..self.cfg.src_port_base.saturating_add(self.cfg.flows)
    }

    /// True once the sending period is over.
    pub fn finished(&self) -> bool {
        self.done
    }
}

impl Service for UdpGen {
    fn udp_ports(&self) -> Vec<u16> {
        self.ports().collect()
    }

    fn udp(&mut self, now: Instant, d: Datagram<'_>) -> Verdict {
        let p = &d.buf[..d.len];
        if d.len != self.cfg.size || p[16..20] != MAGIC || d.src != self.cfg.dst || d.src_port != self.cfg.dst_port {
            self.foreign += 1;
            return Verdict::Consume;
        }
        // The send time the request carries, as nanoseconds on this engine's clock.
        let sent = Instant::from_nanos(u64::from_le_bytes(p[0..8].try_into().unwrap()));
        self.rtt.record(now.since(sent).as_nanos());
        self.received += 1;
        Verdict::Consume
    }

    fn produce(&mut self, now: Instant, out: &mut dyn Originate) -> usize {
        if self.done {
            return 0;
        }
        let start = *self.start.get_or_insert(now);
        let elapsed = now.since(start);
        if elapsed >= self.cfg.duration {
            self.done = true;
            return 0;
        }
        let owed = if self.cfg.rate == 0 {
            BURST as u64
        } else {
            let due = (u128::from(elapsed.as_nanos()) * u128::from(self.cfg.rate) / 1_000_000_000) as u64;
            let mut owed = due.saturating_sub(self.sent + self.behind);
            if owed > MAX_BACKLOG {
                self.behind += owed - MAX_BACKLOG;
                owed = MAX_BACKLOG;
            }
            owed
        };
        // Send in small bursts rather than one datagram per loop: each burst costs one TX kick
        // (a system call in copy mode). A burst is at most 100 µs of the schedule, so the
        // offered load stays smooth at any rate.
        let min_burst = (self.cfg.rate / 10_000).clamp(1, 16);
        if owed < min_burst {
            return 0;
        }
        let n = (owed as usize).min(BURST).min(out.room());
        let mut made = 0;
        let size = self.cfg.size;
        for _ in 0..n {
            let seq = self.seq;
            let src_port = self.cfg.src_port_base + (seq % u64::from(self.cfg.flows)) as u16;
            let mut fill = |b: &mut [u8]| {
                b[0..8].copy_from_slice(&now.as_nanos().to_le_bytes());
                b[8..16].copy_from_slice(&seq.to_le_bytes());
                b[16..20].copy_from_slice(&MAGIC);
                b[20..size].fill(0x5a);
                size
            };
            match out.udp(self.cfg.dst, self.cfg.dst_port, src_port, &mut fill) {
                Ok(()) => {
                    self.seq += 1;
                    made += 1;
                }
                Err(SendError::Unresolved) => {
                    self.unresolved += 1;
                    break;
                }
                Err(SendError::Full) | Err(SendError::TooLong) | Err(SendError::NoAddress) => break,
            }
        }
        if made > 0 {
            if self.sent == 0 {
                self.first_send = now;
            }
            self.last_send = now;
            self.sent += made as u64;
        }
        made
    }

    fn busy(&self) -> bool {
        !self.done
    }
}
