//! Anonymous memory shared by the NIC port and the storage port, so bytes read from disk can
//! be transmitted from where they landed (Atlas: no copy between disk and NIC).
//!
//! A [`Mapping`] is reference-counted: the UMEM of an AF_XDP socket and the buffer pool of a
//! storage port may both hold it, and it is unmapped when the last one is dropped, whatever
//! order the engine drops its ports in. An [`ArenaRegion`] is the part of a port's arena that
//! the port lends out; its addresses are arena addresses, the ones TX descriptors carry.

use crate::sys;
use std::io;
use std::sync::Arc;

/// What backs a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pages {
    /// Reserved 2 MB hugepages (hugetlbfs).
    Reserved,
    /// Transparent 2 MB hugepages, all of it.
    Transparent,
    /// 4 KiB pages (at least in part).
    Ordinary,
}

impl std::fmt::Display for Pages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Pages::Reserved => "hugepages",
            Pages::Transparent => "transparent hugepages",
            Pages::Ordinary => "ordinary pages",
        })
    }
}

/// A page-aligned mapping (on 2 MB hugepages, reserved or else transparent, where the system
/// has them): anonymous, or of a memory file that another process (a control daemon, an
/// application) maps too.
pub(crate) struct Mapping {
    ptr: *mut u8,
    len: usize,
    pages: Pages,
    /// The memory file, if the mapping is shared through one.
    file: Option<std::os::fd::OwnedFd>,
}

// SAFETY: plain memory; who may touch which bytes when is decided by the tokens and rings of
// its users (frames, buffers), not by this value.
unsafe impl Send for Mapping {}
// SAFETY: as above; `Mapping` itself hands out no references.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// At least `len` bytes, rounded up to 2 MB so hugepages can back it.
    pub(crate) fn new(len: usize) -> io::Result<Arc<Mapping>> {
        let len = len.next_multiple_of(2 << 20);
        let (ptr, reserved) = sys::mmap_anon(len)?;
        let pages = if reserved {
            Pages::Reserved
        } else if sys::anon_huge_bytes(ptr) >= len {
            Pages::Transparent
        } else {
            Pages::Ordinary
        };
        Ok(Arc::new(Mapping { ptr, len, pages, file: None }))
    }
    /// At least `len` bytes (rounded up to 2 MB) of a new memory file, mapped shared.
    pub(crate) fn new_file(name: &str, len: usize) -> io::Result<Arc<Mapping>> {
        let len = len.next_multiple_of(2 << 20);
        let (fd, ptr, huge) = sys::memfd_shared(name, len)?;
        let pages = if huge { Pages::Reserved } else { Pages::Ordinary };
        Ok(Arc::new(Mapping { ptr, len, pages, file: Some(fd) }))
    }
    /// The whole of a memory file received from another process, mapped shared.
    pub(crate) fn of_file(fd: std::os::fd::OwnedFd) -> io::Result<Arc<Mapping>> {
        let len = sys::file_len(&fd)?;
        if len == 0 || len % (2 << 20) != 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "packet memory is not a whole number of 2 MB"));
        }
        let ptr = sys::mmap_file(&fd, len)?;
        // Whether the sender's file is on hugepages is its business; only reporting uses it.
        Ok(Arc::new(Mapping { ptr, len, pages: Pages::Ordinary, file: Some(fd) }))
    }
    /// The memory file, if shared through one.
    pub(crate) fn file(&self) -> Option<&std::os::fd::OwnedFd> {
        self.file.as_ref()
    }
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub(crate) fn len(&self) -> usize {
        self.len
    }
    pub(crate) fn pages(&self) -> Pages {
        self.pages
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, and the last reference to it is going away.
        unsafe { sys::munmap(self.ptr, self.len) };
    }
}

/// A byte range of a port's arena lent out to another user (the storage port's buffers).
#[derive(Clone)]
pub struct ArenaRegion {
    map: Arc<Mapping>,
    offset: usize,
    len: usize,
    /// Arena address of the first byte.
    addr: u64,
}

impl std::fmt::Debug for ArenaRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ArenaRegion({:#x}+{})", self.addr, self.len)
    }
}

impl ArenaRegion {
    /// Bytes `offset .. offset + len` of `map`, which is the arena itself.
    pub(crate) fn new(map: Arc<Mapping>, offset: usize, len: usize) -> ArenaRegion {
        Self::with_addr(map, offset, len, offset as u64)
    }
    /// Bytes `offset .. offset + len` of `map`, known to the port as arena address `addr` on.
    pub(crate) fn with_addr(map: Arc<Mapping>, offset: usize, len: usize, addr: u64) -> ArenaRegion {
        assert!(offset.checked_add(len).is_some_and(|e| e <= map.len()), "region outside the mapping");
        ArenaRegion { map, offset, len, addr }
    }
    /// Arena address of the first byte (what a TX descriptor names it by).
    pub fn addr(&self) -> u64 {
        self.addr
    }
    /// `len` bytes at arena address `addr`, inside the region. Panics otherwise.
    pub(crate) fn slice(&self, addr: u64, len: usize) -> &[u8] {
        let rel = addr.checked_sub(self.addr).expect("below the region") as usize;
        assert!(rel.checked_add(len).is_some_and(|e| e <= self.len), "outside the region");
        // SAFETY: inside the live mapping (checked above). The bytes are a lent buffer's,
        // read here while a packet carries them; its holder writes it only while no packet
        // does (see `BufferPool::get_mut`).
        unsafe { std::slice::from_raw_parts(self.ptr().add(rel), len) }
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True if the region has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// What backs it.
    pub fn pages(&self) -> Pages {
        self.map.pages()
    }
    /// The first byte in this process.
    pub(crate) fn ptr(&self) -> *mut u8 {
        // SAFETY: `offset` is inside the mapping (checked in `with_addr`).
        unsafe { self.map.ptr().add(self.offset) }
    }
    pub(crate) fn mapping(&self) -> &Arc<Mapping> {
        &self.map
    }
}
