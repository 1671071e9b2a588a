//! A level-2 (channel) TCP application on an engine: the engine keeps the frames of the
//! iteration's TCP segments, the channel gathers their events, and the application handles
//! them as one batch in `produce`, with `recv` views pointing into those frames; the segments
//! its calls cause are then built straight into TX frames.

use crate::service::{Originate, Service};
use crate::tcp_service::Tx;
use tcp::channel::{Buffers, Channel, Server, Views};
use tcp::{Config, Limits};
use timer::{Duration, Instant};
use wire::tcp::TcpRepr;
use wire::IpAddr;

/// Serves a channel application (`S`) on some ports.
pub struct ChannelService<S: Server> {
    /// TCP with the channel on top.
    pub ch: Channel,
    /// The application.
    pub server: S,
    ports: Vec<u16>,
    unresolved: u64,
    /// The application's own counters for the metrics endpoint, if it has any.
    metrics: Option<fn(&S, &mut crate::Samples)>,
}

/// The held frames, as the channel's views.
struct HeldViews<'a>(&'a dyn Originate);

impl Views for HeldViews<'_> {
    fn view(&self, id: u32) -> &[u8] {
        self.0.view(id)
    }
}

/// The connection counters of a [`Streams`](tcp::channel::streams::Streams) server, for the
/// metrics endpoint.
pub fn streams_metrics<A: tcp::channel::streams::StreamServer>(
    s: &tcp::channel::streams::Streams<A>,
    out: &mut crate::Samples,
) {
    let st = &s.stats;
    let help =
        "Connections of the stream layer: opened, refused (application or limit), reset when send buffers ran out.";
    for (what, v) in [("opened", st.opened), ("refused", st.refused), ("reset_no_buffer", st.no_buffer)] {
        out.counter_with("sirocco_streams_connections_total", help, ("event", what), v);
    }
}

impl<S: Server> ChannelService<S> {
    /// Listens on each of `ports` with `cfg`; the application sends from `bufs`.
    pub fn new(server: S, ports: &[u16], cfg: Config, limits: Limits, bufs: Buffers) -> Self {
        let mut ch = Channel::new(limits, bufs, cfg, Instant::ZERO);
        for &p in ports {
            ch.listen(p, cfg);
        }
        ChannelService { ch, server, ports: ports.to_vec(), unresolved: 0, metrics: None }
    }

    /// Publishes the application's counters with `f` besides the endpoint's (the channel's
    /// `Server` knows nothing of metrics).
    pub fn with_metrics(mut self, f: fn(&S, &mut crate::Samples)) -> Self {
        self.metrics = Some(f);
        self
    }

    /// A client: no listening port; segments to the ephemeral ports of `limits` (where its
    /// connections start) come to it.
    pub fn client(server: S, cfg: Config, limits: Limits, bufs: Buffers) -> Self {
        let (lo, hi) = limits.ephemeral;
        let mut s = ChannelService::new(server, &[], cfg, limits, bufs);
        s.ports = (lo..=hi).collect();
        s
    }

    /// Segments not sent because the next hop's MAC was unknown.
    pub fn unresolved(&self) -> u64 {
        self.unresolved
    }
}

impl<S: Server> Service for ChannelService<S> {
    fn tcp_ports(&self) -> Vec<u16> {
        self.ports.clone()
    }

    fn hints(&self, frame: &[u8], each: &mut dyn FnMut(*const u8)) {
        crate::tcp_service::tcp_hints(self.ch.endpoint(), frame, each);
    }

    #[inline]
    fn tcp(&mut self, now: Instant, src: IpAddr, dst: IpAddr, seg: &TcpRepr, payload: &[u8], view: u32) {
        self.ch.input(now, src, dst, seg, payload, view);
    }

    fn path_mtu(&mut self, local: IpAddr, remote: IpAddr, local_port: u16, remote_port: u16, mtu: u16) {
        self.ch.path_mtu(local, remote, local_port, remote_port, mtu);
    }

    fn holds_tcp_frames(&self) -> bool {
        true
    }

    fn forward_strays(&mut self, on: bool) {
        self.ch.endpoint_mut().set_forward_strays(on);
    }

    fn next_deadline(&self) -> Option<Instant> {
        let ep = self.ch.endpoint();
        ep.paces().then(|| ep.next_deadline()).flatten()
    }

    fn take_stray(&mut self) -> bool {
        self.ch.endpoint_mut().take_stray()
    }

    fn produce(&mut self, now: Instant, out: &mut dyn Originate) -> usize {
        self.ch.advance(now);
        let mut sent = 0;
        // Sending can raise events (an acknowledgement noted while a connection was polled);
        // hand them over in this iteration too, a bounded number of times, rather than wait
        // for the next.
        for _ in 0..4 {
            self.ch.dispatch(&mut self.server, now, &HeldViews(&*out));
            let room = out.room();
            let mut tx = Tx { out: &mut *out, room, sent: 0, unresolved: &mut self.unresolved, gathers: false };
            self.ch.output(now, &mut tx);
            sent += tx.sent;
            if !self.ch.has_events() {
                break;
            }
        }
        sent
    }

    fn busy(&self) -> bool {
        self.ch.endpoint().has_output() || self.ch.has_events() || self.server.busy()
    }

    fn wake_fd(&self) -> Option<i32> {
        self.server.wake_fd()
    }

    fn metrics(&self, out: &mut crate::Samples) {
        if let Some(f) = self.metrics {
            f(&self.server, out);
        }
        let c = self.ch.stats();
        let help = "The channel's work: event batches and events handed up, sendv calls (trimmed to the window), bytes copied to receive, send buffers run out.";
        for (what, v) in [
            ("batches", c.batches),
            ("events", c.events),
            ("sendv", c.sendv),
            ("sendv_trimmed", c.sendv_trimmed),
            ("recv_copied_bytes", c.recv_copied),
            ("buffers_exhausted", self.ch.buffers().exhausted),
        ] {
            out.counter_with("sirocco_channel_events_total", help, ("event", what), v);
        }
        crate::tcp_service::endpoint_metrics(self.ch.endpoint(), out);
    }

    fn connections(&self, out: &mut Vec<crate::metrics::ConnInfo>) {
        crate::metrics::endpoint_connections(self.ch.endpoint(), out);
    }

    fn idle_wait(&self) -> Duration {
        if self.ch.endpoint().is_empty() {
            Duration::from_millis(100)
        } else {
            Duration::from_millis(5)
        }
    }
}
