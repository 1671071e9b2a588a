//! A list's elements, and the one function that changes them: the commands and the replay
//! both apply a [`ListOp`] through [`apply`], so a replayed change does exactly what the
//! command did.

use crate::log::record::ListOp;
use std::collections::VecDeque;

/// A list value.
pub type List = VecDeque<Box<[u8]>>;

/// Redis's start/stop arithmetic (LRANGE, LTRIM): the inclusive range of indexes `start` to
/// `stop` of a list of `len` (negatives from the tail), or None if it holds nothing.
pub fn range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { len + start } else { start };
    let mut stop = if stop < 0 { len + stop } else { stop };
    start = start.max(0);
    if start > stop || start >= len {
        return None;
    }
    stop = stop.min(len - 1);
    Some((start as usize, stop as usize))
}

/// The place of `index` (negatives from the tail) in a list of `len`, if there is one.
pub fn place(index: i64, len: usize) -> Option<usize> {
    let i = if index < 0 { len as i64 + index } else { index };
    (0..len as i64).contains(&i).then_some(i as usize)
}

/// Applies `op` to `list`; returns how many elements it removed or changed (LREM's count,
/// LINSERT's 0 when the pivot is missing).
pub fn apply(list: &mut List, op: &ListOp<'_>) -> usize {
    match op {
        ListOp::Push { left, values } => {
            for v in values {
                if *left {
                    list.push_front((*v).into());
                } else {
                    list.push_back((*v).into());
                }
            }
            values.len()
        }
        ListOp::Pop { left, count } => {
            let n = (*count).min(list.len() as u64) as usize;
            if *left {
                list.drain(..n);
            } else {
                list.truncate(list.len() - n);
            }
            n
        }
        ListOp::Set { index, value } => match place(*index, list.len()) {
            Some(i) => {
                list[i] = (*value).into();
                1
            }
            None => 0,
        },
        ListOp::Insert { before, pivot, value } => match list.iter().position(|e| &**e == *pivot) {
            Some(i) => {
                list.insert(if *before { i } else { i + 1 }, (*value).into());
                1
            }
            None => 0,
        },
        ListOp::Remove { count, value } => {
            let limit = if *count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
            let mut removed = 0;
            if *count >= 0 {
                let mut i = 0;
                while i < list.len() && removed < limit {
                    if &*list[i] == *value {
                        list.remove(i);
                        removed += 1;
                    } else {
                        i += 1;
                    }
                }
            } else {
                let mut i = list.len();
                while i > 0 && removed < limit {
                    i -= 1;
                    if &*list[i] == *value {
                        list.remove(i);
                        removed += 1;
                    }
                }
            }
            removed
        }
        ListOp::Trim { start, stop } => {
            let before = list.len();
            match range(*start, *stop, list.len()) {
                Some((a, b)) => {
                    list.truncate(b + 1);
                    list.drain(..a);
                }
                None => list.clear(),
            }
            before - list.len()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(items: &[&str]) -> List {
        items.iter().map(|s| s.as_bytes().into()).collect()
    }

    #[test]
    fn ops_as_redis_does_them() {
        let mut l = of(&["a", "b", "c"]);
        apply(&mut l, &ListOp::Push { left: true, values: vec![b"x", b"y"] });
        assert_eq!(l, of(&["y", "x", "a", "b", "c"]), "LPUSH x y puts y first");
        apply(&mut l, &ListOp::Pop { left: false, count: 2 });
        assert_eq!(l, of(&["y", "x", "a"]));
        apply(&mut l, &ListOp::Set { index: -1, value: b"z" });
        assert_eq!(l, of(&["y", "x", "z"]));
        assert_eq!(apply(&mut l, &ListOp::Insert { before: false, pivot: b"x", value: b"q" }), 1);
        assert_eq!(l, of(&["y", "x", "q", "z"]));
        assert_eq!(apply(&mut l, &ListOp::Insert { before: true, pivot: b"nope", value: b"q" }), 0);
        let mut r = of(&["a", "x", "b", "x", "c", "x"]);
        assert_eq!(apply(&mut r, &ListOp::Remove { count: -2, value: b"x" }), 2);
        assert_eq!(r, of(&["a", "x", "b", "c"]));
        assert_eq!(apply(&mut r, &ListOp::Remove { count: 0, value: b"x" }), 1);
        let mut t = of(&["a", "b", "c", "d"]);
        apply(&mut t, &ListOp::Trim { start: 1, stop: -2 });
        assert_eq!(t, of(&["b", "c"]));
        apply(&mut t, &ListOp::Trim { start: 5, stop: 10 });
        assert!(t.is_empty());
        assert_eq!(range(-100, 100, 3), Some((0, 2)));
        assert_eq!(range(2, 1, 3), None);
        assert_eq!(place(-4, 3), None);
    }
}
