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

/// How a connection behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// The MSS this side advertises and the largest payload it sends over IPv4 (link MTU −
    /// 40); over IPv6, whose header is 20 bytes longer, 20 less ([`Config::for_ipv6`]).
    pub mss: u16,
    /// Receive window in bytes: what the application may hold unconsumed.
    pub rcv_buf: u32,
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
    /// Keep-alive, if wanted.
    pub keepalive: Option<KeepAlive>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mss: 1460,
            rcv_buf: 256 * 1024,
            window_scale: true,
            sack: true,
            tail_loss_probes: true,
            rack: true,
            timestamps: true,
            cc: CcKind::Cubic,
            rto_initial: Duration::from_secs(1),
            rto_min: Duration::from_millis(200),
            rto_max: Duration::from_secs(60),
            delayed_ack: Duration::from_millis(40),
            time_wait: Duration::from_secs(60),
            fin_wait2: Duration::from_secs(60),
            syn_retries: 6,
            retries: 15,
            keepalive: None,
        }
    }
}

impl Config {
    /// The settings for a connection over IPv6: the MSS 20 bytes smaller, for the longer
    /// IP header (RFC 8200 §8.3).
    pub fn for_ipv6(self) -> Config {
        Config { mss: self.mss.saturating_sub(20).max(64), ..self }
    }

    /// The receive window scale this side offers: the smallest shift that lets `rcv_buf`
    /// be advertised in 16 bits (RFC 7323 §2.3), at most 14.
    pub fn rcv_wscale(&self) -> u8 {
        let mut s = 0;
        while s < 14 && (self.rcv_buf >> s) > 65_535 {
            s += 1;
        }
        s
    }
}
