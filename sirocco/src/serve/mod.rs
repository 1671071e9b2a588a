//! The skeleton every server command shares: the same options ([`ServeArgs`]), a config file
//! whose common keys merge under the command line's ([`config`]), `--duration`, SIGHUP reload
//! ([`reload`]), and the counters printed and written at exit. A server's command file adds
//! only its own options, its application, and its summary lines.

pub mod config;
pub mod options;
pub mod reload;

use crate::dataplane::{self, report, DataplaneArgs, Grant, Options, Outcome, Until};
use clap::Args;
use engine::Service;
pub use reload::Reload;
use reload::Reloader;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The options of every server command.
#[derive(Args, Clone)]
pub struct ServeArgs {
    #[command(flatten)]
    pub dp: DataplaneArgs,
    /// TOML config file: `iface`, `addr`, `queues`, `cpus`, `port`, `metrics`, and the server's own keys
    /// (named as its options, with `_` for `-`); command-line options override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Port to serve [default: the server's own: echo 7, dns 53, web 80, kv 11211].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// Stop after this many seconds [default: run until SIGINT/SIGTERM].
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Check the configuration — options, config file, the server's content (zones
    /// compiled, document root and certificates loaded) and the interface — then exit
    /// without touching the interface, as `nginx -t` does. Needs no privileges.
    #[arg(long)]
    pub check: bool,
}

/// A server ready to run: where and how long, and its own part of the config file.
pub struct Serve<C> {
    /// The dataplane's options (command line over config file).
    pub opts: Options,
    /// The port served.
    pub port: u16,
    /// The server's own config keys (defaults without a file).
    pub own: C,
    /// The config file, if any (a relative path in it is relative to its folder).
    pub config: Option<PathBuf>,
    until: Until,
    counters: Option<PathBuf>,
    check: bool,
}

/// What a server does without being told: its port, and how it idles (`--idle-spins`).
#[derive(Clone, Copy)]
pub struct Defaults {
    /// The port served without `--port` or `port`.
    pub port: u16,
    /// Empty polls before sleeping.
    pub idle_spins: u32,
}

impl ServeArgs {
    /// Reads the config file (if any) and merges it under the command line.
    pub fn setup<C: DeserializeOwned + Default>(&self, d: Defaults) -> Result<Serve<C>, String> {
        let until = match self.duration {
            Some(s) => Until::Elapsed(secs(s, "--duration")?),
            None => Until::Signal,
        };
        let file = self.config.as_deref().map(config::read::<C>).transpose()?;
        let (common, own) = file.map(|f| (f.common, f.own)).unwrap_or_default();
        let mut dp = self.dp.clone();
        dp.iface = dp.iface.or(common.iface);
        if dp.addr.is_empty() {
            dp.addr = common.addr.map(config::Addrs::list).unwrap_or_default();
        }
        dp.queues = dp.queues.or(common.queues);
        dp.cpus = dp.cpus.or(common.cpus);
        dp.metrics = dp.metrics.or(common.metrics);
        dp.busy_poll = dp.busy_poll.or(common.busy_poll);
        let port = self.port.or(common.port).unwrap_or(d.port);
        if port == 0 {
            return Err("port must be 1..65535".into());
        }
        let opts = dp.options(false, d.idle_spins)?;
        if opts.ctl.is_none() && !self.check {
            // This process will load the XDP filter: its loader is made while the server
            // loads what it serves.
            io::filter::prepare();
        }
        Ok(Serve {
            opts,
            port,
            own,
            config: self.config.clone(),
            until,
            counters: self.dp.counters.clone(),
            check: self.check,
        })
    }
}

impl<C> Serve<C> {
    /// Whether `--check` was given (the command must then change nothing).
    pub fn checking(&self) -> bool {
        self.check
    }

    /// With `--check`: checks what is left to check (the interface and its queues), says the
    /// configuration is good (`what` is what would be served) and returns true: the command
    /// then exits. Without it, false.
    pub fn check_only(&self, what: &str) -> Result<bool, String> {
        if !self.check {
            return Ok(false);
        }
        if self.opts.ctl.is_none() {
            let ifc = io::iface::Interface::lookup(&self.opts.iface).map_err(|e| e.to_string())?;
            if let Some(q) = self.opts.queues.filter(|&q| q == 0 || q > ifc.rx_queues) {
                return Err(format!("--queues {q}: {} has {} receive queue(s)", ifc.name, ifc.rx_queues));
            }
        }
        let from = self.config.as_ref().map(|c| format!(" ({})", c.display())).unwrap_or_default();
        println!("sirocco: configuration OK{from}: {what} on {}", self.opts.iface);
        Ok(true)
    }

    /// Runs `make(queue)` on every engine until it is time to stop; with `reload`, SIGHUP
    /// calls it on a thread of its own (`what` names the state it reloads). Prints the
    /// counters and writes them with `--counters`; the caller prints its summary after.
    pub fn run<A, F>(self, what: &str, grants: &[Grant], make: F, reload: Option<Reload>) -> Result<Outcome<A>, String>
    where
        A: Service + Send + 'static,
        F: FnMut(u32) -> A,
    {
        let reloader = reload.map(Reloader::start).transpose()?;
        let out = dataplane::run(&self.opts, grants, make, self.until, what);
        if let Some(r) = reloader {
            r.stop();
        }
        let out = out?;
        report::print_counters(&out);
        if let Some(p) = &self.counters {
            report::write_counters_json(&out, p)?;
        }
        Ok(out)
    }
}

/// `p` relative to the folder of `config` (when there is a config and `p` is relative).
pub fn relative_to(config: Option<&Path>, p: &Path) -> PathBuf {
    match config.and_then(Path::parent) {
        Some(base) if p.is_relative() => base.join(p),
        _ => p.to_path_buf(),
    }
}

/// A number of seconds from the command line or a config file.
pub fn secs(v: f64, what: &str) -> Result<Duration, String> {
    if v.is_finite() && (0.0..=86_400.0 * 365.0).contains(&v) {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(format!("{what} must be a number of seconds between 0 and a year"))
    }
}
