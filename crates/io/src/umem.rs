//! The UMEM: one contiguous buffer arena shared with the kernel, cut into equal chunks.

use crate::sys;
use std::io;

/// Default size of one frame buffer.
pub const DEFAULT_FRAME_SIZE: usize = 4096;

/// A page-aligned arena of `frames × frame_size` bytes, on 2 MB hugepages when the system has
/// them reserved, else on ordinary pages.
pub struct Umem {
    ptr: *mut u8,
    len: usize,
    frame_size: usize,
    hugepages: bool,
}

// SAFETY: the arena is plain memory owned by this value; it moves with its owner thread.
unsafe impl Send for Umem {}

impl Umem {
    /// Allocates the arena. The size is rounded up to 2 MB so hugepages can back it.
    pub fn new(frames: usize, frame_size: usize) -> io::Result<Umem> {
        if !frame_size.is_power_of_two() || !(2048..=4096).contains(&frame_size) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "frame size must be 2048 or 4096"));
        }
        let len = (frames * frame_size).next_multiple_of(2 << 20);
        let (ptr, hugepages) = sys::mmap_anon(len)?;
        Ok(Umem { ptr, len, frame_size, hugepages })
    }

    /// Number of frames.
    pub fn frames(&self) -> usize {
        self.len / self.frame_size
    }
    /// Size of one frame buffer.
    pub fn frame_size(&self) -> usize {
        self.frame_size
    }
    /// True if the arena is on hugepages.
    pub fn hugepages(&self) -> bool {
        self.hugepages
    }
    /// Start of the arena (for registration with the kernel).
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    /// Length of the arena in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True if the arena is empty (never, once made).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `len` bytes at `addr`. Panics if the range leaves the arena.
    pub fn slice(&self, addr: u64, len: usize) -> &[u8] {
        let a = addr as usize;
        assert!(a.checked_add(len).is_some_and(|e| e <= self.len), "frame outside the UMEM");
        // SAFETY: the range is inside our live mapping (checked above); `&self` keeps it alive
        // and the kernel writes a frame only while it owns it, which the ring protocol excludes.
        unsafe { std::slice::from_raw_parts(self.ptr.add(a), len) }
    }

    /// The bytes from `addr` to the end of its frame, writable.
    pub fn slice_to_frame_end(&mut self, addr: u64) -> &mut [u8] {
        let a = addr as usize;
        assert!(a < self.len, "frame outside the UMEM");
        // frame_size is a power of two (checked in `new`): mask instead of dividing per packet.
        let end = (a & !(self.frame_size - 1)) + self.frame_size;
        // SAFETY: [a, end) is inside our mapping; `&mut self` gives exclusive access and the
        // frame is owned by the engine (not the kernel) when this is called.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(a), end - a) }
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: our own mapping; the socket using it is closed before (field order in XskPort).
        unsafe { sys::munmap(self.ptr, self.len) };
    }
}
