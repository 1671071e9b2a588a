//! Per-connection settings, chosen per listener (passive open) or per connect (active open).

use crate::cc::CcKind;
use timer::Duration;

/// Keep-alive probing (RFC 9293 §3.8.4): off unless configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepAlive {
    /// Idle time before the first probe.
    pub idle: Duration,
    /// Time between unanswered probes.
    pub interval: Duration,
    /// Unanswered probes before the connection is declared dead.
    pub count: u32,
}

/// The autotuning bound of servers that receive bulk data (store, kv, zone transfers in):
/// 2 MiB less the rounding a reassembly buffer adds, so that each of those is 2 MiB. A window
/// of 2 MiB carries 330 Mb/s at 50 ms, 80 Mb/s at 200 ms per connection.
pub const BULK_RCV_BUF_MAX: u32 = (2 << 20) - (1 << 14);

/// How a connection behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// The MSS this side advertises and the largest payload it sends over IPv4 (link MTU −
    /// 40); over IPv6, whose header is 20 bytes longer, 20 less ([`Config::for_ipv6`]).
    pub mss: u16,
    /// Receive window in bytes: what the application may hold unconsumed. With
    /// [`rcv_buf_max`](Config::rcv_buf_max), where the window starts.
    pub rcv_buf: u32,
    /// Receive-window autotuning: the window grows, up to this many bytes, to what the
    /// measured bandwidth-delay product asks (about three round trips' worth of the data
    /// received per round trip), as Linux's does up to `tcp_rmem[2]`. None: it stays at
    /// `rcv_buf`. Bounded by the endpoint's reassembly buffers ([`crate::Limits::max_rcv_buf`]).
    pub rcv_buf_max: Option<u32>,
    /// Offer window scaling.
    pub window_scale: bool,
    /// Offer SACK.
    pub sack: bool,
    /// Tail loss probes (RFC 8985 §7; they need SACK).
    pub tail_loss_probes: bool,
    /// RACK's time-based loss marking (RFC 8985 §6; it needs SACK).
    pub rack: bool,
    /// Offer timestamps (and with them PAWS).
    pub timestamps: bool,
    /// Congestion control algorithm.
    pub cc: CcKind,
    /// Pace CUBIC's and NewReno's segments at cwnd/SRTT (twice that in slow start, 1.2 times
    /// in avoidance, as Linux's internal pacing), so a window does not leave as one burst
    /// into a shallow queue. BBR always paces.
    pub pacing: bool,
    /// Initial retransmission timeout (RFC 6298 §2.1: 1 s).
    pub rto_initial: Duration,
    /// Lower bound of the RTO (RFC 6298 says 1 s; Linux uses 200 ms).
    pub rto_min: Duration,
    /// Upper bound of the RTO.
    pub rto_max: Duration,
    /// Delayed-ACK timeout (RFC 9293 asks for less than 0.5 s).
    pub delayed_ack: Duration,
    /// Time in TIME-WAIT (2·MSL).
    pub time_wait: Duration,
    /// Time FIN-WAIT-2 waits for the peer's FIN while the peer sends nothing.
    pub fin_wait2: Duration,
    /// Retransmissions of SYN or SYN-ACK before giving up.
    pub syn_retries: u32,
    /// Retransmissions of data or FIN (or unanswered window probes) before giving up.
    pub retries: u32,
    /// Retransmissions of the FIN once both sides have closed (LAST-ACK, CLOSING), when
    /// nothing is left to deliver to the application: Linux's tcp_orphan_retries (its 0
    /// means 8). With `retries` such a connection lingered about 15 minutes after a peer that
    /// vanished (a million clients closing at once leave some); with 8, about 100 s.
    pub orphan_retries: u32,
    /// Keep-alive, if wanted.
    pub keepalive: Option<KeepAlive>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mss: 1460,
            rcv_buf: 256 * 1024,
            rcv_buf_max: None,
            window_scale: true,
            sack: true,
            tail_loss_probes: true,
            rack: true,
            timestamps: true,
            cc: CcKind::Cubic,
            pacing: false,
            rto_initial: Duration::from_secs(1),
            rto_min: Duration::from_millis(200),
            rto_max: Duration::from_secs(60),
            delayed_ack: Duration::from_millis(40),
            time_wait: Duration::from_secs(60),
            fin_wait2: Duration::from_secs(60),
            syn_retries: 6,
            retries: 15,
            orphan_retries: 8,
            keepalive: None,
        }
    }
}

impl Config {
    /// For a server that receives bulk data: autotuning on, up to [`BULK_RCV_BUF_MAX`]
    /// unless a bound was chosen.
    pub fn bulk(self) -> Config {
        Config { rcv_buf_max: self.rcv_buf_max.or(Some(BULK_RCV_BUF_MAX)), ..self }
    }

    /// The endpoint limits that let this configuration's window grow: reassembly buffers
    /// as large as its largest window.
    pub fn limits(&self, base: crate::Limits) -> crate::Limits {
        let most = self.rcv_buf.max(self.rcv_buf_max.unwrap_or(0));
        crate::Limits { max_rcv_buf: base.max_rcv_buf.max(most), ..base }
    }

    /// The settings for a connection over IPv6: the MSS 20 bytes smaller, for the longer
    /// IP header (RFC 8200 §8.3).
    pub fn for_ipv6(self) -> Config {
        Config { mss: self.mss.saturating_sub(20).max(64), ..self }
    }

    /// The receive window scale this side offers: the smallest shift that lets the largest
    /// window (`rcv_buf`, or `rcv_buf_max` when it grows) be advertised in 16 bits (RFC 7323
    /// §2.3), at most 14.
    pub fn rcv_wscale(&self) -> u8 {
        let most = self.rcv_buf.max(self.rcv_buf_max.unwrap_or(0));
        let mut s = 0;
        while s < 14 && (most >> s) > 65_535 {
            s += 1;
        }
        s
    }
}
