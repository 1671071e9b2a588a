//! The storage port's buffers: one page-aligned arena (on hugepages when reserved) cut into
//! equal buffers whose size is a multiple of 4 KiB, so every buffer satisfies O_DIRECT's
//! alignment on any device. A buffer is a [`Buf`] token that is not `Clone`: handing it to a
//! read moves it into the port, so nothing can touch memory the kernel is writing.

use crate::arena::{ArenaRegion, Mapping};
use std::io;
use std::sync::Arc;

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
    /// Keeps the arena mapped while the pool (or anyone else using it) lives.
    _map: Arc<Mapping>,
    ptr: *mut u8,
    /// Arena address of the first buffer when the pool lives in a port's lent region.
    arena_addr: Option<u64>,
    buf_size: usize,
    count: u32,
    free: Vec<u32>,
    /// Fewest buffers free at any time so far.
    low: u32,
}

// SAFETY: the buffers are plain memory this value hands out by token; it moves with its
// owner thread.
unsafe impl Send for BufferPool {}

impl BufferPool {
    /// `count` buffers of `buf_size` bytes (a non-zero multiple of [`DIRECT_ALIGN`]).
    pub fn new(count: u32, buf_size: usize) -> io::Result<BufferPool> {
        let len = Self::check(count, buf_size)?;
        let map = Mapping::new(len)?;
        let ptr = map.ptr();
        Ok(Self::on(map, ptr, None, count, buf_size))
    }

    /// `count` buffers of `buf_size` bytes in `region`, a NIC port's lent arena, so a buffer
    /// can be transmitted where it was read into ([`BufferPool::arena_addr`]).
    pub fn in_region(region: &ArenaRegion, count: u32, buf_size: usize) -> io::Result<BufferPool> {
        let len = Self::check(count, buf_size)?;
        if len > region.len() || !(region.addr() as usize).is_multiple_of(DIRECT_ALIGN) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("storage buffers: {len} bytes do not fit the {} lent by the NIC port", region.len()),
            ));
        }
        Ok(Self::on(region.mapping().clone(), region.ptr(), Some(region.addr()), count, buf_size))
    }

    fn check(count: u32, buf_size: usize) -> io::Result<usize> {
        if count == 0 || buf_size == 0 || !buf_size.is_multiple_of(DIRECT_ALIGN) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("storage buffers: need at least one, of a multiple of {DIRECT_ALIGN} bytes"),
            ));
        }
        Ok((count as usize).checked_mul(buf_size).ok_or(io::ErrorKind::InvalidInput)?)
    }

    fn on(map: Arc<Mapping>, ptr: *mut u8, arena_addr: Option<u64>, count: u32, buf_size: usize) -> BufferPool {
        BufferPool { _map: map, ptr, arena_addr, buf_size, count, free: (0..count).rev().collect(), low: count }
    }

    /// Where byte `at` of buffer `b` is in the NIC port's arena, if the pool lives there.
    #[inline]
    pub fn arena_addr(&self, b: &Buf, at: usize) -> Option<u64> {
        self.arena_addr.map(|a| a + (b.index as usize * self.buf_size + at) as u64)
    }

    /// The buffer holding arena address `addr` and where in it, if the pool lives in the
    /// arena and `addr` is one of its bytes.
    pub fn at_arena_addr(&self, addr: u64) -> Option<(u32, usize)> {
        let rel = addr.checked_sub(self.arena_addr?)? as usize;
        let i = rel / self.buf_size;
        (i < self.count as usize).then_some((i as u32, rel % self.buf_size))
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

    /// What backs the arena.
    pub fn pages(&self) -> crate::arena::Pages {
        self._map.pages()
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

    /// The whole buffer, writable. When the pool lives in a NIC port's arena, the holder must
    /// not write while a packet carrying the buffer's bytes is on the TX ring (the streaming
    /// server seals in place before it first sends, and retires a buffer only once the port
    /// says none of its bytes are in flight).
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
