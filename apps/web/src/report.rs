//! The web server's counters: the families the metrics endpoint publishes, and the lines
//! each engine prints when it stops, read back from those same samples so the two never
//! disagree.

use crate::server::WebApp;
use engine::Samples;

/// A family with one label, `what` naming each value.
fn each(out: &mut Samples, name: &'static str, help: &'static str, what: &'static str, values: &[(&'static str, u64)]) {
    for &(v, n) in values {
        out.counter_with(name, help, (what, v), n);
    }
}

/// Writes the web server's own families (beside the HTTP and TCP ones): `app`'s, the
/// reloads applied, and the TLS layer's if HTTPS is served.
pub fn metrics(app: &WebApp, reloads: u64, tls: Option<&tls::TlsStats>, out: &mut Samples) {
    let (st, store) = (&app.stats, &app.store.stats);
    let how = [("prepared", st.prepared_responses), ("formatted", st.formatted_responses)];
    each(out, "sirocco_web_responses_made_total", "Responses sent from a prepared head, or formatted.", "how", &how);
    let segs = [("ready", st.ready_segments.get()), ("built", st.built_segments.get())];
    each(out, "sirocco_web_segments_total", "Segments sent ready-made (packetised) or built per send.", "how", &segs);
    out.counter("sirocco_web_built_bytes_total", "Bytes of the segments built per send.", st.built_bytes.get());
    let events = [
        ("packetised", store.packetised),
        ("segments_built", store.segments_built),
        ("evicted", store.evicted),
        ("heads_refreshed", store.heads_refreshed),
        ("read_on_demand", store.read_on_demand),
    ];
    each(
        out,
        "sirocco_web_store_events_total",
        "The content store's work: objects packetised, evicted, ...",
        "event",
        &events,
    );
    out.counter("sirocco_web_reloads_total", "Content reloads (SIGHUP) applied.", reloads);
    if let Some(t) = tls {
        let events = [
            ("accepted", t.accepted),
            ("handshakes", t.handshakes),
            ("handshake_failures", t.handshake_failures),
            ("record_errors", t.record_errors),
            ("peer_alerts", t.peer_alerts),
            ("close_notify_in", t.close_notify_in),
            ("key_updates", t.key_updates),
        ];
        each(out, "sirocco_tls_events_total", "TLS connections and what became of them.", "event", &events);
        let sealed = [("at_send", t.records_sealed.get()), ("in_place", t.records_in_place)];
        each(out, "sirocco_tls_records_sealed_total", "TLS records sealed when sent, or in place.", "where", &sealed);
    }
    if let Some(r) = app.replicas() {
        let s = &r.stats;
        let events = [
            ("sends", s.sends),
            ("made", s.made),
            ("refreshed", s.refreshed),
            ("reclaimed", s.reclaimed),
            ("fallbacks", s.fallbacks),
            ("released", s.released),
        ];
        each(
            out,
            "sirocco_web_replica_events_total",
            "Precopy: sends from replicas, replicas made, ...",
            "event",
            &events,
        );
        out.gauge("sirocco_web_replica_frames_pinned", "Frames pinned by replicas.", r.pinned() as u64);
        out.gauge("sirocco_web_replica_frames_budget", "Frames replicas may pin.", r.budget() as u64);
    } else if let Some(st) = &app.stream {
        let (s, p, pool) = (&st.stats, &st.port.stats, st.port.pool_ref());
        let events = [
            ("reads", s.reads),
            ("read_bytes_wanted", s.read_bytes),
            ("bytes_read", p.bytes_read),
            ("transfers", p.parts),
            ("continued", p.continued),
            ("rereads", s.rereads),
            ("reread_bytes", s.reread_bytes),
            ("buffer_waits", s.buffer_waits),
            ("read_errors", s.read_errors),
            ("opens", s.opens),
        ];
        each(out, "sirocco_stream_events_total", "Streaming from storage: reads, bytes, waits, ...", "event", &events);
        out.gauge("sirocco_stream_buffers_peak", "Most storage buffers in use at once.", u64::from(pool.peak_in_use()));
        out.gauge("sirocco_stream_buffers", "Storage buffers.", u64::from(pool.count()));
        out.gauge("sirocco_stream_buffer_bytes", "Bytes of one storage buffer.", pool.buf_size() as u64);
        out.gauge(
            "sirocco_stream_zero_copy",
            "1 when read buffers are sent from the UMEM without a copy.",
            u64::from(st.lent()),
        );
    }
}

/// The exit summary of engine `q` from its samples; `tls_failure`, the last TLS handshake
/// failure's reason (not a counter), is added to the TLS line.
pub fn exit_lines(q: usize, s: &Samples, tls_failure: &str) -> Vec<String> {
    let mut out = lines(q, s);
    if out.len() > 2 && !tls_failure.is_empty() {
        out[1].push_str(&format!("; last failure: {tls_failure}"));
    }
    out
}

fn lines(q: usize, s: &Samples) -> Vec<String> {
    let v = |name: &str, label: &str| s.value(name, (!label.is_empty()).then_some(label));
    let statuses: Vec<String> = s
        .iter()
        .filter(|x| x.name == "sirocco_http_responses_total")
        .filter_map(|x| Some(format!("{}:{}", x.label?.1, x.value)))
        .collect();
    let store = |e| v("sirocco_web_store_events_total", e);
    let tcp = |n| v(n, "");
    let mut out = vec![format!(
        "engine {q} web: accepted {} requests {} [{}]; responses prepared {} formatted {}; segments ready {} built {} ({} bytes); \
         packetised {} objects ({} segments), evicted {}, heads refreshed {}, read on demand {}; \
         timeouts header {} idle {} send {}; reloads {}; tcp retransmits {} (timeouts {}, fast recoveries {}, tail probes {}) resets out {}; table full {}",
        v("sirocco_http_connections_accepted_total", ""),
        v("sirocco_http_requests_total", ""),
        statuses.join(" "),
        v("sirocco_web_responses_made_total", "prepared"),
        v("sirocco_web_responses_made_total", "formatted"),
        v("sirocco_web_segments_total", "ready"),
        v("sirocco_web_segments_total", "built"),
        v("sirocco_web_built_bytes_total", ""),
        store("packetised"),
        store("segments_built"),
        store("evicted"),
        store("heads_refreshed"),
        store("read_on_demand"),
        v("sirocco_http_timeouts_total", "header"),
        v("sirocco_http_timeouts_total", "idle"),
        v("sirocco_http_timeouts_total", "send"),
        v("sirocco_web_reloads_total", ""),
        tcp("sirocco_tcp_retransmits_total"),
        tcp("sirocco_tcp_rtos_total"),
        tcp("sirocco_tcp_fast_recoveries_total"),
        tcp("sirocco_tcp_tail_probes_total"),
        tcp("sirocco_tcp_resets_out_total"),
        tcp("sirocco_tcp_table_full_total")
    )];
    if s.get("sirocco_tls_events_total", Some("accepted")).is_some() {
        let t = |e| v("sirocco_tls_events_total", e);
        out.push(format!(
            "engine {q} tls: accepted {} handshakes {} failed {} record errors {} peer alerts {} close_notify in {} key updates {}; records sealed at send {} in place {}",
            t("accepted"),
            t("handshakes"),
            t("handshake_failures"),
            t("record_errors"),
            t("peer_alerts"),
            t("close_notify_in"),
            t("key_updates"),
            v("sirocco_tls_records_sealed_total", "at_send"),
            v("sirocco_tls_records_sealed_total", "in_place")
        ));
    }
    if s.get("sirocco_web_replica_events_total", Some("sends")).is_some() {
        let r = |e| v("sirocco_web_replica_events_total", e);
        out.push(format!(
            "engine {q} precopy: replica sends {} made {} refreshed {} reclaimed {} fallbacks {} released {}; pinned {} of {} frames",
            r("sends"),
            r("made"),
            r("refreshed"),
            r("reclaimed"),
            r("fallbacks"),
            r("released"),
            v("sirocco_web_replica_frames_pinned", ""),
            v("sirocco_web_replica_frames_budget", "")
        ));
    } else if s.get("sirocco_stream_events_total", Some("reads")).is_some() {
        let e = |e| v("sirocco_stream_events_total", e);
        let peak = v("sirocco_stream_buffers_peak", "");
        out.push(format!(
            "engine {q} stream: reads {} ({} bytes wanted, {} read in {} transfers, {} continued), read again for retransmissions {} ({} bytes), waits for a buffer {}, read errors {}, files opened {}, peak buffers in use {peak} of {} ({} KiB), {}",
            e("reads"),
            e("read_bytes_wanted"),
            e("bytes_read"),
            e("transfers"),
            e("continued"),
            e("rereads"),
            e("reread_bytes"),
            e("buffer_waits"),
            e("read_errors"),
            e("opens"),
            v("sirocco_stream_buffers", ""),
            peak * v("sirocco_stream_buffer_bytes", "") / 1024,
            if v("sirocco_stream_zero_copy", "") == 1 { "in the UMEM (sent without a copy)" } else { "copied into frames" }
        ));
    } else {
        out.push(format!("engine {q} memcpy: every ready segment copied from its master"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_reads_the_metrics_families() {
        let mut s = Samples::default();
        s.counter("sirocco_http_requests_total", "", 7);
        s.counter_with("sirocco_http_responses_total", "", ("status", "200"), 6);
        s.counter_with("sirocco_http_responses_total", "", ("status", "404"), 1);
        s.counter_with("sirocco_web_segments_total", "", ("how", "ready"), 40);
        s.counter("sirocco_tcp_retransmits_total", "", 3);
        let l = lines(2, &s);
        assert!(l[0].starts_with("engine 2 web: accepted 0 requests 7 [200:6 404:1]"), "{}", l[0]);
        assert!(l[0].contains("segments ready 40 built 0") && l[0].contains("tcp retransmits 3 "), "{}", l[0]);
        assert_eq!(l[1], "engine 2 memcpy: every ready segment copied from its master");
        assert_eq!(l.len(), 2, "no TLS line without TLS: {l:?}");
    }
}
