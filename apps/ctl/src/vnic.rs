//! A grant's virtual NIC, where the interface cannot steer flows to queues itself: a veth
//! pair. The daemon-side end stays in the daemon's namespace, next to the shared interface;
//! its XDP program (the transmit filter) sends what the application may send out of the
//! shared interface. The application-side end lives in the daemon's private namespace, with
//! the interface's MAC address (so what the application sends carries it), sirocco's own
//! filter, and one AF_XDP socket per queue, bound here and handed to the application.

use crate::netns::PrivateNet;
use io::filter::Filter;
use io::xsk::{XskBound, XskConfig};
use std::process::Command;
use wire::{Ipv4Addr, MacAddr};

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Names of a grant's pair: the daemon side must be unique on the host (the pid keeps two
/// daemons apart), the application side only in the private namespace.
pub fn names(slot: u32) -> (String, String) {
    (format!("sc{}s{slot}", std::process::id()), format!("app{slot}"))
}

/// Makes the pair for `slot` with `queues` queues each way and the interface's `mtu`;
/// returns the daemon side's index.
pub fn create(net: &PrivateNet, slot: u32, queues: u32, mtu: usize) -> Result<u32, String> {
    let (dev, app) = names(slot);
    let (q, mtu) = (queues.to_string(), mtu.to_string());
    #[rustfmt::skip]
    ip(&[
        "link", "add", &dev, "mtu", &mtu, "numtxqueues", &q, "numrxqueues", &q, "type", "veth",
        "peer", "name", &app, "mtu", &mtu, "numtxqueues", &q, "numrxqueues", &q, "netns", net.path(),
    ])?;
    let up = ip(&["link", "set", "dev", &dev, "addrgenmode", "none", "up"]);
    match (up, io::iface::index_of(&dev)) {
        (Ok(()), Some(i)) => Ok(i),
        (r, _) => {
            delete(slot);
            Err(r.err().unwrap_or_else(|| format!("{dev} vanished")))
        }
    }
}

/// Deletes the pair of `slot` (both ends go).
pub fn delete(slot: u32) {
    let _ = ip(&["link", "del", "dev", &names(slot).0]);
}

/// What the application side is set up for.
pub struct AppSide {
    pub slot: u32,
    pub mac: MacAddr,
    pub addr: Ipv4Addr,
    /// (IP protocol number, port; 0: every port).
    pub flows: Vec<(u8, u16)>,
    pub queues: u32,
    pub xsk: XskConfig,
}

/// In the private namespace: brings the application side up with the interface's MAC,
/// attaches sirocco's filter granting the flows, and binds a socket per queue, its packet
/// memory in a memory file.
pub fn open_app_side(net: &PrivateNet, a: AppSide) -> Result<Vec<XskBound>, String> {
    net.run(move |st| {
        let (_, app) = names(a.slot);
        ip(&["link", "set", "dev", &app, "address", &a.mac.to_string(), "addrgenmode", "none", "up"])?;
        let index = io::iface::index_of(&app).ok_or_else(|| format!("{app} vanished"))?;
        let mut filter = Filter::attach(&app, index).map_err(|e| e.to_string())?;
        for &(proto, port) in &a.flows {
            filter.grant(a.addr.into(), proto, port).map_err(|e| e.to_string())?;
        }
        let mut socks = Vec::new();
        for q in 0..a.queues {
            let s = XskBound::open(index, q, a.xsk, true).map_err(|e| format!("AF_XDP socket on queue {q}: {e}"))?;
            filter.bind_queue(q, s.socket_fd()).map_err(|e| e.to_string())?;
            socks.push(s);
        }
        st.filters.insert(a.slot, filter);
        Ok(socks)
    })?
}

/// In the private namespace: drops the slot's filter.
pub fn close_app_side(net: &PrivateNet, slot: u32) {
    let _ = net.run(move |st| {
        st.filters.remove(&slot);
    });
}
