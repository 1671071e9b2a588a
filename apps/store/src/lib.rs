//! `sirocco store` (issue 17, in progress): a Redis-protocol key-value store that acknowledges
//! a write only once its log record is durable. Landed so far: the log's record format
//! ([`log::record`]); the RESP parser lives in the `resp` crate.

pub mod log;
