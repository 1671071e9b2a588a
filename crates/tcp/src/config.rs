//! Per-connection settings, chosen per listener (passive open) or per connect (active open).

use crate::cc::CcKind;
use crate::rtt::Micros;

/// Keep-alive probing (RFC 9293 §3.8.4): off unless configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepAlive {
    /// Idle time before the first probe.
    pub idle: Micros,
    /// Time between unanswered probes.
    pub interval: Micros,
    /// Unanswered probes before the connection is declared dead.
    pub count: u32,
}

/// How a connection behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// The MSS this side advertises and the largest payload it sends (link MTU − 40).
    pub mss: u16,
    /// Receive window in bytes: what the application may hold unconsumed.
    pub rcv_buf: u32,
    /// Offer window scaling.
    pub window_scale: bool,
    /// Offer SACK.
    pub sack: bool,
    /// Offer timestamps (and with them PAWS).
    pub timestamps: bool,
    /// Congestion control algorithm.
    pub cc: CcKind,
    /// Initial retransmission timeout (RFC 6298 §2.1: 1 s).
    pub rto_initial: Micros,
    /// Lower bound of the RTO (RFC 6298 says 1 s; Linux uses 200 ms).
    pub rto_min: Micros,
    /// Upper bound of the RTO.
    pub rto_max: Micros,
    /// Delayed-ACK timeout (RFC 9293 asks for less than 0.5 s).
    pub delayed_ack: Micros,
    /// Time in TIME-WAIT (2·MSL).
    pub time_wait: Micros,
    /// Time FIN-WAIT-2 waits for the peer's FIN while the peer sends nothing.
    pub fin_wait2: Micros,
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
            timestamps: true,
            cc: CcKind::Cubic,
            rto_initial: 1_000_000,
            rto_min: 200_000,
            rto_max: 60_000_000,
            delayed_ack: 40_000,
            time_wait: 60_000_000,
            fin_wait2: 60_000_000,
            syn_retries: 6,
            retries: 15,
            keepalive: None,
        }
    }
}

impl Config {
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
