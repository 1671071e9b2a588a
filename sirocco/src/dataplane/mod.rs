//! Sets up a dataplane on an interface and runs one engine per queue: the control-plane
//! steps every command shares, each in its own module — [`open`] (privilege, interface,
//! filter, grants, sockets), [`engines`] (spawn the pinned engine threads, watch them until
//! it is time to stop, collect what they return) and [`report`] (counters as text and JSON).

mod args;
pub mod busy_poll;
pub mod control;
mod engines;
pub mod metrics;
mod open;
pub mod report;

pub use args::DataplaneArgs;

use engine::{Counters, Service};
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;
use wire::{Ipv4Addr, Ipv6Addr};

/// Options every dataplane command takes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Interface name.
    pub iface: String,
    /// IPv4 address served, if any.
    pub addr: Option<Ipv4Addr>,
    /// IPv6 address served, if any.
    pub addr6: Option<Ipv6Addr>,
    /// Queues to serve (default: all of the interface's).
    pub queues: Option<u32>,
    /// Receive batch bound.
    pub batch: usize,
    /// Print counters every second.
    pub stats: bool,
    /// Write a pcap of what the dataplane receives and sends.
    pub pcap: Option<PathBuf>,
    /// CPUs to pin engines to, in queue order (default: queue i on the i-th allowed CPU).
    pub cpus: Option<Vec<usize>>,
    /// Force AF_XDP copy mode.
    pub force_copy: bool,
    /// Print nothing but errors while running.
    pub quiet: bool,
    /// Empty receives an engine yields through (or busy-polls through) before sleeping in
    /// poll().
    pub idle_spins: u32,
    /// Preferred busy polling (`--busy-poll`).
    pub busy_poll: busy_poll::BusyPollMode,
    /// Frames dropped on purpose, per million, each way (a testing aid).
    pub loss_ppm: u32,
    /// Frames added to each UMEM beyond what RX and TX need (pinned by the application).
    pub extra_frames: usize,
    /// Bytes of each UMEM lent to the application beyond its frames (stream buffers).
    pub lend: usize,
    /// Ask `sirocco ctl` for the interface instead of attaching to it.
    pub ctl: Option<CtlOptions>,
    /// Serve the counters as Prometheus metrics on this kernel socket.
    pub metrics: Option<std::net::SocketAddr>,
    /// The control socket (`sirocco top`, `sirocco ss`), if not the default.
    pub control: Option<PathBuf>,
    /// How the server's TCP connections behave (`--tcp-cc`).
    pub tcp: tcp::Config,
    /// Answers given in the XDP program (DNS), if the command asks for them.
    pub driver_answers: Option<DriverAnswers>,
}

/// What a command answering in the XDP program asks of the dataplane: the UDP port whose
/// queries the program may answer, and what to do with its answer tables once attached.
#[derive(Clone)]
pub struct DriverAnswers {
    /// The UDP port.
    pub port: u16,
    /// How large the program's tables are made.
    pub capacity: io::dns_answers::Capacity,
    /// Given the tables as soon as the filter is attached (before the engines start).
    pub attached: Arc<dyn Fn(io::dns_answers::DnsMaps) + Send + Sync>,
}

impl std::fmt::Debug for DriverAnswers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DriverAnswers {{ port: {} }}", self.port)
    }
}

/// How to ask `sirocco ctl` for a grant (`--ctl`).
#[derive(Debug, Clone)]
pub struct CtlOptions {
    /// The daemon's control socket.
    pub socket: PathBuf,
    /// The application's name among the grants [default: COMMAND-PORT].
    pub app: Option<String>,
    /// Packets per second to ask for.
    pub pps: Option<u64>,
    /// Bits per second to ask for.
    pub bps: Option<u64>,
}

impl Options {
    /// The IPv4 address, for what is served over IPv4 only so far (`what` names it).
    pub fn addr4(&self, what: &str) -> Result<Ipv4Addr, String> {
        self.addr.ok_or_else(|| format!("{what} needs an IPv4 --addr (it is not served over IPv6 yet)"))
    }
}

/// What the engines return when they stop.
pub struct Outcome<A> {
    /// Per-engine counters and application state, in queue order.
    pub engines: Vec<(Counters, A)>,
    /// Per-socket kernel statistics (drops for a full RX ring or an empty fill ring).
    pub xsk: Vec<io::xsk::XskStats>,
    /// Packets the XDP filter redirected to sirocco and passed to the kernel.
    pub filter_verdicts: (u64, u64),
    /// Frames written to the capture.
    pub captured: Option<u64>,
}

impl<A> Outcome<A> {
    /// Counters summed over engines.
    pub fn total(&self) -> Counters {
        let mut t = Counters::default();
        for (c, _) in &self.engines {
            t.add(c);
        }
        t
    }

    /// The applications, in queue order.
    pub fn apps(&self) -> impl Iterator<Item = &A> {
        self.engines.iter().map(|(_, a)| a)
    }
}

/// When to stop (besides SIGINT/SIGTERM).
pub enum Until {
    /// Only on a signal.
    Signal,
    /// After this long, or earlier on a signal.
    Elapsed(Duration),
    /// When the counter reaches zero (the applications count themselves down when they are
    /// finished), after at most this long, or earlier on a signal.
    CountedDown(Arc<AtomicUsize>, Duration),
}

/// A protocol/port pair to grant on the served address (port 0: all ports).
pub type Grant = (u8, u16);

/// Sets up the interface and runs `make_app(queue)` on one engine per queue until `until`.
pub fn run<A, F>(opts: &Options, grants: &[Grant], make_app: F, until: Until, what: &str) -> Result<Outcome<A>, String>
where
    A: Service + Send + 'static,
    F: FnMut(u32) -> A,
{
    // Bound first: a port in use is one error line before the interface is touched.
    let metrics = opts.metrics.map(|a| metrics::Endpoint::bind(a, what)).transpose()?;
    // A control socket asked for must be had; the default one only if its folder can be
    // written (not by an unprivileged server behind sirocco ctl).
    let control = match &opts.control {
        Some(p) => Some(control::Control::bind(p, what)?),
        None => control::Control::bind(&control::default_path(what), what).ok(),
    };
    let opened = open::open(opts, grants, what)?;
    // From here on, returning drops the filter, which detaches it: no error leaves it behind.
    let running = engines::spawn(opened, opts, make_app, metrics, control)?;
    running.watch(opts, until);
    running.collect(opts.quiet)
}
