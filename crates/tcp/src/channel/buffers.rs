//! The memory a channel application sends from: fixed-size buffers with reference counts.
//!
//! IX's `sendv` sends from the application's memory and asks it to keep those bytes unchanged
//! until they are acknowledged. Here the application writes into a [`Buffers`] buffer, passes
//! [`Extent`]s of it to `sendv`, and TCP keeps a reference to each buffer with unacknowledged
//! bytes; a retransmission reads the same bytes again. Bytes handed to `sendv` are *sealed*: a
//! later write can only append after them, so the stream TCP retransmits is the stream it
//! first sent. Buffers come from a preallocated pool (no allocation per message) and return to
//! it when both the application and TCP let go.

/// A buffer of a [`Buffers`] pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BufId(u32);

/// Bytes `off .. off + len` of buffer `buf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// The buffer.
    pub buf: BufId,
    /// First byte.
    pub off: u32,
    /// Length.
    pub len: u32,
}

/// Why a buffer operation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufError {
    /// The buffer is not allocated (a stale or foreign id).
    NotAllocated,
    /// The write would change bytes already handed to `sendv`, or run past the buffer.
    Sealed,
}

/// A pool of `count` buffers of `size` bytes.
pub struct Buffers {
    mem: Box<[u8]>,
    refs: Box<[u32]>,
    sealed: Box<[u32]>,
    free: Vec<u32>,
    size: usize,
    /// Allocations refused because the pool was empty.
    pub exhausted: u64,
}

impl Buffers {
    /// `count` buffers of `size` bytes (the memory is touched only as it is used).
    pub fn new(count: usize, size: usize) -> Buffers {
        assert!(size > 0 && size <= u32::MAX as usize && count <= u32::MAX as usize);
        Buffers {
            mem: vec![0; count * size].into_boxed_slice(),
            refs: vec![0; count].into_boxed_slice(),
            sealed: vec![0; count].into_boxed_slice(),
            // Popped from the end: low buffers first, which keeps the touched memory small.
            free: (0..count as u32).rev().collect(),
            size,
            exhausted: 0,
        }
    }

    /// Bytes per buffer.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Buffers free now.
    pub fn available(&self) -> usize {
        self.free.len()
    }

    /// Buffers in all.
    pub fn total(&self) -> usize {
        self.refs.len()
    }

    /// Takes a free buffer; the caller holds its one reference until [`release`](Self::release).
    pub fn alloc(&mut self) -> Option<BufId> {
        match self.free.pop() {
            Some(i) => {
                self.refs[i as usize] = 1;
                self.sealed[i as usize] = 0;
                Some(BufId(i))
            }
            None => {
                self.exhausted += 1;
                None
            }
        }
    }

    /// Writes `data` at `at` in `id`, which must lie after every byte handed to `sendv`.
    pub fn write(&mut self, id: BufId, at: u32, data: &[u8]) -> Result<(), BufError> {
        let i = id.0 as usize;
        if self.refs.get(i).copied().unwrap_or(0) == 0 {
            return Err(BufError::NotAllocated);
        }
        let end = at as usize + data.len();
        if at < self.sealed[i] || end > self.size {
            return Err(BufError::Sealed);
        }
        self.mem[i * self.size + at as usize..i * self.size + end].copy_from_slice(data);
        Ok(())
    }

    /// The bytes of an extent.
    pub fn bytes(&self, e: Extent) -> &[u8] {
        let start = e.buf.0 as usize * self.size + e.off as usize;
        &self.mem[start..start + e.len as usize]
    }

    /// Takes one more reference to `id` (an application that keeps several pieces of a
    /// buffer, each released on its own).
    pub fn retain(&mut self, id: BufId) -> Result<(), BufError> {
        match self.refs.get_mut(id.0 as usize) {
            Some(r) if *r > 0 => {
                *r += 1;
                Ok(())
            }
            _ => Err(BufError::NotAllocated),
        }
    }

    /// Drops one reference (the application's own, or TCP's once acknowledged).
    pub fn release(&mut self, id: BufId) {
        let r = &mut self.refs[id.0 as usize];
        debug_assert!(*r > 0, "buffer released more often than referenced");
        *r = r.saturating_sub(1);
        if *r == 0 {
            self.free.push(id.0);
        }
    }

    /// True if `e` lies in an allocated buffer.
    pub(crate) fn valid(&self, e: Extent) -> bool {
        let i = e.buf.0 as usize;
        self.refs.get(i).is_some_and(|&r| r > 0) && e.off as usize + e.len as usize <= self.size
    }

    /// TCP takes a reference to `e`'s buffer and its bytes become unchangeable.
    pub(crate) fn lend(&mut self, e: Extent, new_ref: bool) {
        let i = e.buf.0 as usize;
        if new_ref {
            self.refs[i] += 1;
        }
        self.sealed[i] = self.sealed[i].max(e.off + e.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_returns_when_every_reference_is_gone() {
        let mut b = Buffers::new(2, 64);
        let id = b.alloc().unwrap();
        b.write(id, 0, b"hello").unwrap();
        let e = Extent { buf: id, off: 0, len: 5 };
        b.lend(e, true);
        b.release(id); // the application's
        assert_eq!(b.available(), 1, "TCP still holds it");
        assert_eq!(b.bytes(e), b"hello");
        b.release(id); // TCP's, at the acknowledgement
        assert_eq!(b.available(), 2);
    }

    #[test]
    fn sent_bytes_cannot_change_and_the_pool_has_an_end() {
        let mut b = Buffers::new(1, 16);
        let id = b.alloc().unwrap();
        b.write(id, 0, b"abcdef").unwrap();
        b.lend(Extent { buf: id, off: 0, len: 4 }, true);
        assert_eq!(b.write(id, 2, b"x"), Err(BufError::Sealed));
        assert_eq!(b.write(id, 14, b"xyz"), Err(BufError::Sealed), "past the end");
        b.write(id, 4, b"EF").unwrap();
        assert_eq!(b.alloc(), None);
        assert_eq!(b.exhausted, 1);
        assert_eq!(b.write(BufId(7), 0, b"x"), Err(BufError::NotAllocated));
    }
}
