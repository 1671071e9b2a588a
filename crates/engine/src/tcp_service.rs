//! A TCP service for an engine: the sans-IO TCP endpoint, driven by the engine's loop. Segments
//! come in from the stack as views of the receive frames; output is built straight into TX
//! frames when the engine lets the application originate, so the TX ring stays the only queue.

use crate::service::{Originate, SendError, Service};
use tcp::{Config, Endpoint, Limits};
use timer::{Duration, Instant};
use wire::tcp::TcpRepr;
use wire::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Serves a level-1 TCP application (`T`) on some ports.
pub struct TcpService<T: tcp::App> {
    /// The endpoint: connections, listeners, timers.
    pub ep: Endpoint<T>,
    /// The application.
    pub app: T,
    ports: Vec<u16>,
    unresolved: u64,
    lent: bool,
    metrics: Option<fn(&T, &mut crate::Samples)>,
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

    fn send(&mut self, _local: IpAddr, remote: IpAddr, len: usize, write: &mut dyn FnMut(&mut [u8])) {
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
        _local: IpAddr,
        remote: IpAddr,
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

    fn segment_mut(&mut self, frame: u64, v6: bool) -> &mut [u8] {
        self.out.pinned_segment(frame, v6)
    }

    fn send(&mut self, remote: IpAddr, frame: u64, len: usize, write: &mut dyn FnMut(&mut [u8])) {
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
        TcpService { ep, app, ports: ports.to_vec(), unresolved: 0, lent: false, metrics: None }
    }

    /// Publishes the application's counters with `f` besides the endpoint's.
    pub fn with_metrics(mut self, f: fn(&T, &mut crate::Samples)) -> Self {
        self.metrics = Some(f);
        self
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
            metrics: None,
        }
    }

    /// Segments not sent because the next hop's MAC was unknown.
    pub fn unresolved(&self) -> u64 {
        self.unresolved
    }
}

/// The table slots a received frame's TCP segment will be looked up in (a TCP frame without
/// VLAN tag, over IPv4 or over IPv6 without extension headers; anything else has none), for
/// [`Service::hints`].
pub fn tcp_hints<A: tcp::App>(ep: &Endpoint<A>, frame: &[u8], each: &mut dyn FnMut(*const u8)) {
    const ETH: usize = 14;
    let (src, dst, l4) = match frame.get(12..14) {
        Some([0x08, 0x00]) if frame.len() >= ETH + 40 && frame[ETH + 9] == 6 => {
            let ip = |at: usize| IpAddr::V4(Ipv4Addr::from_bytes(&frame[at..]));
            (ip(ETH + 12), ip(ETH + 16), ETH + usize::from(frame[ETH] & 0x0f) * 4)
        }
        Some([0x86, 0xdd]) if frame.len() >= ETH + 60 && frame[ETH + 6] == 6 => {
            let ip = |at: usize| IpAddr::V6(Ipv6Addr::from_bytes(&frame[at..]));
            (ip(ETH + 8), ip(ETH + 24), ETH + 40)
        }
        _ => return,
    };
    let Some(ports) = frame.get(l4..l4 + 4) else { return };
    let (src_port, dst_port) = (u16::from_be_bytes([ports[0], ports[1]]), u16::from_be_bytes([ports[2], ports[3]]));
    for p in ep.lookup_hints(dst, src, dst_port, src_port) {
        each(p);
    }
}

/// Inside `impl Service for` a server that wraps a [`TcpService`] in its field `$tcp`: the
/// methods that only the TCP service has work for (prefetch hints, strays between engines,
/// timers, path MTU), passed to it, so no wrapper forgets one.
#[macro_export]
macro_rules! pass_to_tcp_service {
    ($tcp:ident) => {
        fn hints(&self, frame: &[u8], each: &mut dyn FnMut(*const u8)) {
            self.$tcp.hints(frame, each);
        }

        fn forward_strays(&mut self, on: bool) {
            self.$tcp.forward_strays(on);
        }

        fn next_deadline(&self) -> Option<$crate::Instant> {
            self.$tcp.next_deadline()
        }

        fn take_stray(&mut self) -> bool {
            self.$tcp.take_stray()
        }

        fn path_mtu(&mut self, local: wire::IpAddr, remote: wire::IpAddr, local_port: u16, remote_port: u16, mtu: u16) {
            self.$tcp.path_mtu(local, remote, local_port, remote_port, mtu);
        }
    };
}

/// The TCP endpoint's counters and its connections now, for the metrics endpoint.
pub fn endpoint_metrics<A: tcp::App>(ep: &Endpoint<A>, out: &mut crate::Samples) {
    for (name, help, v) in ep.stats().metrics() {
        out.counter(name, help, v);
    }
    out.gauge("sirocco_tcp_connections", "TCP connections in the table (every state but TIME-WAIT).", ep.len() as u64);
    out.gauge("sirocco_tcp_time_wait", "TCP connections in TIME-WAIT.", ep.time_wait() as u64);
    // Each table's fill against its size: what fills first when the state grows.
    let l = ep.limits();
    out.gauge("sirocco_tcp_connections_max", "Connections the table holds at most (--max-conns).", l.max_conns as u64);
    out.gauge("sirocco_tcp_time_wait_max", "TIME-WAIT entries kept at most.", l.max_time_wait as u64);
    out.gauge(
        "sirocco_tcp_reassembly_buffers",
        "Out-of-order reassembly buffers lent to connections.",
        ep.ooo_in_use() as u64,
    );
    out.gauge("sirocco_tcp_reassembly_buffers_max", "Out-of-order reassembly buffers in all.", l.ooo_buffers as u64);
}

impl<T: tcp::App> Service for TcpService<T> {
    fn tcp_ports(&self) -> Vec<u16> {
        self.ports.clone()
    }

    fn hints(&self, frame: &[u8], each: &mut dyn FnMut(*const u8)) {
        tcp_hints(&self.ep, frame, each);
    }

    fn path_mtu(&mut self, local: IpAddr, remote: IpAddr, local_port: u16, remote_port: u16, mtu: u16) {
        self.ep.path_mtu(local, remote, local_port, remote_port, mtu);
    }

    #[inline]
    fn tcp(&mut self, now: Instant, src: IpAddr, dst: IpAddr, seg: &TcpRepr, payload: &[u8], _view: u32) {
        self.ep.input(&mut self.app, now, src, dst, seg, payload);
    }

    fn forward_strays(&mut self, on: bool) {
        self.ep.set_forward_strays(on);
    }

    fn take_stray(&mut self) -> bool {
        self.ep.take_stray()
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

    fn metrics(&self, out: &mut crate::Samples) {
        if let Some(f) = self.metrics {
            f(&self.app, out);
        }
        endpoint_metrics(&self.ep, out);
    }

    fn connections(&self, out: &mut Vec<crate::metrics::ConnInfo>) {
        crate::metrics::endpoint_connections(&self.ep, out);
    }

    fn next_deadline(&self) -> Option<Instant> {
        // The scan is paid only where a connection paces; the others' timers are well served
        // by the idle wait's few milliseconds, as before.
        self.ep.paces().then(|| self.ep.next_deadline()).flatten()
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

#[cfg(test)]
mod tests {
    use super::*;
    use tcp::{Ctl, End, Handle, Source};
    use wire::build::{Ipv4Frame, IPV4_PAYLOAD_AT};
    use wire::tcp::{TcpFlags, TcpOptions};
    use wire::MacAddr;

    struct Nothing;
    impl Source for Nothing {
        fn end(&self) -> u64 {
            0
        }
        fn fill(&self, _off: u64, _dst: &mut [u8]) {}
    }
    struct Refuse;
    impl tcp::App for Refuse {
        type Conn = Nothing;
        fn accept(&mut self, _h: Handle, _port: u16, _remote: (IpAddr, u16)) -> Option<Nothing> {
            None
        }
        fn recv(&mut self, _h: Handle, _c: &mut Nothing, _data: &[u8], _ctl: &mut Ctl) {}
        fn closed(&mut self, _h: Handle, _c: Nothing, _end: End) {}
    }

    #[test]
    fn hints_name_the_slots_of_the_frames_own_lookup() {
        let svc = TcpService::new(Refuse, &[80], Config::default(), Limits::default());
        let (client, server) = (Ipv4Addr([198, 18, 0, 2]), Ipv4Addr([198, 18, 0, 10]));
        let (c, s) = (IpAddr::V4(client), IpAddr::V4(server));
        let seg = TcpRepr {
            src_port: 40_000,
            dst_port: 80,
            seq: 1,
            ack: 0,
            flags: TcpFlags(TcpFlags::SYN),
            window: 1000,
            options: TcpOptions::default(),
            payload_len: 0,
        };
        let mut frame = vec![0u8; 100];
        seg.emit(&mut frame[IPV4_PAYLOAD_AT..], client, server);
        let ip =
            Ipv4Frame { src_mac: MacAddr([2; 6]), dst_mac: MacAddr([4; 6]), src: client, dst: server, protocol: 6 };
        let len = ip.emit(&mut frame, seg.header_len(), 1, 64);
        let mut got = Vec::new();
        svc.hints(&frame[..len], &mut |p| got.push(p));
        assert_eq!(got, svc.ep.lookup_hints(s, c, 80, 40_000).to_vec(), "the server's view of the tuple");
        assert_ne!(got, svc.ep.lookup_hints(c, s, 40_000, 80).to_vec());
        // Not TCP: nothing.
        frame[IPV4_PAYLOAD_AT - 11] = 17;
        got.clear();
        svc.hints(&frame[..len], &mut |p| got.push(p));
        assert!(got.is_empty());
        // Over IPv6.
        let (c6, s6) = (
            wire::Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]),
            wire::Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10]),
        );
        let mut frame = vec![0u8; 120];
        seg.emit(&mut frame[wire::build::IPV6_PAYLOAD_AT..], c6, s6);
        let len = wire::build::ipv6_headers(
            &mut frame,
            (MacAddr([2; 6]), c6),
            (MacAddr([4; 6]), s6),
            6,
            seg.header_len(),
            64,
        );
        got.clear();
        svc.hints(&frame[..len], &mut |p| got.push(p));
        assert_eq!(got, svc.ep.lookup_hints(IpAddr::V6(s6), IpAddr::V6(c6), 80, 40_000).to_vec());
    }
}
