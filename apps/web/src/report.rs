//! The lines a web server prints when it stops: each engine's counters.

use crate::WebService;

/// The exit summary of engine `q`'s service.
pub fn exit_lines(q: usize, svc: &WebService) -> Vec<String> {
    let mut out = Vec::new();
    let (st, store, tcp) = (&svc.app().stats, &svc.app().store.stats, svc.tcp.ep.stats());
    let statuses: Vec<String> = st.status.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    out.push(format!(
        "engine {q} web: accepted {} requests {} [{}]; responses prepared {} formatted {}; segments ready {} built {} ({} bytes); \
         packetised {} objects ({} segments), evicted {}, heads refreshed {}, read on demand {}; \
         timeouts header {} idle {} send {}; reloads {}; tcp retransmits {} (timeouts {}, fast recoveries {}, tail probes {}) resets out {}",
        st.accepted,
        st.requests,
        statuses.join(" "),
        st.prepared_responses,
        st.formatted_responses,
        st.ready_segments.get(),
        st.built_segments.get(),
        st.built_bytes.get(),
        store.packetised,
        store.segments_built,
        store.evicted,
        store.heads_refreshed,
        store.read_on_demand,
        st.header_timeouts,
        st.idle_timeouts,
        st.send_timeouts,
        svc.reloads,
        tcp.retransmits,
        tcp.rtos,
        tcp.fast_recoveries,
        tcp.tail_probes,
        tcp.resets_out
    ));
    if svc.tls_on() {
        let t = svc.tls_stats();
        out.push(format!(
            "engine {q} tls: accepted {} handshakes {} failed {} record errors {} peer alerts {} close_notify in {} key updates {}; records sealed at send {} in place {}{}",
            t.accepted,
            t.handshakes,
            t.handshake_failures,
            t.record_errors,
            t.peer_alerts,
            t.close_notify_in,
            t.key_updates,
            t.records_sealed.get(),
            t.records_in_place,
            if t.last_failure.is_empty() { String::new() } else { format!("; last failure: {}", t.last_failure) }
        ));
    }
    match svc.app().replicas() {
        Some(r) => out.push(format!(
            "engine {q} precopy: replica sends {} made {} refreshed {} reclaimed {} fallbacks {} released {}; pinned {} of {} frames",
            r.stats.sends,
            r.stats.made,
            r.stats.refreshed,
            r.stats.reclaimed,
            r.stats.fallbacks,
            r.stats.released,
            r.pinned(),
            r.budget()
        )),
        None if svc.app().stream.is_some() => {
            let st = svc.app().stream.as_ref().expect("checked");
            let (s, p) = (&st.stats, &st.port.stats);
            out.push(format!(
                "engine {q} stream: reads {} ({} bytes wanted, {} read in {} transfers, {} continued), read again for retransmissions {} ({} bytes), waits for a buffer {}, read errors {}, files opened {}, peak buffers in use {} of {} ({} KiB){}",
                s.reads, s.read_bytes, p.bytes_read, p.parts, p.continued, s.rereads, s.reread_bytes, s.buffer_waits, s.read_errors, s.opens,
                st.port.pool_ref().peak_in_use(), st.port.pool_ref().count(),
                u64::from(st.port.pool_ref().peak_in_use()) * st.port.pool_ref().buf_size() as u64 / 1024,
                if st.lent() { ", in the UMEM (sent without a copy)" } else { ", copied into frames" }
            ))
        }
        None => out.push(format!("engine {q} memcpy: every ready segment copied from its master")),
    }

    out
}
