//! The TCP echo servers' counters: published on the metrics endpoint, and read back from the
//! same samples for the line each engine prints when it stops.

use engine::Samples;

/// What a TCP echo application counts: connections, and the bytes it moved (`how`: echoed,
/// received or sent).
pub trait Tally {
    /// Connections accepted and ended.
    fn conns(&self) -> (u64, u64);
    /// What its bytes are, and how many.
    fn bytes(&self) -> (&'static str, u64);
}

impl Tally for crate::TcpEcho {
    fn conns(&self) -> (u64, u64) {
        (self.accepted, self.closed)
    }
    fn bytes(&self) -> (&'static str, u64) {
        ("echoed", self.echoed)
    }
}

impl Tally for crate::TcpDiscard {
    fn conns(&self) -> (u64, u64) {
        (self.accepted, self.closed)
    }
    fn bytes(&self) -> (&'static str, u64) {
        ("received", self.received)
    }
}

impl Tally for crate::TcpSource {
    fn conns(&self) -> (u64, u64) {
        (self.accepted, self.closed)
    }
    fn bytes(&self) -> (&'static str, u64) {
        ("sent", self.sent)
    }
}

impl Tally for crate::ChannelEcho {
    fn conns(&self) -> (u64, u64) {
        (self.accepted, self.closed)
    }
    fn bytes(&self) -> (&'static str, u64) {
        ("echoed", self.echoed)
    }
}

/// The application's families for the metrics endpoint.
pub fn metrics<T: Tally>(app: &T, out: &mut Samples) {
    let (accepted, closed) = app.conns();
    let help = "Echo connections accepted and ended.";
    out.counter_with("sirocco_echo_connections_total", help, ("event", "accepted"), accepted);
    out.counter_with("sirocco_echo_connections_total", help, ("event", "closed"), closed);
    let (how, n) = app.bytes();
    out.counter_with("sirocco_echo_bytes_total", "Bytes echoed, received (discard) or sent (source).", ("how", how), n);
}

/// The line engine `q` prints when it stops, from its samples.
pub fn exit_line(q: usize, s: &Samples) -> String {
    let v = |n: &str, l: Option<&str>| s.value(n, l);
    let bytes = s.iter().find(|x| x.name == "sirocco_echo_bytes_total");
    let (how, n) = bytes.and_then(|b| Some((b.label?.1, b.value))).unwrap_or(("echoed", 0));
    let tcp = |n: &str| v(&format!("sirocco_tcp_{n}_total"), None);
    let mut line = format!(
        "engine {q} tcp: accepted {} closed {} {how} {n} bytes; retransmits {} rtos {} tail probes {} (repaired {}) resets in/out {}/{} cookies {} timeouts {}",
        v("sirocco_echo_connections_total", Some("accepted")),
        v("sirocco_echo_connections_total", Some("closed")),
        tcp("retransmits"),
        tcp("rtos"),
        tcp("tail_probes"),
        tcp("tail_recoveries"),
        tcp("resets_in"),
        tcp("resets_out"),
        tcp("cookies_sent"),
        tcp("timeouts"),
    );
    if s.get("sirocco_channel_events_total", Some("batches")).is_some() {
        let c = |e| v("sirocco_channel_events_total", Some(e));
        line += &format!(
            "; channel: batches {} events {} sendv {} (trimmed {}) recv copied {} bytes, buffers exhausted {}",
            c("batches"),
            c("events"),
            c("sendv"),
            c("sendv_trimmed"),
            c("recv_copied_bytes"),
            c("buffers_exhausted")
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_the_metrics_families() {
        let mut s = Samples::default();
        let app = crate::TcpDiscard { received: 500, accepted: 2, closed: 1 };
        metrics(&app, &mut s);
        s.counter("sirocco_tcp_retransmits_total", "", 4);
        let l = exit_line(3, &s);
        assert!(l.starts_with("engine 3 tcp: accepted 2 closed 1 received 500 bytes; retransmits 4 rtos 0 "), "{l}");
        assert!(!l.contains("channel"), "{l}");
    }
}
