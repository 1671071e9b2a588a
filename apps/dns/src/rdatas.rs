//! The record data of one RRset in one block: each record's length (two bytes) and then its
//! bytes, one after another, held inline up to [`INLINE`] bytes. Most RRsets of a large zone
//! are one A, AAAA or short name: as a list of boxed records they cost two allocations each
//! (the list and the record, 64 bytes of heap for four bytes of address), which at ten
//! million names was a gigabyte of memory touched once while loading and freed after.

use std::fmt;
use std::ops::Index;

/// Bytes held without an allocation: an A RRset of up to five addresses, an AAAA of one.
pub const INLINE: usize = 30;

/// An RRset's records, in the order they were added, none twice (the loader checks).
#[derive(Clone)]
pub struct Rdatas(Block);

#[derive(Clone)]
enum Block {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Vec<u8>),
}

impl Rdatas {
    /// An RRset of one record.
    pub fn one(r: &[u8]) -> Rdatas {
        let mut s = Rdatas(Block::Inline { len: 0, bytes: [0; INLINE] });
        s.push(r);
        s
    }

    /// The block: each record's length, big-endian, then the record.
    fn block(&self) -> &[u8] {
        match &self.0 {
            Block::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Block::Heap(v) => v,
        }
    }

    /// Adds `r` at the end (record data is at most 65 535 bytes, as the wire allows).
    pub fn push(&mut self, r: &[u8]) {
        let len = u16::try_from(r.len()).expect("record data fits in 65 535 bytes");
        match &mut self.0 {
            Block::Inline { len: used, bytes } if usize::from(*used) + 2 + r.len() <= INLINE => {
                let at = usize::from(*used);
                bytes[at..at + 2].copy_from_slice(&len.to_be_bytes());
                bytes[at + 2..at + 2 + r.len()].copy_from_slice(r);
                *used += 2 + len as u8;
            }
            Block::Inline { len: used, bytes } => {
                let mut v = Vec::with_capacity(usize::from(*used) + 2 + r.len());
                v.extend_from_slice(&bytes[..usize::from(*used)]);
                v.extend_from_slice(&len.to_be_bytes());
                v.extend_from_slice(r);
                self.0 = Block::Heap(v);
            }
            Block::Heap(v) => {
                v.extend_from_slice(&len.to_be_bytes());
                v.extend_from_slice(r);
            }
        }
    }

    /// The records in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter { rest: self.block() }
    }

    /// How many records (counted: RRsets are short, and this is not on a query's path).
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True if it holds no record (only after [`Rdatas::remove`] took the last).
    pub fn is_empty(&self) -> bool {
        self.block().is_empty()
    }

    /// True if `r` is one of the records.
    pub fn contains(&self, r: &[u8]) -> bool {
        self.iter().any(|x| x == r)
    }

    /// Takes `r` out; false if it is not there.
    pub fn remove(&mut self, r: &[u8]) -> bool {
        let mut at = 0;
        for x in self.iter() {
            if x == r {
                let end = at + 2 + x.len();
                match &mut self.0 {
                    Block::Inline { len, bytes } => {
                        let used = usize::from(*len);
                        bytes.copy_within(end..used, at);
                        bytes[used - (end - at)..used].fill(0);
                        *len -= (end - at) as u8;
                    }
                    Block::Heap(v) => {
                        v.drain(at..end);
                    }
                }
                return true;
            }
            at += 2 + x.len();
        }
        false
    }

    /// The record, if it is the only one.
    pub fn only(&self) -> Option<&[u8]> {
        let mut it = self.iter();
        it.next().filter(|_| it.next().is_none())
    }

    /// The records, each copied out.
    pub fn to_vec(&self) -> Vec<Vec<u8>> {
        self.iter().map(<[u8]>::to_vec).collect()
    }
}

impl PartialEq for Rdatas {
    fn eq(&self, other: &Rdatas) -> bool {
        self.block() == other.block()
    }
}

impl Eq for Rdatas {}

impl fmt::Debug for Rdatas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Index<usize> for Rdatas {
    type Output = [u8];

    /// Record `i` (found by walking the block: it is asked for the first, or of short sets).
    fn index(&self, i: usize) -> &[u8] {
        self.iter().nth(i).expect("an RRset's record")
    }
}

impl<'a> IntoIterator for &'a Rdatas {
    type Item = &'a [u8];
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The records of an [`Rdatas`], in order.
#[derive(Clone)]
pub struct Iter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let (len, rest) = self.rest.split_first_chunk::<2>()?;
        let (r, rest) = rest.split_at(usize::from(u16::from_be_bytes(*len)));
        self.rest = rest;
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(rs: &[&[u8]]) -> Rdatas {
        let mut s = Rdatas::one(rs[0]);
        rs[1..].iter().for_each(|r| s.push(r));
        s
    }

    #[test]
    fn records_come_back_in_order_inline_and_on_the_heap() {
        let small: Vec<Vec<u8>> = (0..5u8).map(|i| vec![198, 18, 0, i]).collect();
        // Five A records fill the inline block exactly; a sixth moves it to the heap.
        let s = of(&small.iter().map(Vec::as_slice).collect::<Vec<_>>());
        assert!(matches!(s.0, Block::Inline { len: 30, .. }));
        assert_eq!(s.to_vec(), small);
        let mut more = small.clone();
        more.push(vec![198, 18, 0, 9]);
        let t = of(&more.iter().map(Vec::as_slice).collect::<Vec<_>>());
        assert!(matches!(t.0, Block::Heap(_)));
        assert_eq!(t.to_vec(), more);
        assert_eq!((t.len(), &t[5], &t[0]), (6, &[198, 18, 0, 9][..], &[198, 18, 0, 0][..]));
        // Empty and the longest record the wire allows.
        let big = vec![7u8; 65_535];
        let u = of(&[b"", &big, b"x"]);
        assert_eq!(u.to_vec(), vec![vec![], big, b"x".to_vec()]);
    }

    #[test]
    fn remove_takes_out_one_record_and_keeps_the_rest_in_order() {
        for n in [1usize, 3, 5, 8] {
            let rs: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; 1 + i % 3]).collect();
            for gone in 0..n {
                let mut s = of(&rs.iter().map(Vec::as_slice).collect::<Vec<_>>());
                assert!(s.remove(&rs[gone]));
                assert!(!s.remove(&rs[gone]), "removed once");
                let mut want = rs.clone();
                want.remove(gone);
                assert_eq!(s.to_vec(), want);
                assert_eq!(s.is_empty(), n == 1);
                assert!(!s.contains(&rs[gone]) && want.iter().all(|r| s.contains(r)));
                // Equal to the same records added afresh (inline bytes past the end are zero).
                if let Some((first, rest)) = want.split_first() {
                    let mut fresh = Rdatas::one(first);
                    rest.iter().for_each(|r| fresh.push(r));
                    assert_eq!(s, fresh);
                }
            }
        }
    }
}
