//! `sirocco gen udp|kv|http`: the load generators, on sirocco's own stack from an address of
//! their own; what they share (the load options, latency percentiles) in [`load`].

pub mod http;
pub mod kv;
mod kv_report;
mod load;
pub mod udp;
mod udp_report;
