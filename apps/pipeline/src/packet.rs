//! Packets and batches. A pipeline owns a pool of fixed buffers allocated once: a packet is
//! an index into it, with its bytes (after room to push headers in front) and its metadata.
//! A batch is at most [`BATCH`] packets in a fixed array: nothing on the path allocates.

use crate::metadata::META_SIZE;

/// Most packets in a batch.
pub const BATCH: usize = 64;
/// Bytes per buffer.
pub const BUF_SIZE: usize = 2048;
/// Room kept in front of a packet's bytes for headers pushed later (VLAN, VXLAN).
pub const HEADROOM: usize = 128;

/// A packet: its buffer's index in the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pkt(u32);

impl Pkt {
    /// Its buffer's index (below [`Pool::capacity`]): modules that keep packets in lists
    /// index their own per-buffer arrays with it.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The packet of buffer `i` (for a module's lists; the module must hold that packet).
    pub(crate) fn from_index(i: usize) -> Pkt {
        Pkt(i as u32)
    }
}

/// The pipeline's buffers.
pub struct Pool {
    bufs: Vec<u8>,
    meta: Vec<[u8; META_SIZE]>,
    /// (start, len) of each packet's bytes in its buffer.
    span: Vec<(u16, u16)>,
    free: Vec<u32>,
}

impl Pool {
    /// A pool of `n` buffers.
    pub fn new(n: usize) -> Pool {
        Pool {
            bufs: vec![0; n * BUF_SIZE],
            meta: vec![[0; META_SIZE]; n],
            span: vec![(HEADROOM as u16, 0); n],
            free: (0..n as u32).rev().collect(),
        }
    }

    /// A packet holding `bytes` (None if the pool is empty or they do not fit).
    pub fn alloc(&mut self, bytes: &[u8]) -> Option<Pkt> {
        if bytes.len() > BUF_SIZE - HEADROOM {
            return None;
        }
        let i = self.free.pop()?;
        let at = i as usize * BUF_SIZE + HEADROOM;
        self.bufs[at..at + bytes.len()].copy_from_slice(bytes);
        self.span[i as usize] = (HEADROOM as u16, bytes.len() as u16);
        self.meta[i as usize] = [0; META_SIZE];
        Some(Pkt(i))
    }

    /// A copy of `p` (bytes and metadata), if a buffer is free.
    pub fn copy(&mut self, p: Pkt) -> Option<Pkt> {
        let i = self.free.pop()?;
        let (s, l) = self.span[p.0 as usize];
        let (from, to) = (p.0 as usize * BUF_SIZE, i as usize * BUF_SIZE);
        self.bufs.copy_within(from + s as usize..from + s as usize + l as usize, to + s as usize);
        self.span[i as usize] = (s, l);
        self.meta[i as usize] = self.meta[p.0 as usize];
        Some(Pkt(i))
    }

    /// Gives `p`'s buffer back.
    pub fn free(&mut self, p: Pkt) {
        self.free.push(p.0);
    }

    /// Buffers in all.
    pub fn capacity(&self) -> usize {
        self.span.len()
    }

    /// Sets `p`'s length (bytes added at the end hold whatever the buffer held); false if the
    /// buffer has no room for it.
    pub fn set_len(&mut self, p: Pkt, len: usize) -> bool {
        let (s, l) = &mut self.span[p.0 as usize];
        if *s as usize + len > BUF_SIZE {
            return false;
        }
        *l = len as u16;
        true
    }

    /// Buffers free.
    pub fn available(&self) -> usize {
        self.free.len()
    }

    /// `p`'s bytes.
    pub fn data(&self, p: Pkt) -> &[u8] {
        let (s, l) = self.span[p.0 as usize];
        let at = p.0 as usize * BUF_SIZE + s as usize;
        &self.bufs[at..at + l as usize]
    }

    /// `p`'s bytes, to change in place.
    pub fn data_mut(&mut self, p: Pkt) -> &mut [u8] {
        let (s, l) = self.span[p.0 as usize];
        let at = p.0 as usize * BUF_SIZE + s as usize;
        &mut self.bufs[at..at + l as usize]
    }

    /// Grows `p` by `n` bytes in front (a header pushed); false if the headroom is used up.
    pub fn push_front(&mut self, p: Pkt, n: usize) -> bool {
        let (s, l) = &mut self.span[p.0 as usize];
        if n > *s as usize {
            return false;
        }
        *s -= n as u16;
        *l += n as u16;
        true
    }

    /// Shrinks `p` by `n` bytes in front (a header popped); false if it is shorter.
    pub fn pull_front(&mut self, p: Pkt, n: usize) -> bool {
        let (s, l) = &mut self.span[p.0 as usize];
        if n > *l as usize {
            return false;
        }
        *s += n as u16;
        *l -= n as u16;
        true
    }

    /// `p`'s metadata bytes.
    pub fn meta(&self, p: Pkt) -> &[u8; META_SIZE] {
        &self.meta[p.0 as usize]
    }

    /// `p`'s metadata bytes, to change.
    pub fn meta_mut(&mut self, p: Pkt) -> &mut [u8; META_SIZE] {
        &mut self.meta[p.0 as usize]
    }
}

/// Up to [`BATCH`] packets.
#[derive(Clone, Copy)]
pub struct Batch {
    pkts: [Pkt; BATCH],
    len: usize,
}

impl Default for Batch {
    fn default() -> Self {
        Batch { pkts: [Pkt(0); BATCH], len: 0 }
    }
}

impl Batch {
    /// Adds `p`; false (and `p` not added) if the batch is full.
    pub fn push(&mut self, p: Pkt) -> bool {
        if self.len == BATCH {
            return false;
        }
        self.pkts[self.len] = p;
        self.len += 1;
        true
    }

    /// The packets.
    pub fn pkts(&self) -> &[Pkt] {
        &self.pkts[..self.len]
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True if no more fit.
    pub fn is_full(&self) -> bool {
        self.len == BATCH
    }

    /// Empties it.
    pub fn clear(&mut self) {
        self.len = 0;
    }
}
