//! `sirocco kv`: a memcached-compatible cache served on sirocco's level-2 channel (the IX and
//! MegaPipe memcached). The cache ([`cache`]) is shared by every engine; each engine runs a
//! [`server::KvServer`] on its channel, and each connection a sans-IO [`session::Session`]
//! that turns received bytes into cache operations and response bytes.

pub mod cache;
pub mod server;
pub mod service;
pub mod session;
pub mod stats;
