//! Wall-clock time, for what DNS dates by it: TSIG signatures and NOTIFY's serial checks.

/// Seconds since the epoch, for TSIG (a vDSO read, no system call; signed queries only).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
