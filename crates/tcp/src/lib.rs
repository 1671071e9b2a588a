//! Sans-IO TCP for sirocco: no socket buffers, the TX ring as the only queue.
//!
//! A [`tcb::Tcb`] is one connection's state machine; it never touches the network or a clock.
//! It takes segments and the time, hands in-order data to its caller as read-only views, and
//! names the segments it wants sent by sequence number and *source offset*: the caller fills
//! the payload from the connection's source, so nothing is copied into a send buffer and a
//! retransmission is regenerated from the source like the first transmission.

pub mod api;
pub mod bbr;
pub mod byte_queue;
pub mod cc;
pub mod channel;
pub mod config;
pub mod endpoint;
pub mod env;
pub mod isn;
pub mod ranges;
pub mod rate_sample;
pub mod reasm;
pub mod rss;
pub mod rtt;
pub mod seq;
pub mod siphash;
pub mod stats;
pub mod tcb;
mod time_wait;
pub mod timestamps;
pub mod tuple;
mod tuple_table;

pub use byte_queue::ByteQueue;
pub use cc::CcKind;
pub use channel::{Calls, Channel, Event, Events, Server};
pub use config::{Config, KeepAlive, BULK_RCV_BUF_MAX};
pub use endpoint::{App, ConnectError, Ctl, Endpoint, Gather, Handle, Limits, Output, PinnedFrames, Placed, Source};
pub use seq::Seq;
pub use stats::Stats;
pub use tcb::{End, Env, Info, Negotiated, Notes, Numbers, SegOut, State, Tcb, Tuple};
pub use timer::{Duration, Instant};
