//! `sirocco ss`: the TCP connections of a running sirocco, as `ss -tin` lists the kernel's:
//! state, queues, addresses, and per connection its segment size, windows, RTT, timeout,
//! retransmissions and bytes. Asked over the process's control socket.

use crate::dataplane::control;
use clap::Args;
use serde_json::Value;
use std::path::PathBuf;

#[derive(Args)]
pub struct SsArgs {
    /// The control socket of the sirocco to look at [default: the only one in /run/sirocco].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Only connections in this state (established, syn-recv, fin-wait-1, close-wait, ...).
    #[arg(long, value_name = "STATE")]
    pub state: Option<String>,
    /// Only connections with this port, ours or the peer's.
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Only connections with this peer address.
    #[arg(long, value_name = "ADDR")]
    pub peer: Option<std::net::IpAddr>,
    /// Print the connections as JSON, one object per line.
    #[arg(long)]
    pub json: bool,
}

/// `ss`'s name of a state.
fn state_name(s: &str) -> &'static str {
    match s {
        "SynSent" => "SYN-SENT",
        "SynReceived" => "SYN-RECV",
        "Established" => "ESTAB",
        "FinWait1" => "FIN-WAIT-1",
        "FinWait2" => "FIN-WAIT-2",
        "CloseWait" => "CLOSE-WAIT",
        "Closing" => "CLOSING",
        "LastAck" => "LAST-ACK",
        "TimeWait" => "TIME-WAIT",
        _ => "CLOSED",
    }
}

/// A state as given on the command line or named by `ss`, for comparing.
fn squash(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase()
}

/// The port of an `ADDR:PORT` or `[ADDR6]:PORT` text.
fn port_of(a: &str) -> Option<u16> {
    a.rsplit_once(':')?.1.parse().ok()
}

/// The address of an `ADDR:PORT` or `[ADDR6]:PORT` text.
fn addr_of(a: &str) -> Option<std::net::IpAddr> {
    a.rsplit_once(':')?.0.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

pub fn run(a: SsArgs) -> Result<(), String> {
    let path = control::find(a.socket.clone())?;
    let conns = control::ask(&path, "conns")?;
    let list = conns.as_array().ok_or("a bad answer: not a list")?;
    let want_state = a.state.as_deref().map(squash);
    if let Some(w) = &want_state {
        let known =
            ["synsent", "synrecv", "estab", "established", "finwait1", "finwait2", "closewait", "closing", "lastack"];
        if !known.contains(&w.as_str()) {
            return Err(format!(
                "--state {:?}: not a TCP state (established, syn-recv, fin-wait-1, ...)",
                a.state.unwrap_or_default()
            ));
        }
    }
    let keep = |c: &Value| -> bool {
        let s = c["state"].as_str().unwrap_or_default();
        let (local, remote) = (c["local"].as_str().unwrap_or_default(), c["remote"].as_str().unwrap_or_default());
        let state_ok = want_state.as_ref().is_none_or(|w| {
            let name = squash(state_name(s));
            *w == name || *w == squash(s)
        });
        let port_ok = a.port.is_none_or(|p| port_of(local) == Some(p) || port_of(remote) == Some(p));
        let peer_ok = a.peer.is_none_or(|p| addr_of(remote) == Some(p));
        state_ok && port_ok && peer_ok
    };
    if a.json {
        for c in list.iter().filter(|c| keep(c)) {
            println!("{c}");
        }
        return Ok(());
    }
    println!(
        "{:<11} {:>7} {:>7} {:>45} {:>45} {:>6}",
        "State", "Recv-Q", "Send-Q", "Local Address:Port", "Peer Address:Port", "Engine"
    );
    for c in list {
        if let Some(e) = c.get("error").and_then(Value::as_str) {
            eprintln!("sirocco ss: engine {}: {e}", c["queue"]);
            continue;
        }
        if !keep(c) {
            continue;
        }
        let n = |k: &str| c[k].as_u64().unwrap_or(0);
        println!(
            "{:<11} {:>7} {:>7} {:>45} {:>45} {:>6}",
            state_name(c["state"].as_str().unwrap_or_default()),
            n("held"),
            n("unacked"),
            c["local"].as_str().unwrap_or_default(),
            c["remote"].as_str().unwrap_or_default(),
            format!("q{}", n("queue"))
        );
        let rtt = match c["rtt_us"].as_u64() {
            Some(r) => format!("rtt:{:.3}/{:.3}", r as f64 / 1000.0, n("rttvar_us") as f64 / 1000.0),
            None => "rtt:-".into(),
        };
        println!(
            "\t mss:{} cwnd:{} {rtt} rto:{} snd_wnd:{} rcv_wnd:{} bytes_sent:{} bytes_acked:{} bytes_received:{} retrans:{} unacked:{}",
            n("mss"),
            n("cwnd"),
            n("rto_ms"),
            n("snd_wnd"),
            n("rcv_wnd"),
            n("bytes_sent"),
            n("bytes_acked"),
            n("bytes_received"),
            n("retrans"),
            n("unacked")
        );
    }
    Ok(())
}
