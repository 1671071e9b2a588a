//! `--busy-poll off|on|auto`: preferred busy polling on every AF_XDP socket, with the
//! interface's interrupt deferral knobs, so the kernel's receive work for a queue runs in its
//! engine's own system calls instead of a NAPI thread woken per batch.

use io::napi::{self, Knobs, Outcome, Tuned};
use io::xsk::{BindMode, BusyPoll, XskPort};

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

/// After the sockets are open: whether busy polling can work on them, and the knobs tuned
/// where it does.
pub fn in_force(mode: BusyPollMode, iface: &str, ports: &mut [XskPort]) -> Result<InForce, String> {
    fn off(ports: &mut [XskPort], said: String) -> Result<InForce, String> {
        for p in ports.iter_mut() {
            p.stop_busy_polling();
        }
        Ok(InForce { on: false, said, _tuned: None })
    }
    if mode == BusyPollMode::Off {
        return off(ports, "busy polling off (--busy-poll off)".into());
    }
    let refused = ports.iter().find_map(|p| p.busy_poll_refused().map(|why| format!("the kernel refused it ({why})")));
    let copy = ports.iter().any(|p| p.mode() == BindMode::Copy) && !napi::copy_mode_busy_polls();
    let cannot = refused.or_else(|| {
        copy.then(|| {
            "AF_XDP copy mode, where Linux 6.13 and later busy-poll no socket (only zero-copy ones get their queue's NAPI)"
                .to_string()
        })
    });
    if let Some(why) = cannot {
        if mode == BusyPollMode::On {
            return Err(format!("--busy-poll on: {why}"));
        }
        if refused_by_kernel(&why) {
            tracing::warn!("busy polling off: {why}; engines sleep and wake per batch instead");
        }
        return off(ports, format!("busy polling off: {why}"));
    }
    let (tuned, knobs) = match napi::tune(iface, KNOBS) {
        Outcome::Tuned(t) => (Some(t), format!("{} set until exit", describe(KNOBS))),
        Outcome::Kept(k) => (None, format!("{} as set on {iface}, kept", describe(k))),
        Outcome::Unavailable(why) => (None, format!("interrupts not deferred ({why})")),
    };
    Ok(InForce { on: true, said: format!("busy polling on ({knobs})"), _tuned: tuned })
}

/// Whether the kernel said no (worth a warning), as opposed to a mode where busy polling
/// cannot work (said in the start line only).
fn refused_by_kernel(why: &str) -> bool {
    why.starts_with("the kernel refused")
}

fn describe(k: Knobs) -> String {
    format!("napi_defer_hard_irqs {}, gro_flush_timeout {} ns", k.defer_hard_irqs, k.gro_flush_timeout_ns)
}
