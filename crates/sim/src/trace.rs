//! A packet trace of what the engines put on the simulated links, one line per frame with
//! what the link did to it, kept only while a seed is replayed. Frames are grouped into
//! flows (a TCP connection, a UDP pair of ports), so that the trace of the connection that
//! failed can be printed alone, and each flow is summed up: frames, bytes, SYN/FIN/RST and
//! losses each way.
//!
//! The trace is per thread (a test's seeds run on its own thread) and off unless
//! [`start`] turned it on: a many-seed run pays nothing for it.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write;

use timer::Instant;
use wire::ethernet::{EtherType, EthernetFrame};
use wire::{Ipv4Addr, Ipv4Packet, TcpFlags, TcpPacket, UdpPacket};

/// Records kept at most; beyond it the oldest go (a failure is usually near the end).
const MAX_RECORDS: usize = 2_000_000;

/// One end of a flow.
pub type End = (Ipv4Addr, u16);

/// A flow: its two ends in a fixed order (lower first), and whether it is TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Flow {
    /// TCP (else UDP).
    pub tcp: bool,
    /// The lower end.
    pub a: End,
    /// The higher end.
    pub b: End,
}

impl Flow {
    /// Whether `port` is one of its ends' ports.
    pub fn has_port(&self, port: u16) -> bool {
        self.a.1 == port || self.b.1 == port
    }
}

/// One frame put on a link.
pub struct Record {
    /// Which network of the run (a seed may build several, one after another).
    pub net: u32,
    /// Its flow, if it is TCP or UDP over IPv4.
    pub flow: Option<Flow>,
    /// The line printed for it.
    pub line: String,
}

/// What one flow did, each way (`[0]`: from its lower end).
#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    /// Frames put on the links.
    pub frames: [u64; 2],
    /// Payload bytes.
    pub bytes: [u64; 2],
    /// Frames the link lost (or dropped: too big, queue full).
    pub lost: [u64; 2],
    /// SYNs sent.
    pub syn: [u64; 2],
    /// FINs sent.
    pub fin: [u64; 2],
    /// RSTs sent.
    pub rst: [u64; 2],
}

impl Summary {
    /// A TCP flow whose both ends sent a FIN and neither a RST.
    pub fn closed_cleanly(&self) -> bool {
        self.fin[0] > 0 && self.fin[1] > 0 && self.rst == [0, 0]
    }
}

/// Everything traced on a thread since [`start`].
#[derive(Default)]
pub struct Trace {
    /// The frames, oldest first.
    pub records: VecDeque<Record>,
    /// Records that went to keep the trace within [`MAX_RECORDS`].
    pub forgotten: u64,
    /// Per network and flow, what it did (counted even when its records are forgotten).
    pub flows: BTreeMap<(u32, Flow), Summary>,
    nets: u32,
}

thread_local! {
    static TRACE: RefCell<Option<Trace>> = const { RefCell::new(None) };
}

/// Starts tracing on this thread (anew if it was on).
pub fn start() {
    TRACE.with(|t| *t.borrow_mut() = Some(Trace::default()));
}

/// Stops tracing on this thread; returns what was traced.
pub fn stop() -> Option<Trace> {
    TRACE.with(|t| t.borrow_mut().take())
}

/// A number for a new network, if this thread traces.
pub(crate) fn new_net() -> Option<u32> {
    TRACE.with(|t| {
        t.borrow_mut().as_mut().map(|t| {
            t.nets += 1;
            t.nets
        })
    })
}

/// Records `frame`, sent at `at` on network `net`; `fate` is what the link did to it.
pub(crate) fn record(net: u32, at: Instant, frame: &[u8], fate: &str) {
    TRACE.with(|t| {
        let mut t = t.borrow_mut();
        let Some(t) = t.as_mut() else { return };
        let (flow, text, dir, flags, payload) = describe(frame);
        if let (Some(f), Some(d)) = (flow, dir) {
            let s = t.flows.entry((net, f)).or_default();
            s.frames[d] += 1;
            s.bytes[d] += payload as u64;
            if !fate.is_empty() && !fate.starts_with('+') {
                s.lost[d] += 1;
            }
            let flags = TcpFlags(flags);
            s.syn[d] += u64::from(flags.has(TcpFlags::SYN));
            s.fin[d] += u64::from(flags.has(TcpFlags::FIN));
            s.rst[d] += u64::from(flags.has(TcpFlags::RST));
        }
        let secs = at.since(Instant::ZERO).as_secs_f64();
        let mut line = format!("{net:>2} {secs:>12.6} {text}");
        if !fate.is_empty() {
            let _ = write!(line, " [{fate}]");
        }
        if t.records.len() == MAX_RECORDS {
            t.records.pop_front();
            t.forgotten += 1;
        }
        t.records.push_back(Record { net, flow, line });
    });
}

/// A frame's flow, its line, its direction in the flow (0: from the lower end), its TCP
/// flags and its payload length.
fn describe(frame: &[u8]) -> (Option<Flow>, String, Option<usize>, u8, usize) {
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return (None, format!("runt frame of {} bytes", frame.len()), None, 0, 0);
    };
    let p = eth.payload();
    match eth.ethertype() {
        EtherType::ARP if p.len() >= 28 => {
            let ip = |r: std::ops::Range<usize>| Ipv4Addr([p[r.start], p[r.start + 1], p[r.start + 2], p[r.start + 3]]);
            let text = match u16::from_be_bytes([p[6], p[7]]) {
                1 => format!("arp who-has {} tell {}", ip(24..28), ip(14..18)),
                2 => {
                    let mac: Vec<String> = p[8..14].iter().map(|b| format!("{b:02x}")).collect();
                    format!("arp reply {} is-at {}", ip(14..18), mac.join(":"))
                }
                op => format!("arp op {op}"),
            };
            (None, text, None, 0, 0)
        }
        EtherType::IPV4 => {
            let Ok(ip) = Ipv4Packet::new_checked(p) else {
                return (None, format!("bad IPv4 header, {} bytes", p.len()), None, 0, 0);
            };
            let (src, dst) = (ip.src_addr(), ip.dst_addr());
            let flow_of = |tcp: bool, sp: u16, dp: u16| {
                let (s, d) = ((src, sp), (dst, dp));
                if s <= d {
                    (Flow { tcp, a: s, b: d }, 0)
                } else {
                    (Flow { tcp, a: d, b: s }, 1)
                }
            };
            match ip.protocol() {
                6 => {
                    let Ok(t) = TcpPacket::new_checked(ip.payload()) else {
                        return (None, format!("{src} > {dst} bad TCP header"), None, 0, 0);
                    };
                    let (flow, dir) = flow_of(true, t.src_port(), t.dst_port());
                    let len = t.payload().len();
                    let text = format!(
                        "{src}:{} > {dst}:{} [{}] seq {} ack {} win {} len {len}",
                        t.src_port(),
                        t.dst_port(),
                        flag_letters(t.flags().0),
                        t.seq(),
                        t.ack(),
                        t.window(),
                    );
                    (Some(flow), text, Some(dir), t.flags().0, len)
                }
                17 => {
                    let Ok(u) = UdpPacket::new_checked(ip.payload()) else {
                        return (None, format!("{src} > {dst} bad UDP header"), None, 0, 0);
                    };
                    let (flow, dir) = flow_of(false, u.src_port(), u.dst_port());
                    let len = u.payload().len();
                    let text = format!("{src}:{} > {dst}:{} udp len {len}", u.src_port(), u.dst_port());
                    (Some(flow), text, Some(dir), 0, len)
                }
                proto => (None, format!("{src} > {dst} proto {proto} len {}", ip.payload().len()), None, 0, 0),
            }
        }
        other => (None, format!("ethertype {other:#06x}, {} bytes", frame.len()), None, 0, 0),
    }
}

/// TCP flags as tcpdump writes them: S F R P U E W, and `.` for ACK.
fn flag_letters(f: u8) -> String {
    let mut s = String::new();
    for (bit, c) in [
        (TcpFlags::SYN, 'S'),
        (TcpFlags::FIN, 'F'),
        (TcpFlags::RST, 'R'),
        (TcpFlags::PSH, 'P'),
        (TcpFlags::URG, 'U'),
        (TcpFlags::ECE, 'E'),
        (TcpFlags::CWR, 'W'),
        (TcpFlags::ACK, '.'),
    ] {
        if f & bit != 0 {
            s.push(c);
        }
    }
    s
}

impl Trace {
    /// The flows whose trace tells what went wrong: those with an end at one of `ports`,
    /// else (no port named) the TCP flows that did not close cleanly, else every flow.
    pub fn suspects(&self, ports: &[u16]) -> Vec<(u32, Flow)> {
        let named: Vec<_> = self.flows.keys().filter(|(_, f)| ports.iter().any(|&p| f.has_port(p))).copied().collect();
        if !ports.is_empty() {
            return named;
        }
        let unclean: Vec<_> =
            self.flows.iter().filter(|(k, s)| k.1.tcp && !s.closed_cleanly()).map(|(k, _)| *k).collect();
        if !unclean.is_empty() {
            return unclean;
        }
        self.flows.keys().copied().collect()
    }

    /// The lines of `flows`, and of every frame outside any flow (ARP: resolution is part
    /// of every connection's story).
    pub fn lines_of<'a>(&'a self, flows: &'a [(u32, Flow)]) -> impl Iterator<Item = &'a str> + 'a {
        self.records.iter().filter(move |r| r.flow.is_none_or(|f| flows.contains(&(r.net, f)))).map(|r| r.line.as_str())
    }

    /// One line per flow of `flows`: its ends, and what went each way.
    pub fn summary_lines(&self, flows: &[(u32, Flow)]) -> Vec<String> {
        self.flows
            .iter()
            .filter(|(k, _)| flows.contains(k))
            .map(|((net, f), s)| {
                let way = |d: usize| {
                    let mut w = format!("{} frames {} bytes", s.frames[d], s.bytes[d]);
                    if s.lost[d] > 0 {
                        let _ = write!(w, " {} lost", s.lost[d]);
                    }
                    for (n, what) in [(s.syn[d], "SYN"), (s.fin[d], "FIN"), (s.rst[d], "RST")] {
                        if n > 0 {
                            let _ = write!(w, " {n} {what}");
                        }
                    }
                    w
                };
                format!(
                    "{net:>2} {} {}:{} <> {}:{}: -> {}; <- {}",
                    if f.tcp { "tcp" } else { "udp" },
                    f.a.0,
                    f.a.1,
                    f.b.0,
                    f.b.1,
                    way(0),
                    way(1)
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::build::{Ipv4Frame, UdpFrame, IPV4_PAYLOAD_AT};
    use wire::MacAddr;

    const A: Ipv4Addr = Ipv4Addr([198, 18, 2, 2]);
    const B: Ipv4Addr = Ipv4Addr([198, 18, 2, 1]);

    fn tcp(src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16), flags: u8, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; IPV4_PAYLOAD_AT + 20 + len];
        let ip = Ipv4Frame { src_mac: MacAddr([2; 6]), dst_mac: MacAddr([4; 6]), src: src.0, dst: dst.0, protocol: 6 };
        ip.emit(&mut b, 20 + len, 1, 64);
        let t = &mut b[IPV4_PAYLOAD_AT..];
        t[0..2].copy_from_slice(&src.1.to_be_bytes());
        t[2..4].copy_from_slice(&dst.1.to_be_bytes());
        t[4..8].copy_from_slice(&7u32.to_be_bytes());
        t[12] = 5 << 4;
        t[13] = flags;
        t[14..16].copy_from_slice(&1000u16.to_be_bytes());
        b
    }

    #[test]
    fn flags_read_as_tcpdump_writes_them() {
        assert_eq!(flag_letters(TcpFlags::SYN | TcpFlags::ACK), "S.");
        assert_eq!(flag_letters(TcpFlags::FIN | TcpFlags::PSH | TcpFlags::ACK), "FP.");
        assert_eq!(flag_letters(0), "");
    }

    #[test]
    fn nothing_is_kept_unless_started() {
        assert!(new_net().is_none());
        record(1, Instant::ZERO, &tcp((A, 1), (B, 2), TcpFlags::SYN, 0), "");
        assert!(stop().is_none());
    }

    #[test]
    fn frames_are_grouped_into_flows_and_the_unclean_ones_are_suspects() {
        start();
        let net = new_net().expect("tracing");
        let (cli, cli2, srv) = ((A, 40000), (A, 40001), (B, 80));
        let t = Instant::from_millis(1);
        record(net, t, &tcp(cli, srv, TcpFlags::SYN, 0), "lost");
        record(net, t, &tcp(cli, srv, TcpFlags::SYN, 0), "");
        record(net, t, &tcp(srv, cli, TcpFlags::SYN | TcpFlags::ACK, 0), "");
        record(net, t, &tcp(cli, srv, TcpFlags::ACK | TcpFlags::PSH, 100), "+dup");
        record(net, t, &tcp(cli, srv, TcpFlags::FIN | TcpFlags::ACK, 0), "");
        record(net, t, &tcp(srv, cli, TcpFlags::FIN | TcpFlags::ACK, 0), "");
        record(net, t, &tcp(cli2, srv, TcpFlags::SYN, 0), "");
        let udp = UdpFrame {
            src_mac: MacAddr([2; 6]),
            dst_mac: MacAddr([4; 6]),
            src: A,
            dst: B,
            src_port: 5300,
            dst_port: 53,
        };
        record(net, t, &udp.to_vec(b"query"), "");
        let trace = stop().expect("started");
        assert!(stop().is_none(), "stopped");
        assert_eq!(trace.records.len(), 8);
        assert!(trace.records[0]
            .line
            .ends_with("198.18.2.2:40000 > 198.18.2.1:80 [S] seq 7 ack 0 win 1000 len 0 [lost]"));
        assert!(trace.records[3].line.contains("[P.]") && trace.records[3].line.ends_with("len 100 [+dup]"));
        assert!(trace.records[7].line.ends_with("198.18.2.2:5300 > 198.18.2.1:53 udp len 5"));
        assert_eq!(trace.flows.len(), 3);
        let first = trace.flows.iter().find(|(k, _)| k.1.has_port(40000)).map(|(_, s)| *s).unwrap();
        // The server is the lower end (198.18.2.1).
        assert_eq!((first.frames, first.lost, first.bytes), ([2, 4], [0, 1], [0, 100]));
        assert!(first.closed_cleanly());
        // Without a named port, the connection that never finished is the suspect.
        let suspects = trace.suspects(&[]);
        assert_eq!(suspects.len(), 1);
        assert!(suspects[0].1.has_port(40001));
        assert_eq!(trace.lines_of(&suspects).count(), 1);
        assert_eq!(trace.suspects(&[40000, 5300]).len(), 2);
        assert_eq!(trace.summary_lines(&suspects).len(), 1);
        assert!(trace.summary_lines(&suspects)[0]
            .contains("tcp 198.18.2.1:80 <> 198.18.2.2:40001: -> 0 frames 0 bytes; <- 1 frames 0 bytes 1 SYN"));
    }
}
