//! `sirocco web`: the static web server (Sandstorm) on a directory or the built-in demo site;
//! SIGHUP reloads the tree. Its options here, serving in [`run`].

mod run;

use crate::serve::ServeArgs;
use crate::tcp_limits::ConnLimit;
use clap::Args;
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub use run::run;

/// The web server's options; each has a config-file key of the same name (`_` for `-`).
#[derive(Args, Deserialize, Default)]
pub struct WebOptions {
    /// Directory to serve (in the config file: relative to it) [default: the built-in demo
    /// site].
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Bytes of packetised responses each engine keeps. A tree that fits is packetised at
    /// start; a larger one on first request, least recently used evicted [default: 1 GiB].
    #[arg(long, value_name = "N")]
    pub cache_bytes: Option<u64>,
    /// Seconds a request head may take to arrive (slowloris) [default: 10].
    #[arg(long, value_name = "SECS")]
    pub header_timeout: Option<f64>,
    /// Seconds an idle keep-alive connection is kept, and a peer that takes no data waited
    /// for [default: 60].
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<f64>,
    /// Requests served on one connection before it is closed [default: 10000].
    #[arg(long, value_name = "N")]
    pub max_requests: Option<u32>,
    /// Connections per engine (all TCP states) [default: 65536].
    #[arg(long, value_name = "N")]
    pub max_conns: Option<usize>,
    /// Size --max-conns from this many MiB per engine instead: as many connections as fit at
    /// what an idle one holds here (control block, HTTP state, timer and table room; the
    /// start line says how many and at what size). Not with --max-conns
    #[arg(long, value_name = "MIB", conflicts_with = "max_conns")]
    pub conn_memory: Option<u64>,
    /// How a prepared segment gets into a TX frame [default: precopy].
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Pre-copy mode: frames each engine may pin for replicas (4 KB each); past them,
    /// segments are copied from their masters [default: 16384].
    #[arg(long, value_name = "N")]
    pub replica_frames: Option<usize>,
    /// Stream mode: MiB of read buffers per engine; connections wait for a buffer when all
    /// are in use [default: 64].
    #[arg(long, value_name = "MIB")]
    pub stream_memory: Option<u64>,
    /// Stream mode: KiB per read buffer (a read is at most one buffer; 4 to 1024, a multiple
    /// of 4). Smaller buffers let more connections hold their next read in the same memory
    /// [default: 256].
    #[arg(long, value_name = "KIB")]
    pub stream_buffer: Option<u32>,
    /// Stream mode: copy each segment's payload from the read buffer into a TX frame instead
    /// of sending the buffer where the disk read put it (for comparison; also what happens
    /// when the kernel has no multi-buffer AF_XDP).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub stream_copy: Option<bool>,
    /// HTTPS (TLS 1.3) on --tls-port too: the certificate chain, PEM, leaf first (in the
    /// config file: relative to it).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key, PEM (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Port for HTTPS [default: 443].
    #[arg(long, value_name = "PORT")]
    pub tls_port: Option<u16>,
    /// Full TCP segments one TLS record fills, 1 to 11. 1 seals each record in place in its
    /// TX frame, but the client then handles a record per 1.4 KB; 11 makes ~16 KB records
    /// (what nginx sends), sealed once and copied into their segments [default: 11].
    #[arg(long, value_name = "N")]
    pub tls_record_segments: Option<usize>,
}

#[derive(Args)]
pub struct WebArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(flatten)]
    pub web: WebOptions,
}

/// How a prepared segment gets into a TX frame (the thesis's two modes).
#[derive(clap::ValueEnum, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Replicas kept in pinned frames, rewritten in place; one is reused only after the
    /// kernel completed its transmission.
    Precopy,
    /// The master copied into a fresh frame per send.
    Memcpy,
    /// Nothing packetised or cached: bodies read from disk (O_DIRECT, io_uring) as each
    /// connection's window opens, held until acknowledged (Atlas).
    Stream,
}

impl WebOptions {
    /// The command line's options over the config file's.
    fn or(self, file: WebOptions, config: Option<&Path>) -> WebOptions {
        let cli = ConnLimit { max_conns: self.max_conns, conn_memory: self.conn_memory };
        let ConnLimit { max_conns, conn_memory } =
            cli.over(ConnLimit { max_conns: file.max_conns, conn_memory: file.conn_memory });
        WebOptions {
            root: self.root.or(file.root.map(|r| crate::serve::relative_to(config, &r))),
            cache_bytes: self.cache_bytes.or(file.cache_bytes),
            header_timeout: self.header_timeout.or(file.header_timeout),
            idle_timeout: self.idle_timeout.or(file.idle_timeout),
            max_requests: self.max_requests.or(file.max_requests),
            max_conns,
            conn_memory,
            mode: self.mode.or(file.mode),
            replica_frames: self.replica_frames.or(file.replica_frames),
            stream_memory: self.stream_memory.or(file.stream_memory),
            stream_buffer: self.stream_buffer.or(file.stream_buffer),
            stream_copy: self.stream_copy.or(file.stream_copy),
            tls_cert: self.tls_cert.or(file.tls_cert.map(|r| crate::serve::relative_to(config, &r))),
            tls_key: self.tls_key.or(file.tls_key.map(|r| crate::serve::relative_to(config, &r))),
            tls_port: self.tls_port.or(file.tls_port),
            tls_record_segments: self.tls_record_segments.or(file.tls_record_segments),
        }
    }
}
