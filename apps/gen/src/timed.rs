//! The life of a timed run that the HTTP and key-value generators share: it starts once the
//! connections are up, asking stops after the duration (every connection closed, so none is
//! left open at the server to collide with a later run's ports), and the run counts itself
//! finished once the replies still in flight had the drain time to arrive.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tcp::channel::Calls;
use tcp::{Duration, Handle, Instant};

pub(crate) struct Timed {
    /// When asking began; `None` while connecting or preloading.
    pub start: Option<Instant>,
    /// Asking is over.
    pub done: bool,
    duration: Duration,
    drain: Duration,
    /// Counted down once when asking and draining are over.
    finish: Option<Arc<AtomicUsize>>,
}

impl Timed {
    pub fn new(duration: Duration, drain: Duration) -> Timed {
        Timed { start: None, done: false, duration, drain, finish: None }
    }

    pub fn count_down_when_finished(&mut self, c: Arc<AtomicUsize>) {
        self.finish = Some(c);
    }

    /// Counts the run finished once the drain after asking is over.
    pub fn drain(&mut self, now: Instant) {
        let Some(start) = self.start else { return };
        if self.done && now.since(start) >= self.duration + self.drain {
            if let Some(c) = self.finish.take() {
                c.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// When asking began, while it goes on; once the duration is over, closes `conns` and
    /// returns `None` from then on.
    pub fn asking(
        &mut self,
        now: Instant,
        conns: impl Iterator<Item = Handle>,
        calls: &mut Calls<'_>,
    ) -> Option<Instant> {
        let start = self.start.filter(|_| !self.done)?;
        if now.since(start) < self.duration {
            return Some(start);
        }
        self.done = true;
        for h in conns {
            let _ = calls.close(h);
        }
        None
    }
}
