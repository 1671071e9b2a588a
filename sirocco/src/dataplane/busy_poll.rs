//! `--busy-poll off|on|auto`: preferred busy polling on every AF_XDP socket, with the
//! interface's interrupt deferral knobs, so the kernel's receive work for a queue runs in its
//! engine's own system calls instead of a NAPI thread woken per batch.

use io::napi::{self, Knobs, Outcome, Tuned};
use io::xsk::{BusyPoll, NoBusyPoll, XskPort};

/// Whether to busy-poll.
#[derive(clap::ValueEnum, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum BusyPollMode {
    /// Never.
    Off,
    /// Always; an error where the kernel refuses.
    On,
    /// Where the kernel takes the socket options (Linux 5.11+); one warning line where not.
    #[default]
    Auto,
}

/// The socket's busy-poll time: our polls never block, so it only has to be non-zero.
const USECS: u32 = 20;

/// What the interface's knobs are set to (DPDK's AF_XDP driver recommends the same): two
/// completions without interrupts, and a 200 µs timer that polls meanwhile in case the engine
/// stops polling.
pub const KNOBS: Knobs = Knobs { defer_hard_irqs: 2, gro_flush_timeout_ns: 200_000 };

/// The socket options to ask for, if any; first puts back what a sirocco killed on `iface`
/// left there.
pub fn socket_options(mode: BusyPollMode, iface: &str, batch: usize) -> Option<BusyPoll> {
    if mode == BusyPollMode::Off {
        return None;
    }
    if let Some(line) = napi::recover(iface) {
        tracing::info!("{line}");
    }
    Some(BusyPoll { usecs: USECS, budget: batch.min(usize::from(u16::MAX)) as u16 })
}

/// Busy polling as it is in force, and the interface's knobs while sirocco holds them.
#[derive(Debug)]
pub struct InForce {
    /// The sockets busy-poll.
    pub on: bool,
    /// What the start line says of it.
    pub said: String,
    /// Dropped at exit: the knobs go back to what they were.
    _tuned: Option<Tuned>,
}

/// After the sockets are open: whether they busy-poll, and the knobs tuned where they do.
pub fn in_force(mode: BusyPollMode, iface: &str, ports: &[XskPort]) -> Result<InForce, String> {
    let off = |said: String| Ok(InForce { on: false, said, _tuned: None });
    if mode == BusyPollMode::Off {
        return off("busy polling off (--busy-poll off)".into());
    }
    if let Some(why) = ports.iter().find_map(XskPort::busy_poll_refused) {
        if mode == BusyPollMode::On {
            return Err(format!("--busy-poll on: {why}"));
        }
        // A refusal is worth a warning; copy mode, where it cannot work, only the start line.
        if let NoBusyPoll::Refused(_) = why {
            tracing::warn!("busy polling off: {why}; engines sleep and wake per batch instead");
        }
        return off(format!("busy polling off: {why}"));
    }
    let (tuned, knobs) = match napi::tune(iface, KNOBS) {
        Outcome::Tuned(t) => (Some(t), format!("{} set until exit", describe(KNOBS))),
        Outcome::Kept(k) => (None, format!("{} as set on {iface}, kept", describe(k))),
        Outcome::Unavailable(why) => (None, format!("interrupts not deferred ({why})")),
    };
    Ok(InForce { on: true, said: format!("busy polling on ({knobs}{})", irq_suspension(iface)), _tuned: tuned })
}

/// What the start line says of IRQ suspension (Linux 6.13+), found in the kernel's list of
/// the interface's NAPI instances. The kernel suspends interrupts only for an epoll that
/// busy-polls with `EPIOCSPARAMS`; the engines wait in `poll(2)`, so it is reported, not used.
fn irq_suspension(iface: &str) -> String {
    let Some(index) = io::iface::index_of(iface) else { return String::new() };
    match io::netdev::napis(index) {
        Ok(napis) if napis.is_empty() => String::new(),
        Ok(napis) if io::netdev::irq_suspension(&napis) => {
            "; the kernel has IRQ suspension, not used: it needs an epoll wait, the engines poll".into()
        }
        Ok(_) => "; no IRQ suspension in this kernel (6.13+)".into(),
        Err(e) => format!("; NAPI instances not listed ({e})"),
    }
}

fn describe(k: Knobs) -> String {
    format!("napi_defer_hard_irqs {}, gro_flush_timeout {} ns", k.defer_hard_irqs, k.gro_flush_timeout_ns)
}
