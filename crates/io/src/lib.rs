//! The I/O layer: ports that move batches of frames, and the kernel control plane around them.
//!
//! - [`port::Port`]: the interface the engine drives (receive, send, allocate, free, kick, wait).
//! - [`xsk::XskPort`]: an AF_XDP socket on one NIC queue with its own UMEM (zero-copy where the
//!   driver has it, copy mode elsewhere).
//! - [`mem::MemPort`]: an in-memory pair with the same interface, for tests.
//! - [`filter::Filter`]: the XDP program that redirects only granted flows to sirocco.
//! - [`ctl_path::CtlPath`]: `sirocco ctl`'s programs, which share one interface among grants.
//! - [`napi`]: the interface's interrupt deferral knobs, for preferred busy polling.
//! - [`iface`]: interface facts from the kernel (index, MAC, addresses, queues, neighbours).
//! - [`storage::StoragePort`]: storage queues — io_uring with O_DIRECT into registered buffers,
//!   reaped by the engine's loop (the diskmap of the Atlas thesis).

pub mod arena;
pub mod ctl_path;
pub mod dns_answers;
pub mod fdpass;
pub mod filter;
pub mod iface;
pub mod mem;
pub mod napi;
pub mod netdev;
pub mod pcap;
mod pins;
pub mod port;
pub mod rss;
pub mod sched;
pub mod storage;
mod sys;

pub use sys::{release_free_memory, run_only_when_idle};
pub mod umem;
pub mod whole;
pub mod xsk;

pub use arena::ArenaRegion;
pub use port::{Frame, Port};
