//! What a server sends the daemon: one JSON object per message. Parsing says exactly what
//! is wrong, for the refusal the server prints.
//!
//! `{"op":"grant","app":"dns1","addr":"198.18.0.53","flows":["udp/53","tcp/53"],"queues":1,"pps":100000}`
//! (a flow is `PROTO/PORT` or `PROTO/LOW-HIGH`, at most four; one flow may also be given as
//! `"proto":"udp","port":53`; optional: `"bps"`; `"memory"`, the packet memory per queue in bytes, and `"lend"`,
//! how much of it is lent to storage buffers rather than cut into frames)
//! `{"op":"status"}` · `{"op":"revoke","app":"dns1"}`

use crate::{Flow, Proto, Want, MAX_FLOWS};
use serde_json::Value;

/// A request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Ask for a grant.
    Grant(Want),
    /// List applications, grants and counters.
    Status,
    /// End an application's grant.
    Revoke(String),
}

/// Longest request accepted.
pub const MAX_REQUEST: usize = 4096;

fn field<'a>(v: &'a Value, k: &str) -> Result<&'a Value, String> {
    v.get(k).ok_or_else(|| format!("\"{k}\" is missing"))
}

/// The request a server sends for `w` (what [`parse`] reads back as `Request::Grant(w)`).
pub fn grant_request(w: &Want) -> Value {
    let mut v = serde_json::json!({
        "op": "grant", "app": w.app, "addr": w.addr.to_string(),
        "flows": w.flows.iter().map(Flow::to_string).collect::<Vec<_>>(),
        "queues": w.queues, "memory": w.memory, "lend": w.lend,
    });
    if let Some(p) = w.pps {
        v["pps"] = p.into();
    }
    if let Some(b) = w.bps {
        v["bps"] = b.into();
    }
    v
}

/// Parses one request.
pub fn parse(bytes: &[u8]) -> Result<Request, String> {
    if bytes.len() > MAX_REQUEST {
        return Err(format!("a request is at most {MAX_REQUEST} bytes"));
    }
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("the request is not JSON: {e}"))?;
    if !v.is_object() {
        return Err("the request must be a JSON object".into());
    }
    let text = |k: &str| -> Result<String, String> {
        field(&v, k)?.as_str().map(str::to_string).ok_or_else(|| format!("\"{k}\" must be a string"))
    };
    let num = |k: &str, lo: u64, hi: u64| -> Result<Option<u64>, String> {
        match v.get(k) {
            None => Ok(None),
            Some(x) => x
                .as_u64()
                .filter(|n| (lo..=hi).contains(n))
                .map(Some)
                .ok_or_else(|| format!("\"{k}\" must be a number from {lo} to {hi}")),
        }
    };
    match text("op")?.as_str() {
        "status" => Ok(Request::Status),
        "revoke" => Ok(Request::Revoke(text("app")?)),
        "grant" => {
            let app = text("app")?;
            if app.is_empty()
                || app.len() > 32
                || !app.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err("\"app\" must be 1 to 32 letters, digits, '-' or '_'".into());
            }
            let addr = text("addr")?.parse().map_err(|_| "\"addr\" must be an IPv4 address".to_string())?;
            let flows = match v.get("flows") {
                Some(f) => {
                    let list = f.as_array().ok_or("\"flows\" must be a list of PROTO/PORT or PROTO/LOW-HIGH")?;
                    if list.is_empty() || list.len() > MAX_FLOWS {
                        return Err(format!("\"flows\" must hold 1 to {MAX_FLOWS} flows"));
                    }
                    let flows = list
                        .iter()
                        .map(|f| {
                            f.as_str().ok_or("a flow must be a string").map_err(str::to_string).and_then(Flow::parse)
                        })
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| format!("\"flows\": {e}"))?;
                    for (i, a) in flows.iter().enumerate() {
                        if let Some(b) = flows[..i].iter().find(|b| b.overlaps(a)) {
                            return Err(format!("\"flows\": {a} overlaps {b}"));
                        }
                    }
                    flows
                }
                None => {
                    let proto = Proto::parse(&text("proto")?).ok_or("\"proto\" must be \"udp\" or \"tcp\"")?;
                    vec![Flow::port(proto, num("port", 1, 65535)?.ok_or("\"port\" is missing")? as u16)]
                }
            };
            // A grant's sockets and memory files travel in one message of at most 16.
            let queues = num("queues", 1, 8)?.unwrap_or(1) as u32;
            let memory = num("memory", 1 << 22, 4 << 30)?.unwrap_or(crate::DEFAULT_QUEUE_MEMORY);
            // At least 1024 frames of 4 KiB stay frames.
            let lend = num("lend", 0, memory - (1 << 22))?.unwrap_or(0);
            Ok(Request::Grant(Want {
                app,
                addr,
                flows,
                queues,
                // The transmit buckets count in nanoseconds of rate: these bounds keep them in
                // 64 bits.
                pps: num("pps", 1, 1_000_000_000)?,
                bps: num("bps", 1, 100_000_000_000)?,
                memory,
                lend,
            }))
        }
        op => Err(format!("no op '{op}' (grant, status, revoke)")),
    }
}

#[cfg(test)]
mod tests;
