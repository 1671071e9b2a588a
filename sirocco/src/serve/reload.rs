//! SIGHUP reload: a thread of its own builds the new state beside the one being served,
//! publishes it to the engines, and frees the old one once no engine holds it; a state that
//! fails to build is reported and the old one keeps serving.

use crate::signals;
use engine::published::Retired;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Builds and publishes the new state; says what it loaded ("3 zone(s)").
pub type ReloadFn = Box<dyn FnMut() -> Result<(String, Retired), String> + Send>;

/// What a server reloads: `what` names the state in the log ("zones", "tree"); `wake`, if
/// given, asks for a reload too when set (a zone transferred in, besides SIGHUP).
pub struct Reload {
    /// The state's name in the log.
    pub what: &'static str,
    /// Builds and publishes it.
    pub f: ReloadFn,
    /// Set by others who want a reload.
    pub wake: Option<Arc<AtomicBool>>,
}

impl Reload {
    /// A reload on SIGHUP only.
    pub fn on_hup(what: &'static str, f: ReloadFn) -> Reload {
        Reload { what, f, wake: None }
    }
}

/// The reload thread while the server runs.
pub struct Reloader {
    done: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Reloader {
    /// Makes SIGHUP (or `r.wake`) call `r.f`.
    pub fn start(r: Reload) -> Result<Reloader, String> {
        let Reload { what, f: mut reload, wake } = r;
        signals::install_reload();
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let thread = std::thread::Builder::new()
            .name("sirocco-reload".into())
            .spawn(move || {
                let mut retired: Vec<Retired> = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    // Back at once on SIGHUP; else every 50 ms, for `stop`, `wake` and the
                    // versions still to free.
                    let hup = signals::wait_reload(Duration::from_millis(50));
                    let held = retired.len();
                    retired.retain_mut(|r| !r.try_free());
                    if retired.len() < held {
                        // A whole version went (a large zone set, its scratch long gone):
                        // the heap gives its pages back rather than staying at its peak.
                        io::release_free_memory();
                    }
                    let woken = wake.as_ref().is_some_and(|w| w.swap(false, Ordering::AcqRel));
                    if !(hup | woken) {
                        continue;
                    }
                    let t = Instant::now();
                    match reload() {
                        Ok((loaded, old)) => {
                            tracing::info!("reloaded {loaded} in {:.2} s", t.elapsed().as_secs_f64());
                            retired.push(old);
                        }
                        Err(e) => tracing::warn!("reload failed, still serving the previous {what}: {e}"),
                    }
                }
            })
            .map_err(|e| format!("reload thread: {e}"))?;
        Ok(Reloader { done, thread })
    }

    /// Stops the thread (the engines have stopped: what it still holds is freed).
    pub fn stop(self) {
        self.done.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
    }
}
