//! Counters of one TCP endpoint: the data path counts instead of logging.

/// Event counts since the endpoint started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Segments taken in (after checksum).
    pub segs_in: u64,
    /// Segments sent.
    pub segs_out: u64,
    /// Segments sent again (RTO, fast retransmit, SACK recovery).
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Tail loss probes sent (RFC 8985 §7).
    pub tail_probes: u64,
    /// Losses a tail loss probe repaired (answered by reducing the window).
    pub tail_recoveries: u64,
    /// Entries into fast recovery.
    pub fast_recoveries: u64,
    /// Out-of-order segments kept for reassembly.
    pub ooo_kept: u64,
    /// Out-of-order segments dropped (pool empty or too many holes).
    pub ooo_dropped: u64,
    /// Segments outside the receive window.
    pub out_of_window: u64,
    /// Segments dropped by PAWS (RFC 7323).
    pub paws_dropped: u64,
    /// Challenge ACKs sent (RFC 5961).
    pub challenge_acks: u64,
    /// Challenge ACKs suppressed by the rate limit.
    pub challenge_limited: u64,
    /// Connections reset by the peer.
    pub resets_in: u64,
    /// RSTs sent.
    pub resets_out: u64,
    /// Connections that timed out.
    pub timeouts: u64,
    /// Connections opened (passive and active) that reached ESTABLISHED.
    pub established: u64,
    /// SYNs answered with a cookie instead of state.
    pub cookies_sent: u64,
    /// Connections created from a valid cookie.
    pub cookies_accepted: u64,
    /// ACKs that looked like cookie replies but did not validate.
    pub cookies_invalid: u64,
    /// SYNs dropped because the connection table was full.
    pub table_full: u64,
    /// Segments for no connection (answered with RST unless they were RSTs).
    pub no_connection: u64,
    /// Segments that could not be sent because the TX ring had no room (retried later).
    pub tx_full: u64,
    /// Zero-window and keep-alive probes sent.
    pub probes: u64,
    /// Connections closed straight from TIME-WAIT because the TIME-WAIT limit was reached.
    pub time_wait_recycled: u64,
}
