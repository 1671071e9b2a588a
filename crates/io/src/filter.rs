//! The XDP filter: the kernel as control plane (Arrakis), granting sirocco only its flows.
//!
//! The program (`bpf/filter.c`, compiled by clang at build time) is attached with a BPF link,
//! so the kernel detaches it by itself when the process exits or is killed: nothing is left
//! on the interface. A program left by an older attachment method (netlink) that carries
//! sirocco's name is removed before attaching.

use aya::maps::{Array, HashMap, MapData, PerCpuArray, XskMap};
use aya::programs::{Xdp, XdpFlags};
use aya::Ebpf;
use std::fmt;
use std::os::fd::RawFd;
use wire::IpAddr;

static FILTER_OBJ: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/filter.o"));
/// The same filter without the DNS answers: they are most of the program, and nearly all of
/// the ~0.3 s the kernel's verifier spends on it at every start.
static FILTER_PLAIN_OBJ: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/filter_plain.o"));

/// The compiled filter object (ELF), as embedded in the binary.
pub fn object() -> &'static [u8] {
    FILTER_OBJ
}

/// Name of the program in the object (and as the kernel reports it).
pub const PROGRAM_NAME: &str = "sirocco_filter";

const OWNED_ALONE: u32 = 1;
/// A grant's value: the flow goes to sirocco.
const GRANTED: u32 = 1;
/// A grant's value: DNS queries of the flow may be answered in the program (XDP_TX).
const GRANTED_DNS: u32 = 2;

/// Key of the `grants` map; must match `struct grant_key` in filter.c.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GrantKey {
    addr: [u8; 4],
    port: [u8; 2],
    proto: u8,
    pad: u8,
}

// SAFETY: plain old data with no padding (4 + 2 + 1 + 1 bytes), valid for any bit pattern.
unsafe impl aya::Pod for GrantKey {}

/// Key of the `grants6` map; must match `struct grant6_key` in filter.c.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Grant6Key {
    addr: [u8; 16],
    port: [u8; 2],
    proto: u8,
    pad: u8,
}

// SAFETY: plain old data with no padding (16 + 2 + 1 + 1 bytes), valid for any bit pattern.
unsafe impl aya::Pod for Grant6Key {}

/// How the program was attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachMode {
    /// In the driver (native XDP).
    Driver,
    /// In the generic (skb) path, for devices without native XDP.
    Generic,
}

/// Failure to set up the filter, with what the operator should check.
#[derive(Debug)]
pub struct FilterError(String);

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FilterError {}

impl FilterError {
    pub(crate) fn new(msg: String) -> FilterError {
        FilterError(msg)
    }
}

/// The eBPF loader being made ahead (see [`prepare`]).
static PREPARED: std::sync::Mutex<Option<std::thread::JoinHandle<aya::EbpfLoader<'static>>>> =
    std::sync::Mutex::new(None);

/// Starts making the eBPF loader on a thread of its own. aya's loader parses the kernel's BTF
/// (5.5 MB from sysfs: 19 ms of a 60–100 ms DNS start on this machine) when it is made,
/// which is time a server loading its zone, tree or memory need not wait for where it has a
/// second core. The next filter loaded takes it; without one prepared it is made in place.
pub fn prepare() {
    let mut p = PREPARED.lock().unwrap_or_else(|e| e.into_inner());
    if p.is_none() {
        *p = std::thread::Builder::new().name("sirocco-bpf".into()).spawn(aya::EbpfLoader::new).ok();
    }
}

/// The loader [`prepare`] made, or a new one.
fn loader() -> aya::EbpfLoader<'static> {
    let prepared = PREPARED.lock().unwrap_or_else(|e| e.into_inner()).take();
    prepared.and_then(|h| h.join().ok()).unwrap_or_default()
}

fn err(msg: impl Into<String>) -> FilterError {
    FilterError(msg.into())
}

/// A loaded, attached filter. Dropping it detaches it: dropping `_ebpf` drops the program,
/// whose link map detaches every link.
pub struct Filter {
    // Held only for its drop, which detaches the program.
    _ebpf: Ebpf,
    xsks: XskMap<MapData>,
    grants: HashMap<MapData, GrantKey, u32>,
    owned: HashMap<MapData, [u8; 4], u32>,
    grants6: HashMap<MapData, Grant6Key, u32>,
    owned6: HashMap<MapData, [u8; 16], u32>,
    whole: Array<MapData, u32>,
    verdicts: PerCpuArray<MapData, u64>,
    dns: Option<crate::dns_answers::DnsMaps>,
    /// Loaded with the DNS answers ([`Filter::attach_sized`]).
    answers: bool,
    mode: AttachMode,
    iface: String,
}

impl Filter {
    /// Loads the program without DNS answers and attaches it to `iface` (native mode, else
    /// generic).
    pub fn attach(iface: &str, ifindex: u32) -> Result<Filter, FilterError> {
        Filter::load(iface, ifindex, None)
    }

    /// As [`Filter::attach`], with the DNS answers and their tables sized for `dns` (a hash
    /// table's buckets are made for its maximum: one far larger than its contents spreads
    /// every lookup over memory no cache holds).
    pub fn attach_sized(iface: &str, ifindex: u32, dns: crate::dns_answers::Capacity) -> Result<Filter, FilterError> {
        Filter::load(iface, ifindex, Some(dns))
    }

    fn load(iface: &str, ifindex: u32, answers: Option<crate::dns_answers::Capacity>) -> Result<Filter, FilterError> {
        let mut loader = loader();
        if let Some(dns) = answers {
            for g in 0..2 {
                loader.set_max_entries(["dns_index0", "dns_index1"][g], dns.slots.max(1));
                loader.set_max_entries(["dns_short0", "dns_short1"][g], dns.short_names.max(1));
                loader.set_max_entries(["dns_long0", "dns_long1"][g], dns.long_names.max(1));
                loader.set_max_entries(["dns_answers0", "dns_answers1"][g], dns.small.max(1));
                loader.set_max_entries(["dns_large0", "dns_large1"][g], dns.large.max(1));
            }
        }
        let obj = if answers.is_some() { FILTER_OBJ } else { FILTER_PLAIN_OBJ };
        let mut ebpf = loader.load(obj).map_err(|e| err(format!("loading the XDP filter: {e}")))?;
        let xsks = XskMap::try_from(ebpf.take_map("xsks").ok_or_else(|| err("filter has no xsks map"))?)
            .map_err(|e| err(format!("xsks map: {e}")))?;
        let grants = HashMap::try_from(ebpf.take_map("grants").ok_or_else(|| err("filter has no grants map"))?)
            .map_err(|e| err(format!("grants map: {e}")))?;
        let owned = HashMap::try_from(ebpf.take_map("owned").ok_or_else(|| err("filter has no owned map"))?)
            .map_err(|e| err(format!("owned map: {e}")))?;
        let grants6 = HashMap::try_from(ebpf.take_map("grants6").ok_or_else(|| err("filter has no grants6 map"))?)
            .map_err(|e| err(format!("grants6 map: {e}")))?;
        let owned6 = HashMap::try_from(ebpf.take_map("owned6").ok_or_else(|| err("filter has no owned6 map"))?)
            .map_err(|e| err(format!("owned6 map: {e}")))?;
        let whole = Array::try_from(ebpf.take_map("whole").ok_or_else(|| err("filter has no whole map"))?)
            .map_err(|e| err(format!("whole map: {e}")))?;
        let verdicts =
            PerCpuArray::try_from(ebpf.take_map("verdicts").ok_or_else(|| err("filter has no verdicts map"))?)
                .map_err(|e| err(format!("verdicts map: {e}")))?;
        let dns = match answers {
            Some(_) => Some(crate::dns_answers::DnsMaps::take(&mut ebpf).map_err(err)?),
            None => None,
        };
        let prog: &mut Xdp = ebpf
            .program_mut(PROGRAM_NAME)
            .ok_or_else(|| err("filter object has no program"))?
            .try_into()
            .map_err(|e| err(format!("filter program: {e}")))?;
        prog.load().map_err(|e| err(format!("the kernel refused the XDP filter: {e}")))?;

        // A filter a killed sirocco left attached (one attached through netlink outlives its
        // process) is removed only when it is in the way: looking for it costs a process.
        let mode = match attach_either(prog, ifindex) {
            Err(e) if e.busy && remove_stale(iface) => attach_either(prog, ifindex),
            r => r,
        };
        let mode = mode.map_err(|e| {
            err(if e.busy {
                format!(
                    "cannot attach the XDP filter to {iface}: an XDP program of another program is attached \
                     (`ip -d link show dev {iface}` names it; `ip link set dev {iface} xdp off` removes it)"
                )
            } else {
                format!(
                    "cannot attach the XDP filter to {iface}: {}; the interface or kernel lacks XDP support",
                    e.native
                )
            })
        })?;
        Ok(Filter {
            _ebpf: ebpf,
            xsks,
            grants,
            owned,
            grants6,
            owned6,
            whole,
            verdicts,
            answers: dns.is_some(),
            dns,
            mode,
            iface: iface.to_string(),
        })
    }

    /// How the program was attached.
    pub fn mode(&self) -> AttachMode {
        self.mode
    }

    /// Directs the frames the filter grants on `queue` to the AF_XDP socket `fd`.
    pub fn bind_queue(&mut self, queue: u32, fd: RawFd) -> Result<(), FilterError> {
        self.xsks.set(queue, fd, 0).map_err(|e| err(format!("registering the socket of queue {queue}: {e}")))
    }

    /// Grants sirocco the (address, protocol, port) flow; port 0 grants every port.
    pub fn grant(&mut self, addr: IpAddr, proto: u8, port: u16) -> Result<(), FilterError> {
        self.grant_as(addr, proto, port, GRANTED)
    }

    /// Grants the UDP flow to `addr` port `port` as [`Filter::grant`] does, and lets the
    /// program answer its DNS queries from the tables of [`Filter::take_dns_maps`].
    pub fn grant_dns(&mut self, addr: IpAddr, port: u16) -> Result<(), FilterError> {
        if !self.answers {
            return Err(err("the XDP filter was loaded without DNS answers (Filter::attach_sized loads them)"));
        }
        self.grant_as(addr, wire::Protocol::UDP, port, GRANTED | GRANTED_DNS)
    }

    fn grant_as(&mut self, addr: IpAddr, proto: u8, port: u16, value: u32) -> Result<(), FilterError> {
        let port_be = port.to_be_bytes();
        match addr {
            IpAddr::V4(a) => self.grants.insert(GrantKey { addr: a.0, port: port_be, proto, pad: 0 }, value, 0),
            IpAddr::V6(a) => self.grants6.insert(Grant6Key { addr: a.0, port: port_be, proto, pad: 0 }, value, 0),
        }
        .map_err(|e| err(format!("granting {addr} proto {proto} port {port}: {e}")))
    }

    /// The program's DNS answer tables (once: the caller keeps them).
    pub fn take_dns_maps(&mut self) -> Option<crate::dns_answers::DnsMaps> {
        self.dns.take()
    }

    /// Declares that sirocco owns `addr` alone: the filter then also hands it what the
    /// kernel would otherwise answer for the address — ARP requests, ICMP and IPv4 fragments;
    /// for IPv6, neighbour solicitations, ICMPv6 and fragments.
    pub fn own_alone(&mut self, addr: IpAddr) -> Result<(), FilterError> {
        match addr {
            IpAddr::V4(a) => self.owned.insert(a.0, OWNED_ALONE, 0),
            IpAddr::V6(a) => self.owned6.insert(a.0, OWNED_ALONE, 0),
        }
        .map_err(|e| err(format!("owning {addr}: {e}")))
    }

    /// Takes the whole interface: every frame goes to sirocco, none to the kernel. For a
    /// pipeline's port (a switch or router port), which the operator gave it entirely.
    pub fn take_whole(&mut self) -> Result<(), FilterError> {
        self.whole.set(0, 1, 0).map_err(|e| err(format!("taking the whole of {}: {e}", self.iface)))
    }

    /// Packets redirected to sirocco and passed to the kernel, summed over CPUs.
    pub fn verdicts(&self) -> (u64, u64) {
        (self.verdict(0), self.verdict(1))
    }

    /// Packets answered in the program (XDP_TX) and dropped there, summed over CPUs.
    pub fn answered(&self) -> (u64, u64) {
        (self.verdict(2), self.verdict(3))
    }

    fn verdict(&self, i: u32) -> u64 {
        self.verdicts.get(&i, 0).map(|v| v.iter().sum::<u64>()).unwrap_or(0)
    }

    /// The interface the filter is on.
    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// Detaches and unloads (the same as dropping).
    pub fn detach(self) {
        drop(self)
    }
}

/// Why neither attach took: the native one's error, and whether either found the interface
/// busy with another program.
struct AttachFailed {
    native: String,
    busy: bool,
}

/// Attaches `prog` in native mode, else generic.
fn attach_either(prog: &mut Xdp, ifindex: u32) -> Result<AttachMode, AttachFailed> {
    match prog.attach_to_if_index(ifindex, XdpFlags::DRV_MODE) {
        Ok(_) => Ok(AttachMode::Driver),
        Err(drv) => match prog.attach_to_if_index(ifindex, XdpFlags::SKB_MODE) {
            Ok(_) => Ok(AttachMode::Generic),
            Err(skb) => {
                let native = format!("{drv:?}");
                let busy = native.contains("busy") || format!("{skb:?}").contains("busy");
                Err(AttachFailed { native, busy })
            }
        },
    }
}

/// If an XDP program named like ours was left attached through netlink (which, unlike a BPF
/// link, survives its process), remove it; true if there was one. A program held by the link
/// of a live sirocco cannot be removed this way, so a second sirocco on the interface still
/// fails to attach.
fn remove_stale(iface: &str) -> bool {
    let out = std::process::Command::new("ip").args(["-d", "link", "show", "dev", iface]).output();
    let Ok(out) = out else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    if !(text.contains("prog/xdp") && text.contains(PROGRAM_NAME)) {
        return false;
    }
    for mode in ["xdpdrv", "xdpgeneric"] {
        let _ = std::process::Command::new("ip").args(["link", "set", "dev", iface, mode, "off"]).status();
    }
    true
}
