//! Where a pipeline's packets enter and leave: ports. The pipeline itself does no I/O; the
//! command hands it ports on sirocco's AF_XDP sockets, and tests hand it [`MemPort`]s, whose
//! other end they hold. PortInc and PortOut modules name a port; one port may have both.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// A source and sink of Ethernet frames.
pub trait NetPort: Send {
    /// Hands up to `max` received frames to `each`, one at a time; returns how many.
    fn recv(&mut self, max: usize, each: &mut dyn FnMut(&[u8])) -> usize;
    /// Queues a frame for transmission; false if there is no room (the frame is not sent).
    fn send(&mut self, frame: &[u8]) -> bool;
    /// Transmits what [`send`](NetPort::send) queued, and refills the receive side.
    fn flush(&mut self);
    /// Counters of its own (name, value): frames in and out, refusals.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// A port's name and the port.
pub struct NamedPort {
    /// The name PortInc/PortOut give (`port="..."`).
    pub name: String,
    /// The port.
    pub port: Box<dyn NetPort>,
}

/// What a memory port holds: frames waiting to be received, and frames sent.
#[derive(Default)]
pub struct MemQueues {
    /// Frames the pipeline will receive, first first.
    pub rx: VecDeque<Vec<u8>>,
    /// Frames the pipeline sent, in order.
    pub tx: Vec<Vec<u8>>,
    /// Most frames `tx` may hold (0: no limit); sends beyond it are refused.
    pub tx_limit: usize,
}

/// An in-memory port, for tests and for pipelines fed by code: the other end is the
/// [`MemPort::handle`] shared with it.
#[derive(Clone, Default)]
pub struct MemPort {
    q: Arc<Mutex<MemQueues>>,
}

impl MemPort {
    /// A new, empty port.
    pub fn new() -> MemPort {
        MemPort::default()
    }

    /// The port's queues, to feed and drain.
    pub fn handle(&self) -> MutexGuard<'_, MemQueues> {
        self.q.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `frame` for the pipeline to receive.
    pub fn inject(&self, frame: &[u8]) {
        self.handle().rx.push_back(frame.to_vec());
    }

    /// Takes every frame the pipeline sent so far.
    pub fn take_sent(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.handle().tx)
    }
}

impl NetPort for MemPort {
    fn recv(&mut self, max: usize, each: &mut dyn FnMut(&[u8])) -> usize {
        let mut q = self.handle();
        let mut n = 0;
        while n < max {
            let Some(f) = q.rx.pop_front() else { break };
            each(&f);
            n += 1;
        }
        n
    }

    fn send(&mut self, frame: &[u8]) -> bool {
        let mut q = self.handle();
        if q.tx_limit > 0 && q.tx.len() >= q.tx_limit {
            return false;
        }
        q.tx.push(frame.to_vec());
        true
    }

    fn flush(&mut self) {}
}
