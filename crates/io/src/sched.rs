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

/// The CPU's cycle counter (the TSC on x86-64; nanoseconds of the monotonic clock elsewhere).
pub fn cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC reads a counter; every x86-64 CPU has it and it touches no memory.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
    }
}
