//! INFO and CONFIG GET, with Redis's field names where a field means what Redis's does.

use super::{unix_ms, Shared, REDIS_VERSION};
use crate::command::{names, Call, Info};
use crate::keyspace::{Databases, Keyspace};
use std::fmt::Write;
use std::sync::atomic::Ordering;

/// The server's state, as engine `.1` sees it.
pub(super) struct InfoOf<'a>(pub &'a Shared, pub usize);

/// Sections in Redis's order, and whether `INFO` with no argument shows them.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("commandstats", false),
    ("keyspace", true),
];

impl Info for InfoOf<'_> {
    fn password(&self) -> Option<&[u8]> {
        self.0.requirepass.as_deref()
    }

    fn feed(&self) -> Option<&crate::repl::feed::Feed> {
        Some(&self.0.feed)
    }

    fn clients(&self) -> Vec<std::sync::Arc<crate::session::ClientView>> {
        self.0.clients.lock().map(|c| c.values().cloned().collect()).unwrap_or_default()
    }

    fn killed_some(&self) {
        self.0.kills.fetch_add(1, Ordering::Release);
    }

    fn databases(&self) -> Option<&Databases> {
        Some(&self.0.dbs)
    }

    fn upstream(&self) -> Option<crate::repl::follow::LinkState> {
        self.0.upstream.as_ref().map(|u| u.state())
    }

    fn count(&self, cmd: usize, usec: u64, call: Call) {
        let Some(c) = self.0.engines.get(self.1).and_then(|e| e.cmds.get(cmd)) else { return };
        match call {
            Call::Rejected => super::bump(&c.rejected, 1),
            Call::Done | Call::Failed => {
                super::bump(&c.calls, 1);
                super::bump(&c.usec, usec);
                if call == Call::Failed {
                    super::bump(&c.failed, 1);
                }
            }
        }
    }

    fn info(&self, _ks: &Keyspace, sections: &[String]) -> String {
        let s = self.0;
        let default = sections.is_empty() || sections.iter().any(|x| x == "default");
        let all = sections.iter().any(|x| x == "all" || x == "everything");
        let want = |entry: &&(&str, bool)| {
            let (name, dflt) = **entry;
            all || (default && dflt) || sections.iter().any(|x| x == name)
        };
        let sum = |f: fn(&super::EngineStats) -> u64| s.engines.iter().map(f).sum::<u64>();
        let mut t = String::new();
        for (name, _) in SECTIONS.iter().filter(want) {
            if !t.is_empty() {
                t.push_str("\r\n");
            }
            match *name {
                "server" => {
                    let up = (unix_ms() / 1000 - s.started).max(0);
                    let _ = write!(
                        t,
                        "# Server\r\nredis_version:{REDIS_VERSION}\r\nsirocco_version:{}\r\nredis_mode:standalone\r\n\
                         os:Linux\r\narch_bits:64\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{up}\r\n\
                         uptime_in_days:{}\r\nexecutable:sirocco store\r\n",
                        env!("CARGO_PKG_VERSION"),
                        std::process::id(),
                        s.port,
                        up / 86_400
                    );
                }
                "clients" => {
                    let open: i64 = s.engines.iter().map(|e| e.open.load(Ordering::Relaxed)).sum();
                    let _ =
                        write!(t, "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n", open.max(0), s.max_conns);
                }
                "persistence" => {
                    let _ = write!(
                        t,
                        "# Persistence\r\nloading:0\r\naof_enabled:1\r\naof_rewrite_in_progress:{}\r\n\
                         aof_rewrites:{}\r\naof_last_write_status:ok\r\nappendfsync:always\r\nlog_commits:{}\r\n\
                         log_records:{}\r\nlog_bytes:{}\r\nlast_durable_change:{}\r\n",
                        u8::from(s.gens.running()),
                        s.gens.done.load(Ordering::Relaxed),
                        sum(|e| e.commits.load(Ordering::Relaxed)),
                        sum(|e| e.records.load(Ordering::Relaxed)),
                        sum(|e| e.log_bytes.load(Ordering::Relaxed)),
                        s.order.durable()
                    );
                }
                "stats" => {
                    let _ = write!(
                        t,
                        "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
                         rejected_connections:{}\r\nsync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\n\
                         expired_keys:{}\r\n",
                        sum(|e| e.connections.load(Ordering::Relaxed)),
                        sum(|e| e.commands.load(Ordering::Relaxed)),
                        sum(|e| e.rejected.load(Ordering::Relaxed)),
                        s.feed.syncs.full.load(Ordering::Relaxed),
                        s.feed.syncs.partial_ok.load(Ordering::Relaxed),
                        s.feed.syncs.partial_err.load(Ordering::Relaxed),
                        sum(|e| e.expired.load(Ordering::Relaxed)),
                    );
                }
                "memory" => {
                    // No allocator statistics: the process's resident memory stands for both.
                    let rss = resident_bytes();
                    let _ = write!(
                        t,
                        "# Memory\r\nused_memory:{rss}\r\nused_memory_human:{:.2}M\r\nused_memory_rss:{rss}\r\n\
                         maxmemory:0\r\nmaxmemory_human:0B\r\nmaxmemory_policy:noeviction\r\n",
                        rss as f64 / (1 << 20) as f64
                    );
                }
                "replication" => match &s.upstream {
                    Some(u) => replica_of(&u.state(), &s.feed, &mut t),
                    None => replication(&s.feed, &mut t),
                },
                "cpu" => {
                    let (user, sys, cuser, csys, muser, msys) = cpu_seconds();
                    let _ = write!(
                        t,
                        "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:{csys:.6}\r\n\
                         used_cpu_user_children:{cuser:.6}\r\nused_cpu_sys_main_thread:{msys:.6}\r\n\
                         used_cpu_user_main_thread:{muser:.6}\r\n"
                    );
                }
                "commandstats" => {
                    t.push_str("# Commandstats\r\n");
                    for (i, name) in names().enumerate() {
                        let get = |f: fn(&super::CmdCounts) -> &std::sync::atomic::AtomicU64| {
                            s.engines.iter().map(|e| f(&e.cmds[i]).load(Ordering::Relaxed)).sum::<u64>()
                        };
                        let (calls, usec) = (get(|c| &c.calls), get(|c| &c.usec));
                        let (rejected, failed) = (get(|c| &c.rejected), get(|c| &c.failed));
                        if calls + rejected == 0 {
                            continue;
                        }
                        let per = if calls > 0 { usec as f64 / calls as f64 } else { 0.0 };
                        let _ = write!(
                            t,
                            "cmdstat_{name}:calls={calls},usec={usec},usec_per_call={per:.2},\
                             rejected_calls={rejected},failed_calls={failed}\r\n"
                        );
                    }
                }
                _ => {
                    t.push_str("# Keyspace\r\n");
                    for db in s.dbs.iter() {
                        let keys = db.len();
                        if keys > 0 {
                            let _ =
                                write!(t, "db{}:keys={keys},expires={},avg_ttl=0\r\n", db.index(), db.with_expiry());
                        }
                    }
                }
            }
        }
        t
    }

    fn config(&self) -> Vec<(&'static str, String)> {
        let s = self.0;
        vec![
            ("appendonly", "yes".into()),
            ("appendfsync", "always".into()),
            ("save", String::new()),
            ("databases", s.dbs.len().to_string()),
            ("port", s.port.to_string()),
            ("dir", s.dir.display().to_string()),
            ("maxclients", s.max_conns.to_string()),
            ("maxmemory", "0".into()),
            ("proto-max-bulk-len", resp::request::REDIS_MAX_BULK.to_string()),
            ("timeout", "0".into()),
            (
                "requirepass",
                s.requirepass.as_deref().map(|p| String::from_utf8_lossy(p).into_owned()).unwrap_or_default(),
            ),
        ]
    }
}

/// CPU seconds from /proc (user, system) of the process, of its waited-for children, and
/// of its main thread, as Redis's INFO cpu reports them from getrusage.
fn cpu_seconds() -> (f64, f64, f64, f64, f64, f64) {
    // Fields after the command name (which may hold spaces) start after the last ')'; utime
    // is the 14th field, so the 12th after it.
    let ticks = |path: &str| -> [f64; 4] {
        let stat = std::fs::read_to_string(path).unwrap_or_default();
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<f64> = rest.split_whitespace().skip(11).take(4).map(|v| v.parse().unwrap_or(0.0) / 100.0).collect();
        let g = |i: usize| f.get(i).copied().unwrap_or(0.0);
        [g(0), g(1), g(2), g(3)]
    };
    let p = ticks("/proc/self/stat");
    let m = ticks(&format!("/proc/self/task/{}/stat", std::process::id()));
    (p[0], p[1], p[2], p[3], m[0], m[1])
}

/// The process's resident memory in bytes (/proc/self/statm), 0 if unknown.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// INFO replication, as a Redis primary writes it.
fn replication(feed: &crate::repl::feed::Feed, t: &mut String) {
    let replicas = feed.replicas();
    let now = unix_ms();
    let _ = write!(t, "# Replication\r\nrole:master\r\nconnected_slaves:{}\r\n", replicas.len());
    for (i, r) in replicas.iter().enumerate() {
        let state = if r.online { "online" } else { "wait_bgsave" };
        let lag = (now - r.ack_ms).max(0) / 1000;
        let _ = write!(t, "slave{i}:ip={},port={},state={state},offset={},lag={lag}\r\n", r.ip, r.port, r.ack);
    }
    let total = feed.total();
    let start = feed.backlog_start();
    let active = u8::from(feed.is_active());
    let _ = write!(
        t,
        "master_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\nmaster_repl_offset:{total}\r\n\
         second_repl_offset:-1\r\nrepl_backlog_active:{active}\r\nrepl_backlog_size:{}\r\n\
         repl_backlog_first_byte_offset:{}\r\nrepl_backlog_histlen:{}\r\n",
        feed.replid(),
        "0".repeat(40),
        feed.capacity(),
        start + 1,
        total - start
    );
}

/// INFO replication, as a Redis replica writes it.
fn replica_of(l: &crate::repl::follow::LinkState, feed: &crate::repl::feed::Feed, t: &mut String) {
    let status = if l.up { "up" } else { "down" };
    let io = if l.last_io_ms == 0 { -1 } else { (unix_ms() - l.last_io_ms).max(0) / 1000 };
    let _ = write!(
        t,
        "# Replication\r\nrole:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{status}\r\n\
         master_last_io_seconds_ago:{io}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{off}\r\n\
         slave_repl_offset:{off}\r\nslave_priority:100\r\nslave_read_only:1\r\nreplica_announced:1\r\n\
         connected_slaves:{}\r\nmaster_failover_state:no-failover\r\nmaster_replid:{}\r\n\
         master_replid2:{}\r\nmaster_repl_offset:{off}\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\n",
        l.host,
        l.port,
        u8::from(l.syncing),
        feed.replicas().len(),
        if l.replid.is_empty() { "0".repeat(40) } else { l.replid.clone() },
        "0".repeat(40),
        off = l.offset,
    );
}
