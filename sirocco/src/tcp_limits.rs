//! TCP limits for a run of sirocco, with a secret of the run's own.

/// TCP limits with a secret of this run's own: the ISNs (RFC 6528) and SYN cookies are
/// keyed with it, and a fixed key would make them predictable.
pub fn tcp_limits() -> tcp::Limits {
    let b = secret();
    let w = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    tcp::Limits { secret: [w(0), w(8)], ..tcp::Limits::default() }
}

/// TCP limits for an engine of a server whose sessions refuse connections past
/// `sessions` themselves (kv, store): the TCP table holds a quarter more (never fewer than
/// the default), room for connections still closing after their session ended, so that the
/// sessions' limit is the one clients meet.
pub fn session_limits(cfg: &tcp::Config, sessions: usize) -> tcp::Limits {
    let room = sessions.saturating_add(sessions / 4).max(tcp::Limits::default().max_conns);
    cfg.limits(tcp_limits()).for_conns(room)
}

/// 16 bytes of this run's own, unpredictable.
pub fn secret() -> [u8; 16] {
    let mut b = [0u8; 16];
    // /dev/urandom does not block and is always there on Linux; if it cannot be read,
    // fall back to the clock and the process id, still different per run.
    if std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b)).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        b[..16].copy_from_slice(&(t ^ (u128::from(std::process::id()) << 64)).to_le_bytes());
    }
    b
}

/// A server's connection limit as given: a count (`--max-conns`) or a memory budget
/// (`--conn-memory`, MiB), each also a config-file key.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConnLimit {
    /// `--max-conns`.
    pub max_conns: Option<usize>,
    /// `--conn-memory`, in MiB.
    pub conn_memory: Option<u64>,
}

impl ConnLimit {
    /// The command line's limit (`self`), in either form, over the config file's.
    pub fn over(self, file: ConnLimit) -> ConnLimit {
        if self.max_conns.is_some() || self.conn_memory.is_some() {
            self
        } else {
            file
        }
    }

    /// The connections to hold: the count given, or as many as the budget holds at `each`
    /// bytes per idle connection (said on a log line; `scope` says what the budget is for),
    /// or `default`. Both, or a limit of no connection, is one error line.
    pub fn resolve(self, each: usize, default: usize, scope: &str) -> Result<usize, String> {
        let n = match (self.max_conns, self.conn_memory) {
            (Some(_), Some(_)) => return Err("max_conns and conn_memory: give one of them".into()),
            (None, Some(mib)) => {
                let n = usize::try_from(mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX) / each.max(1);
                if n == 0 {
                    return Err(format!("--conn-memory {mib} MiB holds no connection ({each} bytes each)"));
                }
                tracing::info!("{n} connections {scope} in {mib} MiB ({each} bytes each, --conn-memory)");
                n
            }
            (n, None) => n.unwrap_or(default),
        };
        if n == 0 {
            return Err("--max-conns must be at least 1".into());
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::{session_limits, ConnLimit};

    #[test]
    fn the_tcp_table_has_room_past_the_sessions_and_time_wait_half_of_it() {
        let cfg = tcp::Config::default();
        let small = session_limits(&cfg, 10_000);
        assert_eq!((small.max_conns, small.max_time_wait), (65_536, 32_768), "never below the defaults");
        let large = session_limits(&cfg, 1_000_000);
        assert_eq!((large.max_conns, large.max_time_wait), (1_250_000, 625_000));
        let web = tcp::Limits::default().for_conns(1_000);
        assert_eq!((web.max_conns, web.max_time_wait), (1_000, 32_768));
    }

    #[test]
    fn a_memory_budget_holds_what_fits_and_the_command_line_wins_in_either_form() {
        let mem = ConnLimit { max_conns: None, conn_memory: Some(1) };
        assert_eq!(mem.resolve(1000, 7, "in all"), Ok(1048));
        assert_eq!(ConnLimit::default().resolve(1000, 7, "in all"), Ok(7));
        assert_eq!(ConnLimit { max_conns: Some(3), conn_memory: None }.resolve(1000, 7, "in all"), Ok(3));
        let both = ConnLimit { max_conns: Some(3), conn_memory: Some(1) };
        assert!(both.resolve(1000, 7, "in all").unwrap_err().contains("give one"));
        assert!(mem.resolve(2 << 20, 7, "in all").unwrap_err().contains("holds no connection"));
        assert!(ConnLimit { max_conns: Some(0), conn_memory: None }.resolve(1, 7, "x").is_err());
        let file = ConnLimit { max_conns: Some(5), conn_memory: None };
        let over = mem.over(file);
        assert_eq!((over.max_conns, over.conn_memory), (None, Some(1)));
        let over = ConnLimit::default().over(file);
        assert_eq!((over.max_conns, over.conn_memory), (Some(5), None));
    }
}
