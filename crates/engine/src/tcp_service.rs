//! A TCP service for an engine: the sans-IO TCP endpoint, driven by the engine's loop. Segments
//! come in from the stack as views of the receive frames; output is built straight into TX
//! frames when the engine lets the application originate, so the TX ring stays the only queue.

use crate::service::{Originate, SendError, Service};
use tcp::{Config, Endpoint, Limits};
use timer::{Duration, Instant};
use wire::tcp::TcpRepr;
use wire::Ipv4Addr;

/// Serves a level-1 TCP application (`T`) on some ports.
pub struct TcpService<T: tcp::App> {
    /// The endpoint: connections, listeners, timers.
    pub ep: Endpoint<T>,
    /// The application.
    pub app: T,
    ports: Vec<u16>,
    unresolved: u64,
    lent: bool,
}

/// The engine's TX as the endpoint's [`tcp::Output`], bounded by the room the engine reported
/// at the start of the round.
pub(crate) struct Tx<'a> {
    pub(crate) out: &'a mut dyn Originate,
    pub(crate) room: usize,
    pub(crate) sent: usize,
    pub(crate) unresolved: &'a mut u64,
    /// The port lent a region, so segments may be gathered from it.
    pub(crate) gathers: bool,
}

impl tcp::Output for Tx<'_> {
    fn room(&self) -> usize {
        // A gathered segment takes several TX slots: the engine's own count says what is
        // left, or a segment TCP counts as sent would find no slot and be lost.
        self.room.min(self.out.room())
    }

    fn send(&mut self, _local: Ipv4Addr, remote: Ipv4Addr, len: usize, write: &mut dyn FnMut(&mut [u8])) {
        let r = self.out.tcp(remote, len, write);
        self.account(r);
    }

    fn replicas(&mut self) -> Option<&mut dyn tcp::PinnedFrames> {
        Some(self)
    }

    fn gather(&mut self) -> Option<&mut dyn tcp::Gather> {
        self.gathers.then_some(self)
    }
}

impl tcp::Gather for Tx<'_> {
    fn send(
        &mut self,
        _local: Ipv4Addr,
        remote: Ipv4Addr,
        header_len: usize,
        runs: &[tcp::Placed],
        fill: &mut dyn FnMut(u64, &mut [u8]),
        header: &mut dyn FnMut(&mut [u8], Option<u64>),
    ) -> bool {
        match self.out.tcp_gather(remote, header_len, runs, fill, header) {
            Err(SendError::Full) => false,
            r => {
                self.account(r);
                true
            }
        }
    }
}

impl tcp::PinnedFrames for Tx<'_> {
    fn pin(&mut self) -> Option<u64> {
        self.out.pin()
    }

    fn segment_mut(&mut self, frame: u64) -> &mut [u8] {
        self.out.pinned_segment(frame)
    }

    fn send(&mut self, remote: Ipv4Addr, frame: u64, len: usize, write: &mut dyn FnMut(&mut [u8])) {
        let r = self.out.tcp_pinned(remote, frame, len, write);
        self.account(r);
    }
}

impl Tx<'_> {
    fn account(&mut self, r: Result<(), SendError>) {
        // A failed send still uses up room, so a path that keeps failing cannot spin.
        self.room = self.room.saturating_sub(1);
        match r {
            Ok(()) => self.sent += 1,
            // Lost like a dropped packet: TCP sends it again.
            Err(SendError::Unresolved) => *self.unresolved += 1,
            Err(_) => {}
        }
    }
}

impl<T: tcp::App> TcpService<T> {
    /// Listens on each of `ports` with `cfg`.
    pub fn new(app: T, ports: &[u16], cfg: Config, limits: Limits) -> Self {
        let mut ep = Endpoint::new(limits, Instant::ZERO);
        for &p in ports {
            ep.listen(p, cfg);
        }
        TcpService { ep, app, ports: ports.to_vec(), unresolved: 0, lent: false }
    }

    /// A client: no listening port; segments to the ephemeral ports of `limits` (where the
    /// connections it opens with `ep.connect` start) come to it.
    pub fn client(app: T, limits: Limits) -> Self {
        let (lo, hi) = limits.ephemeral;
        TcpService {
            ep: Endpoint::new(limits, Instant::ZERO),
            app,
            ports: (lo..=hi).collect(),
            unresolved: 0,
            lent: false,
        }
    }

    /// Segments not sent because the next hop's MAC was unknown.
    pub fn unresolved(&self) -> u64 {
        self.unresolved
    }
}

impl<T: tcp::App> Service for TcpService<T> {
    fn tcp_ports(&self) -> Vec<u16> {
        self.ports.clone()
    }

    #[inline]
    fn tcp(&mut self, now: Instant, src: Ipv4Addr, dst: Ipv4Addr, seg: &TcpRepr, payload: &[u8], _view: u32) {
        self.ep.input(&mut self.app, now, src, dst, seg, payload);
    }

    fn produce(&mut self, now: Instant, out: &mut dyn Originate) -> usize {
        self.ep.advance(&mut self.app, now);
        let room = out.room();
        let mut tx = Tx { out, room, sent: 0, unresolved: &mut self.unresolved, gathers: self.lent };
        self.ep.output(&mut self.app, now, &mut tx);
        tx.sent
    }

    fn busy(&self) -> bool {
        self.ep.has_output()
    }

    fn lend(&mut self, _region: io::ArenaRegion) {
        self.lent = true;
    }

    fn idle_wait(&self) -> Duration {
        // Connections have timers (delayed ACKs, retransmissions) finer than the default.
        if self.ep.is_empty() {
            Duration::from_millis(100)
        } else {
            Duration::from_millis(5)
        }
    }
}
