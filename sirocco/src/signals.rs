//! SIGINT/SIGTERM set a flag the dataplane watches, so it can stop its engines and detach
//! the XDP filter before exiting; SIGHUP (where a server reloads) sets another.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);
static RELOAD: AtomicBool = AtomicBool::new(false);
/// The two ends of a pipe a SIGHUP writes a byte to, so the thread waiting for a reload
/// wakes at once (-1: none).
static HUP_READ: AtomicI32 = AtomicI32::new(-1);
static HUP_WRITE: AtomicI32 = AtomicI32::new(-1);

#[allow(unsafe_code)] // write(2) to the wake pipe: async-signal-safe
extern "C" fn on_hup(_: libc::c_int) {
    RELOAD.store(true, Ordering::SeqCst);
    let fd = HUP_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: write(2) of one byte from a static to a non-blocking pipe we own, with the
        // interrupted code's errno put back; a full pipe (a wake already pending) is fine.
        unsafe {
            let errno = *libc::__errno_location();
            libc::write(fd, b"h".as_ptr().cast(), 1);
            *libc::__errno_location() = errno;
        }
    }
}

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

/// Installs the handlers.
pub fn install() {
    set_handler(&[libc::SIGINT, libc::SIGTERM], on_signal);
}

/// Makes SIGHUP request a reload (instead of ending the process), and wake
/// [`wait_reload`].
#[allow(unsafe_code)] // pipe2(2): the wake pipe
pub fn install_reload() {
    if HUP_READ.load(Ordering::SeqCst) < 0 {
        let mut fds = [-1; 2];
        // SAFETY: pipe2 fills the two descriptors it makes into our array of two.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } == 0 {
            HUP_READ.store(fds[0], Ordering::SeqCst);
            HUP_WRITE.store(fds[1], Ordering::SeqCst);
        }
    }
    set_handler(&[libc::SIGHUP], on_hup);
}

/// True once per SIGHUP received (several before a check count as one).
pub fn take_reload() -> bool {
    RELOAD.swap(false, Ordering::SeqCst)
}

/// Waits up to `timeout` for a SIGHUP (at once if one came since the last check); true
/// once per SIGHUP, as [`take_reload`]. Without the wake pipe it sleeps the whole timeout.
#[allow(unsafe_code)] // poll(2) and read(2) on the wake pipe
pub fn wait_reload(timeout: Duration) -> bool {
    let fd = HUP_READ.load(Ordering::SeqCst);
    if fd < 0 {
        std::thread::sleep(timeout);
        return take_reload();
    }
    if !RELOAD.load(Ordering::SeqCst) {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: poll on one descriptor we own, described by a pollfd on our stack.
        unsafe { libc::poll(&mut p, 1, ms) };
    }
    let mut drain = [0u8; 64];
    // SAFETY: non-blocking reads into our buffer until the pipe is empty (bounded: at most
    // its capacity in bytes was written).
    while unsafe { libc::read(fd, drain.as_mut_ptr().cast(), drain.len()) } > 0 {}
    take_reload()
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
