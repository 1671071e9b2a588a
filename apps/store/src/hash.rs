//! A hash's fields. While small they are kept in insertion order in a vector, as Redis keeps
//! a small hash in a listpack, so HGETALL, HKEYS and HVALS answer in the order Redis does;
//! past Redis's own limits (`hash-max-listpack-entries` 128 fields, `hash-max-listpack-value`
//! 64 bytes per field or value) they move to a hash table for good, and the order becomes the
//! table's, as it does in Redis.

use std::collections::HashMap;

/// Fields a small hash holds at most (Redis's `hash-max-listpack-entries`).
pub const SMALL_ENTRIES: usize = 128;
/// Bytes of a field or value a small hash holds at most (`hash-max-listpack-value`).
pub const SMALL_VALUE: usize = 64;

/// A field and its value.
pub type Pair = (Box<[u8]>, Box<[u8]>);

/// A hash value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hash {
    /// In insertion order.
    Small(Vec<Pair>),
    /// In a table.
    Big(HashMap<Box<[u8]>, Box<[u8]>>),
}

impl Default for Hash {
    fn default() -> Hash {
        Hash::Small(Vec::new())
    }
}

impl Hash {
    /// Fields.
    pub fn len(&self) -> usize {
        match self {
            Hash::Small(v) => v.len(),
            Hash::Big(m) => m.len(),
        }
    }

    /// True if it has no field (a hash left empty is removed from the keyspace).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            Hash::Small(v) => v.iter().find(|(f, _)| &**f == field).map(|(_, x)| &**x),
            Hash::Big(m) => m.get(field).map(|x| &**x),
        }
    }

    /// Sets `field` to `value`; true if the field is new. A field or value too long for a
    /// small hash moves it to a table first, even when the field exists (as in Redis).
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Hash::Small(v) = self {
            let fits = field.len() <= SMALL_VALUE && value.len() <= SMALL_VALUE;
            if fits {
                if let Some(slot) = v.iter_mut().find(|(f, _)| &**f == field) {
                    slot.1 = value.into();
                    return false;
                }
                if v.len() < SMALL_ENTRIES {
                    v.push((field.into(), value.into()));
                    return true;
                }
            }
            *self = Hash::Big(std::mem::take(v).into_iter().collect());
        }
        match self {
            Hash::Big(m) => m.insert(field.into(), value.into()).is_none(),
            Hash::Small(_) => unreachable!("moved to a table above"),
        }
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            Hash::Small(v) => match v.iter().position(|(f, _)| &**f == field) {
                Some(i) => {
                    v.remove(i);
                    true
                }
                None => false,
            },
            Hash::Big(m) => m.remove(field).is_some(),
        }
    }

    /// Every field and value, in the hash's order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            Hash::Small(v) => Box::new(v.iter().map(|(f, x)| (&**f, &**x))),
            Hash::Big(m) => Box::new(m.iter().map(|(f, x)| (&**f, &**x))),
        }
    }

    /// The field and value at place `i` of the hash's order (for HRANDFIELD).
    pub fn nth(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.iter().nth(i)
    }

    /// Bytes of fields and values (for INFO's memory estimate).
    pub fn bytes(&self) -> usize {
        self.iter().map(|(f, v)| f.len() + v.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn small_keeps_insertion_order_and_grows_into_a_table() {
        let mut h = Hash::default();
        assert!(h.set(b"b", b"1"));
        assert!(h.set(b"a", b"2"));
        assert!(!h.set(b"b", b"3"));
        assert_eq!(h.iter().collect::<Vec<_>>(), vec![(&b"b"[..], &b"3"[..]), (&b"a"[..], &b"2"[..])]);
        assert!(h.remove(b"b") && !h.remove(b"b"));
        assert!(matches!(h, Hash::Small(_)));
        assert!(h.set(b"long", &[b'x'; SMALL_VALUE + 1]));
        assert!(matches!(h, Hash::Big(_)), "a value past 64 bytes moves it to a table");
        assert_eq!(h.get(b"a"), Some(&b"2"[..]));
        let mut g = Hash::default();
        for i in 0..=SMALL_ENTRIES {
            g.set(format!("f{i}").as_bytes(), b"v");
        }
        assert!(matches!(g, Hash::Big(_)), "field 129 moves it to a table");
        assert_eq!(g.len(), SMALL_ENTRIES + 1);
    }

    proptest! {
        /// Any sequence of sets and removes leaves what a map model holds, in either form.
        #[test]
        fn behaves_as_a_map(ops in proptest::collection::vec((any::<bool>(), 0u8..40, 0usize..80), 0..400)) {
            let mut h = Hash::default();
            let mut model = BTreeMap::new();
            for (set, f, vlen) in ops {
                let field = vec![b'f', f];
                if set {
                    let value = vec![f; vlen];
                    prop_assert_eq!(h.set(&field, &value), model.insert(field, value).is_none());
                } else {
                    prop_assert_eq!(h.remove(&field), model.remove(&field).is_some());
                }
                prop_assert_eq!(h.len(), model.len());
            }
            let mine: BTreeMap<Vec<u8>, Vec<u8>> = h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            prop_assert_eq!(mine, model);
        }
    }
}
