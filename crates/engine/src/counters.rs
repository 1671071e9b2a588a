//! Per-engine counters: the data path counts instead of logging.

use std::fmt;

/// Why the engine dropped a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum DropReason {
    /// Shorter than an Ethernet header.
    EthTruncated,
    /// Destination MAC neither ours, broadcast, nor our IPv6 address's solicited-node group.
    EthNotForUs,
    /// EtherType sirocco does not handle (LLDP, ..., or IPv6 on an engine without an IPv6
    /// address).
    EthUnknownType,
    /// ARP that is malformed or not Ethernet/IPv4.
    ArpMalformed,
    /// ARP asking for an address not ours.
    ArpNotForUs,
    /// IPv4 header cut short.
    Ipv4Truncated,
    /// IPv4 IHL or total length impossible.
    Ipv4BadLength,
    /// IPv4 header checksum wrong.
    Ipv4BadChecksum,
    /// IP version not 4.
    Ipv4BadVersion,
    /// IPv4 fragment (not reassembled).
    Ipv4Fragment,
    /// IPv4 destination not one of ours.
    Ipv4NotForUs,
    /// Protocol sirocco does not serve here.
    Ipv4UnknownProtocol,
    /// ICMP malformed or with a bad checksum.
    IcmpMalformed,
    /// ICMP other than echo request.
    IcmpIgnored,
    /// IPv6 header cut short, or a payload length beyond the frame.
    Ipv6Truncated,
    /// IPv6 version wrong, or an extension header chain refused (too long, an option that
    /// says discard, hop-by-hop not first, a routing header naming another hop).
    Ipv6Malformed,
    /// IPv6 fragment (not reassembled).
    Ipv6Fragment,
    /// IPv6 destination not ours.
    Ipv6NotForUs,
    /// Upper-layer protocol sirocco does not serve over IPv6 here.
    Ipv6UnknownProtocol,
    /// ICMPv6 malformed, with a bad checksum, or neighbour discovery failing RFC 4861's
    /// validity checks.
    Icmpv6Malformed,
    /// ICMPv6 sirocco does not answer (router discovery, errors, a solicitation for another
    /// address, ...).
    Icmpv6Ignored,
    /// UDP header or length bad.
    UdpMalformed,
    /// UDP checksum wrong.
    UdpBadChecksum,
    /// No handler on the destination port.
    UdpNoHandler,
    /// The handler chose not to answer.
    UdpHandlerDropped,
    /// No TCP service on the destination port.
    TcpNotServed,
    /// TCP header malformed (offset, options) or checksum wrong.
    TcpMalformed,
    /// UDP or TCP checksum left for a NIC to finish (the sender offloads it, and nothing on
    /// the way did): see [`CHECKSUM_HINT`].
    ChecksumUnfinished,
    /// The TX ring was full.
    TxRingFull,
    /// No free buffer to build a frame.
    NoBuffer,
    /// A frame to send was waiting for ARP and could not be queued.
    ArpUnresolved,
    /// Dropped on purpose by the loss impairment (`--impair-loss`).
    Impaired,
}

/// What to tell the user, once, when frames arrive with [`DropReason::ChecksumUnfinished`]:
/// otherwise all they see is a server that answers nobody.
pub const CHECKSUM_HINT: &str = "frames arrive with their UDP/TCP checksum unfinished: the sender leaves it to a NIC that is not there (TX checksum offload on a veth peer or a local sender); they are dropped and counted as checksum_unfinished; turn the offload off on the sending side (ethtool -K PEER tx off)";

/// Number of drop reasons.
pub const DROP_REASONS: usize = DropReason::Impaired as usize + 1;

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; DROP_REASONS] = [
        DropReason::EthTruncated,
        DropReason::EthNotForUs,
        DropReason::EthUnknownType,
        DropReason::ArpMalformed,
        DropReason::ArpNotForUs,
        DropReason::Ipv4Truncated,
        DropReason::Ipv4BadLength,
        DropReason::Ipv4BadChecksum,
        DropReason::Ipv4BadVersion,
        DropReason::Ipv4Fragment,
        DropReason::Ipv4NotForUs,
        DropReason::Ipv4UnknownProtocol,
        DropReason::IcmpMalformed,
        DropReason::IcmpIgnored,
        DropReason::Ipv6Truncated,
        DropReason::Ipv6Malformed,
        DropReason::Ipv6Fragment,
        DropReason::Ipv6NotForUs,
        DropReason::Ipv6UnknownProtocol,
        DropReason::Icmpv6Malformed,
        DropReason::Icmpv6Ignored,
        DropReason::UdpMalformed,
        DropReason::UdpBadChecksum,
        DropReason::UdpNoHandler,
        DropReason::UdpHandlerDropped,
        DropReason::TcpNotServed,
        DropReason::TcpMalformed,
        DropReason::ChecksumUnfinished,
        DropReason::TxRingFull,
        DropReason::NoBuffer,
        DropReason::ArpUnresolved,
        DropReason::Impaired,
    ];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::EthTruncated => "eth_truncated",
            DropReason::EthNotForUs => "eth_not_for_us",
            DropReason::EthUnknownType => "eth_unknown_type",
            DropReason::ArpMalformed => "arp_malformed",
            DropReason::ArpNotForUs => "arp_not_for_us",
            DropReason::Ipv4Truncated => "ipv4_truncated",
            DropReason::Ipv4BadLength => "ipv4_bad_length",
            DropReason::Ipv4BadChecksum => "ipv4_bad_checksum",
            DropReason::Ipv4BadVersion => "ipv4_bad_version",
            DropReason::Ipv4Fragment => "ipv4_fragment",
            DropReason::Ipv4NotForUs => "ipv4_not_for_us",
            DropReason::Ipv4UnknownProtocol => "ipv4_unknown_protocol",
            DropReason::IcmpMalformed => "icmp_malformed",
            DropReason::IcmpIgnored => "icmp_ignored",
            DropReason::Ipv6Truncated => "ipv6_truncated",
            DropReason::Ipv6Malformed => "ipv6_malformed",
            DropReason::Ipv6Fragment => "ipv6_fragment",
            DropReason::Ipv6NotForUs => "ipv6_not_for_us",
            DropReason::Ipv6UnknownProtocol => "ipv6_unknown_protocol",
            DropReason::Icmpv6Malformed => "icmpv6_malformed",
            DropReason::Icmpv6Ignored => "icmpv6_ignored",
            DropReason::UdpMalformed => "udp_malformed",
            DropReason::UdpBadChecksum => "udp_bad_checksum",
            DropReason::UdpNoHandler => "udp_no_handler",
            DropReason::UdpHandlerDropped => "udp_handler_dropped",
            DropReason::TcpNotServed => "tcp_not_served",
            DropReason::TcpMalformed => "tcp_malformed",
            DropReason::ChecksumUnfinished => "checksum_unfinished",
            DropReason::TxRingFull => "tx_ring_full",
            DropReason::NoBuffer => "no_buffer",
            DropReason::ArpUnresolved => "arp_unresolved",
            DropReason::Impaired => "impaired",
        }
    }
}

/// Buckets of the batch-size histogram: 1, 2–3, 4–7, 8–15, 16–31, 32–63, 64–127, 128+.
pub const BATCH_BUCKETS: usize = 8;

/// Counters of one engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Frames sent.
    pub tx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Non-empty receive batches.
    pub batches: u64,
    /// Loop iterations.
    pub loops: u64,
    /// Times the engine slept in poll().
    pub sleeps: u64,
    /// Times the engine yielded the CPU after an empty receive.
    pub yields: u64,
    /// Batch-size histogram (see [`BATCH_BUCKETS`]).
    pub batch_hist: [u64; BATCH_BUCKETS],
    /// ARP requests answered.
    pub arp_replies: u64,
    /// ARP requests sent.
    pub arp_requests: u64,
    /// ICMP echo requests answered.
    pub icmp_echo: u64,
    /// ICMPv6 echo requests answered.
    pub icmpv6_echo: u64,
    /// Neighbour solicitations answered (with an advertisement).
    pub nd_replies: u64,
    /// Neighbour solicitations sent.
    pub nd_requests: u64,
    /// Neighbour advertisements received (their link-layer address learnt).
    pub nd_learned: u64,
    /// ICMPv6 Packet Too Big or ICMP fragmentation needed about our TCP segments, handed to
    /// TCP as a path MTU.
    pub icmp_too_big: u64,
    /// UDP datagrams handed to handlers.
    pub udp_delivered: u64,
    /// UDP replies sent.
    pub udp_replies: u64,
    /// UDP datagrams taken by handlers without a reply.
    pub udp_consumed: u64,
    /// TCP segments handed to the TCP service.
    pub tcp_delivered: u64,
    /// TCP segments of connections another engine holds, handed to the next engine.
    pub tcp_strays_out: u64,
    /// TCP segments handed over by the previous engine and taken here.
    pub tcp_strays_in: u64,
    /// TCP segments for another engine lost because its inbox was full (or this engine had
    /// no free frame to take one in): as on a full queue, TCP recovers them.
    pub tcp_strays_lost: u64,
    /// TCP segments sent.
    pub tcp_sent: u64,
    /// TCP segments of those sent gathered from several buffers, the payload where a disk
    /// read put it.
    pub tx_gathered: u64,
    /// Frames that could not be captured because the pcap writer lagged.
    pub capture_dropped: u64,
    /// Drops by reason, indexed by [`DropReason`].
    pub drops: [u64; DROP_REASONS],
}

impl Counters {
    /// Counts a drop.
    #[inline]
    pub fn count_drop(&mut self, why: DropReason) {
        self.drops[why as usize] += 1;
    }

    /// Count for one reason.
    pub fn dropped(&self, why: DropReason) -> u64 {
        self.drops[why as usize]
    }

    /// All drops.
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }

    /// Records a receive batch of `n` > 0 frames.
    #[inline]
    pub fn batch(&mut self, n: usize) {
        self.batches += 1;
        let b = (usize::BITS - n.leading_zeros()) as usize - 1;
        self.batch_hist[b.min(BATCH_BUCKETS - 1)] += 1;
    }

    /// Adds another engine's counters (for totals).
    pub fn add(&mut self, o: &Counters) {
        self.rx_packets += o.rx_packets;
        self.rx_bytes += o.rx_bytes;
        self.tx_packets += o.tx_packets;
        self.tx_bytes += o.tx_bytes;
        self.batches += o.batches;
        self.loops += o.loops;
        self.sleeps += o.sleeps;
        self.yields += o.yields;
        for i in 0..BATCH_BUCKETS {
            self.batch_hist[i] += o.batch_hist[i];
        }
        self.arp_replies += o.arp_replies;
        self.arp_requests += o.arp_requests;
        self.icmp_echo += o.icmp_echo;
        self.icmpv6_echo += o.icmpv6_echo;
        self.nd_replies += o.nd_replies;
        self.nd_requests += o.nd_requests;
        self.nd_learned += o.nd_learned;
        self.icmp_too_big += o.icmp_too_big;
        self.udp_delivered += o.udp_delivered;
        self.udp_replies += o.udp_replies;
        self.udp_consumed += o.udp_consumed;
        self.tcp_delivered += o.tcp_delivered;
        self.tcp_strays_out += o.tcp_strays_out;
        self.tcp_strays_in += o.tcp_strays_in;
        self.tcp_strays_lost += o.tcp_strays_lost;
        self.tcp_sent += o.tcp_sent;
        self.tx_gathered += o.tx_gathered;
        self.capture_dropped += o.capture_dropped;
        for i in 0..DROP_REASONS {
            self.drops[i] += o.drops[i];
        }
    }

    /// The counters as `name value` pairs (zero drop reasons left out), for reports and tests.
    pub fn pairs(&self) -> Vec<(String, u64)> {
        let mut v = vec![
            ("rx_packets".to_string(), self.rx_packets),
            ("rx_bytes".into(), self.rx_bytes),
            ("tx_packets".into(), self.tx_packets),
            ("tx_bytes".into(), self.tx_bytes),
            ("batches".into(), self.batches),
            ("loops".into(), self.loops),
            ("sleeps".into(), self.sleeps),
            ("yields".into(), self.yields),
            ("arp_replies".into(), self.arp_replies),
            ("arp_requests".into(), self.arp_requests),
            ("icmp_echo".into(), self.icmp_echo),
            ("icmpv6_echo".into(), self.icmpv6_echo),
            ("nd_replies".into(), self.nd_replies),
            ("nd_requests".into(), self.nd_requests),
            ("nd_learned".into(), self.nd_learned),
            ("icmp_too_big".into(), self.icmp_too_big),
            ("udp_delivered".into(), self.udp_delivered),
            ("udp_replies".into(), self.udp_replies),
            ("udp_consumed".into(), self.udp_consumed),
            ("tcp_delivered".into(), self.tcp_delivered),
            ("tcp_strays_out".into(), self.tcp_strays_out),
            ("tcp_strays_in".into(), self.tcp_strays_in),
            ("tcp_strays_lost".into(), self.tcp_strays_lost),
            ("tcp_sent".into(), self.tcp_sent),
            ("tx_gathered".into(), self.tx_gathered),
            ("capture_dropped".into(), self.capture_dropped),
        ];
        for (i, lo) in [1, 2, 4, 8, 16, 32, 64, 128].iter().enumerate() {
            v.push((format!("batch_{lo}"), self.batch_hist[i]));
        }
        for d in DropReason::ALL {
            if self.dropped(d) > 0 {
                v.push((format!("drop_{}", d.name()), self.dropped(d)));
            }
        }
        v
    }
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mean = if self.batches > 0 { self.rx_packets as f64 / self.batches as f64 } else { 0.0 };
        writeln!(
            f,
            "  rx {} pkts {} B | tx {} pkts {} B | tcp segments sent {} ({} gathered: payload sent from a lent buffer)",
            self.rx_packets, self.rx_bytes, self.tx_packets, self.tx_bytes, self.tcp_sent, self.tx_gathered
        )?;
        writeln!(
            f,
            "  batches {} (mean {:.1}) hist 1:{} 2:{} 4:{} 8:{} 16:{} 32:{} 64:{} 128+:{} | loops {} yields {} sleeps {}",
            self.batches,
            mean,
            self.batch_hist[0],
            self.batch_hist[1],
            self.batch_hist[2],
            self.batch_hist[3],
            self.batch_hist[4],
            self.batch_hist[5],
            self.batch_hist[6],
            self.batch_hist[7],
            self.loops,
            self.yields,
            self.sleeps
        )?;
        writeln!(
            f,
            "  arp replies {} requests {} | nd replies {} requests {} learned {} | icmp echo {} icmpv6 echo {} | udp delivered {} replies {} consumed {}",
            self.arp_replies,
            self.arp_requests,
            self.nd_replies,
            self.nd_requests,
            self.nd_learned,
            self.icmp_echo,
            self.icmpv6_echo,
            self.udp_delivered,
            self.udp_replies,
            self.udp_consumed
        )?;
        let drops: Vec<String> = DropReason::ALL
            .iter()
            .filter(|d| self.dropped(**d) > 0)
            .map(|d| format!("{} {}", d.name(), self.dropped(*d)))
            .collect();
        if drops.is_empty() {
            write!(f, "  drops none")
        } else {
            write!(f, "  drops {}", drops.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets() {
        let mut c = Counters::default();
        for n in [1, 2, 3, 4, 63, 64, 200] {
            c.batch(n);
        }
        assert_eq!(c.batch_hist, [1, 2, 1, 0, 0, 1, 1, 1]);
    }

    #[test]
    fn names_are_distinct() {
        let mut names: Vec<_> = DropReason::ALL.iter().map(|d| d.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), DROP_REASONS);
        for (i, d) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*d as usize, i);
        }
    }
}
