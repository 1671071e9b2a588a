//! The control socket of a running sirocco: a Unix socket on which `sirocco top` and
//! `sirocco ss` ask for the engines' counters and the TCP connections. One request line
//! (`stats` or `conns`), one JSON answer, then the connection closes. Served by the thread
//! that watches the engines; the connections are asked of the engines, which list them at
//! their next publication (within a fifth of a second).

use engine::metrics::{ConnInfo, ConnsRequest};
use engine::{Counters, Samples};
use serde_json::{json, Map, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where control sockets go unless told otherwise.
pub const DIR: &str = "/run/sirocco";

/// The default socket of a server doing `what` ("dns on port 53"): in [`DIR`], named after
/// it and the process. Sockets there of processes that are gone (killed outright) are
/// removed first.
pub fn default_path(what: &str) -> PathBuf {
    if let Ok(d) = std::fs::read_dir(DIR) {
        for e in d.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let pid = name.strip_suffix(".sock").and_then(|n| n.rsplit('.').next()).and_then(|p| p.parse::<u32>().ok());
            if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let slug: String = what.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    Path::new(DIR).join(format!("{slug}.{}.sock", std::process::id()))
}

/// What the socket answers from: the engines' published state.
pub struct Shared<'a> {
    /// Per engine, its counters.
    pub counters: &'a [Arc<Mutex<Counters>>],
    /// Per engine, its application's counters.
    pub apps: &'a [Arc<Mutex<Samples>>],
    /// Per engine, where its connections are asked for.
    pub conns: &'a [Arc<ConnsRequest>],
}

/// The control socket.
pub struct Control {
    listener: UnixListener,
    path: PathBuf,
    what: String,
    started: Instant,
}

impl Control {
    /// Listens on `path` (its folder is made if missing; a socket left by a process that is
    /// gone is replaced).
    pub fn bind(path: &Path, what: &str) -> Result<Control, String> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("control socket {}: {e}", path.display()))?;
        }
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(format!("control socket {}: another sirocco answers there", path.display()));
            }
            let _ = std::fs::remove_file(path);
        }
        let listener = UnixListener::bind(path).map_err(|e| format!("control socket {}: {e}", path.display()))?;
        listener.set_nonblocking(true).map_err(|e| format!("control socket {}: {e}", path.display()))?;
        Ok(Control { listener, path: path.to_path_buf(), what: what.to_string(), started: Instant::now() })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The listening socket, for the watching loop to sleep on.
    pub fn fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.listener)
    }

    /// Answers the requests waiting; `filter` reads the XDP filter's verdicts (two map
    /// lookups), only when someone asks: an idle server makes no system call for them.
    pub fn poll(&self, shared: &Shared<'_>, filter: &dyn Fn() -> Option<(u64, u64)>) {
        for _ in 0..8 {
            let Ok((stream, _)) = self.listener.accept() else { return };
            self.answer(stream, shared, filter());
        }
    }

    fn answer(&self, stream: UnixStream, shared: &Shared<'_>, filter: Option<(u64, u64)>) {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
        let mut line = String::new();
        let mut reader = BufReader::new(&stream);
        if reader.by_ref().take(256).read_line(&mut line).is_err() {
            return;
        }
        let answer = match line.trim() {
            "stats" => self.stats(shared, filter),
            "conns" => conns(shared),
            other => json!({ "error": format!("unknown request {other:?}: stats or conns") }),
        };
        let mut w = &stream;
        let _ = w.write_all(answer.to_string().as_bytes()).and_then(|_| w.write_all(b"\n"));
    }

    fn stats(&self, shared: &Shared<'_>, filter: Option<(u64, u64)>) -> Value {
        let cpu = engine_cpu_ns();
        let engines: Vec<Value> = shared
            .counters
            .iter()
            .enumerate()
            .map(|(q, c)| {
                let c = *c.lock().unwrap_or_else(|e| e.into_inner());
                let counters: Map<String, Value> = c.pairs().into_iter().map(|(k, v)| (k, Value::from(v))).collect();
                let mut app = Map::new();
                if let Some(a) = shared.apps.get(q) {
                    for s in a.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                        let key = match s.label {
                            Some((k, v)) => format!("{}{{{k}=\"{v}\"}}", s.name),
                            None => s.name.to_string(),
                        };
                        app.insert(key, Value::from(s.value));
                    }
                }
                json!({ "queue": q, "counters": counters, "app": app, "cpu_ns": cpu.get(q).copied().flatten() })
            })
            .collect();
        json!({
            "what": self.what,
            "pid": std::process::id(),
            "uptime_ms": self.started.elapsed().as_millis() as u64,
            "engines": engines,
            "filter": filter.map(|(r, p)| json!({ "redirected": r, "passed": p })),
        })
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Asks every engine for its connections and waits (a second at most) for the answers.
fn conns(shared: &Shared<'_>) -> Value {
    let before: Vec<u64> = shared.conns.iter().map(|r| r.answer.lock().unwrap_or_else(|e| e.into_inner()).0).collect();
    for r in shared.conns {
        r.wanted.store(true, Ordering::Release);
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut out = Vec::new();
    for (q, r) in shared.conns.iter().enumerate() {
        loop {
            let g = r.answer.lock().unwrap_or_else(|e| e.into_inner());
            if g.0 > before[q] {
                out.extend(g.1.iter().map(|c| conn_json(q, c)));
                break;
            }
            drop(g);
            if Instant::now() > deadline {
                out.push(json!({ "queue": q, "error": "the engine did not answer in time" }));
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Value::from(out)
}

fn conn_json(q: usize, c: &ConnInfo) -> Value {
    let i = &c.info;
    let addr = |(a, p): (wire::IpAddr, u16)| match a {
        wire::IpAddr::V4(_) => format!("{}:{p}", std::net::IpAddr::from(a)),
        wire::IpAddr::V6(_) => format!("[{}]:{p}", std::net::IpAddr::from(a)),
    };
    json!({
        "queue": q,
        "state": format!("{:?}", i.state),
        "local": addr(c.local),
        "remote": addr(c.remote),
        "mss": i.mss,
        "cwnd": i.cwnd,
        "snd_wnd": i.snd_wnd,
        "rcv_wnd": i.rcv_wnd,
        "rtt_us": i.srtt.map(|d| d.as_micros()),
        "rttvar_us": i.rttvar.as_micros(),
        "rto_ms": i.rto.as_millis(),
        "retrans": i.retrans,
        "bytes_sent": i.bytes_sent,
        "bytes_acked": i.bytes_acked,
        "bytes_received": i.bytes_received,
        "unacked": i.unacked,
        "held": i.held,
    })
}

/// CPU time (user and system) of each engine thread, by queue, from /proc: the threads are
/// named `sirocco-q<N>`. /proc counts in USER_HZ, which Linux fixes at 100 for user space.
fn engine_cpu_ns() -> Vec<Option<u64>> {
    let mut out: Vec<Option<u64>> = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return out };
    for t in tasks.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let Some(q) = comm.trim().strip_prefix("sirocco-q").and_then(|q| q.parse::<usize>().ok()) else { continue };
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        // Fields after the command's closing parenthesis: state is the 3rd field, utime the
        // 14th and stime the 15th of the line.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = f.get(11).and_then(|u| u.parse::<u64>().ok()).zip(f.get(12).and_then(|s| s.parse::<u64>().ok()));
        if out.len() <= q {
            out.resize(q + 1, None);
        }
        out[q] = ticks.map(|(u, s)| (u + s) * 10_000_000);
    }
    out
}

/// Sends `request` to the control socket at `path` and returns the JSON answer.
pub fn ask(path: &Path, request: &str) -> Result<Value, String> {
    let mut s = UnixStream::connect(path).map_err(|e| format!("{}: {e} (is sirocco running?)", path.display()))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    s.write_all(format!("{request}\n").as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&line).map_err(|e| format!("{}: a bad answer: {e}", path.display()))?;
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return Err(format!("{}: {e}", path.display()));
    }
    Ok(v)
}

/// The control socket to talk to: `given`, else the only one in [`DIR`].
pub fn find(given: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(p) = given {
        return Ok(p);
    }
    // In the folder and one level below (a service unit's runtime directory); sockets nobody
    // answers on were left by a process killed outright: passed over.
    let entries = |d: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(d).map(|r| r.flatten().map(|e| e.path()).collect()).unwrap_or_default()
    };
    let mut found: Vec<PathBuf> = entries(Path::new(DIR))
        .into_iter()
        .flat_map(|p| if p.is_dir() { entries(&p) } else { vec![p] })
        .filter(|p| p.extension().is_some_and(|x| x == "sock") && UnixStream::connect(p).is_ok())
        .collect();
    found.sort();
    match found.len() {
        0 => Err(format!("no sirocco is running here (no control socket in {DIR}); give --socket PATH")),
        1 => Ok(found.remove(0)),
        _ => Err(format!(
            "several sirocco processes are running; pick one with --socket: {}",
            found.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        )),
    }
}
