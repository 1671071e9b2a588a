//! Changes waiting for their group commit, sans-IO: each change takes its sequence number
//! and is encoded at once (under its keys' locks); [`Stage::take_commit`] turns everything
//! staged into one commit (header, records, padding to the block) for the writer.

use super::order::Order;
use super::record::{encode, encode_del, encode_hash_set, encode_sets, pad, Change, ListOp};
use crate::command::Journal;
use std::sync::Arc;

/// One engine's staged changes.
pub struct Stage {
    order: Arc<Order>,
    engine: usize,
    buf: Vec<u8>,
    first: u64,
    last: u64,
    records: u64,
    /// Numbers taken and not yet durable (staged or in flight).
    pending: bool,
    /// The database the next changes are in (SELECT's).
    db: u8,
}

/// A commit taken from the stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// Its first and last sequence numbers.
    pub first: u64,
    /// Its last.
    pub last: u64,
    /// Records in it.
    pub records: u64,
}

impl Stage {
    /// Engine `engine`'s stage.
    pub fn new(order: Arc<Order>, engine: usize) -> Stage {
        Stage { order, engine, buf: Vec::new(), first: 0, last: 0, records: 0, pending: false, db: 0 }
    }

    /// The engine whose stage this is.
    pub fn engine(&self) -> usize {
        self.engine
    }

    /// True if changes wait for a commit.
    pub fn has_records(&self) -> bool {
        self.records > 0
    }

    /// Bytes staged.
    pub fn staged_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Takes the next number and encodes one record with `f`, marked with the database the
    /// change is in (database 0 is the header's zero: a store of one database writes what it
    /// always wrote).
    fn staged(&mut self, f: impl FnOnce(&mut Vec<u8>, u64) -> usize) -> u64 {
        let seq = self.next();
        let at = self.buf.len();
        f(&mut self.buf, seq);
        if self.db != 0 {
            super::record::set_db(&mut self.buf[at..], self.db);
        }
        seq
    }

    fn next(&mut self) -> u64 {
        if !self.pending {
            self.order.open(self.engine);
            self.pending = true;
        }
        let seq = self.order.take();
        if self.records == 0 {
            self.first = seq;
        }
        self.last = seq;
        self.records += 1;
        seq
    }

    /// Moves everything staged into `out` (cleared first) as one commit of generation `gen`
    /// following the log's commit whose last change was `prev` (0: the first).
    pub fn take_commit(&mut self, out: &mut Vec<u8>, gen: u64, prev: u64) -> Option<Taken> {
        if self.records == 0 {
            return None;
        }
        out.clear();
        let len = (super::record::COMMIT_SIZE + self.buf.len()).next_multiple_of(super::record::BLOCK);
        encode(out, self.first, &Change::Commit { len: len as u64, gen, prev });
        out.extend_from_slice(&self.buf);
        pad(out);
        debug_assert_eq!(out.len(), len);
        let t = Taken { first: self.first, last: self.last, records: self.records };
        self.buf.clear();
        self.records = 0;
        Some(t)
    }

    /// A commit is durable; `in_flight` is the lowest number of the engine's commits still
    /// being written (if any): every number below it and below what is staged is durable.
    pub fn settled(&mut self, in_flight: Option<u64>) {
        let staged = (self.records > 0).then_some(self.first);
        match in_flight.into_iter().chain(staged).min() {
            Some(low) => self.order.settled(self.engine, Some(low)),
            None => {
                self.order.settled(self.engine, None);
                self.pending = false;
            }
        }
    }
}

impl Journal for Stage {
    fn sets(&mut self, items: &[(&[u8], &[u8], i64)]) -> u64 {
        self.staged(|b, seq| encode_sets(b, seq, items))
    }

    fn del(&mut self, keys: &[&[u8]]) -> u64 {
        self.staged(|b, seq| encode_del(b, seq, keys))
    }

    fn expire(&mut self, key: &[u8], at_ms: i64) -> u64 {
        self.staged(|b, seq| encode(b, seq, &Change::Expire(key, at_ms)))
    }

    fn hash_set(&mut self, key: &[u8], fresh: bool, expire_ms: i64, fields: &[(&[u8], &[u8])]) -> u64 {
        self.staged(|b, seq| encode_hash_set(b, seq, key, fresh, expire_ms, fields))
    }

    fn list(&mut self, key: &[u8], fresh: bool, gone: bool, expire_ms: i64, op: &ListOp<'_>) -> u64 {
        self.staged(|b, seq| encode(b, seq, &Change::List { key, fresh, gone, expire_ms, op: op.clone() }))
    }

    fn members(&mut self, key: &[u8], fresh: bool, gone: bool, expire_ms: i64, add: bool, members: &[&[u8]]) -> u64 {
        let members = members.to_vec();
        self.staged(|b, seq| encode(b, seq, &Change::Members { key, fresh, gone, expire_ms, add, members }))
    }

    fn hash_del(&mut self, key: &[u8], fields: &[&[u8]]) -> u64 {
        self.staged(|b, seq| encode(b, seq, &Change::HashDel { key, fields: fields.to_vec() }))
    }

    fn record(&mut self, change: &Change<'_>) -> u64 {
        self.staged(|b, seq| encode(b, seq, change))
    }

    fn flush(&mut self) -> u64 {
        self.staged(|b, seq| encode(b, seq, &Change::Flush))
    }

    fn select(&mut self, db: usize) {
        self.db = db as u8;
    }

    fn last(&self) -> u64 {
        self.order.last()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::record::{commit_at, read, Read, BLOCK, COMMIT_SIZE};

    #[test]
    fn a_commit_is_a_header_the_records_and_padding() {
        let order = Arc::new(Order::new(1, 41));
        let mut st = Stage::new(order.clone(), 0);
        assert_eq!(st.sets(&[(b"k", b"v", 0)]), 42);
        assert_eq!(st.del(&[b"k"]), 43);
        assert_eq!(order.durable(), 41);
        let mut out = Vec::new();
        let t = st.take_commit(&mut out, 1, 0).expect("a commit");
        assert_eq!(t, Taken { first: 42, last: 43, records: 2 });
        assert_eq!(out.len(), BLOCK);
        assert_eq!(commit_at(&out, 1).map(|h| (h.first, h.len, h.prev)), Some((42, BLOCK as u64, 0)));
        assert_eq!(commit_at(&out, 2), None, "another generation's commit is not this log's");
        let Read::Record { seq, size, .. } = read(&out[COMMIT_SIZE..], 1 << 20) else { panic!("no record") };
        assert_eq!(seq, 42);
        assert!(matches!(read(&out[COMMIT_SIZE + size..], 1 << 20), Read::Record { seq: 43, .. }));
        // Staged while the first is in flight: the prefix stops below it.
        assert_eq!(st.flush(), 44);
        st.settled(None);
        assert_eq!(order.durable(), 43);
        st.take_commit(&mut out, 1, 0);
        st.settled(None);
        assert_eq!(order.durable(), 44);
        assert!(st.take_commit(&mut out, 1, 0).is_none());
    }
}
