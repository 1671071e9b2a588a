//! The lines a DNS server prints when it stops: the metrics' counters summed over the
//! engines, so the summary and the metrics endpoint never disagree.

use crate::rrl::RrlSettings;
use crate::DnsService;
use engine::{Samples, Service};

const RCODES: [&str; 9] =
    ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "BADVERS", "NOTAUTH"];

/// The exit summary of `services` (one per engine); `rrl` names the limit in force.
pub fn exit_lines<'a>(services: impl Iterator<Item = &'a DnsService>, rrl: Option<RrlSettings>) -> Vec<String> {
    let mut all = Samples::default();
    let mut last_error = None;
    for svc in services {
        let mut one = Samples::default();
        svc.metrics(&mut one);
        all.add(&one);
        if let Some(r) = &svc.refresher {
            last_error = r.last_error.clone();
        }
    }
    lines(&all, rrl, last_error)
}

fn lines(all: &Samples, rrl: Option<RrlSettings>, last_error: Option<String>) -> Vec<String> {
    let v = |name: &str, label: &str| all.value(name, (!label.is_empty()).then_some(label));
    let rcodes: Vec<String> =
        RCODES.iter().map(|r| format!("{} {}", r.to_ascii_lowercase(), v("sirocco_dns_responses_total", r))).collect();
    let mut out = vec![format!(
        "dns: {} | truncated {} dropped {} | signed (tsig) {}",
        rcodes.join(" "),
        v("sirocco_dns_truncated_total", ""),
        v("sirocco_dns_dropped_total", ""),
        v("sirocco_dns_signed_queries_total", "")
    )];
    if let Some(r) = rrl {
        out.push(format!(
            "dns rate limit ({} per second, slip {}): dropped {} slipped {} (counted above too)",
            r.rate,
            r.slip,
            v("sirocco_dns_rrl_limited_total", "dropped"),
            v("sirocco_dns_rrl_limited_total", "slipped")
        ));
    }
    let cookie = |e| v("sirocco_dns_cookies_total", e);
    if cookie("valid") + cookie("fresh") > 0 {
        out.push(format!(
            "dns cookies: valid {} fresh {} | badcookie {}",
            cookie("valid"),
            cookie("fresh"),
            v("sirocco_dns_badcookie_total", "")
        ));
    }
    let notify = |e| v("sirocco_dns_notify_sent_total", e);
    if notify("sent") > 0 {
        out.push(format!(
            "dns notify: sent {} acknowledged {} unanswered {}",
            notify("sent"),
            notify("acknowledged"),
            notify("unanswered")
        ));
    }
    let sec = |e| v("sirocco_dns_secondary_events_total", e);
    if all.get("sirocco_dns_secondary_events_total", Some("checked")).is_some() {
        out.push(format!(
            "dns secondary: checks {} up to date {} transferred {} (as changes {}) failed {} expired {} | notify received {} refused {}",
            sec("checked"),
            sec("up_to_date"),
            sec("transferred"),
            sec("incremental"),
            sec("failed"),
            sec("expired"),
            v("sirocco_dns_notify_received_total", "accepted"),
            v("sirocco_dns_notify_received_total", "refused")
        ));
        if let Some(e) = last_error {
            out.push(format!("dns secondary: last failure: {e}"));
        }
    }
    let conns = |e| v("sirocco_dns_tcp_connections_total", e);
    out.push(format!(
        "dns over tcp: connections accepted {} refused {} closed {} (idle {} cut off {}) | answers {} | transfers {} (incremental {}) refused {}",
        conns("accepted"),
        conns("refused"),
        conns("closed"),
        conns("idle_closed"),
        conns("cut_off"),
        v("sirocco_dns_tcp_answers_total", ""),
        v("sirocco_dns_transfers_total", ""),
        v("sirocco_dns_ixfr_incremental_total", ""),
        v("sirocco_dns_transfers_refused_total", "")
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_reads_the_metrics_families() {
        let mut s = Samples::default();
        s.counter_with("sirocco_dns_responses_total", "", ("rcode", "NXDOMAIN"), 4);
        s.counter_with("sirocco_dns_tcp_connections_total", "", ("event", "accepted"), 2);
        s.counter("sirocco_dns_truncated_total", "", 1);
        let l = lines(&s, None, None);
        assert!(l[0].starts_with("dns: noerror 0 formerr 0 servfail 0 nxdomain 4 "), "{}", l[0]);
        assert!(l[0].contains("truncated 1 dropped 0"), "{}", l[0]);
        assert_eq!(l.len(), 2, "no rate limit, notify or secondary line: {l:?}");
        assert!(l[1].starts_with("dns over tcp: connections accepted 2 refused 0"), "{}", l[1]);
    }
}
