//! INFO and CONFIG GET, with Redis's field names where a field means what Redis's does.

use super::{unix_ms, Shared, REDIS_VERSION};
use crate::command::Info;
use crate::keyspace::Keyspace;
use std::fmt::Write;
use std::sync::atomic::Ordering;

pub(super) struct InfoOf<'a>(pub &'a Shared);

const SECTIONS: &[&str] = &["server", "clients", "persistence", "stats", "keyspace"];

impl Info for InfoOf<'_> {
    fn info(&self, ks: &Keyspace, sections: &[String]) -> String {
        let s = self.0;
        let all = sections.is_empty() || sections.iter().any(|x| x == "all" || x == "everything" || x == "default");
        let want = |name: &str| all || sections.iter().any(|x| x == name);
        let sum = |f: fn(&super::EngineStats) -> u64| s.engines.iter().map(f).sum::<u64>();
        let mut t = String::new();
        for name in SECTIONS.iter().filter(|n| want(n)) {
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
                         rejected_connections:{}\r\n",
                        sum(|e| e.connections.load(Ordering::Relaxed)),
                        sum(|e| e.commands.load(Ordering::Relaxed)),
                        sum(|e| e.rejected.load(Ordering::Relaxed)),
                    );
                }
                _ => {
                    t.push_str("# Keyspace\r\n");
                    let keys = ks.len();
                    if keys > 0 {
                        let _ = write!(t, "db0:keys={keys},expires={},avg_ttl=0\r\n", ks.with_expiry());
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
            ("databases", "1".into()),
            ("port", s.port.to_string()),
            ("dir", s.dir.display().to_string()),
            ("maxclients", s.max_conns.to_string()),
            ("maxmemory", "0".into()),
            ("proto-max-bulk-len", resp::request::REDIS_MAX_BULK.to_string()),
            ("timeout", "0".into()),
        ]
    }
}
