//! The daemon's private network namespace: one thread lives in it, and runs there whatever
//! must see the applications' side of the veth pairs (bringing them up, the XDP filter,
//! binding AF_XDP sockets). Nothing but that thread refers to the namespace, so when the
//! daemon ends — even by SIGKILL — the namespace goes, and with it every veth pair it made
//! (deleting one end of a pair deletes both).

use io::filter::Filter;
use std::collections::HashMap;
use std::sync::mpsc;

/// What jobs keep in the namespace between calls: each grant slot's filter.
#[derive(Default)]
pub struct NsState {
    pub filters: HashMap<u32, Filter>,
}

type Job = Box<dyn FnOnce(&mut NsState) + Send>;

/// The thread in the private namespace.
pub struct PrivateNet {
    jobs: mpsc::Sender<Job>,
    path: String,
}

impl PrivateNet {
    pub fn start() -> Result<PrivateNet, String> {
        let (tx, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("sirocco-ctl-ns".into())
            .spawn(move || {
                if let Err(e) = io::iface::enter_private_netns() {
                    let _ = ready_tx.send(Err(format!("cannot make a network namespace for the grants: {e}")));
                    return;
                }
                let _ = ready_tx.send(Ok(io::iface::thread_netns_path()));
                let mut st = NsState::default();
                while let Ok(job) = rx.recv() {
                    job(&mut st);
                }
            })
            .map_err(|e| format!("cannot start the namespace thread: {e}"))?;
        let path = ready_rx.recv().map_err(|_| "the namespace thread ended".to_string())??;
        Ok(PrivateNet { jobs: tx, path })
    }

    /// The namespace's path (for `ip link ... netns PATH`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Runs `f` in the namespace and returns what it returns.
    pub fn run<T: Send + 'static>(&self, f: impl FnOnce(&mut NsState) -> T + Send + 'static) -> Result<T, String> {
        let (tx, rx) = mpsc::channel();
        self.jobs
            .send(Box::new(move |st| {
                let _ = tx.send(f(st));
            }))
            .map_err(|_| "the namespace thread ended".to_string())?;
        rx.recv().map_err(|_| "the namespace thread ended".to_string())
    }
}
