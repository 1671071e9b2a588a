//! The timestamp clock (RFC 7323) and how long a peer's timestamps are held against it.

use timer::{Duration, Instant};

/// TSval older than this is not held against PAWS (RFC 7323 §5.5: 24 days).
pub(crate) const PAWS_IDLE: Duration = Duration::from_secs(24 * 24 * 3600);

/// The timestamp clock of a connection: milliseconds plus a secret offset for its addresses
/// and ports (the tuple's secret offset, from `isn`), so the clock does not leak (RFC
/// 7323 §7.1) yet runs on across incarnations of one tuple: a new SYN to a tuple in TIME-WAIT
/// must carry a newer TSval to reopen it (RFC 6191), or it waits out a SYN timeout.
pub fn ts_clock(ts_offset: u32, now: Instant) -> u32 {
    (now.as_millis() as u32).wrapping_add(ts_offset)
}
