//! PortInc and PortOut: frames from a port into the pipeline, and out of it.

use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::{Batch, BATCH};

/// Receives up to `burst` frames from port `port` per run of its task, out of gate 0.
/// Frames that find no free buffer are dropped (counted as `no_buffer`).
pub struct PortInc {
    port: usize,
    burst: usize,
    no_buffer: u64,
}

impl PortInc {
    pub(super) fn new(a: &Args) -> Result<PortInc, String> {
        Ok(PortInc {
            port: a.port("port")?,
            burst: a.int("burst", BATCH as i64, 1..=BATCH as i64)? as usize,
            no_buffer: 0,
        })
    }
}

impl Module for PortInc {
    fn igates(&self) -> u32 {
        0
    }

    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        super::drop_all(batch, out);
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>, out: &mut Out) -> usize {
        let Ctx { pool, ports, .. } = ctx;
        let mut made = 0;
        let mut lost = 0;
        ports[self.port].port.recv(self.burst, &mut |f| match pool.alloc(f) {
            Some(p) => {
                out.emit(0, p);
                made += 1;
            }
            None => lost += 1,
        });
        self.no_buffer += lost;
        made
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("no_buffer", self.no_buffer)]
    }
}

/// Sends every packet out of port `port`; packets the port has no room for are dropped.
pub struct PortOut {
    port: usize,
}

impl PortOut {
    pub(super) fn new(a: &Args) -> Result<PortOut, String> {
        Ok(PortOut { port: a.port("port")? })
    }
}

impl Module for PortOut {
    fn ogates(&self) -> u32 {
        0
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        let port = &mut ctx.ports[self.port].port;
        for &p in batch.pkts() {
            // Sent or not, the buffer is done with: the port copied what it sent.
            if port.send(ctx.pool.data(p)) {
                out.done(p);
            } else {
                out.drop(p);
            }
        }
    }
}
