//! Where every byte of a TLS connection's outgoing stream comes from. The stream is a list of
//! runs: handshake bytes as rustls wrote them, control records (alerts, KeyUpdate), and the
//! application's plaintext cut into records of a fixed content size from the run's start.
//! A run is laid once, when its bytes are known, and never changes; so the record holding any
//! stream offset, its number and its key follow from the offset alone, and a retransmission
//! seals the same content under the same nonce into the same bytes.

use crate::record::OVERHEAD;
use std::collections::VecDeque;

/// What a run holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes sent as they are (the handshake flight, or an alert rustls wrote).
    Raw(Vec<u8>),
    /// Application plaintext `plain .. plain + len` (offsets in the application's stream),
    /// in records of the layout's record size.
    App {
        /// Its length.
        len: u64,
    },
    /// One protected record of the layer's own: an alert or a KeyUpdate.
    Control {
        /// Inner content type.
        inner: u8,
        /// Content.
        body: [u8; 5],
        /// Content length.
        len: u8,
    },
}

/// A run of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Stream offset of its first byte.
    pub start: u64,
    /// Application-stream offset at its start.
    pub plain: u64,
    /// Number of its first record in its key epoch.
    pub seq: u64,
    /// Key epoch (0 for the first application traffic keys, +1 per KeyUpdate sent).
    pub epoch: u32,
    /// Its bytes.
    pub piece: Piece,
}

/// The part of a run where a stream offset falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spot<'a> {
    /// Raw bytes; the offset is `at` bytes into them.
    Raw {
        /// The bytes.
        bytes: &'a [u8],
        /// Offset into them.
        at: usize,
    },
    /// A protected record.
    Record(Rec<'a>),
}

/// A protected record of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rec<'a> {
    /// Stream offset of its first byte.
    pub start: u64,
    /// Its content length (the record is `len + OVERHEAD` bytes).
    pub len: usize,
    /// Record number in its epoch.
    pub seq: u64,
    /// Key epoch.
    pub epoch: u32,
    /// Inner content type.
    pub inner: u8,
    /// Application data: its offset in the application's stream; None for a control
    /// record, whose content is `body`.
    pub plain: Option<u64>,
    /// A control record's content.
    pub body: &'a [u8],
}

impl Rec<'_> {
    /// Stream offset one past its last byte.
    pub fn end(&self) -> u64 {
        self.start + (self.len + OVERHEAD) as u64
    }
}

/// The runs not yet acknowledged.
#[derive(Debug)]
pub struct Layout {
    runs: VecDeque<Run>,
    record: u64,
    end: u64,
    plain_end: u64,
    epoch: u32,
    seq: u64,
}

impl Layout {
    /// An empty stream whose application records carry `record` bytes of content (so that
    /// with the overhead one record fills one full-sized segment).
    pub fn new(record: usize) -> Layout {
        assert!(record > 0 && record <= crate::record::MAX_PLAIN);
        Layout { runs: VecDeque::new(), record: record as u64, end: 0, plain_end: 0, epoch: 0, seq: 0 }
    }

    /// Stream offset one past the last byte laid.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Application-stream offset one past the last plaintext laid.
    pub fn plain_end(&self) -> u64 {
        self.plain_end
    }

    /// The key epoch the next record is sealed in.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    fn push(&mut self, piece: Piece, len: u64, records: u64) {
        self.runs.push_back(Run { start: self.end, plain: self.plain_end, seq: self.seq, epoch: self.epoch, piece });
        self.end += len;
        self.seq += records;
    }

    /// Appends bytes sent as they are.
    pub fn push_raw(&mut self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            let n = bytes.len() as u64;
            self.push(Piece::Raw(bytes), n, 0);
        }
    }

    /// Lays the application's plaintext up to `plain_end` in records, starting a new run at
    /// each message boundary `boundary(p)` names (the end of the message holding `p`), so no
    /// record holds bytes of two messages.
    pub fn push_app(&mut self, plain_end: u64, boundary: &dyn Fn(u64) -> u64) {
        // Bounded: each pass lays at least one byte.
        while self.plain_end < plain_end {
            let b = boundary(self.plain_end);
            let to = if b > self.plain_end { b.min(plain_end) } else { plain_end };
            let len = to - self.plain_end;
            let records = len.div_ceil(self.record);
            self.push(Piece::App { len }, len + records * OVERHEAD as u64, records);
            self.plain_end = to;
        }
    }

    /// Calls `f` for every application-data record whose plaintext lies wholly in the
    /// application's offsets `from .. to`, in order.
    pub fn records_within(&self, from: u64, to: u64, f: &mut dyn FnMut(Rec<'_>)) {
        let full = self.record + OVERHEAD as u64;
        let first = self.runs.partition_point(|r| r.plain + self.app_len(r) <= from);
        for r in self.runs.range(first..) {
            let Piece::App { len } = r.piece else { continue };
            if r.plain >= to {
                break;
            }
            // Bounded by the run's records.
            let mut k = from.saturating_sub(r.plain).div_ceil(self.record);
            while k * self.record < len {
                let p = r.plain + k * self.record;
                let n = (len - k * self.record).min(self.record);
                if p + n > to {
                    return;
                }
                f(Rec {
                    start: r.start + k * full,
                    len: n as usize,
                    seq: r.seq + k,
                    epoch: r.epoch,
                    inner: crate::record::content::APPLICATION_DATA,
                    plain: Some(p),
                    body: &[],
                });
                k += 1;
            }
        }
    }

    fn app_len(&self, r: &Run) -> u64 {
        match r.piece {
            Piece::App { len } => len,
            _ => 0,
        }
    }

    /// The application-stream offset of the start of the record holding plaintext offset
    /// `p` (for reads that should end on a record boundary); `p` itself outside the laid runs.
    pub fn record_floor(&self, p: u64) -> u64 {
        let i = self.runs.partition_point(|r| r.plain <= p);
        let Some(r) = i.checked_sub(1).map(|i| &self.runs[i]) else { return p };
        match r.piece {
            Piece::App { len } if p < r.plain + len => r.plain + (p - r.plain) / self.record * self.record,
            _ => p,
        }
    }

    /// Appends one protected record of the layer's own (at most 5 bytes of content).
    pub fn push_control(&mut self, inner: u8, content: &[u8]) {
        let mut body = [0; 5];
        body[..content.len()].copy_from_slice(content);
        let len = content.len() as u8;
        self.push(Piece::Control { inner, body, len }, (content.len() + OVERHEAD) as u64, 1);
    }

    /// The number of the next record laid (rustls says where its keys start).
    pub fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
    }

    /// Records laid from now on use the next key epoch, numbered from 0.
    pub fn next_epoch(&mut self) {
        self.epoch += 1;
        self.seq = 0;
    }

    /// Where stream offset `off` (below `end`) falls.
    pub fn locate(&self, off: u64) -> Option<Spot<'_>> {
        let i = self.runs.partition_point(|r| r.start <= off).checked_sub(1)?;
        let r = &self.runs[i];
        let at = off - r.start;
        match &r.piece {
            Piece::Raw(b) => (at < b.len() as u64).then_some(Spot::Raw { bytes: b, at: at as usize }),
            Piece::Control { inner, body, len } => {
                let rec = Rec {
                    start: r.start,
                    len: usize::from(*len),
                    seq: r.seq,
                    epoch: r.epoch,
                    inner: *inner,
                    plain: None,
                    body: &body[..usize::from(*len)],
                };
                (off < rec.end()).then_some(Spot::Record(rec))
            }
            Piece::App { len } => {
                let full = self.record + OVERHEAD as u64;
                let k = at / full;
                let first = k * self.record;
                if first >= *len {
                    return None;
                }
                Some(Spot::Record(Rec {
                    start: r.start + k * full,
                    len: (len - first).min(self.record) as usize,
                    seq: r.seq + k,
                    epoch: r.epoch,
                    inner: crate::record::content::APPLICATION_DATA,
                    plain: Some(r.plain + first),
                    body: &[],
                }))
            }
        }
    }

    /// The application-stream offset before which every byte lies in records wholly below
    /// stream offset `acked` (what the application may let go of: a record is resent whole).
    pub fn plain_acked(&self, acked: u64) -> u64 {
        let i = self.runs.partition_point(|r| r.start <= acked);
        let Some(r) = i.checked_sub(1).map(|i| &self.runs[i]) else {
            return self.runs.front().map_or(self.plain_end, |r| r.plain);
        };
        match r.piece {
            Piece::App { len } => {
                let full = self.record + OVERHEAD as u64;
                // The last record is usually shorter than the others.
                if acked - r.start >= len + len.div_ceil(self.record) * OVERHEAD as u64 {
                    return r.plain + len;
                }
                r.plain + ((acked - r.start) / full * self.record).min(len)
            }
            _ => r.plain,
        }
    }

    /// The application-stream offset at the end of the record holding stream byte `edge - 1`:
    /// how far the application's bytes must be at hand for everything the stream may carry
    /// below `edge` to be sealed (a record goes out whole or not at all).
    pub fn plain_reach(&self, edge: u64) -> u64 {
        if edge >= self.end {
            return self.plain_end;
        }
        match self.locate(edge.saturating_sub(1)) {
            Some(Spot::Record(r)) => r.plain.map_or_else(|| self.plain_acked(edge), |p| p + r.len as u64),
            _ => self.plain_acked(edge),
        }
    }

    /// Lets go of the runs wholly below stream offset `acked`; returns the oldest key epoch
    /// still needed.
    pub fn release(&mut self, acked: u64) -> u32 {
        while self.runs.len() > 1 && self.runs[1].start <= acked {
            self.runs.pop_front();
        }
        if let Some(r) = self.runs.front() {
            let len = match &r.piece {
                Piece::Raw(b) => b.len() as u64,
                Piece::App { len } => len + len.div_ceil(self.record) * OVERHEAD as u64,
                Piece::Control { len, .. } => u64::from(*len) + OVERHEAD as u64,
            };
            if r.start + len <= acked {
                self.runs.pop_front();
            }
        }
        self.runs.front().map_or(self.epoch, |r| r.epoch)
    }

    /// Runs held.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::content;

    #[test]
    fn records_follow_from_offsets() {
        let mut l = Layout::new(100);
        l.push_raw(vec![1; 50]);
        l.push_app(250, &|_| u64::MAX); // 100, 100, 50
        l.push_control(content::ALERT, &[1, 0]);
        assert_eq!(l.end(), 50 + 250 + 3 * 22 + 2 + 22);
        assert_eq!(l.locate(49), Some(Spot::Raw { bytes: &[1; 50], at: 49 }));
        let Some(Spot::Record(r)) = l.locate(50 + 122 + 5) else { panic!() };
        assert_eq!((r.start, r.len, r.seq, r.plain), (172, 100, 1, Some(100)));
        let Some(Spot::Record(r)) = l.locate(50 + 244) else { panic!() };
        assert_eq!((r.len, r.seq, r.plain, r.end()), (50, 2, Some(200), 366));
        let Some(Spot::Record(r)) = l.locate(366) else { panic!() };
        assert_eq!((r.inner, r.seq, r.body), (content::ALERT, 3, &[1, 0][..]));
        assert_eq!(l.locate(l.end()), None);
    }

    #[test]
    fn only_whole_records_count_as_acknowledged_plaintext() {
        let mut l = Layout::new(100);
        l.push_raw(vec![0; 10]);
        l.push_app(300, &|_| u64::MAX);
        assert_eq!(l.plain_acked(0), 0);
        assert_eq!(l.plain_acked(10 + 121), 0);
        assert_eq!(l.plain_acked(10 + 122), 100);
        assert_eq!(l.plain_acked(10 + 3 * 122), 300);
        l.release(10 + 122);
        // A last record shorter than the others counts once it is acknowledged whole.
        let mut m = Layout::new(100);
        m.push_app(150, &|_| u64::MAX);
        assert_eq!(m.plain_acked(122 + 71), 100);
        assert_eq!(m.plain_acked(122 + 72), 150);
        assert_eq!(l.runs(), 1);
        l.release(10 + 3 * 122);
        assert_eq!(l.runs(), 0);
        assert_eq!(l.plain_acked(10 + 3 * 122), 300);
    }

    #[test]
    fn records_end_at_message_boundaries() {
        let mut l = Layout::new(100);
        // Two messages of 150 and 60 bytes laid at once: 100 + 50, then 60.
        l.push_app(210, &|p| if p < 150 { 150 } else { 210 });
        assert_eq!(l.runs(), 2);
        let Some(Spot::Record(r)) = l.locate(122) else { panic!() };
        assert_eq!((r.plain, r.len), (Some(100), 50));
        let Some(Spot::Record(r)) = l.locate(122 + 72) else { panic!() };
        assert_eq!((r.plain, r.len, r.seq), (Some(150), 60, 2));
        assert_eq!(l.record_floor(149), 100);
        assert_eq!(l.record_floor(150), 150);
        assert_eq!(l.record_floor(209), 150);
        assert_eq!(l.record_floor(500), 500);
    }

    #[test]
    fn records_within_a_range_of_plaintext() {
        let mut l = Layout::new(100);
        l.push_raw(vec![0; 10]);
        l.push_app(150, &|p| if p < 150 { 150 } else { u64::MAX });
        l.push_app(400, &|_| u64::MAX);
        let mut got = Vec::new();
        l.records_within(50, 360, &mut |r| got.push((r.plain.unwrap(), r.len, r.seq)));
        // [0,100) starts before 50; [100,150) ends its run; [150,250), [250,350) fit; [350,400) does not.
        assert_eq!(got, vec![(100, 50, 1), (150, 100, 2), (250, 100, 3)]);
    }

    #[test]
    fn reach_rounds_up_to_the_end_of_a_record() {
        let mut l = Layout::new(100);
        l.push_raw(vec![0; 10]);
        l.push_app(250, &|_| u64::MAX);
        assert_eq!(l.plain_reach(10), 0);
        assert_eq!(l.plain_reach(11), 100);
        assert_eq!(l.plain_reach(10 + 122), 100);
        assert_eq!(l.plain_reach(10 + 123), 200);
        assert_eq!(l.plain_reach(l.end() - 1), 250);
        assert_eq!(l.plain_reach(l.end() + 5000), 250);
    }

    #[test]
    fn a_key_update_starts_a_new_epoch_from_record_zero() {
        let mut l = Layout::new(100);
        l.push_app(10, &|_| u64::MAX);
        l.push_control(content::HANDSHAKE, &[24, 0, 0, 1, 0]);
        l.next_epoch();
        l.push_app(20, &|_| u64::MAX);
        let Some(Spot::Record(r)) = l.locate(l.end() - 1) else { panic!() };
        assert_eq!((r.epoch, r.seq, r.plain), (1, 0, Some(10)));
        assert_eq!(l.release(32), 0);
        assert_eq!(l.release(l.end() - 1), 1);
    }
}
