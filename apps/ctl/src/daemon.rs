//! The daemon: owns the interface's XDP program and the grants, and serves the control
//! socket. Each connection is served by a thread of its own; a grant lives as long as the
//! connection that asked for it, so an application that exits, crashes or is killed loses it
//! and its virtual NIC is deleted at once.

use crate::grants::Grants;
use crate::msg::Conn;
use crate::netns::PrivateNet;
use crate::policy::Policy;
use crate::request::{self, Request};
use crate::vnic::{self, AppSide};
use crate::Want;
use io::ctl_path::{CtlPath, TxRule, SLOTS};
use io::iface::Interface;
use io::xsk::{BindMode, XskBound, XskConfig};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The daemon's settings.
pub struct Settings {
    /// The interface the daemon owns.
    pub iface: String,
    /// The control socket servers ask on.
    pub socket: PathBuf,
    /// Who may have what.
    pub policy: Policy,
    /// No log line per grant.
    pub quiet: bool,
    /// Whether to stop (the caller's signal handling).
    pub stop: fn() -> bool,
}

/// A grant's resources while it is in force.
struct Held {
    slot: u32,
    dev_index: u32,
    /// Its port ranges' entries in the ingress program's table.
    ranges: Vec<u32>,
    link: io::ctl_path::EgressLink,
    /// The holder's connection, to end it on revocation.
    conn: UnixStream,
}

struct State {
    iface: Interface,
    path: CtlPath,
    net: PrivateNet,
    policy: Policy,
    grants: Grants,
    held: HashMap<u64, Held>,
    slots: Vec<bool>,
    quiet: bool,
}

type Shared = Arc<Mutex<State>>;

/// Control connections served at once (each holds a thread; a grant holds one for its life).
const MAX_CONNECTIONS: usize = 1024;

fn lock(s: &Shared) -> MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs the daemon until SIGINT or SIGTERM.
pub fn run(s: Settings) -> Result<(), String> {
    io::iface::require_root().map_err(|e| e.to_string())?;
    let iface = Interface::lookup(&s.iface).map_err(|e| e.to_string())?;
    let listener = bind(&s.socket)?;
    let net = PrivateNet::start()?;
    let path = CtlPath::attach(&iface.name, iface.index).map_err(|e| e.to_string())?;
    if !s.quiet {
        tracing::info!(
            "ctl on {} ({}), control socket {}, {} policy entr{}",
            iface.name,
            iface.mac,
            s.socket.display(),
            s.policy.entries.len(),
            if s.policy.entries.len() == 1 { "y" } else { "ies" }
        );
    }
    let state = Arc::new(Mutex::new(State {
        iface,
        path,
        net,
        policy: s.policy,
        grants: Grants::default(),
        held: HashMap::new(),
        // Slot 0 counts what belongs to no grant.
        slots: (0..SLOTS).map(|i| i == 0).collect(),
        quiet: s.quiet,
    }));
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let open = Arc::new(AtomicUsize::new(0));
    while !(s.stop)() {
        match listener.accept() {
            Ok((sock, _)) => {
                let _ = sock.set_nonblocking(false);
                if open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                    let c = Conn::new(sock);
                    let _ = c.send(&json!({ "ok": false, "error": "too many control connections" }), &[]);
                    continue;
                }
                open.fetch_add(1, Ordering::SeqCst);
                let (st, n) = (state.clone(), open.clone());
                let spawned = std::thread::Builder::new().name("sirocco-ctl-conn".into()).spawn(move || {
                    serve(st, sock);
                    n.fetch_sub(1, Ordering::SeqCst);
                });
                if spawned.is_err() {
                    open.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("control socket: {e}")),
        }
    }
    let mut st = lock(&state);
    let ids: Vec<u64> = st.held.keys().copied().collect();
    for id in ids {
        end_grant(&mut st, id, "the daemon is stopping");
    }
    drop(st);
    let _ = std::fs::remove_file(&s.socket);
    // Dropping the state detaches the programs; the namespace thread ends with the process.
    Ok(())
}

/// Binds the control socket, replacing a stale one (its daemon is gone) but never a live one.
fn bind(path: &Path) -> Result<UnixListener, String> {
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(format!("{} is served by a running sirocco ctl", path.display()));
        }
        std::fs::remove_file(path).map_err(|e| format!("removing the stale {}: {e}", path.display()))?;
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let l = UnixListener::bind(path).map_err(|e| format!("cannot bind the control socket {}: {e}", path.display()))?;
    // Any user may connect: who gets what is the policy's decision, by the peer's uid.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).map_err(|e| e.to_string())?;
    Ok(l)
}

/// Serves one connection: requests until end of stream, then the end of its grant.
fn serve(state: Shared, sock: UnixStream) {
    let uid = match io::fdpass::peer_uid(&sock) {
        Ok(u) => u,
        Err(_) => return,
    };
    let mut conn = Conn::new(sock);
    let mut mine: Option<u64> = None;
    loop {
        let line = match conn.read() {
            Ok(Some((line, _fds))) => line,
            Ok(None) | Err(_) => break,
        };
        let reply = match request::parse(&line) {
            Err(e) => Err(e),
            Ok(Request::Status) => Ok((status(&lock(&state)), Vec::new())),
            Ok(Request::Revoke(app)) => revoke(&state, uid, &app).map(|v| (v, Vec::new())),
            Ok(Request::Grant(_)) if mine.is_some() => Err("this connection holds a grant already".into()),
            Ok(Request::Grant(w)) => match grant(&state, uid, w, &conn) {
                Ok((id, v, socks)) => {
                    mine = Some(id);
                    Ok((v, socks))
                }
                Err(e) => Err(e),
            },
        };
        let sent = match reply {
            Ok((v, socks)) => {
                let fds: Vec<RawFd> =
                    socks.iter().flat_map(|s: &XskBound| [s.socket_fd(), s.memory_fd().unwrap_or(-1)]).collect();
                // The daemon's copies close when `socks` drops: the application holds the only ones.
                conn.send(&v, &fds)
            }
            Err(e) => conn.send(&json!({ "ok": false, "error": e }), &[]),
        };
        if sent.is_err() {
            break;
        }
    }
    if let Some(id) = mine {
        let mut st = lock(&state);
        end_grant(&mut st, id, "its application went away");
    }
}

fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 2 && f[2].parse() == Ok(uid)).then(|| f[0].to_string())
    })
}

/// Grants `w` to `uid` and sets up its virtual NIC; returns the grant's number, the answer
/// and the sockets to hand over.
fn grant(state: &Shared, uid: u32, w: Want, conn: &Conn) -> Result<(u64, Value, Vec<XskBound>), String> {
    let user = user_name(uid);
    let mut st = lock(state);
    let id = {
        let State { grants, policy, .. } = &mut *st;
        grants.add(policy, uid, user.as_deref(), w.clone())?
    };
    let Some(slot) = st.slots.iter().position(|used| !used) else {
        st.grants.release(id);
        return Err(format!("all {} grant slots are in use", SLOTS - 1));
    };
    let slot = slot as u32;
    st.slots[slot as usize] = true;
    match build(&mut st, id, slot, &w, conn) {
        Ok((v, socks)) => {
            if !st.quiet {
                tracing::info!(
                    "ctl: grant {id} to '{}' (uid {uid}): {} {}, {} queue(s){}",
                    w.app,
                    w.addr,
                    w.flows_text(),
                    w.queues,
                    rate_text(&w)
                );
            }
            Ok((id, v, socks))
        }
        Err(e) => {
            st.grants.release(id);
            if let Some(h) = st.held.remove(&id) {
                unroute(&mut st, &w, &h);
                st.path.detach_egress(h.dev_index, h.link);
            }
            st.slots[slot as usize] = false;
            vnic::close_app_side(&st.net, slot);
            vnic::delete(slot);
            Err(e)
        }
    }
}

/// Stops routing a grant's flows to its NIC.
fn unroute(st: &mut State, w: &Want, h: &Held) {
    for f in w.flows.iter().filter(|f| f.is_port()) {
        st.path.unroute(w.addr.into(), f.proto.number(), f.lo);
    }
    for &r in &h.ranges {
        st.path.unroute_range(r);
    }
}

fn rate_text(w: &Want) -> String {
    match (w.pps, w.bps) {
        (None, None) => String::new(),
        (p, b) => format!(
            ", at most{}{}",
            p.map(|p| format!(" {p} packets/s")).unwrap_or_default(),
            b.map(|b| format!(" {b} bits/s")).unwrap_or_default()
        ),
    }
}

/// The virtual NIC, the transmit filter and the route, in that order (traffic is routed
/// into the NIC only once its far side can take it).
fn build(st: &mut State, id: u64, slot: u32, w: &Want, conn: &Conn) -> Result<(Value, Vec<XskBound>), String> {
    let dev_index = vnic::create(&st.net, slot, w.queues, st.iface.mtu)?;
    let frames = ((w.memory - w.lend) / 4096) as usize;
    let xsk = XskConfig { frames, lend: w.lend as usize, force_copy: true, ..XskConfig::default() };
    // The application side's own filter takes a range as every port of its protocol: only
    // what the ingress program routes reaches that NIC.
    let flows = w.flows.iter().map(|f| (f.proto.number(), if f.is_port() { f.lo } else { 0 })).collect();
    let side = AppSide { slot, mac: st.iface.mac, addr: w.addr.into(), flows, queues: w.queues, xsk };
    let socks = vnic::open_app_side(&st.net, side)?;
    st.path.clear(slot);
    let flows = w.flows.iter().map(|f| (f.proto.number(), f.lo, f.hi)).collect();
    let rule = TxRule { addr: w.addr.into(), flows, pps: w.pps.unwrap_or(0), bps: w.bps.unwrap_or(0), slot };
    let link = st.path.attach_egress(&vnic::names(slot).0, dev_index, rule).map_err(|e| e.to_string())?;
    let holder = conn.sock().try_clone().map_err(|e| e.to_string())?;
    st.held.insert(id, Held { slot, dev_index, ranges: Vec::new(), link, conn: holder });
    for f in &w.flows {
        let proto = f.proto.number();
        if f.is_port() {
            st.path.route(w.addr.into(), proto, f.lo, dev_index, slot).map_err(|e| e.to_string())?;
        } else {
            let r =
                st.path.route_range(w.addr.into(), proto, (f.lo, f.hi), dev_index, slot).map_err(|e| e.to_string())?;
            st.held.get_mut(&id).expect("inserted above").ranges.push(r);
        }
    }
    if !st.iface.kernel_has(w.addr.into()).unwrap_or(true) {
        st.path.answer_arp(w.addr.into(), st.iface.mac).map_err(|e| e.to_string())?;
    }
    let queues: Vec<Value> = socks
        .iter()
        .map(|s| {
            let sh = s.shape();
            json!({
                "queue": sh.queue, "frames": sh.frames, "frame_size": sh.frame_size, "ring_size": sh.ring_size,
                "zero_copy": sh.mode == BindMode::ZeroCopy, "tx_budget": sh.tx_budget, "tx_meta": sh.tx_meta,
                "unaligned": sh.unaligned, "busy_poll": sh.busy_poll,
            })
        })
        .collect();
    let v = json!({
        "ok": true, "grant": id, "iface": st.iface.name, "vnic": vnic::names(slot).1,
        "mac": st.iface.mac.to_string(), "mtu": st.iface.mtu, "queues": queues,
    });
    Ok((v, socks))
}

/// Ends grant `id`: no more traffic either way, then its NIC goes; tells its holder why.
fn end_grant(st: &mut State, id: u64, why: &str) {
    let Some(g) = st.grants.release(id) else { return };
    let Some(h) = st.held.remove(&id) else { return };
    unroute(st, &g.want, &h);
    if !st.grants.iter().any(|o| o.want.addr == g.want.addr) {
        st.path.forget_arp(g.want.addr.into());
    }
    st.path.detach_egress(h.dev_index, h.link);
    vnic::close_app_side(&st.net, h.slot);
    vnic::delete(h.slot);
    st.slots[h.slot as usize] = false;
    let notice = Conn::new(h.conn);
    let _ = notice.send(&json!({ "event": "revoked", "why": why }), &[]);
    let _ = notice.sock().shutdown(std::net::Shutdown::Both);
    if !st.quiet {
        tracing::info!("ctl: grant {id} of '{}' ended: {why}", g.want.app);
    }
}

fn revoke(state: &Shared, uid: u32, app: &str) -> Result<Value, String> {
    let mut st = lock(state);
    let g = st.grants.iter().find(|g| g.want.app == app).cloned();
    let Some(g) = g else { return Err(format!("no application named '{app}' holds a grant")) };
    if uid != 0 && uid != g.uid {
        return Err(format!("only root or the holder (uid {}) may revoke '{app}'", g.uid));
    }
    end_grant(&mut st, g.id, "revoked");
    Ok(json!({ "ok": true, "revoked": app }))
}

fn status(st: &State) -> Value {
    let grants: Vec<Value> = st
        .grants
        .iter()
        .filter_map(|g| {
            let h = st.held.get(&g.id)?;
            let c = st.path.stats(h.slot);
            Some(json!({
                "grant": g.id, "app": g.want.app, "uid": g.uid, "addr": g.want.addr.to_string(),
                "proto": g.want.flows[0].proto.name(), "port": g.want.flows[0].lo,
                "flows": g.want.flows.iter().map(|f| f.to_string()).collect::<Vec<_>>(), "queues": g.want.queues,
                "pps": g.want.pps, "bps": g.want.bps, "vnic": vnic::names(h.slot).1,
                "rx": c.rx, "tx": c.tx, "tx_bytes": c.tx_bytes, "refused": c.refused, "limited": c.limited,
            }))
        })
        .collect();
    let programs: Vec<Value> = st
        .path
        .program_stats()
        .into_iter()
        .map(|(name, runs, ns)| json!({ "name": name, "runs": runs, "run_ns": ns }))
        .collect();
    json!({
        "ok": true, "iface": st.iface.name, "arp_answered": st.path.stats(0).arp, "grants": grants,
        "programs": programs,
    })
}
