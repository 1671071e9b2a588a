//! Scheduling calls the engine makes between iterations (never per packet).

/// Gives the CPU to another runnable thread on this core, if any (returns at once if none).
pub fn yield_now() {
    // SAFETY: sched_yield takes no arguments and cannot fail in a way that matters here.
    unsafe { libc::sched_yield() };
}
