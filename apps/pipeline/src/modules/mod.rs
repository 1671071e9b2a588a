//! The shipped modules and the registry that makes modules from a script's declarations.

use crate::module::Module;
use crate::script::Decl;
use std::collections::BTreeMap;

mod args;
mod basic;
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
mod set_metadata;
mod split;
#[cfg(test)]
pub(crate) mod testing;
mod vxlan;
pub(crate) use args::drop_all;
pub use args::Args;
pub use basic::{Bypass, Sink, Source};
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
pub use set_metadata::SetMetadata;
pub(crate) use split::Rand;
pub use split::{RandomSplit, Replicate, RoundRobin};
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

#[cfg(test)]
mod tests;
