//! DNS over TCP (RFC 7766, 1035 §4.2.2): two-byte length-prefixed messages on sirocco's TCP,
//! several per connection, pipelined queries answered in the order they arrive, each from
//! the same prepared responses as over UDP, without the UDP size limit.

use engine::{Datagram, Duration, Instant, Originate, Service, TcpService, Verdict};
use tcp::{Config, Limits};
use wire::tcp::TcpRepr;
use wire::IpAddr;

use crate::secondary::{Outcome, Refresher, XfrIn};
use crate::server::DnsServer;
use crate::transfer::Transfer;
use dns::{tsig, HEADER_LEN};
use std::sync::Arc;

/// Answers a connection may have waiting for the peer to read before it is cut off (a client
/// that pipelines without reading).
pub const MAX_PENDING: usize = 1 << 20;
/// Bytes a query arriving in pieces may take while it is incomplete (the largest message).
const MAX_QUERY: usize = 2 + 65_535;
/// A transfer's messages queued ahead of what the peer has acknowledged.
const TRANSFER_WINDOW: usize = 256 * 1024;

/// The end of the question if `m` is a transfer query (AXFR, or IXFR: answered from the
/// zone's journal, else with the whole zone as RFC 1995 section 4 allows) for a name written
/// out in full, as every transfer client writes it.
fn axfr_question(m: &[u8]) -> Option<usize> {
    if m.len() < HEADER_LEN + 5 || m[2] & 0xf8 != 0 || m[4..6] != [0, 1] {
        return None;
    }
    let len = dns::name::Name::scan(m, HEADER_LEN).ok()??;
    let q_end = HEADER_LEN + len + 4;
    let qtype = u16::from_be_bytes([*m.get(q_end - 4)?, *m.get(q_end - 3)?]);
    (m.len() >= q_end && (qtype == dns::rtype::AXFR || qtype == dns::rtype::IXFR)).then_some(q_end)
}

/// The client's serial in an IXFR query `m` (its question ending at `q_end`): the SOA in
/// its authority section (RFC 1995 section 3).
fn ixfr_serial(m: &[u8], q_end: usize) -> Option<u32> {
    let qtype = u16::from_be_bytes([m[q_end - 4], m[q_end - 3]]);
    if qtype != dns::rtype::IXFR || m.get(8..10)? != [0, 1] {
        return None;
    }
    let (_, at) = dns::name::Name::read(m, q_end).ok()?;
    let t = u16::from_be_bytes([*m.get(at)?, *m.get(at + 1)?]);
    let rdlen = usize::from(u16::from_be_bytes([*m.get(at + 8)?, *m.get(at + 9)?]));
    let end = at + 10 + rdlen;
    if t != dns::rtype::SOA || rdlen < 22 || end > m.len() {
        return None;
    }
    Some(u32::from_be_bytes(m.get(end - 20..end - 16)?.try_into().ok()?))
}

/// How often secondary zones are looked at.
const REFRESH: Duration = Duration::from_millis(250);

/// The limits of the TCP side.
#[derive(Debug, Clone, Copy)]
pub struct TcpSettings {
    /// A connection with nothing to answer and nothing arriving for this long is closed; one
    /// whose answers the peer does not take for this long is reset. Told to clients that ask
    /// with edns-tcp-keepalive (RFC 7828).
    pub idle_timeout: Duration,
    /// Connections open at once (per engine); past it new ones are reset when their
    /// handshake completes.
    pub max_clients: usize,
}

impl Default for TcpSettings {
    /// Knot's defaults: 10 s idle, and a limit well under the endpoint's table.
    fn default() -> Self {
        TcpSettings { idle_timeout: Duration::from_secs(10), max_clients: 10_000 }
    }
}

/// What the TCP side counted.
#[derive(Debug, Default, Clone, Copy)]
pub struct TcpStats {
    /// Connections accepted.
    pub accepted: u64,
    /// Connections refused: `max_clients` were open.
    pub refused: u64,
    /// Connections that ended.
    pub closed: u64,
    /// Queries answered over TCP.
    pub answered: u64,
    /// Connections closed after their idle timeout.
    pub idle_closed: u64,
    /// Connections cut off: a message shorter than a DNS header, answers left unread.
    pub cut: u64,
    /// Zone transfers (AXFR) sent whole.
    pub transfers: u64,
    /// Transfers refused: not from an allowed address, or not a zone served.
    pub transfers_refused: u64,
    /// IXFR answered incrementally (from the journal, or the SOA alone for a client up to date).
    pub incremental: u64,
}

impl TcpStats {
    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &TcpStats) {
        self.accepted += o.accepted;
        self.refused += o.refused;
        self.closed += o.closed;
        self.answered += o.answered;
        self.idle_closed += o.idle_closed;
        self.cut += o.cut;
        self.transfers += o.transfers;
        self.transfers_refused += o.transfers_refused;
        self.incremental += o.incremental;
    }
}

/// The DNS application on TCP connections: the UDP server's answers, framed.
pub struct DnsTcp {
    /// The server (shared with the UDP side).
    pub server: DnsServer,
    settings: TcpSettings,
    /// The idle timeout in the units of edns-tcp-keepalive (100 ms).
    keepalive: u16,
    /// Where a query is answered in place.
    scratch: Vec<u8>,
    /// Where a transfer's message is written and signed.
    message: Vec<u8>,
    /// The time of the segment or loop iteration being handled.
    now: Instant,
    /// Connections closed for idleness whose peer has not closed yet: they no longer count
    /// against `max_clients`.
    closing: u64,
    /// Counters.
    pub stats: TcpStats,
    /// Checks of secondary zones that ended, for the refresher.
    pub outcomes: Vec<(usize, Outcome)>,
}

/// One connection: its incomplete input and its answers not yet acknowledged.
#[derive(Debug)]
pub struct DnsConn {
    input: Vec<u8>,
    out: tcp::ByteQueue,
    /// When the connection is closed (idle) or reset (answers not taken) unless something
    /// happens first.
    deadline: Instant,
    /// Closed for idleness already: the next expiry resets it.
    closing: bool,
    /// The peer's address (who may transfer a zone).
    remote: IpAddr,
    /// A zone transfer being sent; queries behind it wait.
    sending: Option<Sending>,
    /// A connection of ours to a primary (sirocco as a secondary), not a client's.
    primary: bool,
    /// The check it runs, until it ends.
    xfr: Option<Box<XfrIn>>,
}

/// A transfer in progress: the zone's layout (kept alive across a reload: the transfer
/// finishes with the version it started with), the next message, the query answered.
#[derive(Debug)]
struct Sending {
    transfer: Arc<Transfer>,
    next: usize,
    id: u16,
    question: Vec<u8>,
    /// Signing every message (the query was signed): the key and the MAC to chain on.
    signing: Option<Signing>,
}

/// A signed request's key and MAC: its answer, or each message of its transfer, is signed
/// over the MAC before it (RFC 8945 section 5.3.1).
#[derive(Debug)]
struct Signing {
    key: tsig::Key,
    mac: tsig::Mac,
}

/// What a transfer query's signature says.
enum Signer {
    /// Not signed.
    None,
    /// Signed, verified (boxed: a key is large; once per transfer).
    Valid(Box<Signing>),
    /// Signed, not verified: answered by the server with the TSIG error.
    Failed,
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

tcp::source_from_queue!(DnsConn, out);

impl DnsTcp {
    /// Answers over TCP with `server`, within `settings`.
    pub fn new(server: DnsServer, settings: TcpSettings) -> DnsTcp {
        let keepalive = (settings.idle_timeout.as_millis() / 100).min(u64::from(u16::MAX)) as u16;
        DnsTcp {
            server,
            settings,
            keepalive,
            scratch: vec![0; 65_535],
            message: Vec::new(),
            now: Instant::default(),
            closing: 0,
            stats: TcpStats::default(),
            outcomes: Vec::new(),
        }
    }

    /// Connections open now and not being closed by the server.
    pub fn open(&self) -> u64 {
        self.stats.accepted - self.stats.closed - self.closing
    }

    /// A new connection's state, its idle timeout starting now.
    pub fn conn(&self) -> DnsConn {
        self.conn_from(IpAddr::V4(wire::Ipv4Addr([0; 4])))
    }

    /// A new connection from `remote`.
    pub fn conn_from(&self, remote: IpAddr) -> DnsConn {
        DnsConn {
            input: Vec::new(),
            out: tcp::ByteQueue::default(),
            deadline: self.now + self.settings.idle_timeout,
            closing: false,
            remote,
            sending: None,
            primary: false,
            xfr: None,
        }
    }

    /// The state of a connection of ours to a primary, running `x`.
    pub fn conn_to_primary(&self, x: XfrIn, remote: IpAddr) -> DnsConn {
        DnsConn { primary: true, xfr: Some(Box::new(x)), ..self.conn_from(remote) }
    }

    /// Checks the signature of the transfer query `scratch[..n]`, if it has one.
    fn signer(&self, n: usize) -> Signer {
        let m = &self.scratch[..n];
        let Some(at) = tsig::find(m) else { return Signer::None };
        match tsig::verify(self.server.catalog().keys(), m, at, crate::wall::unix_now()) {
            tsig::Check::Valid { key, mac } => Signer::Valid(Box::new(Signing { key: key.clone(), mac })),
            _ => Signer::Failed,
        }
    }

    /// Starts the transfer the AXFR query in `scratch` (its question ending at `q_end`) asks
    /// for, or answers it with an error: NOTAUTH for a zone not served here, REFUSED for a
    /// client not allowed (or not signing with the zone's key).
    fn start_transfer(&mut self, c: &mut DnsConn, q_end: usize, len: usize, signing: Option<Signing>) {
        let name = &self.scratch[HEADER_LEN..q_end - 4];
        let zone = self.server.catalog().zones().iter().find(|z| z.origin.as_wire().eq_ignore_ascii_case(name));
        let signer = signing.as_ref().map(|s| s.key.name());
        let rcode = match zone.map(|z| (z, z.transfer_for(c.remote, signer))) {
            Some((z, Some(t))) => {
                // IXFR: what changed since the client's serial, when the journal has it.
                let ixfr = ixfr_serial(&self.scratch[..len], q_end).and_then(|s| z.ixfr_from(s));
                let t = match ixfr {
                    Some(i) => {
                        self.stats.incremental += 1;
                        Arc::new(i)
                    }
                    None => t.clone(),
                };
                let id = u16::from_be_bytes([self.scratch[0], self.scratch[1]]);
                let question = self.scratch[HEADER_LEN..q_end].to_vec();
                c.sending = Some(Sending { transfer: t, next: 0, id, question, signing });
                self.pump(c);
                return;
            }
            Some((_, None)) => dns::rcode::REFUSED,
            None => dns::rcode::NOTAUTH,
        };
        self.stats.transfers_refused += 1;
        let m = &mut self.scratch[..q_end];
        // QR, the query's opcode and RD, the rcode; the question echoed, nothing else.
        m[2] = 0x80 | (m[2] & 0x79);
        m[3] = rcode;
        m[4..12].copy_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
        self.message.clear();
        self.message.extend_from_slice(m);
        if let Some(mut s) = signing {
            self.sign(&mut s, true);
        }
        c.out.extend(&(self.message.len() as u16).to_be_bytes());
        c.out.extend(&self.message);
    }

    /// Signs the message in `message` with `s`'s key over its MAC, which becomes this one's.
    fn sign(&mut self, s: &mut Signing, first: bool) {
        let len = self.message.len();
        self.message.resize(len + s.key.record_len(0), 0);
        let chain = if first { tsig::Chain::Answer(s.mac.as_bytes()) } else { tsig::Chain::Next(s.mac.as_bytes()) };
        let now = crate::wall::unix_now();
        let (end, mac) = tsig::sign(&s.key, &mut self.message, len, chain, now, 0, &[]).expect("room was made for it");
        self.message.truncate(end);
        s.mac = mac;
    }

    /// Queues the transfer's next messages while the connection has room for them.
    fn pump(&mut self, c: &mut DnsConn) {
        while let Some(mut s) = c.sending.take() {
            if c.out.len() >= TRANSFER_WINDOW {
                c.sending = Some(s);
                return;
            }
            s.transfer.write(s.next, s.id, &s.question, &mut self.message);
            if let Some(sg) = s.signing.as_mut() {
                self.sign(sg, s.next == 0);
            }
            c.out.extend(&(self.message.len() as u16).to_be_bytes());
            c.out.extend(&self.message);
            s.next += 1;
            if s.next == s.transfer.messages() {
                self.stats.transfers += 1;
            } else {
                c.sending = Some(s);
            }
        }
    }

    /// Takes `data` received on `c` and answers every message it completes; false if the
    /// connection must end (a message shorter than a DNS header, or too much unread).
    pub fn feed(&mut self, c: &mut DnsConn, data: &[u8]) -> bool {
        c.deadline = self.now + self.settings.idle_timeout;
        c.input.extend_from_slice(data);
        self.serve(c)
    }

    /// What `c`'s idle timeout asks for now: None, close (true: nothing left to say) or
    /// reset (false: the peer stopped taking answers, or ignored our close).
    pub fn expire(&mut self, c: &mut DnsConn) -> Option<bool> {
        if self.now < c.deadline {
            return None;
        }
        if c.primary {
            // A primary that stopped sending: the check fails when the reset is done.
            return Some(false);
        }
        if c.out.is_empty() && c.input.is_empty() && !c.closing {
            self.stats.idle_closed += 1;
            self.closing += 1;
            c.closing = true;
            c.deadline = self.now + self.settings.idle_timeout;
            return Some(true);
        }
        self.stats.cut += 1;
        Some(false)
    }

    /// Data from a primary on our connection `c`.
    fn primary_data(&mut self, c: &mut DnsConn, data: &[u8], ctl: &mut tcp::Ctl) {
        c.deadline = self.now + self.settings.idle_timeout;
        let Some(x) = c.xfr.as_mut() else { return };
        self.message.clear();
        let outcome = x.feed(data, crate::wall::unix_now(), &mut self.message);
        c.out.extend(&self.message);
        if let Some(o) = outcome {
            self.outcomes.push((x.zone, o));
            c.xfr = None;
            ctl.close();
        }
    }

    fn serve(&mut self, c: &mut DnsConn) -> bool {
        let mut at = 0;
        while c.input.len() - at >= 2 && c.sending.is_none() {
            let n = usize::from(u16::from_be_bytes([c.input[at], c.input[at + 1]]));
            if n < 12 {
                return false; // not a DNS message: nothing to answer it with
            }
            if c.input.len() - at - 2 < n {
                break;
            }
            self.scratch[..n].copy_from_slice(&c.input[at + 2..at + 2 + n]);
            at += 2 + n;
            if let Some(q_end) = axfr_question(&self.scratch[..n]) {
                match self.signer(n) {
                    Signer::None => self.start_transfer(c, q_end, n, None),
                    Signer::Valid(s) => self.start_transfer(c, q_end, n, Some(*s)),
                    // The server's answer to the query carries the TSIG error.
                    Signer::Failed => self.answer(c, n),
                }
                continue;
            }
            self.answer(c, n);
        }
        c.input.drain(..at);
        c.out.len() <= MAX_PENDING && c.input.len() <= MAX_QUERY
    }

    /// Answers the query `scratch[..n]` on `c`.
    fn answer(&mut self, c: &mut DnsConn, n: usize) {
        if let Some(len) = self.server.respond_tcp(&mut self.scratch, n, self.keepalive, c.remote) {
            c.out.extend(&(len as u16).to_be_bytes());
            c.out.extend(&self.scratch[..len]);
            self.stats.answered += 1;
        }
    }
}

impl tcp::App for DnsTcp {
    type Conn = DnsConn;

    fn accept(&mut self, _h: tcp::Handle, _port: u16, remote: (IpAddr, u16)) -> Option<DnsConn> {
        if self.open() >= self.settings.max_clients as u64 {
            self.stats.refused += 1;
            return None;
        }
        self.stats.accepted += 1;
        Some(self.conn_from(remote.0))
    }

    fn opened(&mut self, _h: tcp::Handle, c: &mut DnsConn, ctl: &mut tcp::Ctl) {
        ctl.wake_at(c.deadline);
    }

    fn connected(&mut self, _h: tcp::Handle, c: &mut DnsConn, ctl: &mut tcp::Ctl) {
        if let Some(x) = c.xfr.as_mut() {
            self.message.clear();
            x.start(crate::wall::unix_now(), &mut self.message);
            c.out.extend(&self.message);
            c.deadline = self.now + self.settings.idle_timeout;
        }
        ctl.wake_at(c.deadline);
    }

    /// The idle timeout may have come: close an idle connection, reset one whose peer
    /// stopped reading. Deadlines only move later, so each connection asks again for its
    /// own when woken early: nothing sweeps the connections.
    fn woken(&mut self, _h: tcp::Handle, c: &mut DnsConn, ctl: &mut tcp::Ctl) {
        match self.expire(c) {
            None => {}
            Some(true) => ctl.close(),
            Some(false) => return ctl.abort(),
        }
        ctl.wake_at(c.deadline);
    }

    fn recv(&mut self, _h: tcp::Handle, c: &mut DnsConn, data: &[u8], ctl: &mut tcp::Ctl) {
        ctl.recv_done(data.len() as u32);
        if c.primary {
            self.primary_data(c, data, ctl);
            return;
        }
        if !self.feed(c, data) {
            self.stats.cut += 1;
            ctl.abort();
        }
    }

    fn sent(&mut self, _h: tcp::Handle, c: &mut DnsConn, _acked: u64, ctl: &mut tcp::Ctl) {
        // The peer is reading: a long answer taken slowly is not idle.
        if !c.closing {
            c.deadline = self.now + self.settings.idle_timeout;
        }
        if c.sending.is_some() {
            self.pump(c);
            // Queries that came behind the transfer are answered once it is all queued.
            if c.sending.is_none() && !self.serve(c) {
                self.stats.cut += 1;
                ctl.abort();
            }
        }
    }

    fn closed(&mut self, _h: tcp::Handle, c: DnsConn, end: tcp::End) {
        if c.primary {
            if let Some(x) = c.xfr {
                let why = match end {
                    tcp::End::Closed => "was closed",
                    tcp::End::Reset => "was reset",
                    tcp::End::Refused => "was refused",
                    tcp::End::TimedOut => "timed out",
                    tcp::End::Aborted => "was cut off (nothing for the idle timeout)",
                };
                self.outcomes.push((x.zone, x.cut_off(why)));
            }
            return;
        }
        if c.closing {
            self.closing -= 1;
        }
        self.stats.closed += 1;
    }
}

/// The DNS server of one engine: UDP and TCP on one port.
pub struct DnsService {
    /// The TCP endpoint and, in its application, the server.
    pub tcp: TcpService<DnsTcp>,
    port: u16,
    last_refresh: Instant,
    /// Checks of secondary zones (engine 0's service only).
    pub refresher: Option<Refresher>,
    /// Our addresses, to connect to primaries from.
    locals: Vec<IpAddr>,
    /// The ephemeral ports our connections to primaries start from.
    client_ports: (u16, u16),
    /// Another engine's connections to primaries may send their replies here.
    relays_transfers: bool,
    /// The NIC's RSS, when known: connections to primaries take source ports whose replies
    /// reach this engine's queue (0) directly.
    rss: Option<tcp::rss::Rss>,
}

impl DnsService {
    /// Serves `server` on `port` over UDP and TCP.
    pub fn new(server: DnsServer, port: u16, settings: TcpSettings, limits: Limits) -> DnsService {
        let app = DnsTcp::new(server, settings);
        DnsService {
            tcp: TcpService::new(app, &[port], Config::default(), limits),
            port,
            last_refresh: Instant::default(),
            refresher: None,
            locals: Vec::new(),
            client_ports: limits.ephemeral,
            relays_transfers: false,
            rss: None,
        }
    }

    /// Connections to primaries choose source ports by the NIC's RSS `rss`, so that their
    /// replies come to this engine (queue 0) rather than round the other engines.
    pub fn with_rss(mut self, rss: Option<tcp::rss::Rss>) -> DnsService {
        self.rss = rss;
        self
    }

    /// Takes the primaries' replies to engine 0's connections that the NIC puts on this
    /// engine's queue, and hands them round the engines' ring ([`engine::strays`]) to engine 0
    /// instead of answering them with a reset as segments of no connection.
    pub fn relaying_transfers(mut self) -> DnsService {
        self.relays_transfers = true;
        self
    }

    /// Keeps the secondary zones of `r` current, connecting to their primaries from one of
    /// `locals` (of the primary's family).
    pub fn with_refresher(mut self, r: Refresher, locals: Vec<IpAddr>) -> DnsService {
        self.refresher = Some(r);
        self.locals = locals;
        self
    }

    /// Starts the checks of secondary zones that are due, and takes those that ended.
    fn refresh(&mut self, now: Instant) {
        let Some(r) = self.refresher.as_mut() else { return };
        for (zone, o) in self.tcp.app.outcomes.drain(..) {
            r.finished(now, zone, o);
        }
        r.expire(now);
        while let Some(job) = r.due(now) {
            let x = r.start(job);
            let (addr, port) = job.primary;
            let Some(local) =
                self.locals.iter().copied().find(|l| matches!(l, IpAddr::V4(_)) == matches!(addr, IpAddr::V4(_)))
            else {
                r.finished(now, job.zone, Outcome::Failed(format!("no address of ours to reach {addr} from")));
                continue;
            };
            let conn = self.tcp.app.conn_to_primary(x, addr);
            self.tcp.app.now = now;
            // A zone transfer in is bulk data: the window grows with the path to the primary.
            let cfg = Config { rcv_buf_max: Some(tcp::BULK_RCV_BUF_MAX), ..Config::default() };
            let rss = self.rss.as_ref();
            let ours = |p: u16| rss.is_none_or(|r| r.queue(addr, local, port, p) == 0);
            if let Err((e, _)) = self.tcp.ep.connect(now, local, addr, port, cfg, conn, ours) {
                r.finished(now, job.zone, Outcome::Failed(format!("connecting to {addr}@{port}: {e:?}")));
            }
        }
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
        let mut ports = self.tcp.tcp_ports();
        if self.refresher.is_some() || self.relays_transfers {
            // Where the primaries answer our connections.
            ports.extend(self.client_ports.0..=self.client_ports.1);
        }
        ports
    }

    fn tcp(&mut self, now: Instant, src: IpAddr, dst: IpAddr, seg: &TcpRepr, payload: &[u8], view: u32) {
        self.tcp.app.now = now;
        self.tcp.tcp(now, src, dst, seg, payload, view);
    }

    engine::pass_to_tcp_service!(tcp);

    fn produce(&mut self, now: Instant, out: &mut dyn Originate) -> usize {
        self.tcp.app.now = now;
        if now >= self.last_refresh + REFRESH {
            self.last_refresh = now;
            // Secondary zones are looked at four times a second, not every iteration: a
            // NOTIFY waits at most that long, and thousands of zones cost nothing per packet.
            self.refresh(now);
        }
        self.tcp.app.server.produce(now, out) + self.tcp.produce(now, out)
    }

    fn busy(&self) -> bool {
        self.tcp.busy()
    }

    fn idle_wait(&self) -> Duration {
        self.tcp.idle_wait()
    }

    fn connections(&self, out: &mut Vec<engine::metrics::ConnInfo>) {
        self.tcp.connections(out);
    }

    fn metrics(&self, out: &mut engine::Samples) {
        self.server().metrics(out);
        self.tcp.metrics(out);
        let t = &self.tcp.app.stats;
        let conns = "sirocco_dns_tcp_connections_total";
        let help = "DNS-over-TCP connections, by what became of them.";
        for (what, v) in [
            ("accepted", t.accepted),
            ("refused", t.refused),
            ("closed", t.closed),
            ("idle_closed", t.idle_closed),
            ("cut_off", t.cut),
        ] {
            out.counter_with(conns, help, ("event", what), v);
        }
        out.counter("sirocco_dns_tcp_answers_total", "Queries answered over TCP.", t.answered);
        out.counter("sirocco_dns_transfers_total", "Zone transfers sent whole (AXFR, IXFR).", t.transfers);
        out.counter(
            "sirocco_dns_transfers_refused_total",
            "Zone transfers refused or not authoritative.",
            t.transfers_refused,
        );
        let help = "IXFR answered with the changes since the client's serial (or its SOA alone).";
        out.counter("sirocco_dns_ixfr_incremental_total", help, t.incremental);
        if let Some(r) = &self.refresher {
            let st = r.stats;
            let help = "Secondary zone checks, by outcome.";
            for (what, v) in [
                ("checked", st.checks),
                ("up_to_date", st.up_to_date),
                ("transferred", st.transferred),
                ("incremental", st.incremental),
                ("failed", st.failed),
                ("expired", st.expired),
            ] {
                out.counter_with("sirocco_dns_secondary_events_total", help, ("event", what), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn app(idle_secs: u64) -> DnsTcp {
        let zone = "$ORIGIN t.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.0.1\n";
        let z = crate::zone::load_text(std::path::Path::new("t.zone"), zone.as_bytes(), None).unwrap();
        let server = DnsServer::new(Arc::new(crate::Catalog::new(vec![crate::CompiledZone::compile(&z)])), 53);
        DnsTcp::new(server, TcpSettings { idle_timeout: Duration::from_secs(idle_secs), max_clients: 2 })
    }

    /// `ns.t. A` with an OPT record holding `options`, framed.
    fn query(options: &[u8]) -> Vec<u8> {
        let mut m = vec![0, 0, 0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2, b'n', b's', 1, b't', 0, 0, 1, 0, 1];
        m.extend([0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0]);
        m.extend((options.len() as u16).to_be_bytes());
        m.extend_from_slice(options);
        let n = (m.len() - 2) as u16;
        m[..2].copy_from_slice(&n.to_be_bytes());
        m
    }

    fn answer(t: &mut DnsTcp, q: &[u8]) -> Vec<u8> {
        let mut c = t.conn();
        assert!(t.feed(&mut c, q));
        c.pending().copied().skip(2).collect()
    }

    #[test]
    fn the_keepalive_option_is_answered_with_the_idle_timeout() {
        let mut t = app(10);
        let with = answer(&mut t, &query(&[0, 11, 0, 0]));
        assert_eq!(u16::from_be_bytes([with[6], with[7]]), 1, "the answer");
        assert_eq!(&with[with.len() - 8..], &[0, 6, 0, 11, 0, 2, 0, 100], "OPT rdlen 6: keepalive, 100 × 100 ms");
        let without = answer(&mut t, &query(&[]));
        assert_eq!(without.len(), with.len() - 6);
        assert_eq!(&without[without.len() - 2..], &[0, 0], "no option asked, none given");
    }

    #[test]
    fn idle_connections_are_closed_then_reset_and_unread_answers_reset() {
        let mut t = app(10);
        t.now = Instant::from_millis(100_000);
        let mut idle = t.conn();
        let mut busy = t.conn();
        assert!(t.feed(&mut busy, &query(&[])));
        t.now = Instant::from_millis(109_000);
        assert_eq!((t.expire(&mut idle), t.expire(&mut busy)), (None, None));
        t.now = Instant::from_millis(110_000);
        assert_eq!(t.expire(&mut idle), Some(true), "nothing pending: closed");
        assert_eq!(t.expire(&mut idle), None, "once");
        assert_eq!(t.expire(&mut busy), Some(false), "an answer not taken for 10 s: reset");
        t.now = Instant::from_millis(120_000);
        assert_eq!(t.expire(&mut idle), Some(false), "the close was not completed: reset");
        assert_eq!((t.stats.idle_closed, t.stats.cut), (1, 2));
    }

    #[test]
    fn past_max_clients_connections_are_refused() {
        use tcp::App as _;
        let mut t = app(10);
        let h = tcp::Handle::from_bits(0);
        let peer = (IpAddr::V4(wire::Ipv4Addr([198, 18, 0, 2])), 4000);
        let a = t.accept(h, 53, peer).expect("first");
        let _b = t.accept(h, 53, peer).expect("second");
        assert!(t.accept(h, 53, peer).is_none(), "a third past max_clients 2");
        t.closed(h, a, tcp::End::Closed);
        let mut c = t.accept(h, 53, peer).expect("room again");
        t.now += Duration::from_secs(10);
        assert_eq!(t.expire(&mut c), Some(true));
        assert_eq!(t.open(), 1, "one closed for idleness no longer counts");
        assert!(t.accept(h, 53, peer).is_some(), "room while it finishes closing");
        t.closed(h, c, tcp::End::Closed);
        assert_eq!((t.stats.accepted, t.stats.refused, t.open()), (4, 1, 2));
    }
}
