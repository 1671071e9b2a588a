//! `--metrics`: scraped during load and after it with Prometheus' own parser (the Python
//! client's `text_string_to_metric_families`), and checked against the counters sirocco
//! prints and writes at exit.

use crate::common::*;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

/// Samples by name and sorted labels (`name{k=v,..}`), as Prometheus' parser reads the
/// endpoint in `ns`; also each family's type.
type Scrape = (BTreeMap<String, f64>, BTreeMap<String, String>);

const PARSE: &str = r#"
import json, sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
text = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()
samples, types = {}, {}
for fam in text_string_to_metric_families(text):
    types[fam.name] = fam.type
    for s in fam.samples:
        labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        samples[f"{s.name}{{{labels}}}"] = s.value
print(json.dumps({"samples": samples, "types": types}))
"#;

fn scrape(ns: &str, url: &str) -> Scrape {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "/usr/bin/python3", "-c", PARSE, url])
        .output()
        .expect("python3 (apt install python3-prometheus-client)");
    assert!(out.status.success(), "the parser refused the exposition: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let samples = v["samples"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_f64().unwrap())).collect();
    let types =
        v["types"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
    (samples, types)
}

/// The sum of the samples of `name` whose labels include every one of `with`.
fn sum(s: &Scrape, name: &str, with: &[&str]) -> f64 {
    s.0.iter()
        .filter(|(k, _)| k.starts_with(&format!("{name}{{")) && with.iter().all(|w| k.contains(w)))
        .map(|(_, v)| v)
        .sum()
}

#[test]
fn metrics_scraped_under_load_match_the_counters_at_exit() {
    let net = TestNet::new(2);
    let zone = std::env::temp_dir().join(format!("sirocco-metrics-{}.zone", std::process::id()));
    std::fs::write(&zone, "$ORIGIN example.com.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.3.1\n").unwrap();
    let zone_arg = format!("example.com={}", zone.display());
    let s = net.start_dns(&zone_arg, &["--metrics", "127.0.0.1:9153"]);
    let url = "http://127.0.0.1:9153/metrics";
    let queries = std::env::temp_dir().join(format!("sirocco-metrics-{}.txt", std::process::id()));
    std::fs::write(&queries, "ns.example.com A\nnothere.example.com A\nexample.com SOA\nother.test A\n").unwrap();
    // Scraped while dnsperf runs.
    let load = std::thread::spawn({
        let (ns, q) = (net.cli_ns.clone(), queries.clone());
        move || {
            Command::new("ip")
                .args(["netns", "exec", &ns, "dnsperf", "-s", SERVER_OWN, "-d", q.to_str().unwrap()])
                .args(["-l", "3", "-Q", "3000", "-t", "2"])
                .output()
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    let during = scrape(&net.srv_ns, url);
    let load = load.join().expect("dnsperf thread");
    assert!(load.is_ok_and(|o| o.status.success()), "dnsperf ran");
    // The engines publish five times a second; after the load, what is served is final.
    std::thread::sleep(Duration::from_millis(600));
    let after = scrape(&net.srv_ns, url);
    let other =
        net.exec(&net.srv_ns, &["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:9153/"]);
    let (counters, log) = stop_with_log(s);
    let _ = (std::fs::remove_file(&zone), std::fs::remove_file(&queries));

    // The families and their types, as Prometheus reads them.
    for (family, kind) in [
        ("sirocco_build_info", "gauge"),
        ("sirocco_engine_rx_packets", "counter"),
        ("sirocco_engine_drops", "counter"),
        ("sirocco_engine_batch_size", "histogram"),
        ("sirocco_xdp_filter_packets", "counter"),
        ("sirocco_dns_responses", "counter"),
        ("sirocco_dns_tcp_connections", "counter"),
        ("sirocco_dns_zones", "gauge"),
    ] {
        assert_eq!(after.1.get(family).map(String::as_str), Some(kind), "{family}: {:?}", after.1);
    }
    assert_eq!(sum(&after, "sirocco_engines", &[]), 2.0, "two queues");
    // The compiled zone's size, as the start line gave it, from each of the two engines.
    let zl = log
        .lines()
        .find(|l| l.contains("zone example.com") && l.contains("bytes compiled"))
        .unwrap_or_else(|| panic!("{log}"));
    let said = |what: &str| -> f64 {
        let before = zl.split(&format!(" {what}")).next().unwrap();
        before.rsplit(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("{what} in {zl}"))
    };
    assert_eq!(sum(&after, "sirocco_dns_names", &[]), 2.0 * said("names,"), "{zl}");
    assert_eq!(sum(&after, "sirocco_dns_prepared_responses", &[]), 2.0 * said("distinct responses"), "{zl}");
    assert_eq!(sum(&after, "sirocco_dns_compiled_bytes", &[]), 2.0 * said("bytes compiled"), "{zl}");
    assert_eq!(String::from_utf8_lossy(&other.stdout), "404", "only /metrics");

    // Under load it was counting; it only went up.
    let answered = |s: &Scrape| sum(s, "sirocco_dns_responses_total", &[]);
    assert!(
        answered(&during) > 0.0 && answered(&during) < answered(&after),
        "{} then {}",
        answered(&during),
        answered(&after)
    );
    for (k, v) in &during.0 {
        if k.contains("_total{") || k.contains("_bucket{") {
            assert!(after.0.get(k).is_some_and(|a| a >= v), "{k} went down: {v} then {:?}", after.0.get(k));
        }
    }

    // After the load: the same as the counters at exit.
    let line = log.lines().find(|l| l.starts_with("dns: noerror")).unwrap_or_else(|| panic!("{log}"));
    let field = |name: &str| -> f64 {
        line.split(&format!("{name} ")).nth(1).unwrap().split(' ').next().unwrap().parse().unwrap()
    };
    for (rcode, exit) in [("NOERROR", "noerror"), ("NXDOMAIN", "nxdomain"), ("REFUSED", "refused")] {
        let scraped = sum(&after, "sirocco_dns_responses_total", &[&format!("rcode={rcode}")]);
        assert_eq!(scraped, field(exit), "{rcode}: scraped {scraped}, at exit {line}");
    }
    assert!(field("noerror") > 1000.0 && field("nxdomain") > 500.0, "{line}");
    // The engines' own counters: what arrived after the last scrape is at most the odd ARP
    // or neighbour discovery frame.
    for name in ["rx_packets", "tx_packets", "udp_delivered"] {
        let scraped = sum(&after, &format!("sirocco_engine_{name}_total"), &[]);
        let exit = total(&counters, name) as f64;
        assert!(scraped <= exit && exit - scraped <= 20.0, "{name}: scraped {scraped}, at exit {exit}");
    }
    for q in 0..2 {
        let label = format!("queue={q}");
        let batches = sum(&after, "sirocco_engine_batch_size_count", &[&label]);
        let inf = sum(&after, "sirocco_engine_batch_size_bucket", &[&label, "le=+Inf"]);
        assert_eq!(batches, inf, "the +Inf bucket holds every batch");
        assert!(batches <= engine(&counters, q, "batches") as f64);
    }
    // The AF_XDP port's counters and the kernel's for its socket.
    let kicks = sum(&after, "sirocco_xsk_tx_kicks_total", &[]);
    let exit_kicks = (0..2).map(|q| engine(&counters, q, "tx_kicks")).sum::<u64>() as f64;
    assert!(kicks > 0.0 && kicks <= exit_kicks, "tx kicks: scraped {kicks}, at exit {exit_kicks}");
    assert_eq!(after.1.get("sirocco_xsk_kernel_rx_ring_full").map(String::as_str), Some("counter"));
    let redirected = sum(&after, "sirocco_xdp_filter_packets_total", &["verdict=redirected"]);
    assert!(redirected >= sum(&after, "sirocco_engine_rx_packets_total", &[]) - 20.0, "{redirected}");
}

#[test]
fn web_metrics_count_requests_by_status_and_tcp_as_the_exit_lines_do() {
    let net = TestNet::new(1);
    let s = net.start(&["web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--metrics", "9154"]);
    s.wait_for_log("web on port", Duration::from_secs(10));
    let base = format!("http://{SERVER_OWN}");
    for i in 0..30 {
        let path = if i % 3 == 0 { "/missing" } else { "/hello.txt" };
        let out =
            net.exec(&net.cli_ns, &["curl", "-s", "-o", "/dev/null", "--max-time", "5", &format!("{base}{path}")]);
        assert!(out.status.success(), "curl {path}");
    }
    std::thread::sleep(Duration::from_millis(600));
    let m = scrape(&net.srv_ns, "http://127.0.0.1:9154/metrics");
    let (_, log) = stop_with_log(s);
    let line = log.lines().find(|l| l.starts_with("engine 0 web:")).unwrap_or_else(|| panic!("{log}"));
    let field = |name: &str| -> f64 {
        line.split(&format!("{name} ")).nth(1).unwrap().split(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(sum(&m, "sirocco_http_requests_total", &[]), field("requests"), "{line}");
    assert_eq!(sum(&m, "sirocco_http_responses_total", &["status=200"]), 20.0, "{line}");
    assert_eq!(sum(&m, "sirocco_http_responses_total", &["status=404"]), 10.0, "{line}");
    assert!(line.contains("[200:20 404:10]"), "{line}");
    assert_eq!(sum(&m, "sirocco_http_connections_accepted_total", &[]), field("accepted"));
    assert_eq!(sum(&m, "sirocco_tcp_established_total", &[]), 30.0, "one connection per curl");
    assert_eq!(m.1.get("sirocco_tcp_connections").map(String::as_str), Some("gauge"));
}

#[test]
fn kv_metrics_count_hits_and_misses_as_memcached_stats_does() {
    let net = TestNet::new(1);
    let s = net.start(&["kv", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--metrics", "9155"]);
    s.wait_for_log("memcached protocol on port", Duration::from_secs(10));
    // One hit, two misses, then memcached's own view of them on the same connection.
    let script = format!(
        "import socket\n\
         s = socket.create_connection(('{SERVER_OWN}', 11211), timeout=5)\n\
         def ask(cmd, end):\n\
         \x20   s.sendall(cmd)\n\
         \x20   got = b''\n\
         \x20   while not got.endswith(end): got += s.recv(65536)\n\
         \x20   return got\n\
         ask(b'set k 0 0 1\\r\\nx\\r\\n', b'STORED\\r\\n')\n\
         for key in [b'k', b'nope', b'other']: ask(b'get ' + key + b'\\r\\n', b'END\\r\\n')\n\
         print(ask(b'stats\\r\\n', b'END\\r\\n').decode())\n"
    );
    let out = net.exec(&net.cli_ns, &["/usr/bin/python3", "-c", &script]);
    let stats = String::from_utf8_lossy(&out.stdout).to_string();
    let stat = |name: &str| -> f64 {
        let line = stats.lines().find(|l| l.starts_with(&format!("STAT {name} "))).unwrap_or_else(|| panic!("{stats}"));
        line.split(' ').nth(2).unwrap().trim().parse().unwrap()
    };
    std::thread::sleep(Duration::from_millis(600));
    let m = scrape(&net.srv_ns, "http://127.0.0.1:9155/metrics");
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert_eq!(sum(&m, "sirocco_kv_events_total", &["event=get_hits"]), 1.0);
    assert_eq!(sum(&m, "sirocco_kv_events_total", &["event=get_misses"]), 2.0);
    for name in ["get_hits", "get_misses", "cmd_get", "cmd_set"] {
        assert_eq!(sum(&m, "sirocco_kv_events_total", &[&format!("event={name}")]), stat(name), "{name}");
    }
    assert_eq!(stat("curr_connections"), 1.0, "the client's, while it asked");
    assert_eq!(sum(&m, "sirocco_kv_connections", &[]), 0.0, "closed by the scrape");
    assert_eq!(m.1.get("sirocco_kv_events").map(String::as_str), Some("counter"));
}

#[test]
fn store_metrics_count_commands_and_durable_commits() {
    let net = TestNet::new(1);
    let dir = std::env::temp_dir().join(format!("sirocco-metrics-store-{}", net.name));
    let _ = std::fs::remove_dir_all(&dir);
    let s = net.start(&[
        "store",
        "--iface",
        &net.srv_if,
        "--addr",
        SERVER_OWN,
        "--dir",
        dir.to_str().unwrap(),
        "--metrics",
        "9156",
    ]);
    s.wait_for_log("Redis protocol on port", Duration::from_secs(10));
    let cli = |args: &[&str]| {
        let mut all = vec!["redis-cli", "-h", SERVER_OWN];
        all.extend_from_slice(args);
        String::from_utf8_lossy(&net.exec(&net.cli_ns, &all).stdout).trim().to_string()
    };
    assert_eq!(cli(&["SET", "k", "v"]), "OK");
    assert_eq!(cli(&["GET", "k"]), "v");
    assert_eq!(cli(&["SET", "j", "w"]), "OK");
    std::thread::sleep(Duration::from_millis(600));
    let m = scrape(&net.srv_ns, "http://127.0.0.1:9156/metrics");
    let (st, log) = s.stop();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(st.success(), "{log}");
    assert!(sum(&m, "sirocco_store_commands_total", &[]) >= 3.0, "{:?}", m.0);
    assert_eq!(sum(&m, "sirocco_store_connections_accepted_total", &[]), 3.0, "one per redis-cli");
    let (commits, records) =
        (sum(&m, "sirocco_store_log_commits_total", &[]), sum(&m, "sirocco_store_log_records_total", &[]));
    assert!(
        records == 2.0 && (1.0..=2.0).contains(&commits),
        "two SETs made durable: {records} records in {commits} commits"
    );
}
