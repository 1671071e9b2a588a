//! A pcap (libpcap format, microsecond timestamps, Ethernet link type) writer.
//!
//! Capture is a debugging aid: the engine hands frames to a [`CaptureTap`], which copies them
//! into a bounded channel read by a writer thread. When the channel is full, frames are
//! dropped from the capture (and counted) rather than slowing the data path.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

pub use wire::pcap::{PcapWriter, SNAPLEN};

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// The engine's end of a capture: cheap to clone, one per engine.
#[derive(Clone)]
pub struct CaptureTap {
    tx: SyncSender<(u64, Vec<u8>)>,
}

impl CaptureTap {
    /// Offers a frame to the capture; returns false if it was dropped because the writer lags.
    pub fn offer(&self, frame: &[u8]) -> bool {
        match self.tx.try_send((now_us(), frame.to_vec())) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => false,
        }
    }
}

/// The writer thread of a capture file.
pub struct Capture {
    handle: JoinHandle<io::Result<u64>>,
}

impl Capture {
    /// Creates `path` and starts the writer; returns the capture and a tap for the engines.
    pub fn create(path: &Path) -> io::Result<(Capture, CaptureTap)> {
        let file = File::create(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let mut w = PcapWriter::new(BufWriter::new(file))?;
        let (tx, rx): (_, Receiver<(u64, Vec<u8>)>) = sync_channel(65536);
        let handle = std::thread::Builder::new().name("sirocco-pcap".into()).spawn(move || {
            let mut n = 0u64;
            for (t, f) in rx {
                w.write(t, &f)?;
                n += 1;
            }
            w.flush()?;
            Ok(n)
        })?;
        Ok((Capture { handle }, CaptureTap { tx }))
    }

    /// Waits for the writer to drain (all taps must be dropped first); returns frames written.
    pub fn finish(self) -> io::Result<u64> {
        self.handle.join().unwrap_or_else(|_| Err(io::Error::other("pcap writer panicked")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_record_layout() {
        let mut buf = Vec::new();
        let mut w = PcapWriter::new(&mut buf).unwrap();
        w.write(1_500_000, &[1, 2, 3]).unwrap();
        assert_eq!(buf.len(), 24 + 16 + 3);
        assert_eq!(&buf[0..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(&buf[20..24], &[1, 0, 0, 0]);
        assert_eq!(&buf[24..28], &1u32.to_le_bytes());
        assert_eq!(&buf[28..32], &500_000u32.to_le_bytes());
        assert_eq!(&buf[32..36], &3u32.to_le_bytes());
        assert_eq!(&buf[40..43], &[1, 2, 3]);
    }
}
