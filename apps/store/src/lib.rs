//! `sirocco store`: a Redis-protocol key-value store (RESP2; strings, hashes, lists, sets,
//! sorted sets) that acknowledges a write only once its log record is durable — Arrakis's Redis
//! on a stock kernel. Each engine writes its own log through its own storage queue (io_uring,
//! O_DIRECT, O_DSYNC, registered buffers) with group commit; one global order of changes and a
//! durable prefix make what survives a crash a prefix of what clients saw.
//!
//! Layers: [`command`] and [`session`] are sans-IO (arguments in, replies and log records
//! out); [`log`] holds the record format, the staging, the writer on the storage queue, and
//! the replay; [`server`] joins them on the channel API.

pub mod command;
pub mod hash;
pub mod keyspace;
pub mod list;
pub mod log;
pub mod open;
pub mod repl;
pub mod server;
pub mod service;
pub mod session;
pub mod set;
pub mod zset;
