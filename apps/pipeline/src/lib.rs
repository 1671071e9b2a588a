//! `sirocco pipeline` (issue 18, in progress): BESS on sirocco's ports. Landed so far, all
//! sans-IO: the script language ([`script`]), the placement of per-packet metadata by colouring
//! the attributes' scope graph ([`metadata`]), packets and batches over a pool allocated once
//! ([`packet`]), the module trait in BESS's `ProcessBatch` shape ([`module`]), a first set of
//! modules ([`modules`]) and the pipeline that builds a script into a graph and runs it
//! ([`pipeline`]). Ports on AF_XDP, the other modules, the scheduler, workers and the control
//! socket come next.

pub mod change;
pub mod driver;
pub mod metadata;
pub mod module;
pub mod modules;
pub mod packet;
pub mod pipeline;
pub mod port;
pub mod sched;
pub mod script;

pub use timer::{Duration, Instant};
pub mod workers;
