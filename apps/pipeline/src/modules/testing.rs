//! For module tests: one module run on a batch of frames, with exact frames out.

use super::Registry;
use crate::module::{Ctx, Module, Out};
use crate::packet::{Batch, Pool};
use crate::port::NamedPort;

/// A module made from `class(args)`, alone, with `pool` buffers.
pub(crate) struct One {
    pub(crate) m: Box<dyn Module>,
    pub(crate) pool: Pool,
    pub(crate) offsets: Vec<Option<usize>>,
    pub(crate) ports: Vec<NamedPort>,
}

/// What one call gave: per output gate the frames, and how many were dropped.
pub(crate) type Gates = (Vec<Vec<Vec<u8>>>, usize);

impl One {
    pub(crate) fn new(class: &str, args: &str) -> One {
        let script = crate::script::parse(&format!("m :: {class}({args})")).unwrap();
        let m = Registry::default().make(&script.modules[0], &[]).unwrap();
        // Every attribute at its own place, as if each were read downstream.
        let mut offsets = Vec::new();
        let mut at = 0;
        for a in m.attrs() {
            offsets.push(Some(at));
            at += a.size;
        }
        One { m, pool: Pool::new(256), offsets, ports: Vec::new() }
    }

    fn collect(&mut self, mut out: Out) -> Gates {
        let (freed, _) = out.take_freed();
        let freed: Vec<_> = freed.collect();
        let dropped = freed.len();
        for p in freed {
            self.pool.free(p);
        }
        let gates = out
            .gates()
            .iter()
            .map(|b| {
                b.pkts()
                    .iter()
                    .map(|&p| {
                        let d = self.pool.data(p).to_vec();
                        self.pool.free(p);
                        d
                    })
                    .collect()
            })
            .collect();
        (gates, dropped)
    }

    /// Gives `frames` to input gate `igate` at time `now_ns`.
    pub(crate) fn process_at(&mut self, igate: u32, frames: &[Vec<u8>], now_ns: u64) -> Gates {
        let mut batch = Batch::default();
        for f in frames {
            assert!(batch.push(self.pool.alloc(f).unwrap()));
        }
        let mut out = Out::new(self.m.ogates());
        let mut ctx = Ctx { pool: &mut self.pool, now_ns, offsets: &self.offsets, ports: &mut self.ports };
        self.m.process(&mut ctx, igate, &batch, &mut out);
        self.collect(out)
    }

    /// Runs the module's task once at time `now_ns`.
    pub(crate) fn task_at(&mut self, now_ns: u64) -> Gates {
        let mut out = Out::new(self.m.ogates());
        let mut ctx = Ctx { pool: &mut self.pool, now_ns, offsets: &self.offsets, ports: &mut self.ports };
        self.m.run_task(&mut ctx, &mut out);
        self.collect(out)
    }
}

/// Runs module `class(args)` once on `frames`.
pub(crate) fn run(class: &str, args: &str, frames: &[Vec<u8>]) -> Gates {
    One::new(class, args).process_at(0, frames, 0)
}
