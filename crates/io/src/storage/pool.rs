//! The storage port's buffers: one page-aligned arena (on hugepages when reserved) cut into
//! equal buffers whose size is a multiple of 4 KiB, so every buffer satisfies O_DIRECT's
//! alignment on any device. A buffer is a [`Buf`] token that is not `Clone`: handing it to a
//! read moves it into the port, so nothing can touch memory the kernel is writing.

use crate::sys;
use std::io;

/// Alignment of O_DIRECT offsets, lengths and buffers that every Linux device accepts.
pub const DIRECT_ALIGN: usize = 4096;

/// One buffer of the pool, owned by whoever holds this token.
#[derive(Debug, PartialEq, Eq)]
pub struct Buf {
    index: u32,
}

impl Buf {
    /// The buffer's index in the pool (also its registered-buffer index).
    pub fn index(&self) -> u32 {
        self.index
    }
}

/// The arena and its free buffers.
pub struct BufferPool {
    ptr: *mut u8,
    len: usize,
    buf_size: usize,
    count: u32,
    free: Vec<u32>,
    /// Fewest buffers free at any time so far.
    low: u32,
    hugepages: bool,
}

// SAFETY: the arena is plain memory owned by this value; it moves with its owner thread.
unsafe impl Send for BufferPool {}

impl BufferPool {
    /// `count` buffers of `buf_size` bytes (a non-zero multiple of [`DIRECT_ALIGN`]).
    pub fn new(count: u32, buf_size: usize) -> io::Result<BufferPool> {
        if count == 0 || buf_size == 0 || !buf_size.is_multiple_of(DIRECT_ALIGN) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("storage buffers: need at least one, of a multiple of {DIRECT_ALIGN} bytes"),
            ));
        }
        let len = (count as usize).checked_mul(buf_size).ok_or(io::ErrorKind::InvalidInput)?.next_multiple_of(2 << 20);
        let (ptr, hugepages) = sys::mmap_anon(len)?;
        Ok(BufferPool { ptr, len, buf_size, count, free: (0..count).rev().collect(), low: count, hugepages })
    }

    /// Size of one buffer.
    pub fn buf_size(&self) -> usize {
        self.buf_size
    }

    /// Number of buffers.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Buffers free now.
    pub fn free_count(&self) -> usize {
        self.free.len()
    }

    /// True if the arena is on hugepages.
    pub fn hugepages(&self) -> bool {
        self.hugepages
    }

    /// A free buffer, if any.
    pub fn alloc(&mut self) -> Option<Buf> {
        let b = self.free.pop().map(|index| Buf { index });
        self.low = self.low.min(self.free.len() as u32);
        b
    }

    /// Most buffers in use at once so far.
    pub fn peak_in_use(&self) -> u32 {
        self.count - self.low
    }

    /// Gives `b` back.
    pub fn free(&mut self, b: Buf) {
        debug_assert!(b.index < self.count && !self.free.contains(&b.index), "a buffer freed twice");
        self.free.push(b.index);
    }

    /// The whole buffer.
    pub fn get(&self, b: &Buf) -> &[u8] {
        // SAFETY: `b` indexes a buffer inside the live arena; holding the token means no read
        // or write of the port is in flight into it (the port holds tokens while it is).
        unsafe { std::slice::from_raw_parts(self.ptr.add(b.index as usize * self.buf_size), self.buf_size) }
    }

    /// The whole buffer, writable.
    pub fn get_mut(&mut self, b: &mut Buf) -> &mut [u8] {
        // SAFETY: as in `get`; `&mut self` and `&mut Buf` make this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(b.index as usize * self.buf_size), self.buf_size) }
    }

    /// Where buffer `index` starts, for registration and for building requests.
    pub(crate) fn addr(&self, index: u32) -> *mut u8 {
        assert!(index < self.count, "buffer index outside the pool");
        // SAFETY: inside the arena (checked above).
        unsafe { self.ptr.add(index as usize * self.buf_size) }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // SAFETY: our own mapping; the port that registered it drops its ring first (field
        // order), so the kernel no longer refers to it.
        unsafe { sys::munmap(self.ptr, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_bounded_and_come_back() {
        let mut p = BufferPool::new(3, 8192).unwrap();
        let mut got: Vec<Buf> = std::iter::from_fn(|| p.alloc()).collect();
        assert_eq!(got.len(), 3);
        assert!(p.alloc().is_none(), "bounded");
        for b in &mut got {
            assert_eq!(p.get(b).as_ptr() as usize % DIRECT_ALIGN, 0);
            p.get_mut(b).fill(b.index() as u8 + 1);
        }
        assert!(got.iter().all(|b| p.get(b).iter().all(|&x| x == b.index() as u8 + 1)), "no overlap");
        p.free(got.pop().unwrap());
        assert_eq!(p.free_count(), 1);
        assert!(p.alloc().is_some());
    }

    #[test]
    fn sizes_must_suit_o_direct() {
        assert!(BufferPool::new(1, 1000).is_err());
        assert!(BufferPool::new(0, 4096).is_err());
    }
}
