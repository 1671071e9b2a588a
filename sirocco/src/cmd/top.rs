//! `sirocco top`: a running sirocco's engines live — per engine the frames received and sent
//! per second, the mean receive batch, drops per second, its thread's share of a CPU and
//! its TCP connections; then the application's busiest counters per second. Refreshed every
//! interval from the process's control socket, in the terminal (or as plain frames when
//! the output is not one).

use crate::dataplane::control;
use crate::signals;
use clap::Args;
use serde_json::Value;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct TopArgs {
    /// The control socket of the sirocco to watch [default: the only one in /run/sirocco].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Seconds between refreshes.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub interval: f64,
    /// Stop after this many refreshes [default: until interrupted].
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
}

/// A number of the engine's counters (0 if absent: zero drops are left out).
fn counter(e: &Value, name: &str) -> u64 {
    e["counters"][name].as_u64().unwrap_or(0)
}

fn drops(e: &Value) -> u64 {
    e["counters"]
        .as_object()
        .map_or(0, |m| m.iter().filter(|(k, _)| k.starts_with("drop_")).map(|(_, v)| v.as_u64().unwrap_or(0)).sum())
}

/// One frame of the view: `now` and the sample before it, `dt` seconds apart.
fn frame(now: &Value, before: &Value, dt: f64, interval: f64) -> String {
    let mut out = String::new();
    let up = now["uptime_ms"].as_u64().unwrap_or(0) / 1000;
    let _ = writeln!(
        out,
        "sirocco top: {} (pid {}), up {up} s, every {interval} s",
        now["what"].as_str().unwrap_or("?"),
        now["pid"]
    );
    let _ = writeln!(
        out,
        "{:<7} {:>11} {:>11} {:>7} {:>9} {:>6} {:>10}",
        "engine", "rx/s", "tx/s", "batch", "drops/s", "cpu%", "tcp conns"
    );
    let empty = Vec::new();
    let (engines, prev) = (now["engines"].as_array().unwrap_or(&empty), before["engines"].as_array().unwrap_or(&empty));
    let rate = |a: u64, b: u64| a.saturating_sub(b) as f64 / dt;
    let mut totals = [0.0f64; 3];
    for (e, p) in engines.iter().zip(prev) {
        let (rx, tx) = (
            rate(counter(e, "rx_packets"), counter(p, "rx_packets")),
            rate(counter(e, "tx_packets"), counter(p, "tx_packets")),
        );
        let batches = counter(e, "batches").saturating_sub(counter(p, "batches"));
        let batch = if batches > 0 {
            (counter(e, "rx_packets") - counter(p, "rx_packets")) as f64 / batches as f64
        } else {
            0.0
        };
        let cpu = match (e["cpu_ns"].as_u64(), p["cpu_ns"].as_u64()) {
            (Some(a), Some(b)) => format!("{:.1}", a.saturating_sub(b) as f64 / 1e9 / dt * 100.0),
            _ => "-".into(),
        };
        let conns = e["app"]["sirocco_tcp_connections"].as_u64().map_or("-".to_string(), |c| c.to_string());
        let d = rate(drops(e), drops(p));
        totals[0] += rx;
        totals[1] += tx;
        totals[2] += d;
        let _ = writeln!(
            out,
            "{:<7} {:>11.0} {:>11.0} {:>7.1} {:>9.0} {:>6} {:>10}",
            format!("q{}", e["queue"]),
            rx,
            tx,
            batch,
            d,
            cpu,
            conns
        );
    }
    if engines.len() > 1 {
        let _ = writeln!(out, "{:<7} {:>11.0} {:>11.0} {:>7} {:>9.0}", "total", totals[0], totals[1], "", totals[2]);
    }
    if let Some((r, p)) = now["filter"]["redirected"].as_u64().zip(now["filter"]["passed"].as_u64()) {
        let (r0, p0) =
            (before["filter"]["redirected"].as_u64().unwrap_or(r), before["filter"]["passed"].as_u64().unwrap_or(p));
        let _ = writeln!(out, "xdp filter: {:.0}/s to sirocco, {:.0}/s to the kernel", rate(r, r0), rate(p, p0));
    }
    // The application's counters summed over engines, the busiest first.
    let mut app: Vec<(String, f64, u64)> = Vec::new();
    let sum = |engines: &[Value], key: &str| engines.iter().map(|e| e["app"][key].as_u64().unwrap_or(0)).sum::<u64>();
    if let Some(first) = engines.first().and_then(|e| e["app"].as_object()) {
        for key in first.keys().filter(|k| k.contains("_total")) {
            let total = sum(engines, key);
            if total > 0 {
                app.push((key.clone(), rate(total, sum(prev, key)), total));
            }
        }
    }
    app.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.2.cmp(&a.2)));
    if !app.is_empty() {
        let _ = writeln!(out, "\n{:<60} {:>11} {:>14}", "application", "per second", "total");
        for (k, r, t) in app.iter().take(14) {
            let _ = writeln!(out, "{k:<60} {r:>11.0} {t:>14}");
        }
    }
    out
}

pub fn run(a: TopArgs) -> Result<(), String> {
    if !(a.interval.is_finite() && (0.1..=3600.0).contains(&a.interval)) {
        return Err("--interval must be between 0.1 and 3600 seconds".into());
    }
    let path = control::find(a.socket.clone())?;
    let tty = std::io::stdout().is_terminal();
    let mut before = control::ask(&path, "stats")?;
    let mut at = Instant::now();
    let mut shown = 0u64;
    while a.count.is_none_or(|n| shown < n) && !signals::stop_requested() {
        let wake = at + Duration::from_secs_f64(a.interval);
        while Instant::now() < wake && !signals::stop_requested() {
            std::thread::sleep(Duration::from_millis(50));
        }
        let now = match control::ask(&path, "stats") {
            Ok(v) => v,
            // The server stopped: say so and end, as top does when its process goes.
            Err(e) => return Err(format!("the server went away: {e}")),
        };
        let dt = at.elapsed().as_secs_f64();
        at = Instant::now();
        let text = frame(&now, &before, dt, a.interval);
        let mut stdout = std::io::stdout().lock();
        if tty {
            // Home and clear, then the frame: the view stays in place.
            let _ = write!(stdout, "\x1b[H\x1b[2J{text}");
        } else {
            let _ = writeln!(stdout, "{text}");
        }
        let _ = stdout.flush();
        before = now;
        shown += 1;
    }
    Ok(())
}
