//! SetMetadata: writes a value into an attribute of every packet's metadata.

use super::Args;
use crate::metadata::{Attr, Mode, MAX_ATTR_SIZE};
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;

/// Writes `value` (big-endian, `size` bytes) into metadata attribute `attr`.
pub struct SetMetadata {
    attr: String,
    size: usize,
    value: [u8; 8],
}

impl SetMetadata {
    pub(super) fn new(a: &Args) -> Result<SetMetadata, String> {
        let attr = a.string("attr")?.ok_or("attr=\"name\" is required")?;
        let size = a.int("size", 4, 1..=8.min(MAX_ATTR_SIZE as i64))? as usize;
        let value = a.int("value", 0, i64::MIN..=i64::MAX)?;
        Ok(SetMetadata { attr, size, value: value.to_be_bytes() })
    }
}

impl Module for SetMetadata {
    fn attrs(&self) -> Vec<Attr> {
        vec![Attr::new(&self.attr, self.size, Mode::Write)]
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        let v = &self.value[8 - self.size..];
        for &p in batch.pkts() {
            if let Some(slot) = ctx.attr_mut(p, 0, self.size) {
                slot.copy_from_slice(v);
            }
            out.emit(0, p);
        }
    }
}
