//! Atlas's just-in-time reads for one connection: the parts of its stream that come from
//! files (spans), and the chunks of them read so far. Nothing is read ahead of the window:
//! a read is planned only up to the edge the peer's windows allow (acknowledged offset plus
//! the smaller of the congestion and receive windows), in reads of at least `min_read` bytes
//! (10 × MSS) unless the span or the window ends sooner. Chunks are held until every byte in
//! them is acknowledged, so a retransmission sends from memory; when the pool lives in the NIC
//! port's arena, segments carry a chunk's bytes where the read put them, without a copy.
//!
//! O_DIRECT wants whole blocks: a read covers the aligned range around the wanted bytes and
//! the chunk remembers where in its buffer they start.

use std::collections::VecDeque;

use io::storage::{align_range, Buf, BufferPool, Completion, FileId, StoragePort, SubmitError, DIRECT_ALIGN};

/// A part of the connection's stream that is a file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Stream offset of its first byte.
    pub start: u64,
    /// Its length.
    pub len: u64,
    /// The file.
    pub file: FileId,
    /// File offset of its first byte.
    pub file_off: u64,
}

/// Bytes read and held.
#[derive(Debug)]
struct Chunk {
    /// Stream offset of the first held byte.
    start: u64,
    /// Bytes held.
    len: u32,
    /// Where they start in the buffer.
    skip: u32,
    buf: Buf,
    /// Read again for a retransmission.
    again: bool,
}

/// A read planned for the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The file.
    pub file: FileId,
    /// Aligned file offset and length to read.
    pub file_off: u64,
    /// See `file_off`.
    pub read_len: u32,
    /// Stream offset of the first wanted byte, and how many are wanted.
    pub start: u64,
    /// See `start`.
    pub len: u32,
    /// Where the wanted bytes start in what is read.
    pub skip: u32,
    /// The bytes were read before and let go of (a retransmission wants them).
    pub again: bool,
}

impl Plan {
    /// The read of up to `want` bytes of span `s` from stream offset `start`: widened to
    /// blocks at both ends, it must still fit a buffer of `max_read` bytes; cut short, it
    /// ends at `floor(end)` when that is past `start`.
    fn of(s: &Span, start: u64, want: u64, max_read: u32, floor: &dyn Fn(u64) -> u64, again: bool) -> Plan {
        let file_at = s.file_off + (start - s.start);
        let room = u64::from(max_read).saturating_sub(file_at % DIRECT_ALIGN as u64 + DIRECT_ALIGN as u64);
        let mut len = want.min(room.max(1));
        if len < want {
            let end = floor(start + len);
            if end > start {
                len = end - start;
            }
        }
        let (file_off, read_len, skip) = align_range(file_at, len);
        Plan { file: s.file, file_off, read_len: read_len as u32, start, len: len as u32, skip: skip as u32, again }
    }
}

/// Why no read was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Nothing to read now (all read, a read in flight, or the window does not allow it).
    Nothing,
    /// The buffer pool is empty: try again when a buffer comes back.
    NoBuffer,
    /// The storage port has as many requests as it takes.
    Busy,
}

/// One connection's file-backed bytes.
#[derive(Debug, Default)]
pub struct Fetch {
    spans: VecDeque<Span>,
    chunks: VecDeque<Chunk>,
    /// Stream offset up to which bytes are held or being read.
    next: u64,
    /// A read is in flight (one at a time per connection).
    reading: bool,
    /// Bytes sent and let go of that TCP wants to send again from here: the next read
    /// fetches them (Atlas re-reads a retransmission from disk).
    rewind: Option<u64>,
    /// Stream offset of the chunk the last completed read added.
    last: u64,
}

impl Fetch {
    /// Adds a span (spans come in stream order).
    pub fn push(&mut self, s: Span) {
        debug_assert!(self.spans.back().is_none_or(|b| b.start + b.len <= s.start));
        if self.spans.is_empty() && self.chunks.is_empty() && !self.reading {
            self.next = s.start;
        }
        if s.len > 0 {
            self.spans.push_back(s);
        }
    }

    /// True while a read is in flight.
    pub fn reading(&self) -> bool {
        self.reading
    }

    /// File bytes of the queued responses not read yet; 0 while bytes are wanted again for a
    /// retransmission (the connection is stalled on them).
    pub fn left(&self) -> u64 {
        if self.rewind.is_some() {
            return 0;
        }
        self.spans.iter().map(|s| (s.start + s.len).saturating_sub(self.next.max(s.start))).sum()
    }

    /// True if nothing is held, read, or left to read.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty() && self.chunks.is_empty() && !self.reading
    }

    /// TCP wants to send from `off` and nothing is held there: true if those bytes were read
    /// before and let go of, so the next read fetches them again.
    /// `off` may be held in part (the start of a TLS record whose end was let go of): the
    /// first byte missing from there is what is read again.
    pub fn starved(&mut self, off: u64) -> bool {
        let miss = off + self.held_at(off);
        if miss >= self.next || !self.spans.iter().any(|s| s.start <= miss && miss < s.start + s.len) {
            return false;
        }
        self.rewind = Some(self.rewind.map_or(miss, |r| r.min(miss)));
        true
    }

    /// The bytes below `sent` were all sent at least once: chunks wholly below it go to
    /// `retire` (freed once no packet carries them), and `let_go(from, to)` hears of each
    /// range, before its bytes are acknowledged. A retransmission reads them again.
    /// Bytes read again for a retransmission stay until acknowledged: they were sent before
    /// they were read, and would otherwise be let go of before the retransmission.
    pub fn sent(&mut self, sent: u64, retire: &mut dyn FnMut(Buf), let_go: &mut dyn FnMut(u64, u64)) {
        let mut i = 0;
        // Chunks do not overlap and are in order, so their ends are too.
        while let Some(c) = self.chunks.get(i).filter(|c| c.start + u64::from(c.len) <= sent) {
            if c.again {
                i += 1;
                continue;
            }
            let c = self.chunks.remove(i).expect("checked");
            let_go(c.start, c.start + u64::from(c.len));
            retire(c.buf);
        }
    }

    /// Bytes held contiguously from stream offset `off` (0 if they are not read yet).
    pub fn held_at(&self, off: u64) -> u64 {
        let i = self.chunks.partition_point(|c| c.start + u64::from(c.len) <= off);
        let mut at = off;
        for c in self.chunks.range(i..) {
            if c.start > at {
                break;
            }
            at = c.start + u64::from(c.len);
        }
        at - off
    }

    /// Copies the held bytes at `off .. off + dst.len()` into `dst`. Panics if some are not
    /// held ([`Fetch::held_at`] says how many are).
    pub fn copy(&self, pool: &BufferPool, off: u64, dst: &mut [u8]) {
        let i = self.chunks.partition_point(|c| c.start + u64::from(c.len) <= off);
        let mut done = 0;
        for c in self.chunks.range(i..) {
            if done == dst.len() {
                break;
            }
            let at = off + done as u64;
            assert!(c.start <= at, "bytes at {at} are not held");
            let from = (at - c.start) as usize;
            let n = (c.len as usize - from).min(dst.len() - done);
            let src = &pool.get(&c.buf)[c.skip as usize + from..c.skip as usize + from + n];
            dst[done..done + n].copy_from_slice(src);
            done += n;
        }
        assert_eq!(done, dst.len(), "bytes at {} are not held", off + done as u64);
    }

    /// Where the held bytes at `off` are in the NIC port's arena, and how many follow there
    /// contiguously; None if the pool does not live in the arena or `off` is not held.
    pub fn placed(&self, pool: &BufferPool, off: u64) -> Option<(u64, u32)> {
        let i = self.chunks.partition_point(|c| c.start + u64::from(c.len) <= off);
        let c = self.chunks.get(i).filter(|c| c.start <= off)?;
        let from = (off - c.start) as u32;
        let addr = pool.arena_addr(&c.buf, (c.skip + from) as usize)?;
        Some((addr, c.len - from))
    }

    /// The peer acknowledged everything before `acked`: chunks and spans wholly below it go,
    /// their buffers to `retire` (a buffer may still be in a packet on its way out).
    pub fn acked(&mut self, acked: u64, retire: &mut dyn FnMut(Buf)) {
        while self.chunks.front().is_some_and(|c| c.start + u64::from(c.len) <= acked) {
            retire(self.chunks.pop_front().expect("checked").buf);
        }
        while self.spans.front().is_some_and(|s| s.start + s.len <= acked && s.start + s.len <= self.next) {
            self.spans.pop_front();
        }
    }

    /// The next read, if the window reaches bytes not yet held: from `next` up to the edge
    /// the windows allow (`acked + window`), within one span, at most `max_read` bytes once
    /// widened to blocks. It waits for the window to allow `min_read` bytes — a read of a
    /// few hundred bytes costs about what 16 KiB does — or half the window when that is
    /// smaller, unless the span ends sooner or everything read so far is acknowledged.
    pub fn plan(&self, acked: u64, window: u64, min_read: u32, max_read: u32) -> Option<Plan> {
        self.plan_within(acked, window, min_read, max_read, &|p| p)
    }

    /// [`Fetch::plan`], with a read that the buffer cuts short ending at `floor(end)`
    /// instead (the start of the TLS record the cut falls in), so that a record's plaintext
    /// never waits on a second read while the first holds a buffer.
    pub fn plan_within(
        &self,
        acked: u64,
        window: u64,
        min_read: u32,
        max_read: u32,
        floor: &dyn Fn(u64) -> u64,
    ) -> Option<Plan> {
        if self.reading {
            return None;
        }
        if let Some(p) = self.reread(min_read, max_read, floor) {
            return Some(p);
        }
        let s = self.spans.iter().find(|s| s.start + s.len > self.next)?;
        let start = self.next.max(s.start);
        let span_left = s.start + s.len - start;
        let reach = (acked + window).saturating_sub(start);
        let want = span_left.min(reach);
        let drained = acked >= self.next;
        // After a loss the congestion window may stay below `min_read` for a while: waiting
        // for all of it to be acknowledged would stall on the peer's delayed ACK every round,
        // so half of a small window is enough to read.
        let enough = u64::from(min_read).min(window / 2).max(1);
        if want == 0 || (want < enough && want < span_left && !drained) {
            return None;
        }
        Some(Plan::of(s, start, want, max_read, floor, false))
    }

    /// The read that fetches again the bytes from `rewind` on: up to the next byte held (or
    /// never read), within one span and one buffer, at most twice `min_read` bytes (a
    /// whole TLS record, cut at a record's end) — a loss usually wants a segment or two
    /// back; a timeout that wants them all reads again as TCP asks. The window is not asked: these bytes were sent before.
    fn reread(&self, min_read: u32, max_read: u32, floor: &dyn Fn(u64) -> u64) -> Option<Plan> {
        let r = self.rewind?;
        let start = r + self.held_at(r);
        let s = self.spans.iter().find(|s| s.start <= start && start < s.start + s.len)?;
        let held = self.chunks.iter().find(|c| c.start > start).map_or(self.next, |c| c.start);
        let want = held.min(self.next).min(s.start + s.len).saturating_sub(start).min(2 * u64::from(min_read));
        if want == 0 {
            return None;
        }
        Some(Plan::of(s, start, want, max_read, floor, true))
    }

    /// Plans and starts the next read on `port` (with `cookie` for its completion).
    pub fn start(
        &mut self,
        port: &mut StoragePort,
        acked: u64,
        window: u64,
        min_read: u32,
        cookie: u64,
    ) -> Result<Plan, Wait> {
        self.start_within(port, acked, window, min_read, cookie, &|p| p)
    }

    /// [`Fetch::start`] with reads cut short ending at `floor` (see [`Fetch::plan_within`]).
    pub fn start_within(
        &mut self,
        port: &mut StoragePort,
        acked: u64,
        window: u64,
        min_read: u32,
        cookie: u64,
        floor: &dyn Fn(u64) -> u64,
    ) -> Result<Plan, Wait> {
        let max_read = port.pool_ref().buf_size() as u32;
        let p = self.plan_within(acked, window, min_read, max_read, floor).ok_or(Wait::Nothing)?;
        let buf = port.pool().alloc().ok_or(Wait::NoBuffer)?;
        match port.read(p.file, p.file_off, p.read_len, buf, cookie) {
            Ok(()) => {
                self.reading = true;
                if !p.again {
                    self.next = p.start + u64::from(p.len);
                }
                // Nothing (more) to read again once a read goes forward.
                self.rewind = None;
                Ok(p)
            }
            Err((buf, e)) => {
                port.pool().free(buf);
                Err(match e {
                    SubmitError::Busy => Wait::Busy,
                    // A plan is always aligned and fits a buffer; a closed file has nothing.
                    _ => Wait::Nothing,
                })
            }
        }
    }

    /// The read `p` completed with `c`: its bytes are held, or, if it failed or came back
    /// short (the file shrank), Err with the error number and the buffer is returned.
    pub fn complete(&mut self, pool: &mut BufferPool, p: Plan, c: Completion) -> Result<(), i32> {
        self.reading = false;
        let buf = c.buf.expect("a read has a buffer");
        let got = match c.result {
            Ok(n) => n,
            Err(e) => {
                pool.free(buf);
                return Err(e);
            }
        };
        if got < p.skip + p.len {
            pool.free(buf);
            return Err(EIO);
        }
        // A retransmission that asked again while this read was under way is served by it.
        if self.rewind.is_some_and(|r| p.start <= r && r < p.start + u64::from(p.len)) {
            self.rewind = None;
        }
        // Usually the last; bytes read again go back where they were.
        let i = self.chunks.partition_point(|c| c.start < p.start);
        self.chunks.insert(i, Chunk { start: p.start, len: p.len, skip: p.skip, buf, again: p.again });
        self.last = p.start;
        Ok(())
    }

    /// The chunk the last completed read added: its stream offset, the bytes it holds, and
    /// its buffer from its first byte to the buffer's end (room past the held bytes included),
    /// for a layer that seals its records in place there (TLS).
    pub fn last_chunk_mut<'a>(&mut self, pool: &'a mut BufferPool) -> Option<(u64, usize, &'a mut [u8])>
    where
        Self: 'a,
    {
        let last = self.last;
        let c = self.chunks.iter_mut().find(|c| c.start == last)?;
        let (start, len, skip) = (c.start, c.len as usize, c.skip as usize);
        Some((start, len, &mut pool.get_mut(&mut c.buf)[skip..]))
    }

    /// Gives every buffer to `retire` (the connection ended). A read in flight keeps its
    /// buffer until it completes; the caller frees it then.
    pub fn release(&mut self, retire: &mut dyn FnMut(Buf)) {
        for c in self.chunks.drain(..) {
            retire(c.buf);
        }
        self.spans.clear();
    }
}

/// The error a read that came back short reports (the file shrank under the server).
const EIO: i32 = 5;

#[cfg(test)]
mod tests {
    use super::*;
    use io::storage::StorageConfig;
    use std::path::PathBuf;

    fn file(name: &str, data: &[u8]) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sirocco-fetch-{}", std::process::id()));
        // The target directory is on the build's file system (ext4 here); /tmp may be tmpfs.
        let d = std::env::var_os("CARGO_TARGET_TMPDIR").map_or(d, |t| PathBuf::from(t).join("fetch"));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(name);
        std::fs::write(&p, data).unwrap();
        p
    }

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 4096) as u8).collect()
    }

    fn port() -> StoragePort {
        StoragePort::new(StorageConfig { buffers: 4, buf_size: 64 << 10, max_part: 64 << 10, ..Default::default() })
            .unwrap()
    }

    fn finish(f: &mut Fetch, port: &mut StoragePort, p: Plan) {
        let mut got = None;
        for _ in 0..1000 {
            port.submit();
            port.reap(|c| got = Some(c));
            if got.is_some() {
                break;
            }
            port.wait();
        }
        let pool = port.pool();
        f.complete(pool, p, got.expect("completed")).unwrap();
    }

    #[test]
    fn reads_follow_the_window_and_serve_any_offset_held() {
        let data = pattern(300_000);
        let mut port = port();
        let (fid, _) = port.open(&file("w", &data), false).unwrap();
        let mut f = Fetch::default();
        // A 200-byte head first (not from the file), then a body from file offset 5000.
        f.push(Span { start: 200, len: 250_000, file: fid, file_off: 5000 });
        assert_eq!(f.left(), 250_000);
        let min = 14_480;
        let p = f.start(&mut port, 0, 40_200, min, 1).unwrap();
        assert_eq!((p.start, p.len), (200, 40_000));
        assert_eq!(f.left(), 210_000, "what a read in flight will bring is not left");
        assert_eq!(p.file_off % 4096, 0);
        assert_eq!(f.held_at(200), 0, "not read yet");
        assert_eq!(f.start(&mut port, 0, 300_000, min, 2), Err(Wait::Nothing), "one read at a time");
        finish(&mut f, &mut port, p);
        assert_eq!(f.plan(0, 45_000, min, 65_536), None, "most of the window is read already");
        assert_eq!(f.held_at(200), 40_000);
        assert_eq!(f.held_at(30_200), 10_000);
        let mut out = vec![0; 1448];
        f.copy(port.pool_ref(), 10_200, &mut out);
        assert_eq!(out, data[15_000..15_000 + 1448]);
        // The window moves on: the next read starts where the last one ended.
        let p2 = f.start(&mut port, 0, 100_200, min, 3).unwrap();
        // 60 000 bytes are allowed; widened to blocks they would not fit a 64 KiB buffer.
        assert_eq!((p2.start, p2.len, p2.read_len), (40_200, 57_400, 61_440));
        finish(&mut f, &mut port, p2);
        let mut out = vec![0; 3000];
        f.copy(port.pool_ref(), 39_000, &mut out);
        assert_eq!(out, data[5000 + 38_800..5000 + 38_800 + 3000], "across two chunks");
        // Acknowledged bytes give their buffers back.
        let free = port.pool_ref().free_count();
        f.acked(40_200, &mut |b| port.pool().free(b));
        assert_eq!(port.pool_ref().free_count(), free + 1);
        assert_eq!(f.held_at(200), 0);
        f.release(&mut |b| port.pool().free(b));
        assert_eq!(port.pool_ref().free_count(), 4);
    }

    #[test]
    fn a_short_span_is_read_whole_and_the_end_of_the_file_is_fine() {
        let data = pattern(10_000);
        let mut port = port();
        let (fid, _) = port.open(&file("s", &data), false).unwrap();
        let mut f = Fetch::default();
        f.push(Span { start: 0, len: 3000, file: fid, file_off: 7000 });
        let p = f.start(&mut port, 0, 100_000, 14_480, 1).unwrap_or_else(|w| panic!("{w:?}"));
        assert_eq!(p.len, 3000, "smaller than a full read, but the whole span");
        finish(&mut f, &mut port, p);
        let mut out = vec![0; 3000];
        f.copy(port.pool_ref(), 0, &mut out);
        assert_eq!(out, data[7000..]);
        assert!(f.plan(0, 1 << 20, 14_480, 65_536).is_none(), "all read");
    }

    #[test]
    fn an_empty_pool_makes_the_connection_wait() {
        let data = pattern(1 << 20);
        let mut port = port();
        let (fid, _) = port.open(&file("p", &data), false).unwrap();
        let held: Vec<Buf> = std::iter::from_fn(|| port.pool().alloc()).collect();
        let mut f = Fetch::default();
        f.push(Span { start: 0, len: 1 << 20, file: fid, file_off: 0 });
        assert_eq!(f.start(&mut port, 0, 1 << 20, 14_480, 1), Err(Wait::NoBuffer));
        assert!(!f.reading());
        for b in held {
            port.pool().free(b);
        }
        assert!(f.start(&mut port, 0, 1 << 20, 14_480, 1).is_ok());
    }

    #[test]
    fn a_small_window_reads_small_once_everything_is_acknowledged() {
        let data = pattern(100_000);
        let mut port = port();
        let (fid, _) = port.open(&file("k", &data), false).unwrap();
        let mut f = Fetch::default();
        f.push(Span { start: 0, len: 100_000, file: fid, file_off: 0 });
        let p = f.start(&mut port, 0, 20_000, 14_480, 1).unwrap();
        finish(&mut f, &mut port, p);
        // The peer's window shrinks to 4 000 bytes: nothing while unacknowledged bytes are
        // held, a small read once they are acknowledged.
        assert_eq!(f.plan(10_000, 4000, 14_480, 65_536), None);
        let p = f.plan(20_000, 4000, 14_480, 65_536).expect("drained: read what the window allows");
        assert_eq!((p.start, p.len), (20_000, 4000));
    }

    #[test]
    fn bytes_let_go_of_once_sent_are_read_again_for_a_retransmission() {
        let data = pattern(200_000);
        let mut port = port();
        let (fid, _) = port.open(&file("r", &data), false).unwrap();
        let mut f = Fetch::default();
        f.push(Span { start: 100, len: 150_000, file: fid, file_off: 3000 });
        let p = f.start(&mut port, 0, 40_100, 14_480, 1).unwrap();
        finish(&mut f, &mut port, p);
        let p = f.start(&mut port, 0, 80_100, 14_480, 2).unwrap();
        finish(&mut f, &mut port, p);
        assert_eq!(f.held_at(100), 80_000);
        // Everything up to 60 100 went out: the first chunk (100..40 100) is let go of.
        let (mut retired, mut let_go) = (Vec::new(), Vec::new());
        f.sent(60_100, &mut |b| retired.push(b), &mut |a, b| let_go.push((a, b)));
        assert_eq!((retired.len(), let_go), (1, vec![(100, 40_100)]));
        for b in retired {
            port.pool().free(b);
        }
        assert_eq!(f.held_at(100), 0);
        assert!(!f.starved(45_000), "held up to what was never read");
        assert!(!f.starved(90_000), "never read: the window's business, not a retransmission's");
        assert!(!f.starved(50), "not a file's byte");
        assert_eq!(f.left(), 70_000);
        // A retransmission from 20 000: read again up to the bytes still held, whatever the
        // window says, and before any new bytes.
        assert!(f.starved(20_000));
        assert_eq!(f.left(), 0, "stalled on a retransmission: first in line for a buffer");
        let p = f.start(&mut port, 0, 0, 14_480, 3).unwrap();
        assert!(p.again);
        assert_eq!((p.start, p.len), (20_000, 20_100), "up to the bytes held (within twice 14 480)");
        finish(&mut f, &mut port, p);
        assert_eq!(f.held_at(20_000), 60_100, "back, and contiguous with what stayed");
        assert!(!f.starved(20_000), "held from there up to what was never read");
        // Another loss further back: at most twice the least read is read again.
        assert!(f.starved(10_000));
        let p = f.start(&mut port, 0, 0, 1000, 5).unwrap();
        assert_eq!((p.start, p.len, p.again), (10_000, 2000, true));
        finish(&mut f, &mut port, p);
        assert!(f.starved(10_500), "asked from a byte held, the first one missing is read");
        let p = f.start(&mut port, 0, 0, 1000, 6).unwrap();
        assert_eq!((p.start, p.len), (12_000, 2000));
        finish(&mut f, &mut port, p);
        let mut out = vec![0; 30_000];
        f.copy(port.pool_ref(), 20_000, &mut out);
        assert_eq!(out, data[3000 + 19_900..3000 + 19_900 + 30_000]);
        // Acknowledged, bytes read again go like any others; then reading goes on where it was.
        f.acked(14_000, &mut |b| port.pool().free(b));
        assert_eq!(port.pool_ref().free_count(), 2);
        let p = f.start(&mut port, 20_000, 100_000, 14_480, 4).unwrap();
        assert!(!p.again);
        assert_eq!(p.start, 80_100);
        finish(&mut f, &mut port, p);
        f.release(&mut |b| port.pool().free(b));
        assert_eq!(port.pool_ref().free_count(), 4);
    }
}
