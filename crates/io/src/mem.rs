//! An in-memory port pair with the AF_XDP port's interface, for tests and simulation.
//!
//! Each end owns a buffer arena cut into frames, like a UMEM. What one end sends is copied
//! into a queue the other end receives from. A test can also hold a [`Wire`] to inject frames
//! and read what was sent.

use crate::arena::{ArenaRegion, Mapping};
use crate::pins::Pins;
use crate::port::{Frame, Port};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

const FRAME_SIZE: usize = 2048;

type Queue = Arc<Mutex<VecDeque<Vec<u8>>>>;

/// One end of an in-memory link.
pub struct MemPort {
    arena: Vec<u8>,
    free_list: Vec<u64>,
    pins: Pins,
    inbox: Queue,
    outbox: Queue,
    /// Lent bytes, at arena addresses from `arena.len()` on.
    lent: Option<ArenaRegion>,
    /// Part of a packet whose last frame has not been sent yet.
    partial: Vec<u8>,
    /// Where that packet's checksum is to be finished (start, offset from it).
    csum: Option<(usize, usize)>,
    /// Frames sent since creation.
    pub sent: u64,
}

/// The far side of a single [`MemPort`], held by a test: inject frames, collect what it sends.
#[derive(Clone)]
pub struct Wire {
    to_port: Queue,
    from_port: Queue,
}

impl Wire {
    /// Queues a frame for the port to receive.
    pub fn inject(&self, frame: &[u8]) {
        self.to_port.lock().unwrap().push_back(frame.to_vec());
    }
    /// Takes every frame the port has sent so far.
    pub fn take_sent(&self) -> Vec<Vec<u8>> {
        self.from_port.lock().unwrap().drain(..).collect()
    }
}

impl MemPort {
    fn with_queues(frames: usize, inbox: Queue, outbox: Queue) -> MemPort {
        MemPort {
            arena: vec![0; frames * FRAME_SIZE],
            free_list: (0..frames as u64).rev().map(|i| i * FRAME_SIZE as u64).collect(),
            pins: Pins::new(frames, FRAME_SIZE),
            inbox,
            outbox,
            lent: None,
            partial: Vec::new(),
            csum: None,
            sent: 0,
        }
    }

    /// Lends `bytes` (rounded up to 2 MB) beyond the frames, as an AF_XDP port made with
    /// `XskConfig::lend` does; packets may then be gathered from several frames.
    pub fn lend(mut self, bytes: usize) -> std::io::Result<MemPort> {
        let map = Mapping::new(bytes)?;
        let len = map.len();
        // The region's arena addresses continue after the frames: build it over a mapping
        // whose offset 0 stands for arena address `arena.len()`.
        self.lent = Some(ArenaRegion::with_addr(map, 0, len, self.arena.len() as u64));
        Ok(self)
    }

    fn bytes(&self, addr: u64, len: usize) -> &[u8] {
        match &self.lent {
            Some(r) if addr >= r.addr() => r.slice(addr, len),
            _ => &self.arena[addr as usize..addr as usize + len],
        }
    }

    fn in_region(&self, addr: u64) -> bool {
        self.lent.as_ref().is_some_and(|r| addr >= r.addr())
    }

    /// Two connected ends with `frames` buffers each.
    pub fn pair(frames: usize) -> (MemPort, MemPort) {
        let a: Queue = Default::default();
        let b: Queue = Default::default();
        (MemPort::with_queues(frames, a.clone(), b.clone()), MemPort::with_queues(frames, b, a))
    }

    /// A port whose other side is a test's [`Wire`].
    pub fn with_wire(frames: usize) -> (MemPort, Wire) {
        let to: Queue = Default::default();
        let from: Queue = Default::default();
        (MemPort::with_queues(frames, to.clone(), from.clone()), Wire { to_port: to, from_port: from })
    }

    /// Frames currently free (for leak checks in tests).
    pub fn free_frames(&self) -> usize {
        self.free_list.len()
    }
}

impl Port for MemPort {
    fn recv(&mut self, out: &mut [Frame]) -> usize {
        let mut inbox = self.inbox.lock().unwrap();
        let mut n = 0;
        while n < out.len() {
            if inbox.is_empty() || self.free_list.is_empty() {
                break;
            }
            let pkt = inbox.pop_front().unwrap();
            let addr = self.free_list.pop().unwrap();
            let len = pkt.len().min(FRAME_SIZE);
            let a = addr as usize;
            self.arena[a..a + len].copy_from_slice(&pkt[..len]);
            out[n] = Frame::new(addr, len as u32);
            n += 1;
        }
        n
    }

    fn data(&self, f: Frame) -> &[u8] {
        self.bytes(f.addr, f.len as usize)
    }

    fn data_mut(&mut self, f: Frame) -> &mut [u8] {
        let end = (f.addr as usize / FRAME_SIZE + 1) * FRAME_SIZE;
        &mut self.arena[f.addr as usize..end]
    }

    fn frame_capacity(&self) -> usize {
        FRAME_SIZE
    }

    fn alloc(&mut self) -> Option<Frame> {
        self.free_list.pop().map(|addr| Frame::new(addr, 0))
    }

    fn free_frames(&mut self) -> usize {
        self.free_list.len()
    }

    fn free(&mut self, f: Frame) {
        if self.in_region(f.addr) {
            return;
        }
        let a = f.addr - f.addr % FRAME_SIZE as u64;
        if !self.pins.give_back(a) {
            self.free_list.push(a);
        }
    }

    fn tx_csum_partial(&mut self, addr: u64, start: u16, offset: u16) -> bool {
        if self.in_region(addr) || addr % (FRAME_SIZE as u64) < crate::port::TX_META_ROOM {
            return false;
        }
        // Kept in the frame before the packet, as an AF_XDP port keeps its TX metadata.
        let a = addr as usize;
        self.arena[a - 4..a - 2].copy_from_slice(&start.to_ne_bytes());
        self.arena[a - 2..a].copy_from_slice(&offset.to_ne_bytes());
        true
    }

    fn send(&mut self, frames: &[Frame]) -> usize {
        let mut packet = std::mem::take(&mut self.partial);
        for f in frames {
            if f.meta {
                let a = f.addr as usize;
                let start = u16::from_ne_bytes([self.arena[a - 4], self.arena[a - 3]]);
                let offset = u16::from_ne_bytes([self.arena[a - 2], self.arena[a - 1]]);
                self.csum = Some((packet.len() + usize::from(start), usize::from(offset)));
            }
            packet.extend_from_slice(self.bytes(f.addr, f.len as usize));
            if !self.in_region(f.addr) {
                let a = f.addr - f.addr % FRAME_SIZE as u64;
                if !self.pins.give_back(a) {
                    self.free_list.push(a);
                }
            }
            if !f.more {
                // What a NIC does with CHECKSUM_PARTIAL: sum from the start, store the
                // complement where asked (the field holds the pseudo-header sum).
                if let Some((start, offset)) = self.csum.take() {
                    let c = !wire::checksum::fold(wire::checksum::add(0, &packet[start..]));
                    packet[start + offset..start + offset + 2].copy_from_slice(&c.to_be_bytes());
                }
                self.outbox.lock().unwrap().push_back(std::mem::take(&mut packet));
                self.sent += 1;
            }
        }
        self.partial = packet;
        frames.len()
    }

    fn region(&self) -> Option<ArenaRegion> {
        self.lent.clone()
    }

    fn tx_room(&mut self) -> usize {
        self.free_list.len().max(1) * 2
    }

    fn flush(&mut self) {}

    fn wait(&mut self, _timeout_ms: i32) {}

    fn pin(&mut self) -> Option<Frame> {
        self.pins.take(&mut self.free_list).map(|addr| Frame::new(addr, 0))
    }

    fn unpin(&mut self, addr: u64) {
        self.pins.release(addr, &mut self.free_list);
    }

    fn returned(&mut self, each: &mut dyn FnMut(u64)) {
        self.pins.drain(each);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_carries_frames_and_returns_buffers() {
        let (mut a, mut b) = MemPort::pair(4);
        let f = a.alloc().unwrap();
        a.data_mut(f)[..3].copy_from_slice(b"abc");
        assert_eq!(a.send(&[Frame { len: 3, ..f }]), 1);
        assert_eq!(a.free_frames(), 4);
        let mut got = [Frame::new(0, 0); 8];
        assert_eq!(b.recv(&mut got), 1);
        assert_eq!(b.data(got[0]), b"abc");
        b.free(got[0]);
        assert_eq!(b.free_frames(), 4);
    }

    #[test]
    fn a_packet_gathered_from_a_frame_and_lent_bytes_arrives_whole() {
        let (a, wire) = MemPort::with_wire(4);
        let mut a = a.lend(1).unwrap();
        let r = a.region().expect("lent");
        assert_eq!(r.addr(), 4 * FRAME_SIZE as u64, "lent addresses follow the frames");
        let mut pool = crate::storage::BufferPool::in_region(&r, 2, 4096).unwrap();
        let mut b = pool.alloc().unwrap();
        pool.get_mut(&mut b)[..5].copy_from_slice(b"world");
        let body = pool.arena_addr(&b, 0).unwrap();
        let h = a.alloc().unwrap();
        a.data_mut(h)[..6].copy_from_slice(b"hello ");
        let frames = [Frame { more: true, ..Frame::new(h.addr, 6) }, Frame::new(body, 5)];
        assert_eq!(a.send(&frames), 2);
        assert_eq!(wire.take_sent(), vec![b"hello world".to_vec()]);
        assert_eq!(a.free_frames(), 4, "the header frame is back; the lent bytes are not frames");
    }

    #[test]
    fn a_checksum_left_to_the_device_is_finished_as_a_nic_does() {
        let (mut a, wire) = MemPort::with_wire(4);
        let f = a.alloc().unwrap();
        let at = f.addr + crate::port::TX_META_ROOM;
        assert!(!a.tx_csum_partial(f.addr, 2, 4), "no room for the metadata before it");
        assert!(a.tx_csum_partial(at, 2, 4));
        let bytes = [9u8, 9, 1, 2, 3, 4, 0x12, 0x34, 7, 8, 9];
        a.data_mut(Frame::new(at, 0))[..bytes.len()].copy_from_slice(&bytes);
        assert_eq!(a.send(&[Frame { meta: true, ..Frame::new(at, bytes.len() as u32) }]), 1);
        let got = wire.take_sent().pop().unwrap();
        // The sum from byte 2 on, with the field's prior content, complemented, at 2 + 4.
        let c = !wire::checksum::fold(wire::checksum::add(0, &bytes[2..]));
        assert_eq!(got[6..8], c.to_be_bytes());
        assert_eq!((&got[..6], &got[8..]), (&bytes[..6], &bytes[8..]));
    }

    #[test]
    fn pinned_frames_come_back_to_the_pinner_after_sending() {
        let (mut a, _b) = MemPort::pair(4);
        let p = a.pin().unwrap();
        assert_eq!(a.free_frames(), 3);
        a.data_mut(p)[..2].copy_from_slice(b"hi");
        assert_eq!(a.send(&[Frame { len: 2, ..p }]), 1);
        assert_eq!(a.free_frames(), 3, "a sent replica does not join the free list");
        let mut back = Vec::new();
        a.returned(&mut |f| back.push(f));
        assert_eq!(back, vec![p.addr]);
        a.unpin(p.addr);
        assert_eq!(a.free_frames(), 4);
    }
}
