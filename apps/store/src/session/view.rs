//! What CLIENT LIST shows of a connection, kept where every engine can read it: the
//! connection's engine writes a few plain counters as it goes (no lock per request), and a
//! CLIENT LIST on any engine reads them.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// One connection, as CLIENT LIST shows it.
#[derive(Debug)]
pub struct ClientView {
    /// CLIENT ID's number.
    pub id: u64,
    /// The peer, `ip:port`.
    pub addr: String,
    /// The store's end, `ip:port`.
    pub laddr: String,
    /// When it connected, Unix ms.
    pub created_ms: i64,
    /// When it last sent a command, Unix ms.
    pub last_ms: AtomicI64,
    /// Its database.
    pub db: AtomicUsize,
    /// Its last command ([`crate::command::id_of`]).
    pub cmd: AtomicUsize,
    /// Commands queued in MULTI (-1: not in one).
    pub multi: AtomicI64,
    /// Bytes received and not yet handled.
    pub qbuf: AtomicUsize,
    /// Reply bytes waiting to go out.
    pub omem: AtomicUsize,
    /// It is a replica being fed the stream.
    pub replica: AtomicBool,
    /// CLIENT SETNAME's name.
    pub name: Mutex<Option<Vec<u8>>>,
    /// CLIENT KILL chose it: its engine closes it.
    pub killed: AtomicBool,
}

impl ClientView {
    /// A connection `id` from `addr` to `laddr`, made at `now_ms`.
    pub fn new(id: u64, addr: String, laddr: String, now_ms: i64) -> ClientView {
        ClientView {
            id,
            addr,
            laddr,
            created_ms: now_ms,
            last_ms: AtomicI64::new(now_ms),
            db: AtomicUsize::new(0),
            cmd: AtomicUsize::new(usize::MAX),
            multi: AtomicI64::new(-1),
            qbuf: AtomicUsize::new(0),
            omem: AtomicUsize::new(0),
            replica: AtomicBool::new(false),
            name: Mutex::new(None),
            killed: AtomicBool::new(false),
        }
    }

    /// Its line of CLIENT LIST, as Redis 7.0 writes one (fields the store has no counterpart
    /// for are 0, as Redis shows them for an idle connection).
    pub fn line(&self, now_ms: i64) -> String {
        let r = |a: &AtomicUsize| a.load(Ordering::Relaxed);
        let name = self.name.lock().map(|n| n.clone().unwrap_or_default()).unwrap_or_default();
        let multi = self.multi.load(Ordering::Relaxed);
        let flags = if self.replica.load(Ordering::Relaxed) {
            "S"
        } else if multi >= 0 {
            "x"
        } else {
            "N"
        };
        let cmd = crate::command::name_of(r(&self.cmd));
        format!(
            "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags={flags} db={} sub=0 psub=0 ssub=0 multi={multi} \
             qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem={} tot-mem=0 events=r cmd={cmd} \
             user=default redir=-1 resp=2\n",
            self.id,
            self.addr,
            self.laddr,
            String::from_utf8_lossy(&name),
            (now_ms - self.created_ms).max(0) / 1000,
            (now_ms - self.last_ms.load(Ordering::Relaxed)).max(0) / 1000,
            r(&self.db),
            r(&self.qbuf),
            r(&self.omem),
        )
    }
}
