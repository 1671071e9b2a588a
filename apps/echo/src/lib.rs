//! Echo servers. UDP: every datagram to the port goes back to its sender unchanged, answered
//! in the receive buffer (the engine swaps addresses and ports; no checksum is recomputed).
//! TCP: every byte goes back on its connection; plus a TCP discard (sink) and a TCP source
//! for bulk tests.

mod channel;
pub mod report;

pub use channel::ChannelEcho;
use engine::{Datagram, Service, Verdict};

/// The echo application for one engine.
#[derive(Debug, Clone)]
pub struct UdpEcho {
    port: u16,
    /// Datagrams echoed.
    pub echoed: u64,
}

impl UdpEcho {
    /// Echo on `port`.
    pub fn new(port: u16) -> Self {
        UdpEcho { port, echoed: 0 }
    }
}

impl Service for UdpEcho {
    fn udp_ports(&self) -> Vec<u16> {
        vec![self.port]
    }

    #[inline]
    fn udp(&mut self, _now: engine::Instant, _d: Datagram<'_>) -> Verdict {
        self.echoed += 1;
        Verdict::Echo
    }
}

/// TCP echo (the IX and MegaPipe echo benchmark's server): every byte received goes back on
/// the same connection. The echo's source is the bytes received and not yet acknowledged by
/// the peer; the receive window reopens only as the echoed bytes are acknowledged, so a
/// connection never holds more than its receive window.
#[derive(Debug, Default)]
pub struct TcpEcho {
    /// Bytes echoed (acknowledged by the peers).
    pub echoed: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Connections that ended.
    pub closed: u64,
}

/// One echo connection: the received bytes it sends back, and how many were acknowledged.
#[derive(Debug, Default)]
pub struct EchoConn {
    out: tcp::ByteQueue,
    done: u64,
}

tcp::source_from_queue!(EchoConn, out);

impl tcp::App for TcpEcho {
    type Conn = EchoConn;

    fn accept(&mut self, _h: tcp::Handle, _port: u16, _remote: (wire::IpAddr, u16)) -> Option<EchoConn> {
        self.accepted += 1;
        Some(EchoConn::default())
    }

    fn recv(&mut self, _h: tcp::Handle, c: &mut EchoConn, data: &[u8], _ctl: &mut tcp::Ctl) {
        c.out.extend(data);
    }

    fn sent(&mut self, _h: tcp::Handle, c: &mut EchoConn, acked: u64, ctl: &mut tcp::Ctl) {
        // What the peer acknowledged of the echo frees as much of the receive window.
        let n = acked - c.done;
        c.done = acked;
        self.echoed += n;
        ctl.recv_done(n as u32);
    }

    fn closed(&mut self, _h: tcp::Handle, _c: EchoConn, _end: tcp::End) {
        self.closed += 1;
    }
}

/// TCP discard (a sink for bulk tests): reads everything, keeps nothing, closes when the peer
/// does.
#[derive(Debug, Default)]
pub struct TcpDiscard {
    /// Bytes received.
    pub received: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Connections that ended.
    pub closed: u64,
}

/// A connection that sends nothing.
#[derive(Debug, Default)]
pub struct Nothing;

impl tcp::Source for Nothing {
    fn end(&self) -> u64 {
        0
    }
    fn fill(&self, _off: u64, _dst: &mut [u8]) {
        unreachable!("an empty source is never asked for bytes")
    }
}

impl tcp::App for TcpDiscard {
    type Conn = Nothing;

    fn accept(&mut self, _h: tcp::Handle, _port: u16, _remote: (wire::IpAddr, u16)) -> Option<Nothing> {
        self.accepted += 1;
        Some(Nothing)
    }

    fn recv(&mut self, _h: tcp::Handle, _c: &mut Nothing, data: &[u8], ctl: &mut tcp::Ctl) {
        self.received += data.len() as u64;
        ctl.recv_done(data.len() as u32);
    }

    fn closed(&mut self, _h: tcp::Handle, _c: Nothing, _end: tcp::End) {
        self.closed += 1;
    }
}

/// The byte at stream offset `off` of what [`TcpSource`] sends: a pattern with a prime period
/// (251), so a client can check every byte's value and position.
pub fn source_byte(off: u64) -> u8 {
    (off % 251) as u8
}

/// TCP source (for bulk tests): every connection gets `bytes` bytes of [`source_byte`], then
/// FIN; whatever the client sends is read and dropped. Nothing is buffered: the bytes are made
/// at the offset TCP asks for, first transmission or retransmission alike.
#[derive(Debug, Default)]
pub struct TcpSource {
    /// Bytes each connection gets.
    pub bytes: u64,
    /// Bytes acknowledged by the peers.
    pub sent: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Connections that ended.
    pub closed: u64,
}

/// A source of `len` pattern bytes.
#[derive(Debug, Default)]
pub struct Pattern {
    len: u64,
    acked: u64,
}

impl tcp::Source for Pattern {
    fn end(&self) -> u64 {
        self.len
    }
    fn fill(&self, off: u64, dst: &mut [u8]) {
        for (i, d) in dst.iter_mut().enumerate() {
            *d = source_byte(off + i as u64);
        }
    }
}

impl TcpSource {
    /// Sends `bytes` on each connection.
    pub fn new(bytes: u64) -> Self {
        TcpSource { bytes, ..TcpSource::default() }
    }
}

impl tcp::App for TcpSource {
    type Conn = Pattern;

    fn accept(&mut self, _h: tcp::Handle, _port: u16, _remote: (wire::IpAddr, u16)) -> Option<Pattern> {
        self.accepted += 1;
        Some(Pattern { len: self.bytes, acked: 0 })
    }

    fn opened(&mut self, _h: tcp::Handle, _c: &mut Pattern, ctl: &mut tcp::Ctl) {
        ctl.close(); // FIN right after the last byte
    }

    fn recv(&mut self, _h: tcp::Handle, _c: &mut Pattern, data: &[u8], ctl: &mut tcp::Ctl) {
        ctl.recv_done(data.len() as u32);
    }

    fn sent(&mut self, _h: tcp::Handle, c: &mut Pattern, acked: u64, _ctl: &mut tcp::Ctl) {
        self.sent += acked - c.acked;
        c.acked = acked;
    }

    fn closed(&mut self, _h: tcp::Handle, _c: Pattern, _end: tcp::End) {
        self.closed += 1;
    }
}
