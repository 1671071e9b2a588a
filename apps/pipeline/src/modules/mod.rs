//! The shipped modules and the registry that makes modules from a script's declarations.

use crate::metadata::{Attr, Mode, MAX_ATTR_SIZE};
use crate::module::{Ctx, Module, Out};
use crate::packet::{Batch, BATCH};
use crate::script::{Arg, Decl, Value};
use std::collections::BTreeMap;

mod delay;
mod dump;
mod flow;
mod headers;
mod ip;
mod l2;
pub mod lpm;
mod measure;
mod nat;
mod ports;
mod queue;
#[cfg(test)]
pub(crate) mod testing;
mod vxlan;
pub use delay::Delay;
pub use dump::Dump;
pub use flow::{Acl, HashLb, RateLimit};
pub use headers::{IpChecksum, Loss, UpdateTtl, VlanPop, VlanPush};
pub use ip::{IcmpTimeExceeded, IpLookup};
pub use l2::{L2Forward, MacRewrite};
pub use measure::{Measure, Timestamp};
pub use nat::Nat;
pub use ports::{PortInc, PortOut};
pub use queue::Queue;
pub use vxlan::{VxlanDecap, VxlanEncap};

/// Makes a module from its declaration's arguments, or says what is wrong with them.
pub type Maker = fn(&Args) -> Result<Box<dyn Module>, String>;

/// Module classes by name. [`Registry::default`] has the shipped ones; add your own with
/// [`Registry::add`].
pub struct Registry {
    makers: BTreeMap<String, Maker>,
}

impl Default for Registry {
    fn default() -> Self {
        let mut r = Registry { makers: BTreeMap::new() };
        r.add("Source", |a| Ok(Box::new(Source::new(a)?)));
        r.add("Sink", |_| Ok(Box::new(Sink)));
        r.add("Bypass", |_| Ok(Box::new(Bypass)));
        r.add("RoundRobin", |a| Ok(Box::new(RoundRobin { gates: a.gates()?, next: 0 })));
        r.add("Replicate", |a| Ok(Box::new(Replicate { gates: a.gates()? })));
        r.add("RandomSplit", |a| Ok(Box::new(RandomSplit::new(a)?)));
        r.add("SetMetadata", |a| Ok(Box::new(SetMetadata::new(a)?)));
        r.add("VLANPush", |a| Ok(Box::new(VlanPush::new(a)?)));
        r.add("VLANPop", |_| Ok(Box::new(VlanPop)));
        r.add("IPChecksum", |a| Ok(Box::new(IpChecksum::new(a)?)));
        r.add("UpdateTTL", |_| Ok(Box::new(UpdateTtl)));
        r.add("Loss", |a| Ok(Box::new(Loss::new(a)?)));
        r.add("PortInc", |a| Ok(Box::new(PortInc::new(a)?)));
        r.add("PortOut", |a| Ok(Box::new(PortOut::new(a)?)));
        r.add("L2Forward", |a| Ok(Box::new(L2Forward::new(a)?)));
        r.add("MACRewrite", |a| Ok(Box::new(MacRewrite::new(a)?)));
        r.add("IPLookup", |a| Ok(Box::new(IpLookup::new(a)?)));
        r.add("ICMPTimeExceeded", |a| Ok(Box::new(IcmpTimeExceeded::new(a)?)));
        r.add("Queue", |a| Ok(Box::new(Queue::new(a)?)));
        r.add("Delay", |a| Ok(Box::new(Delay::new(a)?)));
        r.add("Timestamp", |a| Ok(Box::new(Timestamp::new(a)?)));
        r.add("Measure", |a| Ok(Box::new(Measure::new(a)?)));
        r.add("HashLB", |a| Ok(Box::new(HashLb::new(a)?)));
        r.add("ACL", |a| Ok(Box::new(Acl::new(a)?)));
        r.add("RateLimit", |a| Ok(Box::new(RateLimit::new(a)?)));
        r.add("NAT", |a| Ok(Box::new(Nat::new(a)?)));
        r.add("VXLANEncap", |a| Ok(Box::new(VxlanEncap::new(a)?)));
        r.add("VXLANDecap", |a| Ok(Box::new(VxlanDecap::new(a)?)));
        r.add("Dump", |a| Ok(Box::new(Dump::new(a)?)));
        r
    }
}

impl Registry {
    /// Adds (or replaces) a class.
    pub fn add(&mut self, class: &str, make: Maker) {
        self.makers.insert(class.to_string(), make);
    }

    /// The classes known.
    pub fn classes(&self) -> impl Iterator<Item = &str> {
        self.makers.keys().map(String::as_str)
    }

    /// Makes the module `d` declares, in a pipeline whose ports are named `ports`.
    pub fn make(&self, d: &Decl, ports: &[String]) -> Result<Box<dyn Module>, String> {
        let make = self.makers.get(&d.class).ok_or_else(|| format!("no module class '{}'", d.class))?;
        let args = Args { args: &d.args, ports, used: std::cell::RefCell::new(vec![false; d.args.len()]) };
        let m = make(&args)?;
        args.all_used()?;
        Ok(m)
    }
}

/// A declaration's arguments, as a module reads them.
pub struct Args<'a> {
    args: &'a [Arg],
    ports: &'a [String],
    used: std::cell::RefCell<Vec<bool>>,
}

impl Args<'_> {
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        let i = self.args.iter().position(|a| a.key.as_deref() == Some(key))?;
        self.used.borrow_mut()[i] = true;
        Some(&self.args[i].value)
    }

    /// An integer argument within `range`, or `default`.
    pub fn int(&self, key: &str, default: i64, range: std::ops::RangeInclusive<i64>) -> Result<i64, String> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Int(v)) if range.contains(v) => Ok(*v),
            Some(_) => Err(format!("{key} must be an integer from {} to {}", range.start(), range.end())),
        }
    }

    /// A number argument within `range`, or `default`.
    pub fn float(&self, key: &str, default: f64, range: std::ops::RangeInclusive<f64>) -> Result<f64, String> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Int(v)) if range.contains(&(*v as f64)) => Ok(*v as f64),
            Some(Value::Float(v)) if range.contains(v) => Ok(*v),
            Some(_) => Err(format!("{key} must be a number from {} to {}", range.start(), range.end())),
        }
    }

    /// A string (or bare word) argument.
    pub fn string(&self, key: &str) -> Result<Option<String>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Str(s) | Value::Ident(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{key} must be a string")),
        }
    }

    /// The index of the port argument `key` names (required).
    pub fn port(&self, key: &str) -> Result<usize, String> {
        let name = self.string(key)?.ok_or_else(|| format!("{key}=\"name\" is required"))?;
        self.ports.iter().position(|p| *p == name).ok_or_else(|| {
            if self.ports.is_empty() {
                format!("no port '{name}': this pipeline has no ports")
            } else {
                format!("no port '{name}' (ports: {})", self.ports.join(", "))
            }
        })
    }

    /// A list argument (empty if not given; a single value is a list of one), each item
    /// read by `item`; `what` names the items for the error.
    fn list<T>(&self, key: &str, what: &str, item: impl Fn(&Value) -> Option<T>) -> Result<Vec<T>, String> {
        let bad = || format!("{key} must be a list of {what}");
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::List(l)) => l.iter().map(|v| item(v).ok_or_else(bad)).collect(),
            Some(v) => item(v).map(|x| vec![x]).ok_or_else(bad),
        }
    }

    /// A list of strings argument (empty if not given).
    pub fn strings(&self, key: &str) -> Result<Vec<String>, String> {
        self.list(key, "strings", |v| match v {
            Value::Str(s) | Value::Ident(s) => Some(s.clone()),
            _ => None,
        })
    }

    /// A list of numbers argument (empty if not given).
    pub fn floats(&self, key: &str) -> Result<Vec<f64>, String> {
        self.list(key, "numbers", |v| match v {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        })
    }

    /// A true/false argument, or `default`.
    pub fn flag(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.string(key) {
            Ok(None) => Ok(default),
            Ok(Some(s)) if s == "true" => Ok(true),
            Ok(Some(s)) if s == "false" => Ok(false),
            _ => Err(format!("{key} must be true or false")),
        }
    }

    /// `gates=N` (1 to 64; 2 by default).
    pub fn gates(&self) -> Result<u32, String> {
        Ok(self.int("gates", 2, 1..=BATCH as i64)? as u32)
    }

    fn all_used(&self) -> Result<(), String> {
        let used = self.used.borrow();
        match self.args.iter().zip(used.iter()).find(|(_, &u)| !u) {
            Some((a, _)) => Err(match &a.key {
                Some(k) => format!("unknown argument '{k}'"),
                None => "arguments are given as key=value".to_string(),
            }),
            None => Ok(()),
        }
    }
}

/// For modules without input gates: whatever is handed to them anyway is dropped.
pub(crate) fn drop_all(batch: &Batch, out: &mut Out) {
    for &p in batch.pkts() {
        out.drop(p);
    }
}

/// Makes packets: `size` bytes each (the first eight hold a counter, big-endian), `count` in
/// all (0: without end), `batch` per run.
pub struct Source {
    size: usize,
    left: Option<u64>,
    batch: usize,
    seq: u64,
}

impl Source {
    fn new(a: &Args) -> Result<Source, String> {
        let size = a.int("size", 64, 8..=(crate::packet::BUF_SIZE - crate::packet::HEADROOM) as i64)? as usize;
        let count = a.int("count", 0, 0..=i64::MAX)? as u64;
        let batch = a.int("batch", BATCH as i64, 1..=BATCH as i64)? as usize;
        Ok(Source { size, left: (count > 0).then_some(count), batch, seq: 0 })
    }
}

impl Module for Source {
    fn igates(&self) -> u32 {
        0
    }

    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        drop_all(batch, out);
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>, out: &mut Out) -> usize {
        let n = self.left.map_or(self.batch, |l| (l as usize).min(self.batch));
        let mut frame = [0u8; crate::packet::BUF_SIZE];
        let mut made = 0;
        for _ in 0..n {
            frame[..8].copy_from_slice(&self.seq.to_be_bytes());
            let Some(p) = ctx.pool.alloc(&frame[..self.size]) else { break };
            self.seq += 1;
            out.emit(0, p);
            made += 1;
        }
        if let Some(l) = &mut self.left {
            *l -= made as u64;
        }
        made
    }
}

/// Frees every packet.
pub struct Sink;

impl Module for Sink {
    fn ogates(&self) -> u32 {
        0
    }

    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        drop_all(batch, out);
    }
}

/// Passes packets on unchanged.
pub struct Bypass;

impl Module for Bypass {
    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            out.emit(0, p);
        }
    }
}

/// Deals packets to its gates in turn.
pub struct RoundRobin {
    gates: u32,
    next: u32,
}

impl Module for RoundRobin {
    fn ogates(&self) -> u32 {
        self.gates
    }

    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            out.emit(self.next, p);
            self.next = (self.next + 1) % self.gates;
        }
    }
}

/// Sends each packet out of every gate (copies beyond the first; a copy the pool has no
/// buffer for is not made).
pub struct Replicate {
    gates: u32,
}

impl Module for Replicate {
    fn ogates(&self) -> u32 {
        self.gates
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            for g in 1..self.gates {
                if let Some(c) = ctx.pool.copy(p) {
                    out.emit(g, c);
                }
            }
            out.emit(0, p);
        }
    }
}

/// A xorshift64 generator: cheap per packet, and the same stream for the same `seed=`.
pub(crate) struct Rand(u64);

impl Rand {
    /// From a module's `seed=` argument (1 by default).
    pub(crate) fn from_args(a: &Args) -> Result<Rand, String> {
        Ok(Rand(a.int("seed", 1, 1..=i64::MAX)? as u64))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in [0, 1) from the high bits of `r`.
    pub(crate) fn unit(r: u64) -> f64 {
        (r >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Sends each packet to a gate at random, or drops it with probability `drop`.
pub struct RandomSplit {
    gates: u32,
    drop: f64,
    rand: Rand,
}

impl RandomSplit {
    fn new(a: &Args) -> Result<RandomSplit, String> {
        Ok(RandomSplit { gates: a.gates()?, drop: a.float("drop", 0.0, 0.0..=1.0)?, rand: Rand::from_args(a)? })
    }
}

impl Module for RandomSplit {
    fn ogates(&self) -> u32 {
        self.gates
    }

    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let r = self.rand.next();
            if Rand::unit(r) >= self.drop {
                out.emit((r % u64::from(self.gates)) as u32, p);
            } else {
                out.drop(p);
            }
        }
    }
}

/// Writes `value` (big-endian, `size` bytes) into metadata attribute `attr`.
pub struct SetMetadata {
    attr: String,
    size: usize,
    value: [u8; 8],
}

impl SetMetadata {
    fn new(a: &Args) -> Result<SetMetadata, String> {
        let attr = a.string("attr")?.ok_or("attr=\"name\" is required")?;
        let size = a.int("size", 4, 1..=8.min(MAX_ATTR_SIZE as i64))? as usize;
        let value = a.int("value", 0, i64::MIN..=i64::MAX)?;
        Ok(SetMetadata { attr, size, value: value.to_be_bytes() })
    }
}

impl Module for SetMetadata {
    fn attrs(&self) -> Vec<Attr> {
        vec![Attr::new(&self.attr, self.size, Mode::Write)]
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        let v = &self.value[8 - self.size..];
        for &p in batch.pkts() {
            if let Some(slot) = ctx.attr_mut(p, 0, self.size) {
                slot.copy_from_slice(v);
            }
            out.emit(0, p);
        }
    }
}

#[cfg(test)]
mod tests;
