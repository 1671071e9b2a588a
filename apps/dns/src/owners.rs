//! A zone's owner names and their RRsets: the names one after another in one buffer, in the
//! order they came, the RRsets beside them, and an index of the names' hashes. A large zone
//! inserts a million names while it loads: with a boxed name and a hash-map bucket each,
//! every insert missed the caches two or three times, and every walk over the names
//! (finding the empty non-terminals, collecting the names to compile, checking CNAMEs) once
//! per name. Here a walk reads the names and their sets in order, and an insert touches one
//! index slot.

use crate::hashed_ahead::{each_hashed_ahead, prefetch_slot};
use crate::sets::Sets;
use dns::name::hash_wire;

/// Owner names (lowercase wire form, as the loader makes them) → RRsets.
#[derive(Debug, Clone)]
pub struct Owners {
    /// The names, each at the offset its entry says.
    names: Vec<u8>,
    /// In the order the names came; a removed name's entry stays, marked, until the index
    /// next grows and leaves it out.
    entries: Vec<Entry>,
    /// Open addressing, linear probing, at most half full: the name's hash's high half and
    /// its entry's position + 1 (0: empty).
    index: Vec<(u32, u32)>,
    len: usize,
}

#[derive(Debug, Clone)]
struct Entry {
    at: u32,
    len: u16,
    removed: bool,
    sets: Sets,
}

impl Entry {
    /// Its name, in the buffer of names.
    fn name_in<'n>(&self, names: &'n [u8]) -> &'n [u8] {
        &names[self.at as usize..self.at as usize + usize::from(self.len)]
    }
}

/// The slot of `index` (open addressing, linear probing, as `Owners` keeps it) holding
/// `name` (hash `h`), or the empty one where it would go; true if found.
fn probe(index: &[(u32, u32)], entries: &[Entry], names: &[u8], name: &[u8], h: u64) -> (usize, bool) {
    let mask = index.len() - 1;
    let tag = (h >> 32) as u32;
    let mut i = h as usize & mask;
    loop {
        let (t, at) = index[i];
        if at == 0 {
            return (i, false);
        }
        if t == tag && entries[at as usize - 1].name_in(names) == name {
            return (i, true);
        }
        i = (i + 1) & mask;
    }
}

const MIN_SLOTS: usize = 16;

impl Owners {
    /// A map with room for `n` names without growing its index.
    pub fn with_capacity(n: usize) -> Owners {
        Owners { names: Vec::new(), entries: Vec::with_capacity(n), index: vec![(0, 0); slots_for(n)], len: 0 }
    }

    /// Names held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if it holds no name.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn name_of(&self, e: &Entry) -> &[u8] {
        e.name_in(&self.names)
    }

    /// The index slot of `name`: where it is, or the empty slot where it would go.
    fn slot(&self, name: &[u8], h: u64) -> (usize, bool) {
        probe(&self.index, &self.entries, &self.names, name, h)
    }

    fn position(&self, name: &[u8]) -> Option<usize> {
        let (i, found) = self.slot(name, hash_wire(name));
        found.then(|| self.index[i].1 as usize - 1)
    }

    /// The RRsets at `name`.
    pub fn get(&self, name: &[u8]) -> Option<&Sets> {
        self.position(name).map(|p| &self.entries[p].sets)
    }

    /// The name as held (borrowed from the map) and its RRsets.
    pub fn get_key_value(&self, name: &[u8]) -> Option<(&[u8], &Sets)> {
        self.position(name).map(|p| (self.name_of(&self.entries[p]), &self.entries[p].sets))
    }

    /// True if `name` is held.
    pub fn contains_key(&self, name: &[u8]) -> bool {
        self.position(name).is_some()
    }

    /// The RRsets at `name`, an empty list added for it first if it is new.
    pub fn get_or_insert(&mut self, name: &[u8]) -> &mut Sets {
        let h = hash_wire(name);
        let (mut i, found) = self.slot(name, h);
        if !found {
            if (self.len + 1) * 2 > self.index.len() {
                self.grow();
                i = self.slot(name, h).0;
            }
            let at = u32::try_from(self.names.len()).expect("names of a zone fit in 4 GiB");
            self.names.extend_from_slice(name);
            let len = u16::try_from(name.len()).expect("a name is at most 255 bytes");
            self.entries.push(Entry { at, len, removed: false, sets: Sets::default() });
            self.index[i] = ((h >> 32) as u32, self.entries.len() as u32);
            self.len += 1;
        }
        let p = self.index[i].1 as usize - 1;
        &mut self.entries[p].sets
    }

    /// The RRsets at `name`, to change in place.
    pub fn get_mut(&mut self, name: &[u8]) -> Option<&mut Sets> {
        self.position(name).map(|p| &mut self.entries[p].sets)
    }

    /// Removes `name`; true if it was held.
    pub fn remove(&mut self, name: &[u8]) -> bool {
        let (mut i, found) = self.slot(name, hash_wire(name));
        if !found {
            return false;
        }
        let p = self.index[i].1 as usize - 1;
        self.entries[p].removed = true;
        self.entries[p].sets = Sets::default();
        self.len -= 1;
        // Backward shift: the entries after it in its run move up if their home allows, so
        // that no lookup stops early at the hole.
        let mask = self.index.len() - 1;
        let mut j = i;
        loop {
            self.index[i] = (0, 0);
            loop {
                j = (j + 1) & mask;
                let (_, at) = self.index[j];
                if at == 0 {
                    return true;
                }
                let e = &self.entries[at as usize - 1];
                let home = hash_wire(self.name_of(e)) as usize & mask;
                // It may move to `i` if its home is not in (i, j] going round.
                let stays = if i <= j { i < home && home <= j } else { i < home || home <= j };
                if !stays {
                    break;
                }
            }
            self.index[i] = self.index[j];
            i = j;
        }
    }

    /// Keeps the names for which `keep` says so.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8], &mut Sets) -> bool) {
        let gone: Vec<Vec<u8>> = {
            let names = &self.names;
            self.entries
                .iter_mut()
                .filter(|e| !e.removed)
                .filter_map(|e| {
                    let name = e.name_in(names);
                    (!keep(name, &mut e.sets)).then(|| name.to_vec())
                })
                .collect()
        };
        for name in gone {
            self.remove(&name);
        }
    }

    /// Every name with its RRsets, in the order they came.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Sets)> + '_ {
        self.entries.iter().filter(|e| !e.removed).map(|e| (self.name_of(e), &e.sets))
    }

    /// Every name, in the order they came.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.iter().map(|(n, _)| n)
    }

    /// Every name's RRsets.
    pub fn values(&self) -> impl Iterator<Item = &Sets> + '_ {
        self.iter().map(|(_, s)| s)
    }

    /// Twice the index, the names held moved over (removed ones left behind).
    fn grow(&mut self) {
        let mut bigger = Owners::with_capacity(self.len.max(MIN_SLOTS) * 2);
        for e in std::mem::take(&mut self.entries).into_iter().filter(|e| !e.removed) {
            let name = e.name_in(&self.names);
            *bigger.get_or_insert(name) = e.sets;
        }
        *self = bigger;
    }
}

impl Default for Owners {
    fn default() -> Owners {
        Owners::with_capacity(0)
    }
}

/// Owner names as a loader meets them, their index built once at the end. Records of one
/// owner in a row share an entry; a name that comes back later gets a second entry, merged
/// into its first when the index is built. Inserting a million names into an index as they
/// came missed the cache once per name, each miss waited for in turn (a fifth of loading a
/// large zone); built at the end, the slots of the names coming next are fetched while the
/// current one is placed.
#[derive(Debug, Default)]
pub struct Appended {
    names: Vec<u8>,
    entries: Vec<Entry>,
}

impl Appended {
    /// Room for `n` entries.
    pub fn with_capacity(n: usize) -> Appended {
        Appended { names: Vec::new(), entries: Vec::with_capacity(n) }
    }

    /// The RRsets of the run of records at `name`: the last entry's if it has that name, a
    /// new entry's otherwise.
    pub fn run(&mut self, name: &[u8]) -> &mut Sets {
        let same = self.entries.last().is_some_and(|e| e.name_in(&self.names) == name);
        if !same {
            let at = u32::try_from(self.names.len()).expect("names of a zone fit in 4 GiB");
            self.names.extend_from_slice(name);
            let len = u16::try_from(name.len()).expect("a name is at most 255 bytes");
            self.entries.push(Entry { at, len, removed: false, sets: Sets::default() });
        }
        &mut self.entries.last_mut().expect("an entry").sets
    }

    /// The names indexed; a name's later entries are handed to `merge` with its first
    /// entry's RRsets, in the order they came.
    pub fn into_owners(self, mut merge: impl FnMut(&mut Sets, Sets)) -> Owners {
        let Appended { names, mut entries } = self;
        let mut index = vec![(0u32, 0u32); slots_for(entries.len())];
        let mask = index.len() - 1;
        let base = index.as_ptr() as usize;
        // (first entry, later entry) of each name that came back.
        let mut again: Vec<(usize, usize)> = Vec::new();
        each_hashed_ahead(
            0..entries.len(),
            |&p| hash_wire(entries[p].name_in(&names)),
            |h| prefetch_slot(base, mask, h),
            |h, p| {
                let (i, found) = probe(&index, &entries, &names, entries[p].name_in(&names), h);
                match found {
                    false => index[i] = ((h >> 32) as u32, p as u32 + 1),
                    true => again.push((index[i].1 as usize - 1, p)),
                }
            },
        );
        for &(first, later) in &again {
            let sets = std::mem::take(&mut entries[later].sets);
            entries[later].removed = true;
            merge(&mut entries[first].sets, sets);
        }
        let len = entries.len() - again.len();
        Owners { names, entries, index, len }
    }
}

fn slots_for(n: usize) -> usize {
    n.saturating_mul(2).next_power_of_two().max(MIN_SLOTS)
}

/// The same names with the same RRsets, whatever the order they came in.
impl PartialEq for Owners {
    fn eq(&self, o: &Owners) -> bool {
        self.len == o.len && self.iter().all(|(n, s)| o.get(n) == Some(s))
    }
}

impl Eq for Owners {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sets::test_set as set;
    use crate::zone::RRset;
    use std::collections::HashMap;

    /// Inserts and removals in a pseudo-random order checked against the standard map, with
    /// a small index (many collisions, growth, removal inside runs).
    #[test]
    fn agrees_with_a_hash_map_through_inserts_removals_and_growth() {
        let mut m = Owners::with_capacity(2);
        let mut reference: HashMap<Vec<u8>, Vec<RRset>> = HashMap::new();
        let mut x = 12345u64;
        for step in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let name = format!("n{}", x % 700).into_bytes();
            if x.is_multiple_of(3) {
                assert_eq!(m.remove(&name), reference.remove(&name).is_some(), "step {step}");
            } else {
                m.get_or_insert(&name).push(set((x % 50) as u16));
                reference.entry(name.clone()).or_default().push(set((x % 50) as u16));
            }
            assert_eq!(m.len(), reference.len());
        }
        for (n, s) in &reference {
            assert_eq!(m.get(n).map(Sets::as_slice), Some(&s[..]));
            assert_eq!(m.get_key_value(n).map(|(k, _)| k), Some(&n[..]));
        }
        assert_eq!(m.iter().count(), reference.len());
        assert!(!m.contains_key(b"absent"));
        let copy = m.clone();
        m.retain(|n, _| n.ends_with(b"7"));
        assert!(m.keys().all(|n| n.ends_with(b"7")));
        assert_eq!(m.len(), reference.keys().filter(|n| n.ends_with(b"7")).count());
        assert_ne!(m, copy);
    }

    /// Runs of names appended in a pseudo-random order (names coming back later, and in a
    /// row), then indexed: every name once, its runs merged in the order they came.
    #[test]
    fn appended_runs_index_as_a_hash_map_would_hold_them() {
        let mut a = Appended::with_capacity(0);
        let mut reference: HashMap<Vec<u8>, Vec<RRset>> = HashMap::new();
        let mut x = 777u64;
        for _ in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Often the previous name again: a run.
            let name = format!("n{}", if x.is_multiple_of(4) { 1 } else { x % 900 }).into_bytes();
            a.run(&name).push(set((x % 50) as u16));
            reference.entry(name).or_default().push(set((x % 50) as u16));
        }
        let mut merges = 0;
        let m = a.into_owners(|first, later| {
            merges += 1;
            later.into_iter().for_each(|s| first.push(s))
        });
        assert!(merges > 1000, "names came back: {merges} merges");
        assert_eq!(m.len(), reference.len());
        assert_eq!(m.iter().count(), reference.len());
        for (n, s) in &reference {
            assert_eq!(m.get(n).map(Sets::as_slice), Some(&s[..]), "{}", String::from_utf8_lossy(n));
        }
        // It goes on as any map: a new name is found, a removed one is not.
        let mut m = m;
        m.get_or_insert(b"new").push(set(1));
        assert!(m.contains_key(b"new") && m.remove(b"n1") && !m.contains_key(b"n1"));
        assert_eq!(m.len(), reference.len());
    }

    #[test]
    fn equal_whatever_the_order() {
        let (mut a, mut b) = (Owners::default(), Owners::with_capacity(100));
        for n in [&b"x"[..], b"y", b"z"] {
            a.get_or_insert(n).push(set(1));
        }
        for n in [&b"z"[..], b"x", b"y"] {
            b.get_or_insert(n).push(set(1));
        }
        assert_eq!(a, b);
        b.get_mut(b"y").unwrap().push(set(2));
        assert_ne!(a, b);
    }
}
