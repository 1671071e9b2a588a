//! A connection's outgoing byte stream over `sendv`: bytes written are copied into send
//! buffers (appended to the connection's current one while it has room) and handed to TCP
//! as far as the peer's window allows; the rest waits here, in order, until a later `flush`.
//! This is the bookkeeping every channel server that writes byte streams needs (IX's
//! transmit vector that re-issues writes when `sent` reports window space).

use std::collections::VecDeque;

use super::{BufId, Buffers, Calls, Extent};
use crate::api::Handle;

/// One connection's unsent output.
#[derive(Default)]
pub struct Outbox {
    /// The buffer being filled: its id and bytes used (the outbox holds a reference).
    cur: Option<(BufId, u32)>,
    /// Extents written and not taken by `sendv` yet (each holding a buffer reference).
    unsent: VecDeque<Extent>,
    queued: usize,
}

impl Outbox {
    /// An empty outbox.
    pub fn new() -> Outbox {
        Outbox::default()
    }

    /// Bytes written and not yet taken by TCP.
    pub fn unsent(&self) -> usize {
        self.queued
    }

    /// Copies `data` into send buffers; false (with what fitted kept) if the pool ran out.
    pub fn write(&mut self, bufs: &mut Buffers, mut data: &[u8]) -> bool {
        let size = bufs.size() as u32;
        while !data.is_empty() {
            let (id, used) = match self.cur {
                Some((id, used)) if used < size => (id, used),
                full => {
                    if let Some((id, _)) = full {
                        bufs.release(id);
                    }
                    self.cur = None;
                    match bufs.alloc() {
                        Some(id) => (id, 0),
                        None => return false,
                    }
                }
            };
            let n = (size - used).min(data.len() as u32);
            bufs.write(id, used, &data[..n as usize]).expect("appends after every sent byte");
            match self.unsent.back_mut() {
                Some(last) if last.buf == id && last.off + last.len == used => last.len += n,
                _ => {
                    bufs.retain(id).expect("cur is allocated");
                    self.unsent.push_back(Extent { buf: id, off: used, len: n });
                }
            }
            self.cur = Some((id, used + n));
            self.queued += n as usize;
            data = &data[n as usize..];
        }
        true
    }

    /// Hands the unsent extents to TCP on `h` as far as the window allows; true if all went.
    pub fn flush(&mut self, calls: &mut Calls<'_>, h: Handle) -> bool {
        while let Some(&e) = self.unsent.front() {
            let took = calls.sendv(h, &[e]).unwrap_or(0);
            self.queued -= took as usize;
            if took < e.len {
                self.unsent[0] = Extent { off: e.off + took, len: e.len - took, ..e };
                return false;
            }
            self.unsent.pop_front();
            calls.buffers().release(e.buf);
        }
        // Everything written is TCP's now: let the current buffer go back to the pool once
        // acknowledged instead of keeping a mostly empty buffer per idle connection.
        if let Some((id, _)) = self.cur.take() {
            calls.buffers().release(id);
        }
        true
    }

    /// Lets go of everything (the connection is gone).
    pub fn clear(&mut self, bufs: &mut Buffers) {
        if let Some((id, _)) = self.cur.take() {
            bufs.release(id);
        }
        for e in self.unsent.drain(..) {
            bufs.release(e.buf);
        }
        self.queued = 0;
    }
}
