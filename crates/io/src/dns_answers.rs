//! The XDP filter's DNS answer maps (`bpf/dns_answer.h`): the tables of prepared answers the
//! program answers from with XDP_TX, in two generations so a new table is installed whole
//! and switched to at once, never seen half written.

use aya::maps::{Array, HashMap, MapData, PerCpuArray};
use aya::Ebpf;

/// Wire bytes of a question name the key holds (longer names go to the engine).
pub const NAME_MAX: usize = 64;
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

/// Key of the index maps (a name); must match `struct dns_key`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    name: [u8; NAME_MAX],
}

// SAFETY: bytes only.
unsafe impl aya::Pod for Key {}

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
    other: u32,
    other_do: u32,
    below: u32,
    below_do: u32,
    nself: u8,
    nwild: u8,
    flags: u8,
    pad: u8,
    own: [PickC; TYPES],
    first_id: u32,
    first: Small,
    wild: [PickC; TYPES],
}

// SAFETY: u32, u16 and u8 fields laid out without padding (20 + 72 + 4 + 128 + 72 bytes), any
// bit pattern.
unsafe impl aya::Pod for NodeC {}
const _: () = assert!(std::mem::size_of::<NodeC>() == 20 + 72 + 4 + 128 + 72);

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
    /// Keys of the index.
    pub keys: u32,
    /// Small answers.
    pub small: u32,
    /// Large answers.
    pub large: u32,
}

impl Default for Capacity {
    /// Room for a small zone (the tables of a filter that answers no DNS stay unused).
    fn default() -> Capacity {
        Capacity { keys: 1024, small: 1024, large: 256 }
    }
}

impl Table {
    /// Room for this table and for reloads that grow it up to twice its size.
    pub fn capacity(&self) -> Capacity {
        let large = self.answers.iter().filter(|a| a.large()).count();
        let room = |n: usize| (2 * n).clamp(256, 1 << 24) as u32;
        // The index is a hash table: twice its names keeps its buckets short.
        Capacity { keys: room(self.index.len()), small: room(self.answers.len() - large), large: room(large) }
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
}

// SAFETY: u32 fields and byte arrays, no padding (16 + 16 bytes), any bit pattern.
unsafe impl aya::Pod for Cfg {}

/// Why queries were passed to the engine, as the program counts them (its `enum dns_why`).
pub const REASONS: [&str; 12] =
    ["answered", "off", "not_query", "edns", "name", "type", "miss", "not_fixed", "too_big", "rate", "layout", "tail"];

/// The program's DNS maps, taken from the loaded filter.
pub struct DnsMaps {
    index: [HashMap<MapData, Key, NodeC>; 2],
    small: [Array<MapData, Small>; 2],
    large: [Array<MapData, Large>; 2],
    cfg: Array<MapData, Cfg>,
    stats: PerCpuArray<MapData, u64>,
    /// What each generation holds now (to clear it before it is filled again): keys, small
    /// and large answers.
    held: [(Vec<Key>, u32, u32); 2],
    current: Cfg,
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
        Ok(DnsMaps {
            index: [take(ebpf, "dns_index0")?, take(ebpf, "dns_index1")?],
            small: [take(ebpf, "dns_answers0")?, take(ebpf, "dns_answers1")?],
            large: [take(ebpf, "dns_large0")?, take(ebpf, "dns_large1")?],
            cfg: take(ebpf, "dns_cfg")?,
            stats: take(ebpf, "dns_stats")?,
            held: [(Vec::new(), 0, 0), (Vec::new(), 0, 0)],
            current: Cfg::default(),
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
        let (keys, _, _) = std::mem::take(&mut self.held[g]);
        for k in &keys {
            let _ = self.index[g].remove(k);
        }
        // Each answer goes to the array of its size; the names give that array's index.
        let mut ids = Vec::with_capacity(t.answers.len());
        let stored = |e| format!("storing a DNS answer (more than the room made at start): {e}");
        for a in &t.answers {
            let held = &mut self.held[g];
            if a.large() {
                let mut v = Large { head: a.head, body: [0; BODY_MAX] };
                v.body[..a.body.len()].copy_from_slice(&a.body);
                self.large[g].set(held.2, v, 0).map_err(stored)?;
                ids.push(LARGE_ID | held.2);
                held.2 += 1;
            } else {
                let mut v = Small { head: a.head, body: [0; BODY_SMALL] };
                v.body[..a.body.len()].copy_from_slice(&a.body);
                self.small[g].set(held.1, v, 0).map_err(stored)?;
                ids.push(held.1);
                held.1 += 1;
            }
        }
        let id_of = |i: u32| if i == PASS || i == SAME { i } else { ids[i as usize] };
        let pick = |(t, (id, id_do)): &(u16, Pick)| PickC { qtype: *t, pad: 0, id: id_of(*id), id_do: id_of(*id_do) };
        for (k, n) in &t.index {
            let mut c = NodeC {
                other: id_of(n.other.0),
                other_do: id_of(n.other.1),
                below: id_of(n.below.0),
                below_do: id_of(n.below.1),
                nself: n.own.len().min(TYPES) as u8,
                nwild: n.wild.len().min(TYPES) as u8,
                flags: if n.own.len() > TYPES { SELF_CUT } else { 0 } | if n.wild.len() > TYPES { WILD_CUT } else { 0 },
                pad: 0,
                own: [PickC::default(); TYPES],
                first_id: PASS,
                first: Small { head: Head::default(), body: [0; BODY_SMALL] },
                wild: [PickC::default(); TYPES],
            };
            // The first type's answer inline, when it is a small one.
            if let Some(&(_, (i, _))) = n.own.first().filter(|(_, (i, _))| *i != PASS && *i != SAME) {
                let a = &t.answers[i as usize];
                if !a.large() {
                    c.first_id = ids[i as usize];
                    c.first.head = a.head;
                    c.first.body[..a.body.len()].copy_from_slice(&a.body);
                }
            }
            for (slot, p) in c.own.iter_mut().zip(&n.own) {
                *slot = pick(p);
            }
            for (slot, p) in c.wild.iter_mut().zip(&n.wild) {
                *slot = pick(p);
            }
            self.index[g]
                .insert(k, c, 0)
                .map_err(|e| format!("storing a DNS name (more than the room made at start): {e}"))?;
            self.held[g].0.push(*k);
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
