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

/// The reload thread while the server runs.
pub struct Reloader {
    done: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Reloader {
    /// Makes SIGHUP call `reload`; `what` names the state in the log ("zones", "tree").
    pub fn start(what: &'static str, mut reload: ReloadFn) -> Result<Reloader, String> {
        signals::install_reload();
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let thread = std::thread::Builder::new()
            .name("sirocco-reload".into())
            .spawn(move || {
                let mut retired: Vec<Retired> = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(50));
                    retired.retain_mut(|r| !r.try_free());
                    if !signals::take_reload() {
                        continue;
                    }
                    let t = Instant::now();
                    match reload() {
                        Ok((loaded, old)) => {
                            eprintln!("sirocco: reloaded {loaded} in {:.2} s", t.elapsed().as_secs_f64());
                            retired.push(old);
                        }
                        Err(e) => eprintln!("sirocco: reload failed, still serving the previous {what}: {e}"),
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
