//! A port on a whole interface: the XDP filter takes every frame of it, and one AF_XDP
//! socket per receive queue carries them. Frames are copied between the sockets' UMEMs and
//! the caller's buffers (in copy mode the kernel copies them anyway; a pipeline between two
//! interfaces would otherwise need one UMEM shared by every socket). For the pipeline, which
//! forwards between interfaces it owns.

use crate::filter::Filter;
use crate::iface::Interface;
use crate::xsk::{BindMode, XskConfig, XskPort};
use crate::{Frame, Port};
use std::os::fd::RawFd;

/// Frames gathered before they are put on the TX ring in one go.
const TX_BATCH: usize = 64;

/// Every frame of one interface, over its queues.
pub struct WholePort {
    socks: Vec<XskPort>,
    /// The socket received from first next time (so no queue starves the others).
    next: usize,
    rx: Vec<Frame>,
    pending: Vec<Frame>,
    /// TX ring slots known free beyond `pending` (read from the ring only when used up).
    room: usize,
    rx_frames: u64,
    tx_frames: u64,
    tx_refused: u64,
    // Held for its drop, which detaches the filter from the interface.
    _filter: Filter,
}

impl WholePort {
    /// Attaches the filter to `name`, takes the whole interface and opens its queues;
    /// returns the port and a line saying what it took.
    pub fn open(name: &str, force_copy: bool) -> Result<(WholePort, String), String> {
        let ifc = Interface::lookup(name).map_err(|e| e.to_string())?;
        let mut filter = Filter::attach(&ifc.name, ifc.index).map_err(|e| e.to_string())?;
        filter.take_whole().map_err(|e| e.to_string())?;
        let cfg = XskConfig { force_copy, ..XskConfig::default() };
        let mut socks = Vec::new();
        for q in 0..ifc.rx_queues {
            let s = XskPort::open_when_free(ifc.index, q, cfg)
                .map_err(|e| format!("opening an AF_XDP socket on {name} queue {q}: {e}"))?;
            filter.bind_queue(q, s.raw_fd()).map_err(|e| e.to_string())?;
            socks.push(s);
        }
        let mode = if socks.iter().all(|s| s.mode() == BindMode::ZeroCopy) { "zero-copy" } else { "copy" };
        let what = format!("{name}: {} queue(s), AF_XDP {mode} mode, every frame of the interface", socks.len());
        let port = WholePort {
            socks,
            next: 0,
            rx: vec![Frame::new(0, 0); 64],
            pending: Vec::with_capacity(TX_BATCH),
            room: 0,
            rx_frames: 0,
            tx_frames: 0,
            tx_refused: 0,
            _filter: filter,
        };
        Ok((port, what))
    }

    /// The sockets' descriptors, to sleep on.
    pub fn fds(&self) -> Vec<RawFd> {
        self.socks.iter().map(|s| s.raw_fd()).collect()
    }

    fn submit(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let s = &mut self.socks[0];
        let taken = s.send(&self.pending);
        for &f in &self.pending[taken..] {
            s.free(f);
        }
        self.tx_frames += taken as u64;
        self.tx_refused += (self.pending.len() - taken) as u64;
        self.pending.clear();
    }

    /// Hands up to `max` received frames to `each`, taking the queues in turn; returns how
    /// many.
    pub fn recv(&mut self, max: usize, each: &mut dyn FnMut(&[u8])) -> usize {
        let mut got = 0;
        let n = self.socks.len();
        for k in 0..n {
            if got == max {
                break;
            }
            let s = &mut self.socks[(self.next + k) % n];
            let want = (max - got).min(self.rx.len());
            let r = s.recv(&mut self.rx[..want]);
            for &f in &self.rx[..r] {
                each(s.data(f));
                s.free(f);
            }
            got += r;
        }
        self.next = (self.next + 1) % n;
        self.rx_frames += got as u64;
        got
    }

    /// Queues a copy of `frame` for transmission (on the first queue); false if there is no
    /// room.
    pub fn send(&mut self, frame: &[u8]) -> bool {
        let s = &mut self.socks[0];
        if self.room == 0 {
            self.room = s.tx_room().saturating_sub(self.pending.len());
        }
        if frame.len() > s.frame_capacity() || self.room == 0 {
            self.tx_refused += 1;
            return false;
        }
        let Some(mut f) = s.alloc() else {
            self.tx_refused += 1;
            return false;
        };
        s.data_mut(f)[..frame.len()].copy_from_slice(frame);
        f.len = frame.len() as u32;
        self.pending.push(f);
        self.room -= 1;
        if self.pending.len() == TX_BATCH {
            self.submit();
        }
        true
    }

    /// Transmits what was queued, and refills the receive side.
    pub fn flush(&mut self) {
        self.submit();
        for s in &mut self.socks {
            s.flush();
        }
    }

    /// Frames received, sent, and refused for want of room.
    pub fn counters(&self) -> [(&'static str, u64); 3] {
        [("rx_frames", self.rx_frames), ("tx_frames", self.tx_frames), ("tx_refused", self.tx_refused)]
    }
}
