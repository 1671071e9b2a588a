//! What the kernel's io_uring offers, reported once at start.

use io_uring::{opcode, IoUring, Probe};
use std::fmt;

/// The io_uring facts a server prints when it starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// Reads into registered buffers.
    pub read_fixed: bool,
    /// Writes from registered buffers.
    pub write_fixed: bool,
    /// fsync / fdatasync.
    pub fsync: bool,
    /// Registered (fixed) files.
    pub fixed_files: bool,
    /// Completions are never dropped when the completion queue overflows.
    pub nodrop: bool,
    /// Submission entries may be reused once submitted.
    pub submit_stable: bool,
    /// The kernel may poll the submission queue from its own thread (SQPOLL), if asked.
    pub sqpoll: bool,
    /// Submission and completion queue sizes granted.
    pub sq_entries: u32,
    /// See `sq_entries`.
    pub cq_entries: u32,
}

impl Features {
    /// Probes `ring` (and the kernel behind it).
    pub(crate) fn of(ring: &IoUring) -> Features {
        let mut probe = Probe::new();
        let probed = ring.submitter().register_probe(&mut probe).is_ok();
        let has = |code: u8| probed && probe.is_supported(code);
        let p = ring.params();
        Features {
            read_fixed: has(opcode::ReadFixed::CODE),
            write_fixed: has(opcode::WriteFixed::CODE),
            fsync: has(opcode::Fsync::CODE),
            fixed_files: has(opcode::FilesUpdate::CODE),
            nodrop: p.is_feature_nodrop(),
            submit_stable: p.is_feature_submit_stable(),
            sqpoll: p.is_setup_sqpoll(),
            sq_entries: p.sq_entries(),
            cq_entries: p.cq_entries(),
        }
    }

    /// What a storage port cannot do without.
    pub(crate) fn missing(&self) -> Option<&'static str> {
        [(self.read_fixed, "READ_FIXED"), (self.write_fixed, "WRITE_FIXED"), (self.fsync, "FSYNC")]
            .into_iter()
            .find(|(ok, _)| !ok)
            .map(|(_, name)| name)
    }
}

impl fmt::Display for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flag = |on: bool, name: &'static str| if on { name } else { "" };
        let ops: Vec<&str> = [
            flag(self.read_fixed, "READ_FIXED"),
            flag(self.write_fixed, "WRITE_FIXED"),
            flag(self.fsync, "FSYNC"),
            flag(self.fixed_files, "FILES_UPDATE"),
        ]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
        let feats: Vec<&str> = [flag(self.nodrop, "NODROP"), flag(self.submit_stable, "SUBMIT_STABLE")]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect();
        write!(
            f,
            "io_uring: ops {}; features {}; SQ {} / CQ {} entries; {}",
            ops.join(" "),
            if feats.is_empty() { "-".to_string() } else { feats.join(" ") },
            self.sq_entries,
            self.cq_entries,
            if self.sqpoll { "kernel SQ polling thread" } else { "submitted by the engine" }
        )
    }
}
