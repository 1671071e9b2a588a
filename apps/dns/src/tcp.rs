//! DNS over TCP (RFC 7766, 1035 §4.2.2): two-byte length-prefixed messages on sirocco's TCP,
//! several per connection, pipelined queries answered in the order they arrive, each from
//! the same prepared responses as over UDP, without the UDP size limit.

use engine::{Datagram, Duration, Instant, Originate, Service, TcpService, Verdict};
use tcp::{Config, Limits};
use wire::tcp::TcpRepr;
use wire::IpAddr;

use crate::server::DnsServer;

/// Answers a connection may have waiting for the peer to read before it is cut off (a client
/// that pipelines without reading).
pub const MAX_PENDING: usize = 1 << 20;
/// Bytes a query arriving in pieces may take while it is incomplete (the largest message).
const MAX_QUERY: usize = 2 + 65_535;

/// What the TCP side counted.
#[derive(Debug, Default, Clone, Copy)]
pub struct TcpStats {
    /// Connections accepted.
    pub accepted: u64,
    /// Connections that ended.
    pub closed: u64,
    /// Queries answered over TCP.
    pub answered: u64,
    /// Connections cut off: a message shorter than a DNS header, or answers left unread.
    pub cut: u64,
}

/// The DNS application on TCP connections: the UDP server's answers, framed.
pub struct DnsTcp {
    /// The server (shared with the UDP side).
    pub server: DnsServer,
    /// Where a query is answered in place.
    scratch: Vec<u8>,
    /// Counters.
    pub stats: TcpStats,
}

/// One connection: its incomplete input and its answers not yet acknowledged.
#[derive(Debug, Default)]
pub struct DnsConn {
    input: Vec<u8>,
    out: tcp::ByteQueue,
}

impl DnsConn {
    /// The answers waiting to be sent and acknowledged, with their length prefixes.
    pub fn pending(&self) -> impl Iterator<Item = &u8> {
        self.out.iter()
    }

    /// Bytes of an incomplete message held.
    pub fn held(&self) -> usize {
        self.input.len()
    }
}

impl tcp::Source for DnsConn {
    fn end(&self) -> u64 {
        self.out.end()
    }

    fn fill(&self, off: u64, dst: &mut [u8]) {
        self.out.fill(off, dst);
    }

    fn release(&mut self, off: u64) {
        self.out.release(off);
    }
}

impl DnsTcp {
    /// Answers over TCP with `server`.
    pub fn new(server: DnsServer) -> DnsTcp {
        DnsTcp { server, scratch: vec![0; 65_535], stats: TcpStats::default() }
    }

    /// Takes `data` received on `c` and answers every message it completes; false if the
    /// connection must end (a message shorter than a DNS header, or too much unread).
    pub fn feed(&mut self, c: &mut DnsConn, data: &[u8]) -> bool {
        c.input.extend_from_slice(data);
        self.serve(c)
    }

    fn serve(&mut self, c: &mut DnsConn) -> bool {
        let mut at = 0;
        while c.input.len() - at >= 2 {
            let n = usize::from(u16::from_be_bytes([c.input[at], c.input[at + 1]]));
            if n < 12 {
                return false; // not a DNS message: nothing to answer it with
            }
            if c.input.len() - at - 2 < n {
                break;
            }
            self.scratch[..n].copy_from_slice(&c.input[at + 2..at + 2 + n]);
            at += 2 + n;
            if let Some(len) = self.server.respond_tcp(&mut self.scratch, n) {
                c.out.extend(&(len as u16).to_be_bytes());
                c.out.extend(&self.scratch[..len]);
                self.stats.answered += 1;
            }
        }
        c.input.drain(..at);
        c.out.len() <= MAX_PENDING && c.input.len() <= MAX_QUERY
    }
}

impl tcp::App for DnsTcp {
    type Conn = DnsConn;

    fn accept(&mut self, _h: tcp::Handle, _port: u16, _remote: (IpAddr, u16)) -> Option<DnsConn> {
        self.stats.accepted += 1;
        Some(DnsConn::default())
    }

    fn recv(&mut self, _h: tcp::Handle, c: &mut DnsConn, data: &[u8], ctl: &mut tcp::Ctl) {
        ctl.recv_done(data.len() as u32);
        if !self.feed(c, data) {
            self.stats.cut += 1;
            ctl.abort();
        }
    }

    fn closed(&mut self, _h: tcp::Handle, _c: DnsConn, _end: tcp::End) {
        self.stats.closed += 1;
    }
}

/// The DNS server of one engine: UDP and TCP on one port.
pub struct DnsService {
    /// The TCP endpoint and, in its application, the server.
    pub tcp: TcpService<DnsTcp>,
    port: u16,
}

impl DnsService {
    /// Serves `server` on `port` over UDP and TCP.
    pub fn new(server: DnsServer, port: u16, limits: Limits) -> DnsService {
        DnsService { tcp: TcpService::new(DnsTcp::new(server), &[port], Config::default(), limits), port }
    }

    /// The server (its counters).
    pub fn server(&self) -> &DnsServer {
        &self.tcp.app.server
    }
}

impl Service for DnsService {
    fn udp_ports(&self) -> Vec<u16> {
        vec![self.port]
    }

    fn udp(&mut self, now: Instant, d: Datagram<'_>) -> Verdict {
        self.tcp.app.server.udp(now, d)
    }

    fn tcp_ports(&self) -> Vec<u16> {
        self.tcp.tcp_ports()
    }

    fn tcp(&mut self, now: Instant, src: IpAddr, dst: IpAddr, seg: &TcpRepr, payload: &[u8], view: u32) {
        self.tcp.tcp(now, src, dst, seg, payload, view);
    }

    fn hints(&self, frame: &[u8], each: &mut dyn FnMut(*const u8)) {
        self.tcp.hints(frame, each);
    }

    fn path_mtu(&mut self, local: IpAddr, remote: IpAddr, local_port: u16, remote_port: u16, mtu: u16) {
        self.tcp.path_mtu(local, remote, local_port, remote_port, mtu);
    }

    fn produce(&mut self, now: Instant, out: &mut dyn Originate) -> usize {
        self.tcp.app.server.produce(now, out) + self.tcp.produce(now, out)
    }

    fn busy(&self) -> bool {
        self.tcp.busy()
    }

    fn idle_wait(&self) -> Duration {
        self.tcp.idle_wait()
    }
}
