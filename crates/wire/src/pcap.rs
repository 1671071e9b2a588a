//! The pcap file format (libpcap, microsecond timestamps, Ethernet link type): a writer over
//! any `Write`, for the dataplane's capture and the pipeline's Dump module.

use std::io::{self, Write};

/// Bytes of each frame kept in the capture.
pub const SNAPLEN: usize = 65535;

/// Writes the global header and records.
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header.
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(&0xa1b2_c3d4u32.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&(SNAPLEN as u32).to_le_bytes())?;
        out.write_all(&1u32.to_le_bytes())?; // LINKTYPE_ETHERNET
        Ok(PcapWriter { out })
    }

    /// Writes one record with the given time (microseconds since the epoch).
    pub fn write(&mut self, time_us: u64, frame: &[u8]) -> io::Result<()> {
        let cap = frame.len().min(SNAPLEN);
        self.out.write_all(&((time_us / 1_000_000) as u32).to_le_bytes())?;
        self.out.write_all(&((time_us % 1_000_000) as u32).to_le_bytes())?;
        self.out.write_all(&(cap as u32).to_le_bytes())?;
        self.out.write_all(&(frame.len() as u32).to_le_bytes())?;
        self.out.write_all(&frame[..cap])
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
