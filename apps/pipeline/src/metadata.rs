//! Per-packet metadata placed at configuration time, as BESS does it (Han's thesis §5.3).
//!
//! Modules declare the attributes they use: a name, a size and whether they read, write or
//! update it. For each attribute, a *scope component* is the set of modules a value of it lives
//! through: from a writer, along the graph, to the readers it reaches, stopping where another
//! module writes it anew (that starts a component of its own). Components whose module sets
//! meet need disjoint bytes; components that never meet may share them. Offsets are assigned by
//! greedy colouring of that overlap graph, where a colour is a byte range: largest components
//! first, each at the lowest offset clear of every overlapping one already placed. A value
//! nobody reads takes no space. A read that no upstream writer reaches is reported: that module
//! would read whatever an unrelated attribute left in those bytes.

use std::collections::{BTreeMap, VecDeque};

/// Bytes of metadata per packet.
pub const META_SIZE: usize = 128;
/// Largest attribute.
pub const MAX_ATTR_SIZE: usize = 32;

/// How a module uses an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Reads a value written upstream.
    Read,
    /// Writes a new value (whatever was there before is not its concern).
    Write,
    /// Reads the value written upstream and writes it back changed.
    Update,
}

/// One attribute a module declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    /// Its name (modules agree on names, not on offsets).
    pub name: String,
    /// Its size in bytes (1 to [`MAX_ATTR_SIZE`]).
    pub size: usize,
    /// How the module uses it.
    pub mode: Mode,
}

impl Attr {
    /// An attribute declaration.
    pub fn new(name: &str, size: usize, mode: Mode) -> Attr {
        Attr { name: name.to_string(), size, mode }
    }
}

/// A read that no writer reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unwritten {
    /// The reading module.
    pub module: usize,
    /// The attribute.
    pub attr: String,
}

/// Where each module finds its attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Per module, per declared attribute (in declaration order): the byte offset in the
    /// packet's metadata, or None where the value is never read (writes there go nowhere).
    pub offsets: Vec<Vec<Option<usize>>>,
    /// Bytes used.
    pub used: usize,
    /// Reads no writer reaches.
    pub unwritten: Vec<Unwritten>,
}

/// Why no layout exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutError {
    /// An attribute's size is 0 or above [`MAX_ATTR_SIZE`].
    BadSize {
        /// The module.
        module: usize,
        /// The attribute.
        attr: String,
    },
    /// Two modules disagree on an attribute's size.
    SizeMismatch {
        /// The attribute.
        attr: String,
    },
    /// The live values do not fit in [`META_SIZE`] bytes.
    TooBig {
        /// Bytes they would need.
        need: usize,
    },
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::BadSize { attr, .. } => {
                write!(f, "metadata attribute '{attr}' must be 1 to {MAX_ATTR_SIZE} bytes")
            }
            LayoutError::SizeMismatch { attr } => {
                write!(f, "modules declare metadata attribute '{attr}' with different sizes")
            }
            LayoutError::TooBig { need } => {
                write!(f, "the pipeline's live metadata needs {need} bytes, more than the {META_SIZE} a packet has")
            }
        }
    }
}

/// One scope component.
struct Component {
    size: usize,
    /// Modules it lives through (sorted, deduplicated).
    modules: Vec<usize>,
    /// (module, declaration index) of every use it serves.
    uses: Vec<(usize, usize)>,
}

/// Places the attributes of `attrs[m]` (module m's declarations) for the graph whose edges
/// are `edges` (from module, to module).
pub fn layout(attrs: &[Vec<Attr>], edges: &[(usize, usize)]) -> Result<Layout, LayoutError> {
    let n = attrs.len();
    let mut sizes: BTreeMap<&str, usize> = BTreeMap::new();
    for (m, list) in attrs.iter().enumerate() {
        for a in list {
            if a.size == 0 || a.size > MAX_ATTR_SIZE {
                return Err(LayoutError::BadSize { module: m, attr: a.name.clone() });
            }
            if *sizes.entry(&a.name).or_insert(a.size) != a.size {
                return Err(LayoutError::SizeMismatch { attr: a.name.clone() });
            }
        }
    }
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut prev: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in edges {
        if a < n && b < n {
            next[a].push(b);
            prev[b].push(a);
        }
    }
    let uses = |m: usize, name: &str| attrs[m].iter().position(|a| a.name == name).map(|i| (i, attrs[m][i].mode));
    let mut comps: Vec<Component> = Vec::new();
    let mut reached: Vec<Vec<bool>> = attrs.iter().map(|l| vec![false; l.len()]).collect();
    for (&name, &size) in &sizes {
        let mode = |m: usize| uses(m, name).map(|u| u.1);
        // Where a value written at `w` flows: on through readers, updaters and modules that do
        // not know the attribute, until a module writes it anew.
        let flow = |w: usize| {
            let mut seen = vec![false; n];
            seen[w] = true;
            let mut q = VecDeque::from([w]);
            while let Some(m) = q.pop_front() {
                for &t in &next[m] {
                    if !seen[t] {
                        seen[t] = true;
                        if mode(t) != Some(Mode::Write) {
                            q.push_back(t);
                        }
                    }
                }
            }
            seen
        };
        // Roots: the writers, and updaters no writer reaches (their reads are reported, but
        // what they write flows on).
        let writers: Vec<usize> = (0..n).filter(|&m| mode(m) == Some(Mode::Write)).collect();
        let mut from_writers = vec![false; n];
        for &w in &writers {
            for (m, s) in flow(w).into_iter().enumerate() {
                from_writers[m] |= s && m != w;
            }
        }
        let roots: Vec<usize> = (0..n)
            .filter(|&m| mode(m) == Some(Mode::Write) || (mode(m) == Some(Mode::Update) && !from_writers[m]))
            .collect();
        let mut by_reader: BTreeMap<usize, usize> = BTreeMap::new();
        let mut mine: Vec<Component> = Vec::new();
        for &w in &roots {
            let seen = flow(w);
            let readers: Vec<usize> =
                (0..n).filter(|&m| m != w && seen[m] && matches!(mode(m), Some(Mode::Read | Mode::Update))).collect();
            if readers.is_empty() {
                continue;
            }
            // Backward from the readers, within the flow: the modules the value lives through.
            let mut live = vec![false; n];
            let mut q: VecDeque<usize> = readers.iter().copied().collect();
            for &r in &readers {
                live[r] = true;
            }
            while let Some(m) = q.pop_front() {
                if m == w {
                    continue;
                }
                for &p in &prev[m] {
                    // The value flows through the root and modules that do not rewrite it.
                    let through = p == w || (seen[p] && mode(p) != Some(Mode::Write));
                    if through && !live[p] {
                        live[p] = true;
                        q.push_back(p);
                    }
                }
            }
            live[w] = true;
            for &r in &readers {
                if let Some((d, _)) = uses(r, name) {
                    reached[r][d] = true;
                }
            }
            let mut us: Vec<(usize, usize)> = readers.iter().filter_map(|&r| uses(r, name).map(|u| (r, u.0))).collect();
            us.extend(uses(w, name).map(|u| (w, u.0)));
            let c = Component { size, modules: (0..n).filter(|&m| live[m]).collect(), uses: us };
            // Values that meet at a reader must be in the same place: one component.
            let idx = match readers.iter().find_map(|r| by_reader.get(r).copied()) {
                Some(i) => {
                    let old = &mut mine[i];
                    old.modules.extend(c.modules);
                    old.modules.sort_unstable();
                    old.modules.dedup();
                    old.uses.extend(c.uses);
                    old.uses.sort_unstable();
                    old.uses.dedup();
                    i
                }
                None => {
                    mine.push(c);
                    mine.len() - 1
                }
            };
            for r in readers {
                by_reader.insert(r, idx);
            }
        }
        comps.extend(mine);
    }
    let mut unwritten = Vec::new();
    for (m, list) in attrs.iter().enumerate() {
        for (d, a) in list.iter().enumerate() {
            if matches!(a.mode, Mode::Read | Mode::Update) && !reached[m][d] {
                unwritten.push(Unwritten { module: m, attr: a.name.clone() });
            }
        }
    }
    // Greedy colouring with byte ranges, largest first.
    let mut order: Vec<usize> = (0..comps.len()).collect();
    order.sort_by(|&a, &b| {
        comps[b].size.cmp(&comps[a].size).then(comps[b].modules.len().cmp(&comps[a].modules.len())).then(a.cmp(&b))
    });
    let mut placed: Vec<Option<usize>> = vec![None; comps.len()];
    let mut used = 0;
    for &i in &order {
        let size = comps[i].size;
        let mut busy: Vec<(usize, usize)> = (0..comps.len())
            .filter(|&j| j != i && placed[j].is_some() && meets(&comps[i].modules, &comps[j].modules))
            .map(|j| (placed[j].unwrap_or(0), placed[j].unwrap_or(0) + comps[j].size))
            .collect();
        busy.sort_unstable();
        let mut off = 0;
        for (s, e) in busy {
            if off + size <= s {
                break;
            }
            off = off.max(e);
        }
        placed[i] = Some(off);
        used = used.max(off + size);
    }
    if used > META_SIZE {
        return Err(LayoutError::TooBig { need: used });
    }
    let mut offsets: Vec<Vec<Option<usize>>> = attrs.iter().map(|l| vec![None; l.len()]).collect();
    for (i, c) in comps.iter().enumerate() {
        for &(m, d) in &c.uses {
            // Components that share a reader were merged, and an updater continues the
            // component it reads: every use has one place.
            if offsets[m][d].is_none() {
                offsets[m][d] = placed[i];
            }
        }
    }
    Ok(Layout { offsets, used, unwritten })
}

fn meets(a: &[usize], b: &[usize]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests;
