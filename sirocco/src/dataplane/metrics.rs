//! `--metrics ADDR:PORT`: the counters of every engine, of the XDP filter and of the
//! application, served in Prometheus' text exposition format (version 0.0.4) over HTTP on a
//! kernel socket — loopback unless told otherwise — by the thread that watches the engines.
//! What is served is what the engines last published (a few times a second).

use engine::metrics::{Kind, Sample};
use engine::{Counters, DropReason, Samples};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Where to serve: `PORT` (on 127.0.0.1), `ADDR:PORT` or `[ADDR6]:PORT`.
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse::<SocketAddr>().map_err(|_| format!("--metrics {s:?}: not PORT, ADDR:PORT or [ADDR]:PORT"))
}

/// The metrics endpoint.
pub struct Endpoint {
    listener: TcpListener,
    /// What runs (the build info's `command` label).
    what: String,
    started: Instant,
}

/// What the endpoint reports on: per engine its counters and its application's, and the
/// filter's verdicts.
pub struct Sources {
    /// Per engine, in queue order.
    pub engines: Vec<(Counters, Samples)>,
    /// Packets the XDP filter redirected to sirocco and passed to the kernel, if it is ours.
    pub filter: Option<(u64, u64)>,
    /// The engines busy-poll their queues.
    pub busy_poll: bool,
}

impl Endpoint {
    /// Listens on `addr`; `what` says what runs ("dns on port 53").
    pub fn bind(addr: SocketAddr, what: &str) -> Result<Endpoint, String> {
        let listener = TcpListener::bind(addr).map_err(|e| format!("--metrics {addr}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| format!("--metrics {addr}: {e}"))?;
        Ok(Endpoint { listener, what: what.to_string(), started: Instant::now() })
    }

    /// The listening socket, for the watching loop to sleep on.
    pub fn fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.listener)
    }

    /// The address listened on.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Answers the scrapes waiting, if any, with what `sources` gives (called only when a
    /// scrape is waiting).
    pub fn poll(&self, sources: &mut dyn FnMut() -> Sources) {
        // A bounded number per call: the watching loop has other work.
        for _ in 0..8 {
            let Ok((stream, _)) = self.listener.accept() else { return };
            let body = render(&sources(), &self.what, self.started.elapsed());
            answer(stream, &body);
        }
    }
}

/// Reads the request (bounded in size and time) and answers it.
fn answer(mut s: TcpStream, body: &str) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let _ = s.set_write_timeout(Some(Duration::from_millis(500)));
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 8192 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&req[..req.iter().position(|&b| b == b'\r').unwrap_or(req.len())]).to_string();
    let mut parts = line.split(' ');
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, ctype, text) = match (method, path.split('?').next().unwrap_or("")) {
        ("GET", "/metrics") => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body),
        ("GET", _) => ("404 Not Found", "text/plain", "the metrics are at /metrics\n"),
        _ => ("405 Method Not Allowed", "text/plain", "GET /metrics\n"),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    );
    let _ = s.write_all(head.as_bytes()).and_then(|_| s.write_all(text.as_bytes()));
}

/// One metric family being written: its samples must stand together.
struct Family {
    name: String,
    help: &'static str,
    kind: &'static str,
    lines: String,
}

/// The families in the order first seen.
#[derive(Default)]
struct Families(Vec<Family>);

impl Families {
    fn add(&mut self, name: &str, help: &'static str, kind: &'static str, labels: &str, value: u64) {
        self.add_to(name, help, kind, name, labels, value);
    }

    /// A sample called `sample` of the family `name` (a histogram's `_bucket`, `_sum`, `_count`).
    fn add_to(&mut self, name: &str, help: &'static str, kind: &'static str, sample: &str, labels: &str, value: u64) {
        let i = match self.0.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                self.0.push(Family { name: name.to_string(), help, kind, lines: String::new() });
                self.0.len() - 1
            }
        };
        let f = &mut self.0[i];
        let _ = writeln!(f.lines, "{sample}{labels} {value}");
    }

    fn text(&self) -> String {
        let mut out = String::new();
        for f in &self.0 {
            let _ = write!(out, "# HELP {} {}\n# TYPE {} {}\n{}", f.name, f.help, f.name, f.kind, f.lines);
        }
        out
    }
}

/// What an engine counter counts, for its HELP line.
fn engine_help(name: &str) -> &'static str {
    match name {
        "rx_packets" => "Frames received.",
        "rx_bytes" => "Bytes received.",
        "tx_packets" => "Frames sent.",
        "tx_bytes" => "Bytes sent.",
        "loops" => "Engine loop iterations.",
        "sleeps" => "Times the engine slept in poll() for want of work.",
        "yields" => "Times the engine yielded its CPU between empty polls.",
        "arp_replies" => "ARP replies sent.",
        "arp_requests" => "ARP requests sent.",
        "icmp_echo" => "ICMP echo requests answered.",
        "icmpv6_echo" => "ICMPv6 echo requests answered.",
        "nd_replies" => "Neighbour advertisements sent.",
        "nd_requests" => "Neighbour solicitations sent.",
        "nd_learned" => "Neighbours learned.",
        "icmp_too_big" => "ICMP fragmentation-needed and packet-too-big messages taken.",
        "udp_delivered" => "UDP datagrams given to the application.",
        "udp_replies" => "UDP replies the application answered in place.",
        "udp_consumed" => "UDP datagrams the application took without a reply.",
        "tcp_delivered" => "TCP segments given to the application's endpoint.",
        "tcp_strays_out" => "TCP segments of connections another engine holds, handed to the next engine.",
        "tcp_strays_in" => "TCP segments handed over by the previous engine and taken here.",
        "tcp_strays_lost" => "TCP segments for another engine lost to a full inbox.",
        "tcp_sent" => "TCP segments sent.",
        "tx_gathered" => "TCP segments sent with payload gathered from a lent buffer.",
        "capture_dropped" => "Frames the capture could not keep up with.",
        _ => "An engine counter.",
    }
}

/// The exposition text.
fn render(src: &Sources, what: &str, up: Duration) -> String {
    let mut f = Families::default();
    let version = env!("CARGO_PKG_VERSION");
    let what = what.replace('\\', "\\\\").replace('"', "\\\"");
    f.add(
        "sirocco_build_info",
        "The running sirocco: its version and what it serves.",
        "gauge",
        &format!("{{version=\"{version}\",command=\"{what}\"}}"),
        1,
    );
    f.add("sirocco_uptime_seconds", "Seconds since the engines started.", "gauge", "", up.as_secs());
    f.add("sirocco_engines", "Engines (one per NIC queue served).", "gauge", "", src.engines.len() as u64);
    let busy = "1 when the engines busy-poll their queues (--busy-poll), 0 when they sleep and wake per batch.";
    f.add("sirocco_busy_poll", busy, "gauge", "", u64::from(src.busy_poll));
    if let Some((redirected, passed)) = src.filter {
        let name = "sirocco_xdp_filter_packets_total";
        let help = "Packets the XDP filter redirected to sirocco or passed to the kernel.";
        f.add(name, help, "counter", "{verdict=\"redirected\"}", redirected);
        f.add(name, help, "counter", "{verdict=\"passed\"}", passed);
    }
    for (q, (c, _)) in src.engines.iter().enumerate() {
        let queue = format!("{{queue=\"{q}\"}}");
        for (k, v) in c.pairs() {
            if k.starts_with("batch_") || k.starts_with("drop_") {
                continue;
            }
            f.add(&format!("sirocco_engine_{k}_total"), engine_help(&k), "counter", &queue, v);
        }
        for d in DropReason::ALL {
            let labels = format!("{{queue=\"{q}\",reason=\"{}\"}}", d.name());
            f.add("sirocco_engine_drops_total", "Frames dropped, by reason.", "counter", &labels, c.dropped(d));
        }
        // The receive batch sizes as a histogram: bucket i holds sizes 2^i .. 2^(i+1)-1.
        let name = "sirocco_engine_batch_size";
        let help = "Frames taken per receive batch.";
        let mut cumulative = 0;
        for (i, n) in c.batch_hist.iter().enumerate() {
            cumulative += n;
            let le = if i + 1 == c.batch_hist.len() { "+Inf".to_string() } else { ((2u64 << i) - 1).to_string() };
            let labels = format!("{{queue=\"{q}\",le=\"{le}\"}}");
            f.add_to(name, help, "histogram", &format!("{name}_bucket"), &labels, cumulative);
        }
        f.add_to(name, help, "histogram", &format!("{name}_sum"), &queue, c.rx_packets);
        f.add_to(name, help, "histogram", &format!("{name}_count"), &queue, c.batches);
    }
    for (q, (_, samples)) in src.engines.iter().enumerate() {
        for s in samples.iter() {
            app_sample(&mut f, q, s);
        }
    }
    f.text()
}

fn app_sample(f: &mut Families, q: usize, s: &Sample) {
    let labels = match s.label {
        Some((k, v)) => format!("{{queue=\"{q}\",{k}=\"{v}\"}}"),
        None => format!("{{queue=\"{q}\"}}"),
    };
    let kind = match s.kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
    };
    f.add(s.name, s.help, kind, &labels, s.value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback() {
        assert_eq!(parse_addr("9153").unwrap(), "127.0.0.1:9153".parse().unwrap());
        assert_eq!(parse_addr("198.18.0.10:9153").unwrap(), "198.18.0.10:9153".parse().unwrap());
        assert_eq!(parse_addr("[::1]:9153").unwrap(), "[::1]:9153".parse().unwrap());
        assert!(parse_addr("localhost").is_err() && parse_addr("1.2.3.4").is_err());
    }

    #[test]
    fn families_stand_together_with_one_help_and_type() {
        let mut c = Counters { rx_packets: 10, batches: 3, ..Counters::default() };
        c.batch_hist[0] = 1;
        c.batch_hist[2] = 2;
        let mut s = Samples::default();
        s.counter_with("sirocco_dns_responses_total", "Responses.", ("rcode", "NOERROR"), 7);
        let src = Sources { engines: vec![(c, s.clone()), (c, s)], filter: Some((5, 6)), busy_poll: false };
        let text = render(&src, "dns on port 53", Duration::from_secs(3));
        let types: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
        let mut names: Vec<&str> = types.iter().map(|l| l.split(' ').nth(2).unwrap()).collect();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "one TYPE per family: {types:?}");
        assert!(text.contains("sirocco_dns_responses_total{queue=\"1\",rcode=\"NOERROR\"} 7"));
        assert!(text.contains("sirocco_engine_batch_size_bucket{queue=\"0\",le=\"3\"} 1"));
        assert!(text.contains("sirocco_engine_batch_size_bucket{queue=\"0\",le=\"7\"} 3"));
        assert!(text.contains("sirocco_engine_batch_size_bucket{queue=\"0\",le=\"+Inf\"} 3"));
        assert!(text.contains("sirocco_engine_batch_size_count{queue=\"1\"} 3"));
        assert!(text.contains("sirocco_xdp_filter_packets_total{verdict=\"passed\"} 6"));
        assert!(text.contains("# TYPE sirocco_engine_batch_size histogram"));
    }
}
