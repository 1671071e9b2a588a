//! What a module is: the BESS `ProcessBatch` shape. A module gets a batch on one of its input
//! gates and hands each packet to one of its output gates (or drops it); a module with a task
//! (a source, a port) makes batches of its own when the pipeline runs it. Packets given to an
//! output gate with nothing connected are dropped and counted.
//!
//! A complete module, which sends each packet to the gate its first byte names (see
//! `crate::modules` for the shipped ones):
//!
//! ```
//! use sirocco_pipeline::module::{Ctx, Module, Out};
//! use sirocco_pipeline::packet::Batch;
//!
//! /// Splits by the first byte, modulo the number of gates.
//! struct ByFirstByte {
//!     gates: u32,
//! }
//!
//! impl Module for ByFirstByte {
//!     fn ogates(&self) -> u32 {
//!         self.gates
//!     }
//!
//!     fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
//!         for &p in batch.pkts() {
//!             match ctx.pool.data(p).first() {
//!                 Some(&b) => out.emit(u32::from(b) % self.gates, p),
//!                 None => out.drop(p),
//!             }
//!         }
//!     }
//! }
//! # let _ = ByFirstByte { gates: 2 };
//! ```

use crate::metadata::Attr;
use crate::packet::{Batch, Pkt, Pool};
use crate::port::NamedPort;
use timer::Instant;

/// What a module works with while it runs.
pub struct Ctx<'a> {
    /// The packets' buffers.
    pub pool: &'a mut Pool,
    /// The pipeline's time (its epoch is when it started).
    pub now: Instant,
    /// Where this module's declared attributes are (in declaration order; None: nobody reads
    /// the value, so writing it can be skipped).
    pub offsets: &'a [Option<usize>],
    /// The pipeline's ports (PortInc and PortOut use the one their `port=` named).
    pub ports: &'a mut [NamedPort],
}

impl Ctx<'_> {
    /// Attribute `i` (declaration order) of `p`, to read; None where it has no place.
    pub fn attr(&self, p: Pkt, i: usize, size: usize) -> Option<&[u8]> {
        let off = (*self.offsets.get(i)?)?;
        self.pool.meta(p).get(off..off + size)
    }

    /// Attribute `i` of `p`, to write; None where nobody reads it.
    pub fn attr_mut(&mut self, p: Pkt, i: usize, size: usize) -> Option<&mut [u8]> {
        let off = (*self.offsets.get(i)?)?;
        self.pool.meta_mut(p).get_mut(off..off + size)
    }
}

/// Where a module puts the packets of a batch: one batch per output gate, and the dropped.
#[derive(Default)]
pub struct Out {
    gates: Vec<Batch>,
    /// Buffers to free: the dropped, and after them the `done`.
    freed: Vec<Pkt>,
    done: usize,
}

impl Out {
    /// Room for `ogates` gates.
    pub fn new(ogates: u32) -> Out {
        Out { gates: vec![Batch::default(); ogates as usize], freed: Vec::with_capacity(crate::packet::BATCH), done: 0 }
    }

    /// Sends `p` out of gate `gate` (dropped if there is no such gate).
    pub fn emit(&mut self, gate: u32, p: Pkt) {
        // A batch holds what one batch in can give, so a gate's is never over-full; if a
        // module emits more than it got, the excess is dropped.
        let taken = self.gates.get_mut(gate as usize).is_some_and(|b| b.push(p));
        if !taken {
            self.freed.push(p);
        }
    }

    /// Drops `p`.
    pub fn drop(&mut self, p: Pkt) {
        self.freed.push(p);
    }

    /// Frees `p`, which has left the pipeline (sent by a port): counted as sent, not dropped.
    pub fn done(&mut self, p: Pkt) {
        self.freed.push(p);
        self.done += 1;
    }

    pub(crate) fn gates(&mut self) -> &mut [Batch] {
        &mut self.gates
    }

    /// The buffers to free, and how many of them left the pipeline rather than being dropped.
    pub(crate) fn take_freed(&mut self) -> (std::vec::Drain<'_, Pkt>, usize) {
        (self.freed.drain(..), std::mem::take(&mut self.done))
    }
}

/// A module.
pub trait Module: Send {
    /// The metadata attributes it uses (declaration order gives their indices in [`Ctx`]).
    fn attrs(&self) -> Vec<Attr> {
        Vec::new()
    }

    /// Input gates.
    fn igates(&self) -> u32 {
        1
    }

    /// Output gates.
    fn ogates(&self) -> u32 {
        1
    }

    /// Handles a batch that arrived on `igate`.
    fn process(&mut self, ctx: &mut Ctx<'_>, igate: u32, batch: &Batch, out: &mut Out);

    /// True if the module has a task of its own (a source, a port's receive side).
    fn has_task(&self) -> bool {
        false
    }

    /// Runs the task once: makes at most one batch through `out`. Returns the packets made.
    fn run_task(&mut self, _ctx: &mut Ctx<'_>, _out: &mut Out) -> usize {
        0
    }

    /// True if the module holds packets and hands them on from its task (a queue, a delay
    /// line): links into it do not make a cycle, since what enters leaves in a later run.
    fn decouples(&self) -> bool {
        false
    }

    /// Packets it holds for a later run (a queue's, a delay line's): while any module holds
    /// some, the pipeline must keep running even with no new input.
    fn holds(&self) -> usize {
        0
    }

    /// True while the module asks the pipeline not to run the tasks that feed it (a full
    /// queue's backpressure).
    fn congested(&self) -> bool {
        false
    }

    /// Counters of its own (name, value), for `stats`: latency percentiles, table sizes.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
