//! The UMEM: one contiguous buffer arena shared with the kernel, cut into equal chunks, and
//! optionally a second part lent to the storage port, whose buffers the TX ring can then
//! carry as they are.

use crate::arena::{ArenaRegion, Mapping};
use std::io;
use std::sync::Arc;

/// Default size of one frame buffer.
pub const DEFAULT_FRAME_SIZE: usize = 4096;

/// A page-aligned arena of `frames × frame_size` bytes (plus the lent part), on 2 MB
/// hugepages when the system has them reserved, else on transparent hugepages where the
/// kernel gives them, else on ordinary pages.
pub struct Umem {
    map: Arc<Mapping>,
    /// Bytes cut into frames (the lent part starts here).
    frames_len: usize,
    frame_size: usize,
    lent: usize,
}

impl Umem {
    /// Allocates the arena: `frames` frames, then `lend` bytes (rounded up to 2 MB) for
    /// [`Umem::region`].
    pub fn new(frames: usize, frame_size: usize, lend: usize) -> io::Result<Umem> {
        check_frame_size(frame_size)?;
        let frames_len = (frames * frame_size).next_multiple_of(2 << 20);
        let lent = lend.next_multiple_of(2 << 20);
        let map = Mapping::new(frames_len + lent)?;
        Ok(Umem { map, frames_len, frame_size, lent })
    }

    /// As [`Umem::new`], in a memory file that [`Umem::file`] gives out, for another process
    /// to map with [`Umem::from_file`].
    pub fn new_shared(frames: usize, frame_size: usize, lend: usize) -> io::Result<Umem> {
        check_frame_size(frame_size)?;
        let frames_len = (frames * frame_size).next_multiple_of(2 << 20);
        let lent = lend.next_multiple_of(2 << 20);
        let map = Mapping::new_file("sirocco-umem", frames_len + lent)?;
        Ok(Umem { map, frames_len, frame_size, lent })
    }

    /// The arena of a memory file made by [`Umem::new_shared`] in another process: `frames`
    /// frames of `frame_size`, the rest of the file lent.
    pub fn from_file(fd: std::os::fd::OwnedFd, frames: usize, frame_size: usize) -> io::Result<Umem> {
        check_frame_size(frame_size)?;
        let map = Mapping::of_file(fd)?;
        let frames_len = (frames * frame_size).next_multiple_of(2 << 20);
        if frames == 0 || frames_len > map.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "packet memory smaller than its frames"));
        }
        let lent = map.len() - frames_len;
        Ok(Umem { map, frames_len, frame_size, lent })
    }

    /// The memory file, if the arena is shared through one.
    pub fn file(&self) -> Option<&std::os::fd::OwnedFd> {
        self.map.file()
    }

    /// Number of frames.
    pub fn frames(&self) -> usize {
        self.frames_len / self.frame_size
    }
    /// Size of one frame buffer.
    pub fn frame_size(&self) -> usize {
        self.frame_size
    }
    /// What backs the arena.
    pub fn pages(&self) -> crate::arena::Pages {
        self.map.pages()
    }
    /// Start of the arena (for registration with the kernel).
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.map.ptr()
    }
    /// Length in bytes, lent part included.
    pub fn len(&self) -> usize {
        self.frames_len + self.lent
    }
    /// True if the arena is empty (never, once made).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The lent part, if any.
    pub fn region(&self) -> Option<ArenaRegion> {
        (self.lent > 0).then(|| ArenaRegion::new(self.map.clone(), self.frames_len, self.lent))
    }
    /// True if `addr` is in the lent part.
    #[inline]
    pub fn in_region(&self, addr: u64) -> bool {
        addr as usize >= self.frames_len
    }
    /// Arena address where the lent part starts.
    pub fn region_start(&self) -> u64 {
        self.frames_len as u64
    }

    /// Starts loading the first cache line at `addr` (a frame the engine reads soon: with
    /// the kernel writing frames on this core well before they are read, the first read of
    /// each was most of the engine's own time under a flood).
    #[inline]
    pub fn prefetch(&self, addr: u64) {
        prefetch_hint(self.map.ptr().wrapping_add(addr as usize));
    }

    /// `len` bytes at `addr`. Panics if the range leaves the arena.
    pub fn slice(&self, addr: u64, len: usize) -> &[u8] {
        let a = addr as usize;
        assert!(a.checked_add(len).is_some_and(|e| e <= self.len()), "frame outside the UMEM");
        // SAFETY: the range is inside our live mapping (checked above); `&self` keeps it alive
        // and the kernel writes a frame only while it owns it, which the ring protocol excludes.
        // Lent bytes are written by the storage port only while a read holds their buffer, and
        // nobody transmits a buffer that is being read into.
        unsafe { std::slice::from_raw_parts(self.map.ptr().add(a), len) }
    }

    /// The bytes from `addr` to the end of its frame, writable.
    pub fn slice_to_frame_end(&mut self, addr: u64) -> &mut [u8] {
        let a = addr as usize;
        assert!(a < self.frames_len, "frame outside the UMEM's frames");
        // frame_size is a power of two (checked in `new`): mask instead of dividing per packet.
        let end = (a & !(self.frame_size - 1)) + self.frame_size;
        // SAFETY: [a, end) is inside our mapping's frames; `&mut self` gives exclusive access
        // and the frame is owned by the engine (not the kernel) when this is called.
        unsafe { std::slice::from_raw_parts_mut(self.map.ptr().add(a), end - a) }
    }
}

fn check_frame_size(frame_size: usize) -> io::Result<()> {
    if !frame_size.is_power_of_two() || !(2048..=4096).contains(&frame_size) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "frame size must be 2048 or 4096"));
    }
    Ok(())
}

/// Starts loading the cache line at `p` into the caches: for memory the engine reads soon (a
/// received frame, the table slot its segment will be looked up in).
#[inline]
pub fn prefetch_hint(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86_64; a prefetch is a hint, not an access, and never faults
    // whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
