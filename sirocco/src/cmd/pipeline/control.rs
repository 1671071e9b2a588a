//! The control socket of a running pipeline, and its client: one JSON request per connection
//! on a Unix socket, one JSON reply. The worker serves requests between two steps, when
//! nothing is in flight but what queues and delay lines hold, so a change loses no packet.
//!
//! Requests: `{"cmd":"show"}`, `{"cmd":"stats"}`, `{"cmd":"add","text":"STATEMENTS"}`,
//! `{"cmd":"remove","module":"NAME"}`. Replies: `{"ok":true,...}` or
//! `{"ok":false,"error":"..."}`.

use pipeline::change;
use pipeline::modules::Registry;
use pipeline::pipeline::Pipeline;
use serde_json::{json, Value as Json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest request accepted.
const MAX_REQUEST: u64 = 1 << 20;

pub struct Control {
    listener: UnixListener,
    path: PathBuf,
}

impl Control {
    /// Listens on `path` (a socket left by a pipeline that is gone is replaced; a live one
    /// is not). Only the owner may connect.
    pub fn bind(path: &Path) -> Result<Control, String> {
        let show = path.display();
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(format!("--control {show}: a running pipeline listens there"));
            }
            std::fs::remove_file(path).map_err(|e| format!("--control {show}: {e}"))?;
        }
        let listener = UnixListener::bind(path).map_err(|e| format!("--control {show}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| format!("--control {show}: {e}"))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("--control {show}: {e}"))?;
        Ok(Control { listener, path: path.to_path_buf() })
    }

    /// The listening socket, to sleep on with the ports.
    pub fn fd(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// Answers the connections waiting (a few at a time: the worker has packets to move).
    pub fn serve(&self, p: &mut Pipeline, reg: &Registry) {
        for _ in 0..8 {
            let Ok((conn, _)) = self.listener.accept() else { break };
            // A client that sends nothing must not hold the worker long.
            let _ = conn.set_nonblocking(false);
            let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = conn.set_write_timeout(Some(Duration::from_millis(200)));
            let mut line = String::new();
            let reply = match BufReader::new((&conn).take(MAX_REQUEST)).read_line(&mut line) {
                Ok(0) | Err(_) => json!({ "ok": false, "error": "no request (send one JSON object and a newline)" }),
                Ok(_) => handle(&line, p, reg),
            };
            let _ = writeln!(&conn, "{reply}");
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn fail(msg: impl std::fmt::Display) -> Json {
    json!({ "ok": false, "error": msg.to_string() })
}

fn handle(line: &str, p: &mut Pipeline, reg: &Registry) -> Json {
    let req: Json = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return fail(format!("the request is not JSON: {e}")),
    };
    match req["cmd"].as_str() {
        Some("show") => json!({ "ok": true, "script": change::render(p.script()), "warnings": p.warnings }),
        Some("stats") => {
            let mut v = super::report::stats_json(p);
            v["ok"] = json!(true);
            v
        }
        Some("add") => {
            let Some(text) = req["text"].as_str() else { return fail("add needs \"text\": the statements to add") };
            match change::add(p.script(), text).and_then(|s| p.reconfigure(&s, reg)) {
                Ok(()) => json!({ "ok": true, "warnings": p.warnings }),
                Err(e) => fail(e),
            }
        }
        Some("remove") => {
            let Some(m) = req["module"].as_str() else { return fail("remove needs \"module\": its name") };
            match change::remove(p.script(), m) {
                Ok(s) => match p.reconfigure(&s, reg) {
                    Ok(()) => json!({ "ok": true }),
                    Err(e) => fail(e.msg),
                },
                Err(e) => fail(e),
            }
        }
        Some(c) => fail(format!("no command '{c}' (show, stats, add, remove)")),
        None => fail("the request needs \"cmd\""),
    }
}

/// Sends one request to the pipeline at `path` and returns its reply (an error if it says
/// ok: false).
pub fn request(path: &Path, req: &Json) -> Result<Json, String> {
    let show = path.display();
    let conn = UnixStream::connect(path).map_err(|e| format!("--control {show}: {e} (is the pipeline running?)"))?;
    conn.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    writeln!(&conn, "{req}").map_err(|e| format!("--control {show}: {e}"))?;
    let mut line = String::new();
    BufReader::new(&conn).read_line(&mut line).map_err(|e| format!("--control {show}: no reply: {e}"))?;
    let v: Json = serde_json::from_str(&line).map_err(|e| format!("--control {show}: bad reply: {e}"))?;
    if v["ok"] == json!(true) {
        Ok(v)
    } else {
        Err(v["error"].as_str().unwrap_or("the pipeline refused").to_string())
    }
}
