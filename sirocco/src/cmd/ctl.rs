//! `sirocco ctl`: the daemon, and its two clients `status` and `revoke`.

use clap::{Args, Subcommand};
use ctl::daemon::{self, Settings};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

const DEFAULT_SOCKET: &str = "/run/sirocco/ctl.sock";

/// `sirocco ctl [--iface IF --config FILE] | status | revoke APP`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CtlCmd {
    #[command(subcommand)]
    sub: Option<CtlSub>,
    #[command(flatten)]
    daemon: DaemonArgs,
}

#[derive(Args)]
struct DaemonArgs {
    /// The interface to share (required to run the daemon).
    #[arg(long, value_name = "IF")]
    iface: Option<String>,
    /// The control socket servers connect to.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// The policy: TOML `[[allow]]` entries saying which users may be granted which
    /// addresses, ports, rates, queues and memory (required: nothing is allowed otherwise).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long)]
    quiet: bool,
    /// Check the policy file (and the interface) and exit, without touching anything.
    #[arg(long)]
    check: bool,
}

#[derive(Subcommand)]
enum CtlSub {
    /// List the grants in force, with their counters.
    Status {
        #[arg(long, value_name = "PATH", default_value = DEFAULT_SOCKET)]
        socket: PathBuf,
        /// Print the daemon's JSON answer as it is.
        #[arg(long)]
        json: bool,
    },
    /// End an application's grant at once (root, or the user holding it).
    Revoke {
        /// The application's name, as `status` shows it.
        app: String,
        #[arg(long, value_name = "PATH", default_value = DEFAULT_SOCKET)]
        socket: PathBuf,
    },
}

pub fn run(c: CtlCmd) -> Result<(), String> {
    match c.sub {
        Some(CtlSub::Status { socket, json }) => status(&socket, json),
        Some(CtlSub::Revoke { app, socket }) => {
            let v = ask(&socket, &json!({ "op": "revoke", "app": app }))?;
            println!("revoked {}", v["revoked"].as_str().unwrap_or(&app));
            Ok(())
        }
        None => {
            let d = c.daemon;
            let iface = d.iface.ok_or("--iface IF is required to run the daemon (or: status, revoke APP)")?;
            let path = d.config.ok_or("--config FILE is required: the policy of who may be granted what")?;
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let policy = ctl::policy::Policy::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            if d.check {
                io::iface::Interface::lookup(&iface).map_err(|e| e.to_string())?;
                println!("sirocco: configuration OK ({}): sirocco ctl on {iface}", path.display());
                return Ok(());
            }
            daemon::run(Settings {
                iface,
                socket: d.socket,
                policy,
                quiet: d.quiet,
                stop: crate::signals::stop_requested,
            })
        }
    }
}

/// One request, one answer; an answer with `"ok": false` is the error.
fn ask(socket: &Path, req: &Value) -> Result<Value, String> {
    let mut s = UnixStream::connect(socket)
        .map_err(|e| format!("cannot reach sirocco ctl at {}: {e} (is the daemon running?)", socket.display()))?;
    s.write_all(format!("{req}\n").as_bytes()).map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line).map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_str(&line).map_err(|_| "sirocco ctl closed the connection without answering")?;
    if v["ok"] != json!(true) {
        return Err(v["error"].as_str().unwrap_or("refused").to_string());
    }
    Ok(v)
}

fn status(socket: &Path, raw: bool) -> Result<(), String> {
    let v = ask(socket, &json!({ "op": "status" }))?;
    if raw {
        println!("{v}");
        return Ok(());
    }
    println!("interface {}, {} ARP requests answered", v["iface"].as_str().unwrap_or("?"), v["arp_answered"]);
    println!(
        "{:<5} {:<16} {:>6} {:<40} {:>3} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "GRANT", "APP", "UID", "FLOW", "Q", "RATE", "RX", "TX", "REFUSED", "LIMITED"
    );
    // A JSON value as plain text (its Display ignores widths, and quotes strings).
    let t = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    for g in v["grants"].as_array().into_iter().flatten() {
        let rate = match (g["pps"].as_u64(), g["bps"].as_u64()) {
            (Some(p), _) => format!("{p} pps"),
            (None, Some(b)) => format!("{b} bps"),
            _ => "-".into(),
        };
        let flows: Vec<String> = g["flows"].as_array().into_iter().flatten().map(t).collect();
        println!(
            "{:<5} {:<16} {:>6} {:<40} {:>3} {:>12} {:>12} {:>12} {:>10} {:>10}",
            t(&g["grant"]),
            t(&g["app"]),
            t(&g["uid"]),
            format!("{} {}", t(&g["addr"]), flows.join(",")),
            t(&g["queues"]),
            rate,
            t(&g["rx"]),
            t(&g["tx"]),
            t(&g["refused"]),
            t(&g["limited"])
        );
    }
    Ok(())
}
