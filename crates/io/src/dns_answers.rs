//! The XDP filter's DNS answer maps (`bpf/dns_answer.h`): the tables of prepared answers the
//! program answers from with XDP_TX, in two generations so a new table is installed whole
//! and switched to at once, never seen half written.

use aya::maps::{Array, IterableMap, MapData, PerCpuArray};
use aya::Ebpf;
use std::os::fd::{AsFd, AsRawFd};

/// Wire bytes of a question name the key holds (longer names go to the engine).
pub const NAME_MAX: usize = 64;
/// Names up to this long are kept in an index of their own, keyed by the key's last bytes.
const SHORT_MAX: usize = 32;
/// Slots of the index a name may sit past the one its hash gives (`DNS_PROBES`).
const PROBES: usize = 16;
/// Bytes of a node with its name (`DNS_SLOT_SIZE`): whole cache lines.
const SLOT_SIZE: usize = 384;
/// A node id's bit saying it is in the long names' array (`DNS_LONG_NODE`).
const LONG_NODE: u32 = 0x8000_0000;
/// Body bytes of a small answer (most are).
const BODY_SMALL: usize = 104;
/// Body bytes an answer may have.
pub const BODY_MAX: usize = 488;
/// Ids of large answers have this bit.
const LARGE_ID: u32 = 0x8000_0000;
/// Name pointers an answer may have moved by the question's length.
pub const PATCHES: usize = 4;
/// An answer id that means "the engine answers this one".
pub const PASS: u32 = u32::MAX;
/// `id_do` meaning the answer with DO is the same as without.
pub const SAME: u32 = u32::MAX - 1;

/// Types a name's record lists apart (its own, and a wildcard's below it).
pub const TYPES: usize = 6;
const SELF_CUT: u8 = 1;
const WILD_CUT: u8 = 2;
const INLINE: u8 = 4;

/// A name as the index keys it (`struct dns_key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    name: [u8; NAME_MAX],
}

impl Key {
    /// The key of `name` (wire form, at most [`NAME_MAX`] bytes): lower-cased and
    /// right-aligned as the program builds it. None for a longer name.
    pub fn new(name: &[u8]) -> Option<Key> {
        if name.is_empty() || name.len() > NAME_MAX {
            return None;
        }
        let mut k = Key { name: [0; NAME_MAX] };
        k.name[NAME_MAX - name.len()..].copy_from_slice(name);
        k.name.make_ascii_lowercase();
        Some(k)
    }

    /// A name of at most `SHORT_MAX` bytes (its key's front is zeros).
    fn is_short(&self) -> bool {
        self.name[..NAME_MAX - SHORT_MAX].iter().all(|&b| b == 0)
    }

    /// The bytes the index holds: the last `SHORT_MAX` for a short name.
    fn stored(&self) -> &[u8] {
        if self.is_short() {
            &self.name[NAME_MAX - SHORT_MAX..]
        } else {
            &self.name
        }
    }

    /// The program's hash of the key (`dns_hash`): over its stored bytes as little-endian
    /// words. Its low half places the name in the index, its high half is the slot's tag.
    fn hash(&self, seed: u64) -> u64 {
        let mut h = seed;
        for w in self.stored().chunks_exact(8) {
            h ^= u64::from_le_bytes(w.try_into().expect("8 bytes"));
            h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            h ^= h >> 32;
        }
        h
    }
}

/// Which answer: an id (a position in [`Table::answers`]), [`PASS`] or, with DO, [`SAME`].
pub type Pick = (u32, u32);

/// Must match `struct dns_pick`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PickC {
    qtype: u16,
    pad: u16,
    id: u32,
    id_do: u32,
}

/// Must match `struct dns_node`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NodeC {
    pad: u8,
    nself: u8,
    nwild: u8,
    flags: u8,
    own0: PickC,
    first: Small,
    own: [PickC; TYPES - 1],
    other: u32,
    other_do: u32,
    below: u32,
    below_do: u32,
    wild: [PickC; TYPES],
}

const NODE_SIZE: usize = 4 + 12 + 128 + 60 + 16 + 72;
const _: () = assert!(std::mem::size_of::<NodeC>() == NODE_SIZE);

/// An index slot (`struct dns_slot`): a tag of the name's hash (0: unused) and its node.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct IndexSlot {
    tag: u32,
    node: u32,
}

// SAFETY: two u32, any bit pattern.
unsafe impl aya::Pod for IndexSlot {}

/// A node with its name: the stored key, the node, padding to `SLOT_SIZE` (`struct
/// dns_short_slot` with `K` = `SHORT_MAX`, `struct dns_long_slot` with `NAME_MAX`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Slot<const K: usize, const P: usize> {
    name: [u8; K],
    node: NodeC,
    pad: [u8; P],
}

type ShortSlot = Slot<SHORT_MAX, { SLOT_SIZE - SHORT_MAX - NODE_SIZE }>;
type LongSlot = Slot<NAME_MAX, { SLOT_SIZE - NAME_MAX - NODE_SIZE }>;
const _: () = assert!(std::mem::size_of::<ShortSlot>() == SLOT_SIZE);
const _: () = assert!(std::mem::size_of::<LongSlot>() == SLOT_SIZE);

// SAFETY: u32, u16 and u8 fields laid out without padding (the sizes are asserted above), any
// bit pattern.
unsafe impl<const K: usize, const P: usize> aya::Pod for Slot<K, P> {}

impl<const K: usize, const P: usize> Slot<K, P> {
    fn new(key: &Key, node: NodeC) -> Self {
        Slot { name: key.stored().try_into().expect("a key of this index"), node, pad: [0; P] }
    }
}

impl NodeC {
    fn empty() -> NodeC {
        NodeC {
            pad: 0,
            nself: 0,
            nwild: 0,
            flags: 0,
            own0: PickC::default(),
            first: Small { head: Head::default(), body: [0; BODY_SMALL] },
            own: [PickC::default(); TYPES - 1],
            other: PASS,
            other_do: PASS,
            below: PASS,
            below_do: PASS,
            wild: [PickC::default(); TYPES],
        }
    }
}

/// Places entries (by their hash) in `slots` slots by Robin Hood linear probing: each
/// within `PROBES` of its home, in the run of used slots that starts there. The slot of
/// each entry (an index into `homes`), or None when one cannot be placed.
fn place(homes: &[u32], slots: usize) -> Option<Vec<u32>> {
    const EMPTY: u32 = u32::MAX;
    let mask = slots - 1;
    let mut table = vec![EMPTY; slots];
    for e in 0..homes.len() as u32 {
        let (mut cur, mut dist) = (e, 0usize);
        let mut at = homes[cur as usize] as usize & mask;
        loop {
            if dist >= PROBES {
                return None;
            }
            let held = table[at];
            if held == EMPTY {
                table[at] = cur;
                break;
            }
            let theirs = at.wrapping_sub(homes[held as usize] as usize) & mask;
            if theirs < dist {
                table[at] = cur;
                cur = held;
                dist = theirs;
            }
            at = (at + 1) & mask;
            dist += 1;
        }
    }
    Some(table)
}

/// What a name answers: its own types apart and every other type; for names below it that
/// do not exist, a wildcard's types apart and every other.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    /// The name's own types with their answers.
    pub own: Vec<(u16, Pick)>,
    /// Every other type.
    pub other: Pick,
    /// Below it, a wildcard's types with their answers.
    pub wild: Vec<(u16, Pick)>,
    /// Below it, every other type.
    pub below: Pick,
}

/// The fields before an answer's body; must match `DNS_ANSWER_HEAD`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Head {
    len: u16,
    flags: u16,
    counts: [u16; 3],
    sum: u16,
    base_len: u16,
    npatch: u8,
    pad: u8,
    patch: [u16; PATCHES],
}

/// A small answer; must match `struct dns_answer`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Small {
    head: Head,
    body: [u8; BODY_SMALL],
}

/// A large answer; must match `struct dns_answer_large`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Large {
    head: Head,
    body: [u8; BODY_MAX],
}

// SAFETY: u16 fields and bytes laid out without padding (24 + 104 bytes), any bit pattern.
unsafe impl aya::Pod for Small {}
// SAFETY: as Small, with 488 body bytes.
unsafe impl aya::Pod for Large {}

/// A prepared answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    head: Head,
    body: Vec<u8>,
}

impl Answer {
    /// The answer whose header has `flags` (without RD, CD) and `counts` (without the OPT
    /// record), `body` behind a question name of `base_len` bytes, with name pointers at
    /// `patches` (body offsets) to move by the length of the question asked. None if the
    /// body or the patches do not fit.
    pub fn new(flags: u16, counts: [u16; 3], body: &[u8], base_len: usize, patches: &[u16]) -> Option<Answer> {
        if body.len() > BODY_MAX || patches.len() > PATCHES || base_len > NAME_MAX {
            return None;
        }
        let mut head = Head {
            len: body.len() as u16,
            flags,
            counts,
            sum: wire::checksum::fold(wire::checksum::add(0, body)),
            base_len: base_len as u16,
            npatch: patches.len() as u8,
            pad: 0,
            patch: [0; PATCHES],
        };
        head.patch[..patches.len()].copy_from_slice(patches);
        Some(Answer { head, body: body.to_vec() })
    }

    fn large(&self) -> bool {
        self.body.len() > BODY_SMALL
    }
}

/// A complete table: the names and the answers they point at.
#[derive(Debug, Default, Clone)]
pub struct Table {
    /// Names and what they answer; ids are positions in `answers` (or PASS, SAME).
    pub index: Vec<(Key, Node)>,
    /// Answers, by id (position).
    pub answers: Vec<Answer>,
}

/// How many entries each of the program's DNS tables may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Slots of the index (a power of two).
    pub slots: u32,
    /// Nodes of short names.
    pub short_names: u32,
    /// Nodes of long names.
    pub long_names: u32,
    /// Small answers.
    pub small: u32,
    /// Large answers.
    pub large: u32,
}

impl Default for Capacity {
    /// Room for a small zone (the tables of a filter that answers no DNS stay unused).
    fn default() -> Capacity {
        Capacity { slots: 2048, short_names: 1024, long_names: 256, small: 1024, large: 256 }
    }
}

impl Table {
    /// Room for this table and for reloads that grow it up to twice its size.
    pub fn capacity(&self) -> Capacity {
        let large = self.answers.iter().filter(|a| a.large()).count();
        let room = |n: usize| (2 * n).clamp(256, 1 << 24) as u32;
        // The index is open-addressed: at most half full (once grown to twice its names),
        // its runs of used slots stay short.
        let short = self.index.iter().filter(|(k, _)| k.is_short()).count();
        let slots = (4 * self.index.len()).next_power_of_two().clamp(256, 1 << 26) as u32;
        Capacity {
            slots,
            short_names: room(short),
            long_names: room(self.index.len() - short),
            small: room(self.answers.len() - large),
            large: room(large),
        }
    }
}

/// Must match `struct dns_cfg`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Cfg {
    gen: u32,
    on: u32,
    rrl_rate: u32,
    v4_mask: [u8; 4],
    v6_mask: [u8; 16],
    seed: u64,
    mask: u32,
    pad: u32,
}

// SAFETY: u32 and u64 fields and byte arrays, no padding (16 + 16 + 8 + 8 bytes), any bit
// pattern.
unsafe impl aya::Pod for Cfg {}
const _: () = assert!(std::mem::size_of::<Cfg>() == 48);

/// Why queries were passed to the engine, as the program counts them (its `enum dns_why`).
pub const REASONS: [&str; 12] =
    ["answered", "off", "not_query", "edns", "name", "type", "miss", "not_fixed", "too_big", "rate", "layout", "tail"];

/// The program's DNS maps, taken from the loaded filter.
pub struct DnsMaps {
    index: [Mapped<IndexSlot>; 2],
    short: [Mapped<ShortSlot>; 2],
    long: [Mapped<LongSlot>; 2],
    small: [Mapped<Small>; 2],
    large: [Mapped<Large>; 2],
    cfg: Array<MapData, Cfg>,
    stats: PerCpuArray<MapData, u64>,
    /// What each generation holds now (to clear it before it is filled again): the short
    /// and the long index's used slots, small and large answers.
    held: [Held; 2],
    current: Cfg,
}

/// An array map's values, mapped into this process (the array is `BPF_F_MMAPABLE`): a table
/// of a million names is written with stores, not a system call per entry.
struct Mapped<V: aya::Pod> {
    at: *mut V,
    len: usize,
    bytes: usize,
    /// The map (kept open while mapped).
    _map: Array<MapData, V>,
}

impl<V: aya::Pod> Mapped<V> {
    fn take(ebpf: &mut Ebpf, name: &str) -> Result<Mapped<V>, String> {
        let map: Array<MapData, V> = take(ebpf, name)?;
        let len = map.len() as usize;
        // The kernel lays the values out at their size rounded up to 8 bytes.
        assert_eq!(std::mem::size_of::<V>() % 8, 0, "{name}: values of a mapped array are 8-byte multiples");
        let bytes = (len * std::mem::size_of::<V>()).next_multiple_of(4096);
        let fd = map.map().fd().as_fd().as_raw_fd();
        // SAFETY: a shared mapping of the map's own value area (the kernel checks the length
        // and that the map is mappable); nothing else in this process maps it.
        let at = unsafe {
            libc::mmap(std::ptr::null_mut(), bytes, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        if at == libc::MAP_FAILED {
            return Err(format!("mapping the {name} map: {}", std::io::Error::last_os_error()));
        }
        Ok(Mapped { at: at.cast(), len, bytes, _map: map })
    }

    fn set(&mut self, i: u32, v: V) -> Result<(), String> {
        let i = i as usize;
        if i >= self.len {
            return Err(format!("entry {i} is past the {} made at start", self.len));
        }
        // SAFETY: within the mapping (checked above), aligned (the area starts on a page, the
        // values are 8-byte multiples); the program may read the entry meanwhile, as it may
        // while a system call writes it — each generation is written while it is not in use.
        unsafe { self.at.add(i).write_volatile(v) };
        Ok(())
    }
}

impl<V: aya::Pod> Drop for Mapped<V> {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `take`, not used after this.
        unsafe { libc::munmap(self.at.cast(), self.bytes) };
    }
}

// SAFETY: the mapping is owned by its value; it is plain shared memory.
unsafe impl<V: aya::Pod> Send for Mapped<V> {}

#[derive(Default)]
struct Held {
    slots: Vec<u32>,
    small: u32,
    large: u32,
}

fn take<T: TryFrom<aya::maps::Map>>(ebpf: &mut Ebpf, name: &str) -> Result<T, String>
where
    T::Error: std::fmt::Display,
{
    let m = ebpf.take_map(name).ok_or_else(|| format!("the filter has no {name} map"))?;
    T::try_from(m).map_err(|e| format!("{name} map: {e}"))
}

impl DnsMaps {
    pub(crate) fn take(ebpf: &mut Ebpf) -> Result<DnsMaps, String> {
        let index = [Mapped::take(ebpf, "dns_index0")?, Mapped::take(ebpf, "dns_index1")?];
        // The hash's seed, drawn for this process: names that share their slots cannot be
        // made ahead.
        let seed = {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new().build_hasher().finish()
        };
        let current = Cfg { seed, mask: index[0].len as u32 - 1, ..Cfg::default() };
        Ok(DnsMaps {
            index,
            short: [Mapped::take(ebpf, "dns_short0")?, Mapped::take(ebpf, "dns_short1")?],
            long: [Mapped::take(ebpf, "dns_long0")?, Mapped::take(ebpf, "dns_long1")?],
            small: [Mapped::take(ebpf, "dns_answers0")?, Mapped::take(ebpf, "dns_answers1")?],
            large: [Mapped::take(ebpf, "dns_large0")?, Mapped::take(ebpf, "dns_large1")?],
            cfg: take(ebpf, "dns_cfg")?,
            stats: take(ebpf, "dns_stats")?,
            held: [Held::default(), Held::default()],
            current,
        })
    }

    /// Answers only `rate` responses per second per client prefix (`v4_prefix`, `v6_prefix`
    /// leading bits) here; the rest go to the engine, whose limiter decides. 0: no limit.
    pub fn set_rate(&mut self, rate: u32, v4_prefix: u8, v6_prefix: u8) -> Result<(), String> {
        let mask = |bits: u8, out: &mut [u8]| {
            for (i, b) in out.iter_mut().enumerate() {
                let have = (bits as usize).saturating_sub(i * 8).min(8);
                *b = if have == 0 { 0 } else { 0xffu8 << (8 - have) };
            }
        };
        self.current.rrl_rate = rate;
        mask(v4_prefix, &mut self.current.v4_mask);
        mask(v6_prefix, &mut self.current.v6_mask);
        self.write_cfg()
    }

    fn write_cfg(&mut self) -> Result<(), String> {
        self.cfg.set(0, self.current, 0).map_err(|e| format!("writing the DNS answer settings: {e}"))
    }

    /// Installs `t` in the generation not in use, then switches queries to it. On an error
    /// answering here is turned off (every query goes to the engine) and the error returned.
    pub fn install(&mut self, t: &Table) -> Result<(), String> {
        let next = (self.current.gen ^ 1) as usize;
        let r = self.fill(next, t);
        match r {
            Ok(()) => {
                self.current.gen = next as u32;
                self.current.on = 1;
            }
            Err(_) => self.current.on = 0,
        }
        self.write_cfg()?;
        r
    }

    /// Stops answering here.
    pub fn turn_off(&mut self) -> Result<(), String> {
        self.current.on = 0;
        self.write_cfg()
    }

    fn fill(&mut self, g: usize, t: &Table) -> Result<(), String> {
        let old = std::mem::take(&mut self.held[g]);
        for &i in &old.slots {
            self.index[g].set(i, IndexSlot::default())?;
        }
        // Each answer goes to the array of its size; the names give that array's index.
        let mut ids = Vec::with_capacity(t.answers.len());
        let stored = |e| format!("storing a DNS answer (more than the room made at start): {e}");
        for a in &t.answers {
            let held = &mut self.held[g];
            if a.large() {
                let mut v = Large { head: a.head, body: [0; BODY_MAX] };
                v.body[..a.body.len()].copy_from_slice(&a.body);
                self.large[g].set(held.large, v).map_err(stored)?;
                ids.push(LARGE_ID | held.large);
                held.large += 1;
            } else {
                let mut v = Small { head: a.head, body: [0; BODY_SMALL] };
                v.body[..a.body.len()].copy_from_slice(&a.body);
                self.small[g].set(held.small, v).map_err(stored)?;
                ids.push(held.small);
                held.small += 1;
            }
        }
        let id_of = |i: u32| if i == PASS || i == SAME { i } else { ids[i as usize] };
        let pick = |(t, (id, id_do)): &(u16, Pick)| PickC { qtype: *t, pad: 0, id: id_of(*id), id_do: id_of(*id_do) };
        let node = |n: &Node| {
            let mut c = NodeC {
                nself: n.own.len().min(TYPES) as u8,
                nwild: n.wild.len().min(TYPES) as u8,
                flags: if n.own.len() > TYPES { SELF_CUT } else { 0 } | if n.wild.len() > TYPES { WILD_CUT } else { 0 },
                other: id_of(n.other.0),
                other_do: id_of(n.other.1),
                below: id_of(n.below.0),
                below_do: id_of(n.below.1),
                ..NodeC::empty()
            };
            // The first type's answer inline, when it is a small one.
            if let Some(&(_, (i, _))) = n.own.first().filter(|(_, (i, _))| *i != PASS && *i != SAME) {
                let a = &t.answers[i as usize];
                if !a.large() {
                    c.flags |= INLINE;
                    c.first.head = a.head;
                    c.first.body[..a.body.len()].copy_from_slice(&a.body);
                }
            }
            if let Some(p) = n.own.first() {
                c.own0 = pick(p);
            }
            for (slot, p) in c.own.iter_mut().zip(n.own.iter().skip(1)) {
                *slot = pick(p);
            }
            for (slot, p) in c.wild.iter_mut().zip(&n.wild) {
                *slot = pick(p);
            }
            c
        };
        // Nodes in two dense arrays (short and long names), the index pointing at them.
        let seed = self.current.seed;
        let hashes: Vec<u64> = t.index.iter().map(|(k, _)| k.hash(seed)).collect();
        let homes: Vec<u32> = hashes.iter().map(|&h| h as u32).collect();
        let slots = self.index[g].len;
        let placed = place(&homes, slots)
            .ok_or_else(|| format!("{} DNS names do not fit the index made at start ({slots} slots)", t.index.len()))?;
        let stored = |e| format!("storing a DNS name: {e}");
        let mut ids = Vec::with_capacity(t.index.len());
        let (mut shorts, mut longs) = (0u32, 0u32);
        for (k, n) in &t.index {
            if k.is_short() {
                self.short[g].set(shorts, ShortSlot::new(k, node(n))).map_err(stored)?;
                ids.push(shorts);
                shorts += 1;
            } else {
                self.long[g].set(longs, LongSlot::new(k, node(n))).map_err(stored)?;
                ids.push(LONG_NODE | longs);
                longs += 1;
            }
        }
        for (at, &e) in placed.iter().enumerate().filter(|(_, &e)| e != u32::MAX) {
            let slot = IndexSlot { tag: (hashes[e as usize] >> 32) as u32 | 1, node: ids[e as usize] };
            self.index[g].set(at as u32, slot).map_err(stored)?;
            self.held[g].slots.push(at as u32);
        }
        Ok(())
    }

    /// The program's counters, summed over CPUs, in the order of [`REASONS`].
    pub fn counts(&self) -> [u64; REASONS.len()] {
        let mut out = [0; REASONS.len()];
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.stats.get(&(i as u32), 0).map(|v| v.iter().sum::<u64>()).unwrap_or(0);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the program does: the slots from `home` on, up to an unused one or `PROBES`.
    fn probe(table: &[u32], homes: &[u32], home: u32, want: u32) -> Option<u32> {
        let mask = table.len() - 1;
        for i in 0..PROBES {
            let e = table[(home as usize + i) & mask];
            if e == u32::MAX {
                return None;
            }
            if e == want && homes[e as usize] == home {
                return Some(e);
            }
        }
        None
    }

    #[test]
    fn every_placed_name_is_found_by_the_programs_probe() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for (n, slots) in [(1usize, 256usize), (1000, 4096), (30_000, 65_536), (65_536, 131_072)] {
            let homes: Vec<u32> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u32
                })
                .collect();
            let table = place(&homes, slots).expect("fits at this load");
            assert_eq!(table.iter().filter(|&&e| e != u32::MAX).count(), n);
            for (e, &h) in homes.iter().enumerate() {
                assert_eq!(probe(&table, &homes, h, e as u32), Some(e as u32), "entry {e} of {n}");
            }
        }
    }

    #[test]
    fn a_full_index_is_refused_not_half_filled() {
        // Every name on one home: no more than PROBES fit.
        assert!(place(&[7; PROBES], 1024).is_some());
        assert!(place(&[7; PROBES + 1], 1024).is_none());
        assert!(place(&[0; 300], 256).is_none());
    }

    #[test]
    fn short_names_are_stored_without_their_zero_front() {
        let short = Key::new(b"\x03www\x07example\x03com\x00").unwrap();
        assert!(short.is_short());
        assert_eq!(short.stored().len(), SHORT_MAX);
        let long = Key::new(b"\x24a-long-owner-name-for-the-long-index\x07example\x03com\x00").unwrap();
        assert!(!long.is_short());
        assert_eq!(long.stored().len(), NAME_MAX);
        // Letter case does not change the key, nor its hash.
        let upper = Key::new(b"\x03WWW\x07Example\x03COM\x00").unwrap();
        assert_eq!(upper, short);
        assert_eq!(upper.hash(42), short.hash(42));
        assert_ne!(short.hash(42), short.hash(43));
    }
}
