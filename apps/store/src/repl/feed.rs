//! The replication feed: every durable change, in the store's one order, as the command
//! stream a Redis primary sends its replicas, kept in a backlog that replicas read from at
//! their own pace (their offset into the stream) and that a replica coming back after a
//! broken link continues from (PSYNC).
//!
//! Nothing is fed until the first replica attaches: until then the store pays nothing for
//! replication. From then on each engine hands over its commits once they are durable (so a
//! replica never holds a change the primary could lose in a crash); commits of different
//! engines arrive out of order and are put back in order by sequence number.

use super::stream::{command, commands_of};
use crate::log::record::{db_of, read, Change, Read};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// How often the stream carries a PING when the primary is idle (Redis's
/// `repl-ping-replica-period`): a replica drops a link silent for `repl-timeout` (60 s).
pub const PING_EVERY_MS: i64 = 10_000;

/// Changes whose place in the stream is remembered for WAIT.
const ENDS_KEPT: usize = 1 << 16;

/// A replica as the primary knows it.
#[derive(Debug, Clone)]
pub struct Replica {
    /// Its address.
    pub ip: String,
    /// The port it serves on (REPLCONF listening-port).
    pub port: u16,
    /// The offset it last acknowledged.
    pub ack: u64,
    /// When it last acknowledged, Unix ms.
    pub ack_ms: i64,
    /// Receiving the stream (else still loading the snapshot).
    pub online: bool,
}

struct State {
    /// The next change to put in the stream; later ones wait in `pending`.
    next_seq: u64,
    pending: BTreeMap<u64, (usize, Vec<u8>)>,
    /// The stream's last bytes; the first is at offset `base`.
    backlog: VecDeque<u8>,
    base: u64,
    cap: usize,
    /// Offsets at which full syncs wait for the stream to pass a change: seq → offset
    /// right after it (None until it is there).
    marks: BTreeMap<u64, Option<u64>>,
    last_write_ms: i64,
    /// The offset right after each recent change (WAIT's target), oldest first.
    ends: VecDeque<(u64, u64)>,
    /// The database the stream's last SELECT chose (None: the next change SELECTs its own, as
    /// after a full sync's starting point, where a replica starts in database 0).
    stream_db: Option<usize>,
    replicas: BTreeMap<u64, Replica>,
    next_replica: u64,
}

impl State {
    fn total(&self) -> u64 {
        self.base + self.backlog.len() as u64
    }

    fn append(&mut self, b: &[u8]) {
        self.backlog.extend(b);
        if self.backlog.len() > self.cap {
            let drop = self.backlog.len() - self.cap;
            self.backlog.drain(..drop);
            self.base += drop as u64;
        }
    }

    /// Change `seq` is in the stream: full syncs waiting for it learn their offset (and the
    /// change after it names its database for them).
    fn passed(&mut self, seq: u64) {
        let total = self.total();
        if let Some(m) = self.marks.get_mut(&seq) {
            *m = Some(total);
            self.stream_db = None;
        }
    }
}

/// Syncs served, as INFO stats counts them.
#[derive(Default)]
pub struct Syncs {
    /// Full syncs (an RDB file).
    pub full: AtomicU64,
    /// PSYNCs continued from the backlog.
    pub partial_ok: AtomicU64,
    /// PSYNCs that asked to continue and could not (a full sync followed).
    pub partial_err: AtomicU64,
}

/// The feed, shared by every engine.
pub struct Feed {
    /// Syncs served.
    pub syncs: Syncs,
    active: AtomicBool,
    /// The stream's length (every byte ever fed): engines serving replicas look at it to
    /// know when there is more to send.
    total: AtomicU64,
    replid: String,
    state: Mutex<State>,
}

impl Feed {
    /// A feed whose backlog keeps the last `backlog` bytes of the stream.
    pub fn new(backlog: usize) -> Feed {
        // A replication id is 40 hex digits, new at every start (as Redis's): a replica of an
        // earlier run cannot continue from this one's stream.
        let mut replid = String::with_capacity(40);
        let rs = std::hash::RandomState::new();
        for i in 0..3u64 {
            use std::hash::BuildHasher;
            replid.push_str(&format!("{:016x}", rs.hash_one(i ^ super::super::server::unix_ms() as u64)));
        }
        replid.truncate(40);
        Feed {
            syncs: Syncs::default(),
            active: AtomicBool::new(false),
            total: AtomicU64::new(0),
            replid,
            state: Mutex::new(State {
                next_seq: 0,
                pending: BTreeMap::new(),
                backlog: VecDeque::new(),
                base: 0,
                cap: backlog.max(1),
                marks: BTreeMap::new(),
                last_write_ms: 0,
                ends: VecDeque::new(),
                stream_db: None,
                replicas: BTreeMap::new(),
                next_replica: 1,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True once a replica has attached: engines then hand over their durable commits.
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// The replication id.
    pub fn replid(&self) -> &str {
        &self.replid
    }

    /// Bytes ever fed (Redis's `master_repl_offset`).
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Acquire)
    }

    /// The backlog's size.
    pub fn capacity(&self) -> usize {
        self.state().cap
    }

    /// The first offset still in the backlog.
    pub fn backlog_start(&self) -> u64 {
        self.state().base
    }

    /// A full sync is taken at change `last` (the last one made; the caller holds every
    /// engine still, so the snapshot it copies holds exactly the changes up to `last`). The
    /// stream for it starts right after that change: its offset is known once every change
    /// up to `last` is durable and fed ([`Feed::mark`]).
    pub fn start_sync(&self, last: u64, now_ms: i64) {
        let mut s = self.state();
        if !self.is_active() {
            s.next_seq = last + 1;
            // The first change SELECTs its database (Redis starts a stream that way too).
            s.stream_db = None;
            s.last_write_ms = now_ms;
            self.total.store(s.total(), Ordering::Release);
            self.active.store(true, Ordering::Release);
        }
        let at = (s.next_seq > last).then(|| s.total());
        if at.is_none() {
            s.marks.insert(last, None);
        } else {
            s.marks.entry(last).or_insert(at);
        }
    }

    /// The offset a full sync taken at change `last` starts at, once known (then forgotten).
    pub fn mark(&self, last: u64) -> Option<u64> {
        let mut s = self.state();
        let at = *s.marks.get(&last)?;
        if at.is_some() {
            s.marks.remove(&last);
        }
        at
    }

    /// Takes a durable commit's bytes (a Commit record, its records, padding).
    pub fn offer(&self, commit: &[u8]) {
        let mut s = self.state();
        let mut at = 0;
        while at < commit.len() {
            let Read::Record { seq, change, size } = read(&commit[at..], commit.len()) else { break };
            at += size;
            if matches!(change, Change::Commit { .. }) || seq < s.next_seq {
                continue;
            }
            let mut bytes = Vec::new();
            commands_of(&change, &mut bytes);
            s.pending.insert(seq, (db_of(&commit[at - size..]), bytes));
        }
        loop {
            let next = s.next_seq;
            let Some((db, bytes)) = s.pending.remove(&next) else { break };
            if !bytes.is_empty() && s.stream_db != Some(db) {
                command_into(&mut s, &[b"SELECT", db.to_string().as_bytes()]);
                s.stream_db = Some(db);
            }
            s.append(&bytes);
            let seq = s.next_seq;
            s.passed(seq);
            let end = s.total();
            if s.ends.len() == ENDS_KEPT {
                s.ends.pop_front();
            }
            s.ends.push_back((seq, end));
            s.next_seq += 1;
        }
        self.total.store(s.total(), Ordering::Release);
    }

    /// The stream's offset right after change `seq` once it is in the stream (for a change
    /// older than those remembered, the oldest remembered: at least its offset), or None
    /// before.
    pub fn offset_after(&self, seq: u64) -> Option<u64> {
        let s = self.state();
        if s.next_seq <= seq {
            return None;
        }
        let i = s.ends.partition_point(|&(q, _)| q <= seq);
        Some(match i {
            // Older than any remembered: before the stream began (the replicas' files hold
            // it), or forgotten (the oldest remembered is later, so at least its offset).
            0 if s.ends.len() < ENDS_KEPT => 0,
            0 => s.ends.front().map_or(0, |&(_, end)| end),
            i => s.ends[i - 1].1,
        })
    }

    /// How many replicas acknowledged offset `at` or beyond.
    pub fn acked(&self, at: u64) -> usize {
        self.state().replicas.values().filter(|r| r.online && r.ack >= at).count()
    }

    /// Asks every replica for its offset now (WAIT), rather than at its next second.
    pub fn getack(&self) {
        if self.is_active() {
            let mut s = self.state();
            command_into(&mut s, &[b"REPLCONF", b"GETACK", b"*"]);
            self.total.store(s.total(), Ordering::Release);
        }
    }

    /// A PING into the stream if nothing went into it for [`PING_EVERY_MS`].
    pub fn tick(&self, now_ms: i64) {
        if !self.is_active() {
            return;
        }
        let mut s = self.state();
        if now_ms - s.last_write_ms >= PING_EVERY_MS {
            command_into(&mut s, &[b"PING"]);
            s.last_write_ms = now_ms;
            self.total.store(s.total(), Ordering::Release);
        }
    }

    /// Calls `put` with the stream from offset `from`, `max` bytes at most; returns the
    /// offset after them, or None if `from` has left the backlog (the replica fell too far
    /// behind and must sync again).
    pub fn read(&self, from: u64, max: usize, mut put: impl FnMut(&[u8])) -> Option<u64> {
        let s = self.state();
        if from < s.base || from > s.total() {
            return None;
        }
        let start = (from - s.base) as usize;
        let end = s.backlog.len().min(start.saturating_add(max));
        let (a, b) = s.backlog.as_slices();
        if start < a.len() {
            put(&a[start..end.min(a.len())]);
        }
        if end > a.len() {
            put(&b[start.saturating_sub(a.len())..end - a.len()]);
        }
        Some(from + (end - start) as u64)
    }

    /// True if a replica asking to continue from `offset` of stream `replid` can (PSYNC).
    pub fn can_continue(&self, replid: &[u8], offset: u64) -> bool {
        let s = self.state();
        self.is_active() && replid == self.replid.as_bytes() && offset >= s.base && offset <= s.total()
    }

    /// A replica attached; its number.
    pub fn attach(&self, r: Replica) -> u64 {
        let mut s = self.state();
        let id = s.next_replica;
        s.next_replica += 1;
        s.replicas.insert(id, r);
        id
    }

    /// Replica `id` is online (receiving the stream) or acknowledged `ack`.
    pub fn update(&self, id: u64, online: bool, ack: Option<u64>, now_ms: i64) {
        let mut s = self.state();
        if let Some(r) = s.replicas.get_mut(&id) {
            r.online |= online;
            if let Some(a) = ack {
                r.ack = a;
                r.ack_ms = now_ms;
            }
        }
    }

    /// Replica `id` is gone.
    pub fn detach(&self, id: u64) {
        self.state().replicas.remove(&id);
    }

    /// The replicas attached.
    pub fn replicas(&self) -> Vec<Replica> {
        self.state().replicas.values().cloned().collect()
    }
}

fn command_into(s: &mut State, args: &[&[u8]]) {
    let mut b = Vec::new();
    command(&mut b, args);
    s.append(&b);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::record::encode;

    fn commit(seqs: &[u64]) -> Vec<u8> {
        let mut b = Vec::new();
        encode(&mut b, seqs[0], &Change::Commit { len: 0, gen: 1, prev: 0 });
        for &s in seqs {
            let v = format!("v{s}");
            encode(&mut b, s, &Change::Sets(vec![(b"k", v.as_bytes(), 0)]));
        }
        b
    }

    fn stream(f: &Feed, from: u64) -> String {
        let mut v = Vec::new();
        f.read(from, usize::MAX, |b| v.extend_from_slice(b)).unwrap();
        String::from_utf8(v).unwrap().replace("\r\n", " ")
    }

    #[test]
    fn commits_of_engines_are_put_back_in_order() {
        let f = Feed::new(1 << 20);
        f.start_sync(10, 0);
        let select = f.total();
        assert_eq!(select, 0);
        assert_eq!(f.mark(10), Some(select));
        f.offer(&commit(&[9, 10]));
        f.offer(&commit(&[12, 13]));
        assert_eq!(f.total(), select, "11 is missing: nothing goes out");
        f.start_sync(13, 0);
        assert_eq!(f.mark(13), None, "not yet fed");
        f.offer(&commit(&[11]));
        assert_eq!(
            stream(&f, select),
            "*2 $6 SELECT $1 0 *3 $3 SET $1 k $3 v11 *3 $3 SET $1 k $3 v12 *3 $3 SET $1 k $3 v13 "
        );
        assert_eq!(f.mark(13), Some(f.total()));
        assert!(f.can_continue(f.replid().as_bytes(), select));
        assert!(!f.can_continue(b"other", select));
    }

    #[test]
    fn a_reader_past_the_backlog_is_told() {
        let f = Feed::new(40);
        f.start_sync(0, 0);
        f.offer(&commit(&[1, 2, 3]));
        assert!(f.backlog_start() > 0);
        assert_eq!(f.read(0, 10, |_| {}), None);
        assert!(f.read(f.total(), 10, |_| {}).is_some());
    }
}
