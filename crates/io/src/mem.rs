//! An in-memory port pair with the AF_XDP port's interface, for tests and simulation.
//!
//! Each end owns a buffer arena cut into frames, like a UMEM. What one end sends is copied
//! into a queue the other end receives from. A test can also hold a [`Wire`] to inject frames
//! and read what was sent.

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
            sent: 0,
        }
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
            out[n] = Frame { addr, len: len as u32 };
            n += 1;
        }
        n
    }

    fn data(&self, f: Frame) -> &[u8] {
        &self.arena[f.addr as usize..f.addr as usize + f.len as usize]
    }

    fn data_mut(&mut self, f: Frame) -> &mut [u8] {
        let end = (f.addr as usize / FRAME_SIZE + 1) * FRAME_SIZE;
        &mut self.arena[f.addr as usize..end]
    }

    fn frame_capacity(&self) -> usize {
        FRAME_SIZE
    }

    fn alloc(&mut self) -> Option<Frame> {
        self.free_list.pop().map(|addr| Frame { addr, len: 0 })
    }

    fn free_frames(&mut self) -> usize {
        self.free_list.len()
    }

    fn free(&mut self, f: Frame) {
        let a = f.addr - f.addr % FRAME_SIZE as u64;
        if !self.pins.give_back(a) {
            self.free_list.push(a);
        }
    }

    fn send(&mut self, frames: &[Frame]) -> usize {
        let mut out = self.outbox.lock().unwrap();
        for f in frames {
            out.push_back(self.arena[f.addr as usize..f.addr as usize + f.len as usize].to_vec());
            let a = f.addr - f.addr % FRAME_SIZE as u64;
            if !self.pins.give_back(a) {
                self.free_list.push(a);
            }
        }
        self.sent += frames.len() as u64;
        frames.len()
    }

    fn tx_room(&mut self) -> usize {
        self.free_list.len().max(1) * 2
    }

    fn flush(&mut self) {}

    fn wait(&mut self, _timeout_ms: i32) {}

    fn pin(&mut self) -> Option<Frame> {
        self.pins.take(&mut self.free_list).map(|addr| Frame { addr, len: 0 })
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
        let mut got = [Frame { addr: 0, len: 0 }; 8];
        assert_eq!(b.recv(&mut got), 1);
        assert_eq!(b.data(got[0]), b"abc");
        b.free(got[0]);
        assert_eq!(b.free_frames(), 4);
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
