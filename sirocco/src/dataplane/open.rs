//! The first step: check privilege and the interface, attach the XDP filter, grant the
//! flows, and open one AF_XDP socket per queue bound to it.

use super::busy_poll::{self, InForce};
use super::{Grant, Options};
use io::filter::{AttachMode, Filter};
use io::iface::{self, Interface};
use io::xsk::{BindMode, XskConfig, XskPort};

/// An interface ready to serve: the filter attached (detached when this is dropped) and a
/// socket per queue.
pub(super) struct Opened {
    pub(super) ifc: Interface,
    pub(super) owns_alone: bool,
    pub(super) owns_alone6: bool,
    /// The filter, when this process attached it (not behind `sirocco ctl`).
    pub(super) filter: Option<Filter>,
    pub(super) ports: Vec<XskPort>,
    /// The grant from `sirocco ctl`, if the ports came from it.
    pub(super) held: Option<ctl::client::Held>,
    /// Busy polling, if asked for.
    pub(super) busy: Option<InForce>,
}

pub(super) fn open(opts: &Options, grants: &[Grant], what: &str) -> Result<Opened, String> {
    if let Some(c) = &opts.ctl {
        return open_granted(opts, c, grants, what);
    }
    iface::require_root().map_err(|e| e.to_string())?;
    let ifc = Interface::lookup(&opts.iface).map_err(|e| e.to_string())?;
    let queues = opts.queues.unwrap_or(ifc.rx_queues);
    if queues == 0 || queues > ifc.rx_queues {
        return Err(format!("{} has {} receive queue(s); cannot serve {queues}", ifc.name, ifc.rx_queues));
    }
    let reading = |e: std::io::Error| format!("reading addresses of {}: {e}", ifc.name);
    let owns_alone = match opts.addr {
        Some(a) => !ifc.kernel_has(a).map_err(reading)?,
        None => false,
    };
    let owns_alone6 = match opts.addr6 {
        Some(a) => !ifc.kernel_has6(a).map_err(reading)?,
        None => false,
    };

    // The program answers DNS only where asked: without the answers it loads in a few
    // milliseconds instead of ~0.3 s (the kernel's verifier).
    let mut filter = match &opts.driver_answers {
        Some(d) => Filter::attach_sized(&ifc.name, ifc.index, d.capacity),
        None => Filter::attach(&ifc.name, ifc.index),
    }
    .map_err(|e| e.to_string())?;
    let served =
        opts.addr.map(|a| (a.into(), owns_alone)).into_iter().chain(opts.addr6.map(|a| (a.into(), owns_alone6)));
    for (addr, alone) in served {
        if alone {
            filter.own_alone(addr).map_err(|e| e.to_string())?;
        }
        for &(proto, port) in grants {
            match &opts.driver_answers {
                Some(d) if proto == wire::Protocol::UDP && port == d.port => filter.grant_dns(addr, port),
                _ => filter.grant(addr, proto, port),
            }
            .map_err(|e| e.to_string())?;
        }
    }
    if let (Some(d), Some(maps)) = (&opts.driver_answers, filter.take_dns_maps()) {
        (d.attached)(maps);
    }
    let base = XskConfig::default();
    let busy_poll = busy_poll::socket_options(opts.busy_poll, &ifc.name, opts.batch);
    let mut xcfg = XskConfig {
        force_copy: opts.force_copy,
        frames: base.frames + opts.extra_frames,
        lend: opts.lend,
        busy_poll,
        ..base
    };
    let mut ports = Vec::new();
    for q in 0..queues {
        let port = match open_socket(&ifc, q, xcfg) {
            // A kernel without multi-buffer AF_XDP (before 6.6) or unaligned chunks: the
            // lent memory goes, and what would have been sent from it is copied.
            Err(e) if xcfg.lend > 0 && q == 0 => {
                tracing::info!("{e}; sending without lending memory to the application (payloads copied)");
                xcfg.lend = 0;
                open_socket(&ifc, q, xcfg)?
            }
            r => r?,
        };
        filter.bind_queue(q, port.raw_fd()).map_err(|e| e.to_string())?;
        ports.push(port);
    }
    let busy = busy_poll::in_force(opts.busy_poll, &ifc.name, &ports)?;
    if !opts.quiet {
        let mode = ports.first().map(|p| p.mode()).unwrap_or(BindMode::Copy);
        let ownership = |alone: bool, family: &str| {
            if alone {
                format!("owned by sirocco: it answers {family} and ping")
            } else {
                "shared with the kernel".to_string()
            }
        };
        let mut said = Vec::new();
        if let Some(a) = opts.addr {
            said.push(format!("{a} ({})", ownership(owns_alone, "ARP")));
        }
        if let Some(a) = opts.addr6 {
            said.push(format!("{a} ({})", ownership(owns_alone6, "neighbour discovery")));
        }
        tracing::info!(
            "{what} on {} {}, {queues} queue(s), AF_XDP {} mode, XDP filter in {} mode, UMEM on {}, {}",
            ifc.name,
            said.join(" and "),
            if mode == BindMode::ZeroCopy { "zero-copy" } else { "copy" },
            if filter.mode() == AttachMode::Driver { "driver" } else { "generic" },
            // The worst of the queues' (they are all made alike).
            ports.iter().map(|p| p.pages()).max().unwrap_or(io::arena::Pages::Ordinary),
            busy.said,
        );
        if let Some(p) = ports.first().filter(|p| p.lent() > 0) {
            tracing::info!(
                "{} MiB of each UMEM lent to the application; packets gathered from it (multi-buffer){}",
                p.lent() >> 20,
                if p.tx_csum_offload() { ", their TCP checksum left to the kernel or NIC (TX metadata)" } else { "" }
            );
        }
    }
    Ok(Opened { ifc, owns_alone, owns_alone6, filter: Some(filter), ports, held: None, busy: Some(busy) })
}

/// Behind `sirocco ctl`: the daemon answers ARP and owns the interface; the server gets a
/// virtual NIC carrying its flows. A grant of every TCP port (port 0: a server's own
/// connections) is asked for as TCP's ephemeral port range, where their replies come back.
fn open_granted(opts: &Options, c: &super::CtlOptions, grants: &[Grant], what: &str) -> Result<Opened, String> {
    if opts.addr6.is_some() {
        return Err(format!("{what} cannot run behind sirocco ctl over IPv6 yet: give an IPv4 --addr"));
    }
    let addr = opts.addr4(what)?;
    if grants.is_empty() || grants.len() > ctl::MAX_FLOWS {
        return Err(format!("{what} cannot run behind sirocco ctl: a grant holds 1 to {} flows", ctl::MAX_FLOWS));
    }
    let mut flows = Vec::new();
    for &(proto, port) in grants {
        let proto =
            ctl::Proto::from_number(proto).ok_or_else(|| format!("{what}: sirocco ctl grants UDP and TCP only"))?;
        flows.push(match port {
            0 if proto == ctl::Proto::Tcp => {
                let (lo, hi) = tcp::Limits::default().ephemeral;
                ctl::Flow { proto, lo, hi }
            }
            0 => return Err(format!("{what} cannot run behind sirocco ctl: it needs every UDP port of its address")),
            p => ctl::Flow::port(proto, p),
        });
    }
    let cmd = std::env::args().nth(1).unwrap_or_else(|| "sirocco".into());
    let first = grants.iter().map(|g| g.1).find(|&p| p != 0).unwrap_or(0);
    let app = c.app.clone().unwrap_or_else(|| format!("{cmd}-{first}"));
    let base = XskConfig::default();
    let frames = base.frames + opts.extra_frames;
    let lend = opts.lend.next_multiple_of(2 << 20) as u64;
    let memory = (frames * base.frame_size).next_multiple_of(2 << 20) as u64 + lend;
    let want = ctl::Want {
        app: app.clone(),
        addr: addr.into(),
        flows,
        queues: opts.queues.unwrap_or(1),
        pps: c.pps,
        bps: c.bps,
        memory,
        lend,
    };
    let g = ctl::client::ask(&c.socket, &want)?;
    if !opts.quiet {
        tracing::info!(
            "{what} on {} {} through sirocco ctl (grant {} as '{app}'), {} queue(s), AF_XDP copy mode",
            g.ifc.name,
            addr,
            g.grant,
            g.ports.len()
        );
    }
    Ok(Opened {
        ifc: g.ifc,
        owns_alone: false,
        owns_alone6: false,
        filter: None,
        ports: g.ports,
        held: Some(g.held),
        busy: None,
    })
}

/// Opens the socket of queue `q` (also a pipeline's ports). A socket the last process on this queue had is torn down
/// by the kernel after that process exits; until then binding says EBUSY: wait for it a
/// bounded time.
pub(crate) fn open_socket(ifc: &Interface, q: u32, xcfg: XskConfig) -> Result<XskPort, String> {
    XskPort::open_when_free(ifc.index, q, xcfg)
        .map_err(|e| format!("opening an AF_XDP socket on {} queue {q}: {e}", ifc.name))
}
