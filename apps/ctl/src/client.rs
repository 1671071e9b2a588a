//! What a server run with `--ctl PATH` does instead of attaching to the interface: it asks
//! the daemon for a grant of its flow and gets its virtual NIC's AF_XDP sockets and packet
//! memory, which it maps and runs as its own — without privileges. The connection is the
//! grant: the server keeps it open while it runs, and stops if the daemon ends it.

use crate::msg::Conn;
use io::iface::Interface;
use io::xsk::{BindMode, XskPort, XskShape};
use serde_json::{json, Value};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A grant in force: dropping it ends it.
pub struct Held {
    sock: UnixStream,
    ended: Arc<Mutex<Option<String>>>,
}

impl Held {
    /// Why the daemon ended the grant, if it did.
    pub fn ended(&self) -> Option<String> {
        self.ended.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // The watcher thread holds a clone: shutting down (not just closing) ends the
        // connection for both, and so the grant.
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
    }
}

/// The virtual NIC as the server sees it.
pub struct Granted {
    /// The application side of the virtual NIC.
    pub ifc: Interface,
    /// An AF_XDP socket per granted queue, adopted from the daemon.
    pub ports: Vec<XskPort>,
    /// The connection to the daemon, which holds the grant.
    pub held: Held,
    /// The grant's number.
    pub grant: u64,
}

fn shape(v: &Value, q: u32) -> Option<XskShape> {
    Some(XskShape {
        queue: q,
        frames: v.get("frames")?.as_u64()? as usize,
        frame_size: v.get("frame_size")?.as_u64()? as usize,
        ring_size: v.get("ring_size")?.as_u64()? as u32,
        mode: if v.get("zero_copy")?.as_bool()? { BindMode::ZeroCopy } else { BindMode::Copy },
        tx_budget: v.get("tx_budget")?.as_u64()? as u32,
        tx_meta: v.get("tx_meta").and_then(Value::as_u64).map(|m| m as u32),
        unaligned: v.get("unaligned")?.as_bool()?,
        busy_poll: v.get("busy_poll").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// Asks the daemon at `path` for grant `w`.
pub fn ask(path: &Path, w: &crate::Want) -> Result<Granted, String> {
    let sock = UnixStream::connect(path)
        .map_err(|e| format!("cannot reach sirocco ctl at {}: {e} (is the daemon running?)", path.display()))?;
    let mut conn = Conn::new(sock);
    let req = crate::request::grant_request(w);
    conn.send(&req, &[]).map_err(|e| format!("sirocco ctl: {e}"))?;
    let (line, mut fds) = conn
        .read()
        .map_err(|e| format!("sirocco ctl: {e}"))?
        .ok_or("sirocco ctl closed the connection without answering")?;
    let v: Value = serde_json::from_slice(&line).map_err(|e| format!("sirocco ctl answered nonsense: {e}"))?;
    if v["ok"] != json!(true) {
        return Err(format!("sirocco ctl refused the grant: {}", v["error"].as_str().unwrap_or("no reason given")));
    }
    let bad = || "sirocco ctl's answer lacks a field".to_string();
    let queues = v["queues"].as_array().ok_or_else(bad)?;
    if fds.len() != queues.len() * 2 {
        return Err(format!("sirocco ctl sent {} descriptors for {} queue(s)", fds.len(), queues.len()));
    }
    let mut ports = Vec::new();
    // Sockets and memory files come in pairs, in queue order.
    let mut it = fds.drain(..);
    for (q, qv) in queues.iter().enumerate() {
        let (sock, mem) = (it.next().ok_or_else(bad)?, it.next().ok_or_else(bad)?);
        let sh = shape(qv, q as u32).ok_or_else(bad)?;
        ports.push(XskPort::adopt(sock, mem, sh).map_err(|e| format!("mapping the granted socket of queue {q}: {e}"))?);
    }
    let ifc = Interface {
        name: v["iface"].as_str().ok_or_else(bad)?.to_string(),
        index: 0,
        mac: v["mac"].as_str().and_then(wire::MacAddr::parse).ok_or_else(bad)?,
        mtu: v["mtu"].as_u64().ok_or_else(bad)? as usize,
        rx_queues: queues.len() as u32,
    };
    let grant = v["grant"].as_u64().ok_or_else(bad)?;
    let ended = Arc::new(Mutex::new(None));
    let watch = conn.sock().try_clone().map_err(|e| e.to_string())?;
    let flag = ended.clone();
    std::thread::Builder::new()
        .name("sirocco-ctl-watch".into())
        .spawn(move || {
            let mut c = Conn::new(watch);
            let mut why = "the control connection ended".to_string();
            while let Ok(Some((line, _))) = c.read() {
                if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                    if let Some(w) = v["why"].as_str() {
                        why = w.to_string();
                    }
                }
            }
            *flag.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        })
        .map_err(|e| e.to_string())?;
    Ok(Granted { ifc, ports, held: Held { sock: conn.sock().try_clone().map_err(|e| e.to_string())?, ended }, grant })
}
