//! `sirocco dns`: zones from the command line and/or the config file, compiled, served on
//! every engine; SIGHUP reloads them without stopping the engines. Its options here, the
//! config file's tables in [`config`], serving in [`run`].

mod config;
mod driver;
mod run;

use crate::serve::options::own_options;
use crate::serve::ServeArgs;
use clap::Args;
use config::{KeyConfig, ZoneConfig};

pub use run::run;

#[derive(Args)]
pub struct DnsArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// A zone file, as FILE (origin from its $ORIGIN or SOA owner) or NAME=FILE; repeatable.
    /// Added to the config file's [[zone]] tables (file, name).
    #[arg(long, value_name = "[NAME=]FILE")]
    pub zone: Vec<String>,
    /// How question names become lookup keys: `wire` hashes the name where it lies in the
    /// query, case-insensitively; `decompress` copies it out lowercased first (the thesis's
    /// two modes; the benchmark compares them).
    #[arg(long, value_enum, default_value_t = KeyModeArg::Wire)]
    pub key_mode: KeyModeArg,
    /// Addresses or prefixes (198.18.0.0/24, 2001:2::/48) that may transfer every zone by
    /// AXFR over TCP; repeatable. Added to each [[zone]]'s allow_transfer. None by default.
    #[arg(long, value_name = "PREFIX")]
    pub allow_transfer: Vec<String>,
    /// A secondary told of every zone's new versions by NOTIFY (RFC 1996), as ADDR or
    /// ADDR@PORT; repeatable. Added to each [[zone]]'s notify.
    #[arg(long, value_name = "ADDR[@PORT]")]
    pub notify: Vec<String>,
    /// A TSIG key (RFC 8945) as kdig's -y takes it: [ALGORITHM:]NAME:SECRET, the secret in
    /// base64, hmac-sha256 if no algorithm; repeatable. Signed queries with a known key get
    /// signed answers. Also [[key]] tables (name, algorithm, secret) in the config file,
    /// which keep the secret out of the process list.
    #[arg(long, value_name = "[ALG:]NAME:SECRET")]
    pub key: Vec<String>,
    /// The key every zone's transfers must be signed with (besides an allowed address), and
    /// its NOTIFYs are signed with, unless its [[zone]] names its own tsig_key.
    #[arg(long, value_name = "NAME")]
    pub tsig_key: Option<String>,
    /// A zone served as a secondary, NAME=PRIMARY with PRIMARY as ADDR or ADDR@PORT: got by
    /// AXFR over TCP, refreshed by its SOA timers and NOTIFY; repeatable. Kept in memory; a
    /// [[zone]] with name, primary and file also stores it.
    #[arg(long, value_name = "NAME=ADDR[@PORT]")]
    pub secondary: Vec<String>,
    /// A catalog zone (RFC 9432) followed as a secondary, NAME=PRIMARY: every zone it lists
    /// is served as a secondary of the same primary, added and removed as the catalog
    /// changes, without a restart; repeatable. Kept in memory; a [[zone]] with catalog = true
    /// and member_dir also stores them, and [[zone.group]] tables give groups their own
    /// primaries and keys.
    #[arg(long, value_name = "NAME=ADDR[@PORT]")]
    pub catalog: Vec<String>,
    /// Answer queries whose answers are fixed bytes in the XDP program itself (XDP_TX), at
    /// the driver, before any copy to sirocco; everything else still goes to the engines.
    /// `auto` is on except on veth, whose XDP_TX frames reach the peer promptly only if the
    /// peer has an XDP program too.
    #[arg(long, value_enum, default_value_t = XdpAnswers::Auto)]
    pub xdp_answers: XdpAnswers,
    #[command(flatten)]
    pub dns: DnsOptions,
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum XdpAnswers {
    Auto,
    On,
    Off,
}

own_options! {
    /// The DNS server's own options; each has a config-file key of the same name (`_` for
    /// `-`), and the file's `[[zone]]` and `[[key]]` tables go beside them.
    pub struct DnsOptions {
        /// Seconds a TCP connection may stay idle before it is closed, and a peer that takes
        /// no answers waited for before a reset; told to clients that send
        /// edns-tcp-keepalive [default: 10].
        #[arg(long, value_name = "SECS")]
        pub tcp_idle_timeout: Option<f64>,
        /// TCP connections each engine keeps open at once; past it new ones are reset
        /// [default: 10000].
        #[arg(long, value_name = "N")]
        pub tcp_max_clients: Option<usize>,
        /// Response rate limiting over UDP: responses per second to one client prefix, per
        /// response class and answer, per engine; 0 turns it off [default: 0, off].
        #[arg(long, value_name = "N")]
        pub rrl_rate: Option<u32>,
        /// Every Nth response over the limit is sent truncated (TC) instead of dropped, so a
        /// real client retries over TCP; 0 drops them all [default: 2].
        #[arg(long, value_name = "N")]
        pub rrl_slip: Option<u32>,
        /// Bits of an IPv4 client address that make the prefix limited together [default: 24].
        #[arg(long, value_name = "BITS")]
        pub rrl_ipv4_prefix: Option<u8>,
        /// Bits of an IPv6 client address that make the prefix limited together [default: 56].
        #[arg(long, value_name = "BITS")]
        pub rrl_ipv6_prefix: Option<u8>,
        /// Rate-limit buckets per engine (a flood from more prefixes evicts the idlest)
        /// [default: 65536].
        #[arg(long, value_name = "N")]
        pub rrl_table_size: Option<usize>,
        /// Clients never rate-limited (addresses or prefixes; repeatable; the command line's
        /// list replaces the file's).
        #[arg(long, value_name = "PREFIX")]
        pub rrl_exempt: Option<Vec<String>>,
        /// DNS cookies (RFC 7873): answered with interoperable server cookies (RFC 9018), and a
        /// client with a valid one is not rate-limited; over the limit, one without gets
        /// BADCOOKIE with a fresh cookie instead of a truncated answer [default: true].
        #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
        pub cookies: Option<bool>,
        /// The secret server cookies are made with, 32 hex digits; the servers behind one
        /// address share it [default: a random one per run].
        #[arg(long, value_name = "HEX")]
        pub cookie_secret: Option<String>,
        /// The config file's zones (`[[zone]]`: file, name, primary, allow_transfer, notify,
        /// tsig_key).
        #[arg(skip)]
        pub zone: Option<Vec<ZoneConfig>>,
        /// The config file's TSIG keys (`[[key]]`: name, algorithm, secret).
        #[arg(skip)]
        pub key: Option<Vec<KeyConfig>>,
    }
}

/// The options' values with their defaults, checked.
pub struct Checked {
    pub tcp: dns_server::tcp::TcpSettings,
    /// None when rate limiting is off.
    pub rrl: Option<dns_server::rrl::RrlSettings>,
    pub rrl_exempt: dns_server::transfer::Acl,
    /// None when cookies are off.
    pub cookies: Option<dns_server::cookies::Cookies>,
}

impl DnsOptions {
    /// The values, defaults for those not given; an error names the option that is wrong.
    pub fn checked(&self) -> Result<Checked, String> {
        let idle = crate::serve::secs(self.tcp_idle_timeout.unwrap_or(10.0), "--tcp-idle-timeout")?;
        let tcp = dns_server::tcp::TcpSettings {
            idle_timeout: idle.into(),
            max_clients: self.tcp_max_clients.unwrap_or(10_000),
        };
        if tcp.max_clients == 0 {
            return Err("--tcp-max-clients must be at least 1".into());
        }
        let d = dns_server::rrl::RrlSettings::default();
        let rrl = dns_server::rrl::RrlSettings {
            rate: self.rrl_rate.unwrap_or(0),
            slip: self.rrl_slip.unwrap_or(d.slip),
            ipv4_prefix: self.rrl_ipv4_prefix.unwrap_or(d.ipv4_prefix),
            ipv6_prefix: self.rrl_ipv6_prefix.unwrap_or(d.ipv6_prefix),
            table_size: self.rrl_table_size.unwrap_or(d.table_size),
        };
        // Checked also when off: a wrong value is wrong before rate limiting is turned on.
        let rrl = Some(rrl.checked()?).filter(|r| r.rate > 0);
        let exempt = self.rrl_exempt.as_deref().unwrap_or_default();
        let rrl_exempt = dns_server::transfer::Acl::parse(exempt).map_err(|e| format!("--rrl-exempt: {e}"))?;
        let secret = match self.cookie_secret.as_deref() {
            Some(h) => parse_secret(h).ok_or("--cookie-secret must be 32 hex digits (16 bytes)")?,
            None => crate::tcp_limits::secret(),
        };
        let cookies = self.cookies.unwrap_or(true).then(|| dns_server::cookies::Cookies::new(secret));
        Ok(Checked { tcp, rrl, rrl_exempt, cookies })
    }
}

/// 16 bytes from 32 hex digits.
fn parse_secret(h: &str) -> Option<[u8; 16]> {
    if h.len() != 32 || !h.is_ascii() {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&h[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cookie_secret_is_32_hex_digits() {
        assert_eq!(super::parse_secret("e5e973e5a6b2a43f48e7dc849e37bfcf").unwrap()[..2], [0xe5, 0xe9]);
        assert_eq!(super::parse_secret("e5e973"), None);
        assert_eq!(super::parse_secret("g5e973e5a6b2a43f48e7dc849e37bfcf"), None);
    }
}

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum KeyModeArg {
    Wire,
    Decompress,
}
