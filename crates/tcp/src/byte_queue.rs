//! The source of an application that writes its bytes as it goes (an echo, framed answers):
//! what it wrote and the peer has not acknowledged, in order, from a stream offset on.

use std::collections::VecDeque;

use crate::endpoint::Source;

/// Bytes written to a connection from stream offset `base` on, until acknowledged.
#[derive(Debug, Default)]
pub struct ByteQueue {
    buf: VecDeque<u8>,
    base: u64,
}

impl ByteQueue {
    /// Appends `bytes` to what the connection sends.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend(bytes);
    }

    /// Bytes written and not yet acknowledged.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True if everything written was acknowledged.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes not yet acknowledged, in order.
    pub fn iter(&self) -> impl Iterator<Item = &u8> {
        self.buf.iter()
    }
}

/// Implements [`Source`](crate::Source) for a connection type `$conn` whose bytes to send
/// wait in its [`ByteQueue`] field `$queue` (what a byte-stream server's connection holds
/// besides state of its own).
#[macro_export]
macro_rules! source_from_queue {
    ($conn:ty, $queue:ident) => {
        impl $crate::Source for $conn {
            fn end(&self) -> u64 {
                $crate::Source::end(&self.$queue)
            }
            fn fill(&self, off: u64, dst: &mut [u8]) {
                $crate::Source::fill(&self.$queue, off, dst)
            }
            fn release(&mut self, off: u64) {
                $crate::Source::release(&mut self.$queue, off)
            }
        }
    };
}

impl Source for ByteQueue {
    fn end(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    fn fill(&self, off: u64, dst: &mut [u8]) {
        let at = (off - self.base) as usize;
        let (a, b) = self.buf.as_slices();
        if at + dst.len() <= a.len() {
            dst.copy_from_slice(&a[at..at + dst.len()]);
        } else if at >= a.len() {
            dst.copy_from_slice(&b[at - a.len()..at - a.len() + dst.len()]);
        } else {
            let (first, rest) = (a.len() - at, dst.len() - (a.len() - at));
            dst[..first].copy_from_slice(&a[at..]);
            dst[first..].copy_from_slice(&b[..rest]);
        }
    }

    fn release(&mut self, off: u64) {
        let n = (off - self.base) as usize;
        self.buf.drain(..n.min(self.buf.len()));
        self.base = off;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_across_the_ring_seam_and_releases_from_the_front() {
        let mut q = ByteQueue::default();
        q.extend(&(0..100u8).collect::<Vec<_>>());
        q.release(60);
        // Wraps the deque's ring: the next bytes go in front of the old ones in memory.
        q.extend(&(100..200u8).collect::<Vec<_>>());
        assert_eq!(q.end(), 200);
        assert_eq!(q.len(), 140);
        let mut d = vec![0u8; 140];
        q.fill(60, &mut d);
        assert_eq!(d, (60..200u8).collect::<Vec<_>>());
        let mut d = vec![0u8; 10];
        q.fill(150, &mut d);
        assert_eq!(d, (150..160u8).collect::<Vec<_>>());
        q.release(200);
        assert!(q.is_empty());
    }
}
