//! The control socket's framing: one JSON object per line; a message may carry descriptors
//! (SCM_RIGHTS), which arrive with its first bytes.

use io::fdpass;
use std::os::fd::{OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// Longest line accepted (a grant's answer lists at most 8 queues).
const MAX_LINE: usize = 64 * 1024;

/// One side of a control connection.
pub struct Conn {
    sock: UnixStream,
    buf: Vec<u8>,
    fds: Vec<OwnedFd>,
}

impl Conn {
    pub fn new(sock: UnixStream) -> Conn {
        Conn { sock, buf: Vec::new(), fds: Vec::new() }
    }

    pub fn sock(&self) -> &UnixStream {
        &self.sock
    }

    /// The next line and the descriptors that came with it; `None` at end of stream.
    pub fn read(&mut self) -> std::io::Result<Option<(Vec<u8>, Vec<OwnedFd>)>> {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line = self.buf.drain(..=i).take(i).collect();
                return Ok(Some((line, std::mem::take(&mut self.fds))));
            }
            if self.buf.len() > MAX_LINE {
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "a message is at most 64 KiB"));
            }
            let (n, fds) = fdpass::recv(&self.sock, &mut chunk)?;
            self.fds.extend(fds);
            if n == 0 {
                return Ok(None);
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends `v` as one line, with `fds`.
    pub fn send(&self, v: &serde_json::Value, fds: &[RawFd]) -> std::io::Result<()> {
        let mut line = v.to_string().into_bytes();
        line.push(b'\n');
        fdpass::send(&self.sock, &line, fds)
    }
}
