//! `sirocco ctl`'s data path in the kernel (`bpf/ctl.c`): the ingress program on the shared
//! interface (XDP), which hands each grant's flows to its virtual interface and answers ARP
//! for the daemon's addresses, and the egress program at TC ingress of each grant's
//! daemon-side veth, which lets out only the grant's own frames within its rate. Both are attached with BPF links, so the
//! kernel detaches them when the daemon exits or is killed.

use crate::filter::FilterError;
use aya::maps::{Array, HashMap, MapData, PerCpuArray};
use aya::programs::tc::SchedClassifierLinkId;
use aya::programs::{SchedClassifier, TcAttachType, Xdp, XdpFlags};
use aya::Ebpf;
use wire::{Ipv4Addr, MacAddr};

static CTL_OBJ: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/ctl.o"));

const INGRESS: &str = "ctl_ingress";
const EGRESS: &str = "ctl_egress";

/// Counter slots: slot 0 holds what belongs to no grant, grants use 1 to `SLOTS - 1`.
pub const SLOTS: u32 = 256;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct FlowKey {
    addr: [u8; 4],
    port: [u8; 2],
    proto: u8,
    pad: u8,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct RxGrant {
    ifindex: u32,
    slot: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct OwnedAddr {
    mac: [u8; 6],
    pad: u16,
}

/// Flows a grant may send from (`MAX_FLOWS` in ctl.c).
pub const MAX_FLOWS: usize = 4;
/// Port ranges granted at once over all grants (`MAX_RANGES` in ctl.c).
pub const MAX_RANGES: usize = 16;

/// Must match `struct tx_flow` in ctl.c.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct TxFlow {
    proto: u8,
    pad: u8,
    lo: u16,
    hi: u16,
    pad2: u16,
}

impl Default for TxFlow {
    /// Unused: an empty port range.
    fn default() -> TxFlow {
        TxFlow { proto: 0, pad: 0, lo: 1, hi: 0, pad2: 0 }
    }
}

/// Must match `struct rx_range` in ctl.c.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct RxRange {
    addr: [u8; 4],
    proto: u8,
    used: u8,
    lo: u16,
    hi: u16,
    pad: u16,
    ifindex: u32,
    slot: u32,
}

/// Must match `struct tx_grant` in ctl.c (the spin lock is the first word).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct TxGrant {
    lock: u32,
    addr: [u8; 4],
    out_ifindex: u32,
    slot: u32,
    flows: [TxFlow; MAX_FLOWS],
    pps: u64,
    bps: u64,
    last_ns: u64,
    tok_p: u64,
    tok_b: u64,
}

/// Per-grant counters, summed over CPUs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrantStats {
    /// Frames redirected to the application.
    pub rx: u64,
    /// Frames it sent that left through the interface.
    pub tx: u64,
    /// Their bytes.
    pub tx_bytes: u64,
    /// Frames it sent outside its grant (another address, protocol or port), dropped.
    pub refused: u64,
    /// Frames over its rate, dropped.
    pub limited: u64,
    /// ARP requests answered (slot 0 only).
    pub arp: u64,
}

// SAFETY: each is plain old data with no implicit padding (fields laid out to fill every
// byte), valid for any bit pattern.
unsafe impl aya::Pod for FlowKey {}
// SAFETY: as above (two u32).
unsafe impl aya::Pod for RxGrant {}
// SAFETY: as above (6 + 2 bytes).
unsafe impl aya::Pod for OwnedAddr {}
// SAFETY: as above (explicit pads; 88 bytes: 16, four 8-byte flows, five u64).
unsafe impl aya::Pod for TxGrant {}
// SAFETY: as above (8 bytes, explicit pad).
unsafe impl aya::Pod for TxFlow {}
// SAFETY: as above (20 bytes, explicit pad).
unsafe impl aya::Pod for RxRange {}
// SAFETY: as above (six u64).
unsafe impl aya::Pod for GrantStats {}

/// The egress program's attachment to one veth.
#[derive(Debug)]
pub struct EgressLink(SchedClassifierLinkId);

/// What a grant lets through, as the egress program checks it.
#[derive(Debug, Clone)]
pub struct TxRule {
    /// The source address its frames must carry.
    pub addr: Ipv4Addr,
    /// Its flows: (IP protocol number, lowest, highest source port), at most [`MAX_FLOWS`].
    pub flows: Vec<(u8, u16, u16)>,
    /// Packets per second (0: unlimited).
    pub pps: u64,
    /// Bits per second (0: unlimited).
    pub bps: u64,
    /// Counter slot.
    pub slot: u32,
}

fn err(msg: String) -> FilterError {
    FilterError::new(msg)
}

/// The loaded programs and their maps; dropping it detaches every program.
pub struct CtlPath {
    ebpf: Ebpf,
    rx: HashMap<MapData, FlowKey, RxGrant>,
    owned: HashMap<MapData, [u8; 4], OwnedAddr>,
    tx: HashMap<MapData, u32, TxGrant>,
    stats: PerCpuArray<MapData, GrantStats>,
    ranges: Array<MapData, RxRange>,
    nranges: Array<MapData, u32>,
    /// Which range entries are in use.
    range_used: [bool; MAX_RANGES],
    iface_index: u32,
    iface: String,
}

impl CtlPath {
    /// Loads both programs and attaches the ingress one to `iface`.
    pub fn attach(iface: &str, ifindex: u32) -> Result<CtlPath, FilterError> {
        let mut ebpf = Ebpf::load(CTL_OBJ).map_err(|e| err(format!("loading sirocco ctl's XDP programs: {e}")))?;
        let mut take = |name: &str| ebpf.take_map(name).ok_or_else(|| err(format!("ctl object has no {name} map")));
        let rx = HashMap::try_from(take("ctl_rx")?).map_err(|e| err(format!("ctl_rx: {e}")))?;
        let owned = HashMap::try_from(take("ctl_owned")?).map_err(|e| err(format!("ctl_owned: {e}")))?;
        let tx = HashMap::try_from(take("ctl_tx")?).map_err(|e| err(format!("ctl_tx: {e}")))?;
        let stats = PerCpuArray::try_from(take("ctl_stats")?).map_err(|e| err(format!("ctl_stats: {e}")))?;
        let ranges = Array::try_from(take("ctl_ranges")?).map_err(|e| err(format!("ctl_ranges: {e}")))?;
        let nranges = Array::try_from(take("ctl_nranges")?).map_err(|e| err(format!("ctl_nranges: {e}")))?;
        program::<SchedClassifier>(&mut ebpf, EGRESS)?
            .load()
            .map_err(|e| err(format!("the kernel refused {EGRESS}: {e}")))?;
        let ingress = program::<Xdp>(&mut ebpf, INGRESS)?;
        ingress.load().map_err(|e| err(format!("the kernel refused {INGRESS}: {e}")))?;
        ingress.attach_to_if_index(ifindex, XdpFlags::DRV_MODE).map_err(|e| {
            let busy = format!("{e:?}").contains("busy");
            err(if busy {
                format!(
                    "cannot attach sirocco ctl's XDP program to {iface}: another XDP program is attached \
                     (`ip -d link show dev {iface}` names it)"
                )
            } else {
                format!("cannot attach sirocco ctl's XDP program to {iface} in driver mode: {e:?}")
            })
        })?;
        let range_used = [false; MAX_RANGES];
        Ok(CtlPath {
            ebpf,
            rx,
            owned,
            tx,
            stats,
            ranges,
            nranges,
            range_used,
            iface_index: ifindex,
            iface: iface.to_string(),
        })
    }

    /// The shared interface.
    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// Attaches the egress program to a grant's daemon-side veth `dev` (index `ifindex`), at
    /// TC ingress (a TCX link), which then sends what passes out of the shared interface under
    /// `rule`.
    pub fn attach_egress(&mut self, dev: &str, ifindex: u32, rule: TxRule) -> Result<EgressLink, FilterError> {
        if rule.flows.is_empty() || rule.flows.len() > MAX_FLOWS {
            return Err(err(format!("a grant has 1 to {MAX_FLOWS} flows, not {}", rule.flows.len())));
        }
        let mut flows = [TxFlow::default(); MAX_FLOWS];
        for (f, &(proto, lo, hi)) in flows.iter_mut().zip(&rule.flows) {
            *f = TxFlow { proto, pad: 0, lo, hi, pad2: 0 };
        }
        let g = TxGrant {
            addr: rule.addr.0,
            flows,
            out_ifindex: self.iface_index,
            slot: rule.slot,
            pps: rule.pps,
            bps: rule.bps,
            ..TxGrant::default()
        };
        self.tx.insert(ifindex, g, 0).map_err(|e| err(format!("ctl_tx: {e}")))?;
        program::<SchedClassifier>(&mut self.ebpf, EGRESS)?
            .attach(dev, TcAttachType::Ingress)
            .map(EgressLink)
            .map_err(|e| err(format!("attaching the transmit filter to {dev} (TCX, Linux 6.6+): {e:?}")))
    }

    /// Detaches the egress program from a veth and forgets its rule.
    pub fn detach_egress(&mut self, ifindex: u32, link: EgressLink) {
        if let Ok(p) = program::<SchedClassifier>(&mut self.ebpf, EGRESS) {
            let _ = p.detach(link.0);
        }
        let _ = self.tx.remove(&ifindex);
    }

    /// Sends frames of the flow (`addr`, `proto`, `port`) to the veth `ifindex`.
    pub fn route(&mut self, addr: Ipv4Addr, proto: u8, port: u16, ifindex: u32, slot: u32) -> Result<(), FilterError> {
        let k = FlowKey { addr: addr.0, port: port.to_be_bytes(), proto, pad: 0 };
        self.rx.insert(k, RxGrant { ifindex, slot }, 0).map_err(|e| err(format!("ctl_rx: {e}")))
    }

    /// Sends frames to `addr` of protocol `proto` for ports `lo..=hi` that no exact flow
    /// takes to the veth `ifindex`; returns the range's entry, for [`CtlPath::unroute_range`].
    pub fn route_range(
        &mut self,
        addr: Ipv4Addr,
        proto: u8,
        (lo, hi): (u16, u16),
        ifindex: u32,
        slot: u32,
    ) -> Result<u32, FilterError> {
        let i = self
            .range_used
            .iter()
            .position(|u| !u)
            .ok_or_else(|| err(format!("all {MAX_RANGES} port ranges are granted")))?;
        let r = RxRange { addr: addr.0, proto, used: 1, lo, hi, pad: 0, ifindex, slot };
        self.ranges.set(i as u32, r, 0).map_err(|e| err(format!("ctl_ranges: {e}")))?;
        self.range_used[i] = true;
        self.set_range_count()?;
        Ok(i as u32)
    }

    /// Stops sending a range anywhere.
    pub fn unroute_range(&mut self, entry: u32) {
        let _ = self.ranges.set(entry, RxRange::default(), 0);
        if let Some(u) = self.range_used.get_mut(entry as usize) {
            *u = false;
        }
        let _ = self.set_range_count();
    }

    fn set_range_count(&mut self) -> Result<(), FilterError> {
        let n = self.range_used.iter().filter(|u| **u).count() as u32;
        self.nranges.set(0, n, 0).map_err(|e| err(format!("ctl_nranges: {e}")))
    }

    /// Stops sending the flow anywhere (it passes to the kernel again).
    pub fn unroute(&mut self, addr: Ipv4Addr, proto: u8, port: u16) {
        let _ = self.rx.remove(&FlowKey { addr: addr.0, port: port.to_be_bytes(), proto, pad: 0 });
    }

    /// Answers ARP requests for `addr` with `mac` (an address the kernel does not have).
    pub fn answer_arp(&mut self, addr: Ipv4Addr, mac: MacAddr) -> Result<(), FilterError> {
        self.owned.insert(addr.0, OwnedAddr { mac: mac.0, pad: 0 }, 0).map_err(|e| err(format!("ctl_owned: {e}")))
    }

    /// Stops answering ARP for `addr`.
    pub fn forget_arp(&mut self, addr: Ipv4Addr) {
        let _ = self.owned.remove(&addr.0);
    }

    /// A slot's counters, summed over CPUs.
    pub fn stats(&self, slot: u32) -> GrantStats {
        let mut t = GrantStats::default();
        if let Ok(v) = self.stats.get(&slot, 0) {
            for s in v.iter() {
                t.rx += s.rx;
                t.tx += s.tx;
                t.tx_bytes += s.tx_bytes;
                t.refused += s.refused;
                t.limited += s.limited;
                t.arp += s.arp;
            }
        }
        t
    }

    /// Runs of each program and the nanoseconds they took, as the kernel counts them while
    /// BPF statistics are on (`sysctl kernel.bpf_stats_enabled=1`; zeros otherwise).
    pub fn program_stats(&self) -> Vec<(&'static str, u64, u64)> {
        [INGRESS, EGRESS]
            .into_iter()
            .filter_map(|name| {
                let i = self.ebpf.program(name)?.info().ok()?;
                Some((name, i.run_count(), i.run_time().as_nanos() as u64))
            })
            .collect()
    }

    /// Zeroes a slot's counters (before a new grant takes it).
    pub fn clear(&mut self, slot: u32) {
        let n = aya::util::nr_cpus().unwrap_or(1);
        let zero = aya::maps::PerCpuValues::try_from(vec![GrantStats::default(); n]);
        if let Ok(z) = zero {
            let _ = self.stats.set(slot, z, 0);
        }
    }
}

/// A program of the object as its type (`Xdp` or `SchedClassifier`).
fn program<'a, P>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut P, FilterError>
where
    &'a mut P: TryFrom<&'a mut aya::programs::Program, Error = aya::programs::ProgramError>,
{
    ebpf.program_mut(name)
        .ok_or_else(|| err(format!("ctl object has no program {name}")))?
        .try_into()
        .map_err(|e| err(format!("{name}: {e}")))
}
