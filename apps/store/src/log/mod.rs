//! The store's log: records, the order of changes and its durable prefix, staging, the
//! group-commit writer on a storage queue, the directory, snapshots and the replay.

pub mod compact;
pub mod dir;
pub mod order;
pub mod record;
pub mod replay;
pub mod snapshot;
pub mod stage;
pub mod writer;

/// Most log lanes per engine.
pub const MAX_LANES: usize = 8;
