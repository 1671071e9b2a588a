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
    /// Retransmissions found lost (a segment sent after them arrived) and sent again
    /// without waiting for the timer.
    pub lost_retransmits: u64,
    /// Recoveries undone: every retransmission proved needless (DSACK or timestamps), so
    /// the window went back to what it was.
    pub undos: u64,
    /// DSACK blocks received: data the peer got twice (RFC 2883).
    pub dsacks: u64,
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
    /// Segments for no connection here, handed to the next engine (which may hold it).
    pub strays: u64,
    /// Segments that could not be sent because the TX ring had no room (retried later).
    pub tx_full: u64,
    /// Zero-window and keep-alive probes sent.
    pub probes: u64,
    /// Connections closed straight from TIME-WAIT because the TIME-WAIT limit was reached.
    pub time_wait_recycled: u64,
}

impl Stats {
    /// Every counter as a metric: its name by Prometheus conventions, what it counts, its
    /// value.
    pub fn metrics(&self) -> [(&'static str, &'static str, u64); 29] {
        [
            ("sirocco_tcp_segs_in_total", "Segments taken in (after checksum).", self.segs_in),
            ("sirocco_tcp_segs_out_total", "Segments sent.", self.segs_out),
            (
                "sirocco_tcp_retransmits_total",
                "Segments sent again (RTO, fast retransmit, SACK recovery).",
                self.retransmits,
            ),
            ("sirocco_tcp_rtos_total", "Retransmission timeouts.", self.rtos),
            ("sirocco_tcp_tail_probes_total", "Tail loss probes sent (RFC 8985 §7).", self.tail_probes),
            (
                "sirocco_tcp_tail_recoveries_total",
                "Losses a tail loss probe repaired (answered by reducing the window).",
                self.tail_recoveries,
            ),
            ("sirocco_tcp_fast_recoveries_total", "Entries into fast recovery.", self.fast_recoveries),
            (
                "sirocco_tcp_lost_retransmits_total",
                "Retransmissions found lost and sent again without the timer.",
                self.lost_retransmits,
            ),
            ("sirocco_tcp_undos_total", "Recoveries undone: every retransmission proved needless.", self.undos),
            ("sirocco_tcp_dsacks_total", "DSACK blocks received: data the peer got twice.", self.dsacks),
            ("sirocco_tcp_ooo_kept_total", "Out-of-order segments kept for reassembly.", self.ooo_kept),
            (
                "sirocco_tcp_ooo_dropped_total",
                "Out-of-order segments dropped (pool empty or too many holes).",
                self.ooo_dropped,
            ),
            ("sirocco_tcp_out_of_window_total", "Segments outside the receive window.", self.out_of_window),
            ("sirocco_tcp_paws_dropped_total", "Segments dropped by PAWS (RFC 7323).", self.paws_dropped),
            ("sirocco_tcp_challenge_acks_total", "Challenge ACKs sent (RFC 5961).", self.challenge_acks),
            (
                "sirocco_tcp_challenge_limited_total",
                "Challenge ACKs suppressed by the rate limit.",
                self.challenge_limited,
            ),
            ("sirocco_tcp_resets_in_total", "Connections reset by the peer.", self.resets_in),
            ("sirocco_tcp_resets_out_total", "RSTs sent.", self.resets_out),
            ("sirocco_tcp_timeouts_total", "Connections that timed out.", self.timeouts),
            (
                "sirocco_tcp_established_total",
                "Connections opened (passive and active) that reached ESTABLISHED.",
                self.established,
            ),
            ("sirocco_tcp_cookies_sent_total", "SYNs answered with a cookie instead of state.", self.cookies_sent),
            ("sirocco_tcp_cookies_accepted_total", "Connections created from a valid cookie.", self.cookies_accepted),
            (
                "sirocco_tcp_cookies_invalid_total",
                "ACKs that looked like cookie replies but did not validate.",
                self.cookies_invalid,
            ),
            (
                "sirocco_tcp_table_full_total",
                "SYNs refused (reset) because the connection table was full.",
                self.table_full,
            ),
            (
                "sirocco_tcp_strays_total",
                "Segments for no connection here, handed to the next engine (which may hold it).",
                self.strays,
            ),
            (
                "sirocco_tcp_no_connection_total",
                "Segments for no connection (answered with RST unless they were RSTs).",
                self.no_connection,
            ),
            (
                "sirocco_tcp_tx_full_total",
                "Segments that could not be sent because the TX ring had no room (retried later).",
                self.tx_full,
            ),
            ("sirocco_tcp_probes_total", "Zero-window and keep-alive probes sent.", self.probes),
            (
                "sirocco_tcp_time_wait_recycled_total",
                "Connections closed straight from TIME-WAIT because the TIME-WAIT limit was reached.",
                self.time_wait_recycled,
            ),
        ]
    }
}
