//! Echo servers. UDP: every datagram to the port goes back to its sender unchanged, answered
//! in the receive buffer (the engine swaps addresses and ports; no checksum is recomputed).
//! TCP: every byte goes back on its connection.

use engine::{App, Datagram, Verdict};

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

impl App for UdpEcho {
    fn udp_ports(&self) -> Vec<u16> {
        vec![self.port]
    }

    #[inline]
    fn udp(&mut self, _now_ns: u64, _d: Datagram<'_>) -> Verdict {
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

/// One echo connection: received bytes from stream offset `base` on.
#[derive(Debug, Default)]
pub struct EchoConn {
    buf: std::collections::VecDeque<u8>,
    base: u64,
    done: u64,
}

impl tcp::Source for EchoConn {
    fn end(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    fn fill(&self, off: u64, dst: &mut [u8]) {
        let at = (off - self.base) as usize;
        let (a, b) = self.buf.as_slices();
        if at + dst.len() <= a.len() {
            dst.copy_from_slice(&a[at..at + dst.len()]);
        } else if at >= a.len() {
            dst.copy_from_slice(&b[at - a.len()..at - a.len() + dst.len()]);
        } else {
            let first = a.len() - at;
            let rest = dst.len() - first;
            dst[..first].copy_from_slice(&a[at..]);
            dst[first..].copy_from_slice(&b[..rest]);
        }
    }

    fn release(&mut self, off: u64) {
        let n = (off - self.base) as usize;
        self.buf.drain(..n.min(self.buf.len()));
        self.base = off;
    }
}

impl tcp::App for TcpEcho {
    type Conn = EchoConn;

    fn accept(&mut self, _h: tcp::Handle, _port: u16, _remote: (wire::Ipv4Addr, u16)) -> Option<EchoConn> {
        self.accepted += 1;
        Some(EchoConn::default())
    }

    fn recv(&mut self, _h: tcp::Handle, c: &mut EchoConn, data: &[u8], _ctl: &mut tcp::Ctl) {
        c.buf.extend(data);
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
