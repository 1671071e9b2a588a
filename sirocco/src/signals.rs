//! SIGINT/SIGTERM set a flag the dataplane watches, so it can stop its engines and detach
//! the XDP filter before exiting; SIGHUP (where a server reloads) sets another.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_hup(_: libc::c_int) {
    RELOAD.store(true, Ordering::SeqCst);
}

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

/// Installs the handlers.
pub fn install() {
    set_handler(&[libc::SIGINT, libc::SIGTERM], on_signal);
}

/// Makes SIGHUP request a reload (instead of ending the process).
pub fn install_reload() {
    set_handler(&[libc::SIGHUP], on_hup);
}

/// True once per SIGHUP received (several before a check count as one).
pub fn take_reload() -> bool {
    RELOAD.swap(false, Ordering::SeqCst)
}

#[allow(unsafe_code)] // sigaction: the one system call the CLI makes itself
fn set_handler(sigs: &[libc::c_int], handler: extern "C" fn(libc::c_int)) {
    for &sig in sigs {
        // SAFETY: sigaction with a handler that only stores to an atomic; the struct is
        // zero-initialised (empty mask, no flags) before the handler is set.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// True once a stop signal arrived.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}
