//! Scheduling calls the engine makes between iterations (never per packet).

/// Gives the CPU to another runnable thread on this core, if any (returns at once if none).
pub fn yield_now() {
    // SAFETY: sched_yield takes no arguments and cannot fail in a way that matters here.
    unsafe { libc::sched_yield() };
}

/// Sleeps until one of `fds` (at most 16; AF_XDP sockets, control sockets) is readable or
/// `timeout_us` microseconds pass.
pub fn wait_readable(fds: &[std::os::fd::RawFd], timeout_us: u32) {
    crate::sys::ppoll_in_many(fds, timeout_us);
}
