//! UDP echo: every datagram to the port goes back to its sender unchanged, answered in the
//! receive buffer (the engine swaps addresses and ports; no checksum is recomputed).

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
