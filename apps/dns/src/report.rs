//! The lines a DNS server prints when it stops: its counters summed over the engines.

use crate::rrl::RrlSettings;
use crate::DnsService;

/// The exit summary of `services` (one per engine); `rrl` names the limit in force.
pub fn exit_lines<'a>(services: impl Iterator<Item = &'a DnsService>, rrl: Option<RrlSettings>) -> Vec<String> {
    let mut rc = [0u64; 9];
    let (mut tc, mut dropped, mut rrl_dropped, mut rrl_slipped, mut signed) = (0, 0, 0, 0, 0);
    let mut t = crate::tcp::TcpStats::default();
    let mut n = crate::notify::NotifyStats::default();
    let (mut notify_in, mut notify_refused) = (0, 0);
    let mut sec = None;
    for svc in services {
        if let Some(r) = &svc.refresher {
            sec = Some((r.stats, r.last_error.clone()));
        }
        let d = svc.server();
        notify_in += d.stats.notify_in;
        notify_refused += d.stats.notify_refused;
        if let Some(s) = d.notifier() {
            n = s.stats;
        }
        for (i, v) in d.stats.rcodes.iter().enumerate() {
            rc[i] += v;
        }
        tc += d.stats.truncated;
        signed += d.stats.signed;
        dropped += d.stats.dropped;
        rrl_dropped += d.stats.rrl_dropped;
        rrl_slipped += d.stats.rrl_slipped;
        t.add(&svc.tcp.app.stats);
    }
    let mut out = vec![format!(
        "dns: noerror {} formerr {} servfail {} nxdomain {} notimp {} refused {} yxdomain {} badvers {} notauth {} | truncated {tc} dropped {dropped} | signed (tsig) {signed}",
        rc[0], rc[1], rc[2], rc[3], rc[4], rc[5], rc[6], rc[7], rc[8]
    )];
    if let Some(r) = rrl {
        out.push(format!(
            "dns rate limit ({} per second, slip {}): dropped {rrl_dropped} slipped {rrl_slipped} (counted above too)",
            r.rate, r.slip
        ));
    }
    if n.sent > 0 {
        out.push(format!("dns notify: sent {} acknowledged {} unanswered {}", n.sent, n.acked, n.unanswered));
    }
    if let Some((st, last_error)) = sec {
        out.push(format!(
            "dns secondary: checks {} up to date {} transferred {} (as changes {}) failed {} expired {} | notify received {notify_in} refused {notify_refused}",
            st.checks, st.up_to_date, st.transferred, st.incremental, st.failed, st.expired
        ));
        if let Some(e) = last_error {
            out.push(format!("dns secondary: last failure: {e}"));
        }
    }
    out.push(format!(
        "dns over tcp: connections accepted {} refused {} closed {} (idle {} cut off {}) | answers {} | transfers {} refused {}",
        t.accepted, t.refused, t.closed, t.idle_closed, t.cut, t.answered, t.transfers, t.transfers_refused
    ));
    out
}
