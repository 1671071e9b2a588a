//! sirocco as a secondary (RFC 1034 section 4.3.5, RFC 5936, RFC 1996): zones got from a
//! primary by AXFR over sirocco's own TCP, checked by their SOA serial when the SOA's
//! refresh timer runs out or the primary sends a NOTIFY, retried on failure, and no longer
//! served once the expire timer runs out without a successful check.
//!
//! Three parts share a [`Secondaries`]: every engine's server takes NOTIFYs, engine 0's
//! [`Refresher`] opens the connections (each a [`XfrIn`]), and the loader (off the engines)
//! turns a finished transfer into a compiled zone and publishes it, so the old version is
//! served until the new one is complete.

use crate::zone::Record;
use dns::name::{wire_ends_with, Name};
use dns::tsig::{self, Chain, Key, Mac};
use dns::{class, rtype, HEADER_LEN};
use engine::{Duration, Instant};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use wire::IpAddr;

/// The most a transfer may bring (record data as kept), so that a primary cannot exhaust
/// memory.
pub const MAX_ZONE_BYTES: usize = 1 << 30;

/// A zone served as a secondary.
#[derive(Debug, Clone)]
pub struct SecondarySpec {
    /// The zone's name, lowercase wire form.
    pub origin: Vec<u8>,
    /// Its primaries (address, port), tried in turn.
    pub primaries: Vec<(IpAddr, u16)>,
    /// The key its queries are signed with and its answers and NOTIFYs must be.
    pub key: Option<Key>,
}

/// One change of an incremental transfer: records deleted, then records added.
pub type Change = (Vec<Record>, Vec<Record>);

/// What the refresher tells the loader.
#[derive(Debug)]
pub enum Event {
    /// A new version arrived whole.
    Transferred {
        /// The zone.
        origin: Vec<u8>,
        /// Its serial.
        serial: u32,
        /// Every record, the SOA once.
        records: Vec<Record>,
        /// From which primary.
        from: (IpAddr, u16),
    },
    /// A new version arrived as changes to the one served (IXFR).
    Changed {
        /// The zone.
        origin: Vec<u8>,
        /// Its serial.
        serial: u32,
        /// Per change: records deleted, records added (the SOAs among them).
        changes: Vec<Change>,
        /// From which primary.
        from: (IpAddr, u16),
    },
    /// The zone expired: no primary answered for the SOA's expire time.
    Expired {
        /// The zone.
        origin: Vec<u8>,
    },
}

/// One secondary zone as the engines and the loader share it. A zone removed (a catalog no
/// longer lists it) keeps its slot, marked, so that every index stays what it was.
#[derive(Debug)]
pub struct Slot {
    /// What the zone is.
    pub spec: SecondarySpec,
    /// The version already loaded (from its file) when it was added, if any.
    initial: Option<(u32, Timers)>,
    notified: AtomicBool,
    /// The loader could not apply changes: transfer the whole zone next.
    resync: AtomicBool,
    removed: AtomicBool,
}

impl Slot {
    /// The zone is no longer served as a secondary.
    pub fn removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }
}

/// The secondary zones and what passes between engines and the loader. Zones are added and
/// removed while serving (members of catalog zones); an index names one zone for good.
#[derive(Debug)]
pub struct Secondaries {
    slots: RwLock<Vec<Arc<Slot>>>,
    events: Mutex<Vec<Event>>,
    /// Set when events wait: the loader wakes up for them.
    pub wake: Arc<AtomicBool>,
}

impl Secondaries {
    /// The shared state of `zones`, of which the versions `initial` (by index) are loaded.
    pub fn new(zones: Vec<SecondarySpec>, initial: &[Option<(u32, Timers)>]) -> Arc<Secondaries> {
        let s = Arc::new(Secondaries { slots: RwLock::default(), events: Mutex::default(), wake: Arc::default() });
        for (i, z) in zones.into_iter().enumerate() {
            s.add(z, initial.get(i).copied().flatten());
        }
        s
    }

    fn slots(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Slot>>> {
        self.slots.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves `spec` as a secondary too, its version `initial` already loaded; returns its
    /// index. Engine 0 checks it at its next look.
    pub fn add(&self, spec: SecondarySpec, initial: Option<(u32, Timers)>) -> usize {
        let slot = Slot {
            spec,
            initial,
            notified: AtomicBool::new(false),
            resync: AtomicBool::new(false),
            removed: AtomicBool::new(false),
        };
        let mut slots = self.slots.write().unwrap_or_else(|p| p.into_inner());
        slots.push(Arc::new(slot));
        slots.len() - 1
    }

    /// Stops serving the zone `origin` as a secondary: no more checks, its transfers under
    /// way are dropped.
    pub fn remove(&self, origin: &[u8]) {
        if let Some((_, slot)) = self.find(origin) {
            slot.removed.store(true, Ordering::Release);
        }
    }

    /// How many zones are served as secondaries.
    pub fn len(&self) -> usize {
        self.slots().iter().filter(|s| !s.removed()).count()
    }

    /// No zone is served as a secondary.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The zone `origin` (any case), with its index.
    pub fn find(&self, origin: &[u8]) -> Option<(usize, Arc<Slot>)> {
        let slots = self.slots();
        let i = slots.iter().position(|z| !z.removed() && z.spec.origin.eq_ignore_ascii_case(origin))?;
        Some((i, slots[i].clone()))
    }

    fn slot(&self, i: usize) -> Arc<Slot> {
        self.slots()[i].clone()
    }

    /// A primary told of a new version of zone `i`: engine 0 checks it soon.
    pub fn notify(&self, i: usize) {
        self.slot(i).notified.store(true, Ordering::Release);
    }

    /// The changes to zone `i` did not apply to the version served: engine 0 transfers the
    /// whole zone at once.
    pub fn resync(&self, i: usize) {
        self.slot(i).resync.store(true, Ordering::Release);
        self.notify(i);
    }

    fn push(&self, e: Event) {
        self.events.lock().unwrap_or_else(|p| p.into_inner()).push(e);
        self.wake.store(true, Ordering::Release);
    }

    /// The events waiting, oldest first.
    pub fn take_events(&self) -> Vec<Event> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The SOA timers (RFC 1035 section 3.3.13), in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timers {
    /// Between checks.
    pub refresh: u32,
    /// Between tries after a failed check.
    pub retry: u32,
    /// How long the zone is served without a successful check.
    pub expire: u32,
}

impl Timers {
    /// Before any SOA is known: try soon and often.
    const FIRST: Timers = Timers { refresh: 5, retry: 5, expire: u32::MAX };

    /// The serial and timers of SOA record data `rdata`.
    pub fn of_soa(rdata: &[u8]) -> Option<(u32, Timers)> {
        let mut at = 0;
        for _ in 0..2 {
            at = Name::read(rdata, at).ok()?.1;
        }
        if rdata.len() != at + 20 {
            return None;
        }
        let word = |i: usize| {
            u32::from_be_bytes([rdata[at + 4 * i], rdata[at + 4 * i + 1], rdata[at + 4 * i + 2], rdata[at + 4 * i + 3]])
        };
        Some((word(0), Timers { refresh: word(1), retry: word(2), expire: word(3) }))
    }

    fn secs(v: u32) -> Duration {
        // Knot's bounds: at least 2 s between tries, at most a day between checks.
        Duration::from_secs(u64::from(v.clamp(2, 86_400)))
    }
}

/// Serial number arithmetic (RFC 1982): `a` is newer than `b`.
pub fn newer(a: u32, b: u32) -> bool {
    a != b && (a.wrapping_sub(b) as i32) > 0
}

/// How a check ended.
#[derive(Debug)]
pub enum Outcome {
    /// The primary has the version served (or an older one).
    UpToDate {
        /// The primary's serial.
        serial: u32,
        /// Its SOA's timers.
        timers: Timers,
    },
    /// A newer version arrived whole.
    Transferred {
        /// Its serial.
        serial: u32,
        /// Its SOA's timers.
        timers: Timers,
        /// Every record, the SOA once.
        records: Vec<Record>,
    },
    /// A newer version arrived as changes to the one served.
    Incremental {
        /// Its serial.
        serial: u32,
        /// Its SOA's timers.
        timers: Timers,
        /// The changes, oldest first.
        changes: Vec<Change>,
    },
    /// The check failed: why.
    Failed(String),
}

/// What was counted.
#[derive(Debug, Default, Clone, Copy)]
pub struct SecondaryStats {
    /// Checks of a primary's serial.
    pub checks: u64,
    /// Checks that found the version served current.
    pub up_to_date: u64,
    /// Versions transferred (whole or as changes).
    pub transferred: u64,
    /// Of those, versions that came as changes (IXFR).
    pub incremental: u64,
    /// Checks or transfers that failed.
    pub failed: u64,
    /// Zones that expired.
    pub expired: u64,
}

#[derive(Debug)]
struct ZoneState {
    slot: Arc<Slot>,
    serial: Option<u32>,
    timers: Timers,
    due: Instant,
    /// The last successful check (expiry counts from it).
    last_ok: Option<Instant>,
    busy: bool,
    /// A NOTIFY came while busy: check again right after.
    again: bool,
    primary: usize,
}

/// Engine 0's side: when to check which zone, with which primary.
#[derive(Debug)]
pub struct Refresher {
    shared: Arc<Secondaries>,
    zones: Vec<ZoneState>,
    next_id: u16,
    /// Counters.
    pub stats: SecondaryStats,
    /// The last failure, for the log at exit.
    pub last_error: Option<String>,
}

/// A check to start: zone `zone` at `primary`.
#[derive(Debug, Clone, Copy)]
pub struct Job {
    /// The zone's index.
    pub zone: usize,
    /// The primary to ask.
    pub primary: (IpAddr, u16),
}

impl Refresher {
    /// Checks the zones of `shared`, those there now and those added later: each is checked
    /// at the first call of [`Refresher::due`] that sees it.
    pub fn new(shared: Arc<Secondaries>) -> Refresher {
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.subsec_nanos());
        let stats = SecondaryStats::default();
        Refresher { shared, zones: Vec::new(), next_id: seed as u16, stats, last_error: None }
    }

    /// Takes the zones added since the last look, their timers set from the engine's clock:
    /// a version loaded from a file expires counting from now.
    fn sync(&mut self, now: Instant) {
        let slots = self.shared.slots();
        for slot in &slots[self.zones.len()..] {
            let known = slot.initial;
            self.zones.push(ZoneState {
                slot: slot.clone(),
                serial: known.map(|k| k.0),
                timers: known.map_or(Timers::FIRST, |k| k.1),
                due: now,
                last_ok: known.map(|_| now),
                busy: false,
                again: false,
                primary: 0,
            });
        }
    }

    /// The next check due now, if any (the zone is then busy until [`Refresher::finished`]).
    pub fn due(&mut self, now: Instant) -> Option<Job> {
        self.sync(now);
        for (i, z) in self.zones.iter_mut().enumerate() {
            if z.slot.removed() {
                continue;
            }
            if z.slot.resync.swap(false, Ordering::AcqRel) {
                z.serial = None;
            }
            if z.slot.notified.swap(false, Ordering::AcqRel) {
                if z.busy {
                    z.again = true;
                } else {
                    z.due = now;
                }
            }
            if z.busy || z.due > now {
                continue;
            }
            z.busy = true;
            self.stats.checks += 1;
            let spec = &z.slot.spec;
            return Some(Job { zone: i, primary: spec.primaries[z.primary % spec.primaries.len()] });
        }
        None
    }

    /// The connection state for `job`: its queries, and what it knows.
    pub fn start(&mut self, job: Job) -> XfrIn {
        // Unpredictable enough over TCP, where the peer is also bound by the handshake.
        self.next_id = self.next_id.wrapping_mul(0x6255).wrapping_add(0x3619);
        let z = &self.zones[job.zone];
        XfrIn::new(job.zone, &z.slot.spec.origin, z.slot.spec.key.clone(), z.serial, self.next_id)
    }

    /// Zone `zone`'s check ended with `outcome` at `now`.
    pub fn finished(&mut self, now: Instant, zone: usize, outcome: Outcome) {
        let z = &mut self.zones[zone];
        z.busy = false;
        if z.slot.removed() {
            return;
        }
        let spec = &z.slot.spec;
        let from = spec.primaries[z.primary % spec.primaries.len()];
        match outcome {
            Outcome::UpToDate { timers, .. } => {
                self.stats.up_to_date += 1;
                (z.timers, z.last_ok) = (timers, Some(now));
                z.due = now + Timers::secs(timers.refresh);
            }
            Outcome::Transferred { serial, timers, records } => {
                self.stats.transferred += 1;
                (z.serial, z.timers, z.last_ok) = (Some(serial), timers, Some(now));
                z.due = now + Timers::secs(timers.refresh);
                self.shared.push(Event::Transferred { origin: spec.origin.clone(), serial, records, from });
            }
            Outcome::Incremental { serial, timers, changes } => {
                self.stats.transferred += 1;
                self.stats.incremental += 1;
                (z.serial, z.timers, z.last_ok) = (Some(serial), timers, Some(now));
                z.due = now + Timers::secs(timers.refresh);
                self.shared.push(Event::Changed { origin: spec.origin.clone(), serial, changes, from });
            }
            Outcome::Failed(why) => {
                self.stats.failed += 1;
                self.last_error = Some(why);
                // The next primary, after the retry time.
                z.primary += 1;
                z.due = now + Timers::secs(z.timers.retry);
            }
        }
        if std::mem::take(&mut z.again) {
            z.due = now;
        }
    }

    /// Stops serving zones whose expire time passed since their last successful check.
    pub fn expire(&mut self, now: Instant) {
        self.sync(now);
        for z in &mut self.zones {
            let Some(ok) = z.last_ok.filter(|_| !z.slot.removed()) else { continue };
            if z.serial.is_some() && now >= ok + Timers::secs(z.timers.expire) {
                self.stats.expired += 1;
                (z.serial, z.last_ok) = (None, None);
                self.shared.push(Event::Expired { origin: z.slot.spec.origin.clone() });
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Soa,
    Xfr,
    Done,
}

/// What the transfer's answer turned out to be (RFC 1995 section 4).
#[derive(Debug)]
enum Style {
    /// Only its first SOA seen.
    Unknown,
    /// The whole zone, as AXFR.
    Whole,
    /// Changes; `deleting` while in a change's deletions.
    Changes { deleting: bool, changes: Vec<Change> },
}

/// One check on a TCP connection to a primary: an SOA query, then, if the primary's serial
/// is newer than the one served, on the same connection an IXFR query (with the serial
/// served) or, with nothing served yet, an AXFR query. The answer, the whole zone or the
/// changes since the serial served, is gathered until its closing SOA.
#[derive(Debug)]
pub struct XfrIn {
    /// The zone's index.
    pub zone: usize,
    origin: Vec<u8>,
    key: Option<Key>,
    known: Option<u32>,
    phase: Phase,
    id: u16,
    /// The MAC to check the next message against, and whether it is the query's.
    mac: Option<(Mac, bool)>,
    input: Vec<u8>,
    records: Vec<Record>,
    style: Style,
    bytes: usize,
    soa: Option<(u32, Timers)>,
}

impl XfrIn {
    /// A check of zone `zone` (`origin`, lowercase wire), signed with `key` if any, where
    /// the version served is `known`; its queries have ID `id`.
    pub fn new(zone: usize, origin: &[u8], key: Option<Key>, known: Option<u32>, id: u16) -> XfrIn {
        XfrIn {
            zone,
            origin: origin.to_vec(),
            key,
            known,
            phase: Phase::Soa,
            id,
            mac: None,
            input: Vec::new(),
            records: Vec::new(),
            style: Style::Unknown,
            bytes: 0,
            soa: None,
        }
    }

    /// Writes the first query (SOA), framed, into `out`; `wall` is the time in seconds since
    /// the epoch (for TSIG).
    pub fn start(&mut self, wall: u64, out: &mut Vec<u8>) {
        self.query(rtype::SOA, wall, out);
    }

    fn query(&mut self, qtype: u16, wall: u64, out: &mut Vec<u8>) {
        let id = self.id.to_be_bytes();
        let ixfr = self.known.filter(|_| qtype == rtype::IXFR);
        let ns = u8::from(ixfr.is_some());
        let mut m = vec![id[0], id[1], 0, 0, 0, 1, 0, 0, 0, ns, 0, 0];
        m.extend_from_slice(&self.origin);
        m.extend(qtype.to_be_bytes());
        m.extend(class::IN.to_be_bytes());
        if let Some(serial) = ixfr {
            // The version served, as an SOA in the authority section (RFC 1995 section 3):
            // only its serial counts, the rest is left empty.
            m.extend([0xc0, HEADER_LEN as u8, 0, 6, 0, 1, 0, 0, 0, 0, 0, 22, 0, 0]);
            m.extend(serial.to_be_bytes());
            m.extend([0; 16]);
        }
        if let Some(k) = &self.key {
            let len = m.len();
            m.resize(len + k.record_len(0), 0);
            let (end, mac) = tsig::sign(k, &mut m, len, Chain::Request, wall, 0, &[]).expect("room was made");
            m.truncate(end);
            self.mac = Some((mac, true));
        }
        out.extend((m.len() as u16).to_be_bytes());
        out.extend(m);
    }

    /// Takes `data` received; writes the next query, if one is due, into `out`. Returns the
    /// outcome once there is one (the connection is then closed).
    pub fn feed(&mut self, data: &[u8], wall: u64, out: &mut Vec<u8>) -> Option<Outcome> {
        self.input.extend_from_slice(data);
        let mut at = 0;
        let mut result = None;
        while result.is_none() && self.input.len() - at >= 2 {
            let n = usize::from(u16::from_be_bytes([self.input[at], self.input[at + 1]]));
            if self.input.len() - at - 2 < n {
                break;
            }
            let m = self.input[at + 2..at + 2 + n].to_vec();
            at += 2 + n;
            result = match self.message(&m, wall, out) {
                Ok(done) => done,
                Err(why) => Some(Outcome::Failed(why)),
            };
        }
        self.input.drain(..at);
        if result.is_some() {
            self.phase = Phase::Done;
        }
        result
    }

    /// The outcome if the connection ends now.
    pub fn cut_off(&self, why: &str) -> Outcome {
        Outcome::Failed(format!("the connection {why} before the {} was complete", self.what()))
    }

    fn what(&self) -> &'static str {
        match self.phase {
            Phase::Soa => "SOA answer",
            _ => "transfer",
        }
    }

    /// One message of the answer.
    fn message(&mut self, m: &[u8], wall: u64, out: &mut Vec<u8>) -> Result<Option<Outcome>, String> {
        if m.len() < HEADER_LEN || m[..2] != self.id.to_be_bytes() || m[2] & 0x80 == 0 {
            return Err("the primary sent a message that answers no query of ours".into());
        }
        let end = self.check_signature(m, wall)?;
        let m = &m[..end];
        let rc = m[3] & 0x0f;
        if rc != 0 {
            let name = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"];
            let name = name.get(usize::from(rc)).copied().unwrap_or(if rc == 9 { "NOTAUTH" } else { "an error" });
            return Err(format!("the primary answered the {} query with {name}", self.what()));
        }
        let be = |o: usize| -> Result<u16, String> {
            m.get(o..o + 2).map(|b| u16::from_be_bytes([b[0], b[1]])).ok_or_else(|| "a truncated message".to_string())
        };
        let (qd, an) = (be(4)?, be(6)?);
        let mut at = HEADER_LEN;
        for _ in 0..qd {
            at = Name::read(m, at).map_err(|e| format!("a bad question name: {e:?}"))?.1 + 4;
        }
        for _ in 0..an {
            let (owner, p) = Name::read(m, at).map_err(|e| format!("a bad owner name: {e:?}"))?;
            let (t, c, ttl, rdlen) =
                (be(p)?, be(p + 2)?, (u32::from(be(p + 4)?) << 16) | u32::from(be(p + 6)?), be(p + 8)?);
            let data_at = p + 10;
            at = data_at + usize::from(rdlen);
            if at > m.len() {
                return Err("a record runs past the message".into());
            }
            let rdata = uncompressed(m, data_at, at, t).ok_or("a record whose data does not parse")?;
            if c != class::IN {
                continue;
            }
            let zone_soa = t == rtype::SOA && owner.as_wire() == self.origin.as_slice();
            match self.phase {
                Phase::Soa if zone_soa => {
                    let (serial, timers) = Timers::of_soa(&rdata).ok_or("a malformed SOA")?;
                    if self.known.is_some_and(|k| !newer(serial, k)) {
                        return Ok(Some(Outcome::UpToDate { serial, timers }));
                    }
                    self.soa = Some((serial, timers));
                    self.phase = Phase::Xfr;
                    self.id = self.id.wrapping_add(1);
                    let qtype = if self.known.is_some() { rtype::IXFR } else { rtype::AXFR };
                    self.query(qtype, wall, out);
                    return Ok(None);
                }
                Phase::Soa | Phase::Done => {}
                Phase::Xfr => {
                    // Records outside the zone are left out (RFC 5936 section 3.5).
                    if !wire_ends_with(owner.as_wire(), &self.origin) {
                        continue;
                    }
                    self.bytes += owner.as_wire().len() + rdata.len() + 16;
                    if self.bytes > MAX_ZONE_BYTES {
                        return Err(format!("the zone is larger than {} MB", MAX_ZONE_BYTES >> 20));
                    }
                    let serial = if zone_soa { Some(Timers::of_soa(&rdata).ok_or("a malformed SOA")?.0) } else { None };
                    let record = (owner.as_wire().into(), t, ttl, rdata);
                    if let Some(done) = self.record(record, serial)? {
                        return Ok(Some(done));
                    }
                }
            }
        }
        match self.phase {
            Phase::Soa => Err("the primary's answer has no SOA for the zone".into()),
            // A lone SOA not newer than ours: nothing changed after all (RFC 1995 section 2).
            Phase::Xfr if matches!(self.style, Style::Unknown) && self.records.len() == 1 => {
                let (serial, timers) = self.soa.expect("set by the first record");
                match self.known {
                    Some(k) if !newer(serial, k) => Ok(Some(Outcome::UpToDate { serial, timers })),
                    _ => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }

    /// One record of the transfer's answer (`soa`: the zone's SOA, with this serial).
    fn record(&mut self, r: Record, soa: Option<u32>) -> Result<Option<Outcome>, String> {
        if self.records.is_empty() && matches!(self.style, Style::Unknown) {
            let Some(serial) = soa else { return Err("the transfer does not start with the zone's SOA".into()) };
            self.soa = Some((serial, Timers::of_soa(&r.3).expect("read above").1));
            self.records.push(r);
            return Ok(None);
        }
        let (serial, timers) = self.soa.expect("set by the first record");
        match &mut self.style {
            Style::Unknown => {
                if soa.is_some() && soa == self.known && soa != Some(serial) {
                    // The SOA of the version served: changes follow, its deletions first.
                    self.records.clear();
                    self.style = Style::Changes { deleting: true, changes: vec![(vec![r], Vec::new())] };
                    return Ok(None);
                }
                self.style = Style::Whole;
                self.record(r, soa)
            }
            Style::Whole => {
                if let Some(s) = soa {
                    if s != serial {
                        return Err("the transfer ends with another serial than it began".into());
                    }
                    let records = std::mem::take(&mut self.records);
                    return Ok(Some(Outcome::Transferred { serial, timers, records }));
                }
                self.records.push(r);
                Ok(None)
            }
            Style::Changes { deleting, changes } => {
                let last = changes.last_mut().expect("one change at least");
                match soa {
                    // A change's deletions end with the SOA of the version it makes.
                    Some(_) if *deleting => {
                        last.1.push(r);
                        *deleting = false;
                    }
                    Some(s) if s == serial => {
                        let changes = std::mem::take(changes);
                        return Ok(Some(Outcome::Incremental { serial, timers, changes }));
                    }
                    // The next change, from the version the last one made.
                    Some(_) => {
                        changes.push((vec![r], Vec::new()));
                        *deleting = true;
                    }
                    None if *deleting => last.0.push(r),
                    None => last.1.push(r),
                }
                Ok(None)
            }
        }
    }

    /// Checks the message's TSIG if the zone has a key (every message must be signed);
    /// returns where the message ends without it.
    fn check_signature(&mut self, m: &[u8], wall: u64) -> Result<usize, String> {
        let Some(key) = &self.key else { return Ok(m.len()) };
        let at = tsig::find(m).ok_or_else(|| format!("an unsigned answer (key {})", key.name()))?;
        let (mac, first) = self.mac.as_ref().expect("a signed query was sent");
        let chain = if *first { Chain::Answer(mac.as_bytes()) } else { Chain::Next(mac.as_bytes()) };
        let rec = tsig::verify_answer(key, m, at, chain, wall)?;
        self.mac = Some((rec.kept_mac(), false));
        // The counts still include the TSIG record; only the answer section is read.
        Ok(at)
    }
}

/// Record data at `m[at..end]` of type `t` with its names written out in full: the types
/// of RFC 1035 may have compressed names in their data (RFC 3597 section 4); others are
/// taken as they are.
fn uncompressed(m: &[u8], at: usize, end: usize, t: u16) -> Option<Vec<u8>> {
    // (bytes before the first name, names, whether fixed bytes follow)
    let (lead, names) = match t {
        // NS, MD, MF, CNAME, MB, MG, MR, PTR
        2 | 3 | 4 | 5 | 7 | 8 | 9 | 12 => (0, 1),
        // SOA, MINFO
        6 | 14 => (0, 2),
        // MX
        15 => (2, 1),
        _ => return Some(m[at..end].to_vec()),
    };
    let mut out = m.get(at..at + lead)?.to_vec();
    let mut p = at + lead;
    for _ in 0..names {
        let (n, next) = Name::read(&m[..end], p).ok()?;
        out.extend_from_slice(n.as_wire());
        p = next;
    }
    let tail = if t == rtype::SOA { 20 } else { 0 };
    (p + tail == end).then(|| out.extend_from_slice(&m[p..end]))?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &[u8] = b"\x07example\x03com\x00";

    fn soa(serial: u32) -> Vec<u8> {
        let mut r = b"\x02ns\xc0\x0c\x01h\xc0\x0c".to_vec();
        for v in [serial, 3600, 600, 86_400, 60] {
            r.extend(v.to_be_bytes());
        }
        r
    }

    /// An answer to query `id` (question `example.com.` of `qtype`), with `records` (owner
    /// pointer or name, type, data), framed.
    fn answer(id: u16, qtype: u16, records: &[(&[u8], u16, Vec<u8>)]) -> Vec<u8> {
        let mut m =
            [&id.to_be_bytes()[..], &[0x84, 0, 0, 1], &(records.len() as u16).to_be_bytes(), &[0, 0, 0, 0]].concat();
        m.extend_from_slice(ORIGIN);
        m.extend(qtype.to_be_bytes());
        m.extend([0, 1]);
        for (owner, t, data) in records {
            m.extend_from_slice(owner);
            m.extend(t.to_be_bytes());
            m.extend([0, 1, 0, 0, 0, 60]);
            m.extend((data.len() as u16).to_be_bytes());
            m.extend_from_slice(data);
        }
        [&(m.len() as u16).to_be_bytes()[..], &m].concat()
    }

    fn sent_query(out: &[u8]) -> (u16, u16) {
        let m = &out[2..];
        let q_end = 12 + ORIGIN.len();
        (u16::from_be_bytes([m[0], m[1]]), u16::from_be_bytes([m[q_end], m[q_end + 1]]))
    }

    #[test]
    fn serial_arithmetic() {
        assert!(newer(2, 1) && !newer(1, 2) && !newer(5, 5));
        assert!(newer(1, u32::MAX), "wraps");
        assert!(!newer(0x8000_0001, 1) && newer(0x7fff_ffff, 1));
    }

    #[test]
    fn an_up_to_date_zone_is_not_transferred() {
        let mut x = XfrIn::new(0, ORIGIN, None, Some(7), 0x100);
        let mut out = Vec::new();
        x.start(0, &mut out);
        assert_eq!(sent_query(&out), (0x100, rtype::SOA));
        out.clear();
        let got = x.feed(&answer(0x100, rtype::SOA, &[(b"\xc0\x0c", rtype::SOA, soa(7))]), 0, &mut out);
        assert!(matches!(got, Some(Outcome::UpToDate { serial: 7, timers }) if timers.refresh == 3600), "{got:?}");
        assert!(out.is_empty(), "no transfer asked");
    }

    #[test]
    fn a_newer_serial_is_transferred_whole_in_pieces() {
        let mut x = XfrIn::new(0, ORIGIN, None, Some(7), 0x100);
        let mut out = Vec::new();
        x.start(0, &mut out);
        out.clear();
        assert!(x.feed(&answer(0x100, rtype::SOA, &[(b"\xc0\x0c", rtype::SOA, soa(8))]), 0, &mut out).is_none());
        assert_eq!(sent_query(&out), (0x101, rtype::IXFR), "then IXFR on the same connection");
        let q = dns::Query::parse(&out[2..]).expect("a query");
        assert_eq!(&out[out.len() - 20..out.len() - 16], &7u32.to_be_bytes(), "the serial served in the authority");
        assert_eq!(q.qtype, rtype::IXFR);
        // This primary keeps no changes: its answer is the whole zone.
        let first = answer(
            0x101,
            rtype::AXFR,
            &[
                (b"\xc0\x0c", rtype::SOA, soa(8)),
                (b"\x03www\xc0\x0c", rtype::CNAME, b"\x03Web\xc0\x0c".to_vec()),
                (b"\x03out\x04side\x00", rtype::A, vec![198, 18, 0, 1]),
            ],
        );
        let mx = [&b"\x00\x0a"[..], ORIGIN].concat();
        let mut last = answer(0x101, rtype::AXFR, &[(b"\x03mx1\x07example\x03com\x00", rtype::MX, mx)]);
        // The second message has no question: cut it out (its names do not point into it).
        last[2 + 5] = 0;
        last.drain(2 + 12..2 + 12 + ORIGIN.len() + 4);
        let n = (last.len() - 2) as u16;
        last[..2].copy_from_slice(&n.to_be_bytes());
        let mut tail = answer(0x101, rtype::AXFR, &[(b"\xc0\x0c", rtype::SOA, soa(8))]);
        tail[2 + 5] = 1;
        let stream = [first, last, tail].concat();
        let (a, b) = stream.split_at(17);
        assert!(x.feed(a, 0, &mut out).is_none(), "a message in pieces waits");
        match x.feed(b, 0, &mut out) {
            Some(Outcome::Transferred { serial: 8, records, .. }) => {
                let owners: Vec<&[u8]> = records.iter().map(|r| &*r.0).collect();
                assert_eq!(owners, [ORIGIN, b"\x03www\x07example\x03com\x00", b"\x03mx1\x07example\x03com\x00"]);
                assert_eq!(records[1].3, b"\x03web\x07example\x03com\x00", "the name in the data written out");
                assert_eq!(records[2].3, b"\x00\x0a\x07example\x03com\x00");
                assert_eq!(Timers::of_soa(&records[0].3).map(|s| s.0), Some(8));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_incremental_answer_is_taken_as_its_changes() {
        let mut x = XfrIn::new(0, ORIGIN, None, Some(7), 0x100);
        let mut out = Vec::new();
        x.start(0, &mut out);
        assert!(x.feed(&answer(0x100, rtype::SOA, &[(b"\xc0\x0c", rtype::SOA, soa(9))]), 0, &mut out).is_none());
        let a = |last: u8| vec![198, 18, 0, last];
        let stream = answer(
            0x101,
            rtype::IXFR,
            &[
                (b"\xc0\x0c", rtype::SOA, soa(9)),
                (b"\xc0\x0c", rtype::SOA, soa(7)),
                (b"\x03www\xc0\x0c", rtype::A, a(1)),
                (b"\xc0\x0c", rtype::SOA, soa(8)),
                (b"\x03www\xc0\x0c", rtype::A, a(2)),
                (b"\xc0\x0c", rtype::SOA, soa(8)),
                (b"\xc0\x0c", rtype::SOA, soa(9)),
                (b"\x03new\xc0\x0c", rtype::A, a(3)),
                (b"\xc0\x0c", rtype::SOA, soa(9)),
            ],
        );
        match x.feed(&stream, 0, &mut out) {
            Some(Outcome::Incremental { serial: 9, changes, .. }) => {
                let shape: Vec<(Vec<u16>, Vec<u16>)> = changes
                    .iter()
                    .map(|(d, a)| (d.iter().map(|r| r.1).collect(), a.iter().map(|r| r.1).collect()))
                    .collect();
                assert_eq!(shape, [(vec![6, 1], vec![6, 1]), (vec![6], vec![6, 1])]);
                assert_eq!(changes[0].1[1].3, a(2));
                assert_eq!(&*changes[1].1[1].0, b"\x03new\x07example\x03com\x00");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_and_strangers_fail_the_check() {
        let mut x = XfrIn::new(0, ORIGIN, None, None, 0x100);
        let mut out = Vec::new();
        let mut refused = answer(0x100, rtype::SOA, &[]);
        refused[2 + 3] = 5;
        assert!(matches!(x.feed(&refused, 0, &mut out), Some(Outcome::Failed(w)) if w.contains("REFUSED")));
        let mut x = XfrIn::new(0, ORIGIN, None, None, 0x100);
        let other = answer(0x999, rtype::SOA, &[(b"\xc0\x0c", rtype::SOA, soa(1))]);
        assert!(matches!(x.feed(&other, 0, &mut out), Some(Outcome::Failed(_))), "another ID");
        let mut x = XfrIn::new(0, ORIGIN, None, None, 0x100);
        let no_soa = answer(0x100, rtype::SOA, &[]);
        assert!(matches!(x.feed(&no_soa, 0, &mut out), Some(Outcome::Failed(w)) if w.contains("no SOA")));
    }

    #[test]
    fn a_keyed_check_wants_every_answer_signed() {
        let key = Key::parse("xfr.test:c2VjcmV0c2VjcmV0c2VjcmV0").unwrap();
        let mut x = XfrIn::new(0, ORIGIN, Some(key.clone()), Some(1), 0x100);
        let mut out = Vec::new();
        x.start(1_700_000_000, &mut out);
        let keys = tsig::Keyring::new(vec![key.clone()]).unwrap();
        let at = tsig::find(&out[2..]).expect("the query is signed");
        let tsig::Check::Valid { mac, .. } = tsig::verify(&keys, &out[2..], at, 1_700_000_000) else { panic!() };
        let unsigned = answer(0x100, rtype::SOA, &[(b"\xc0\x0c", rtype::SOA, soa(1))]);
        let mut y = XfrIn::new(0, ORIGIN, Some(key.clone()), Some(1), 0x100);
        y.start(1_700_000_000, &mut Vec::new());
        assert!(
            matches!(y.feed(&unsigned, 1_700_000_000, &mut out), Some(Outcome::Failed(w)) if w.contains("unsigned"))
        );
        let mut signed = unsigned[2..].to_vec();
        let len = signed.len();
        signed.resize(len + key.record_len(0), 0);
        let (n, _) = tsig::sign(&key, &mut signed, len, Chain::Answer(mac.as_bytes()), 1_700_000_000, 0, &[]).unwrap();
        signed.truncate(n);
        let framed = [&(n as u16).to_be_bytes()[..], &signed].concat();
        assert!(matches!(x.feed(&framed, 1_700_000_000, &mut out), Some(Outcome::UpToDate { serial: 1, .. })));
    }

    #[test]
    fn the_refresher_checks_retries_on_another_primary_and_expires() {
        let a = (IpAddr::V4(wire::Ipv4Addr([198, 18, 0, 1])), 53);
        let b = (IpAddr::V4(wire::Ipv4Addr([198, 18, 0, 3])), 5353);
        let t0 = Instant::from_millis(1_000_000);
        let timers = Timers { refresh: 60, retry: 10, expire: 100 };
        let spec = SecondarySpec { origin: ORIGIN.to_vec(), primaries: vec![a, b], key: None };
        let shared = Secondaries::new(vec![spec], &[Some((5, timers))]);
        let mut r = Refresher::new(shared.clone());
        let job = r.due(t0).expect("checked at start");
        assert_eq!(job.primary, a);
        assert!(r.due(t0).is_none(), "busy");
        r.finished(t0, 0, Outcome::Failed("no answer".into()));
        assert!(r.due(t0 + Duration::from_secs(9)).is_none());
        let job = r.due(t0 + Duration::from_secs(10)).expect("retry");
        assert_eq!(job.primary, b, "the next primary");
        r.finished(t0 + Duration::from_secs(10), 0, Outcome::UpToDate { serial: 5, timers });
        shared.notify(0);
        assert!(r.due(t0 + Duration::from_secs(11)).is_some(), "a NOTIFY checks at once");
        r.finished(t0 + Duration::from_secs(11), 0, Outcome::Transferred { serial: 6, timers, records: Vec::new() });
        assert!(matches!(shared.take_events()[..], [Event::Transferred { serial: 6, from, .. }] if from == b));
        assert!(shared.wake.load(Ordering::Acquire));
        r.expire(t0 + Duration::from_secs(110));
        assert!(shared.take_events().is_empty(), "checked 99 s ago");
        r.expire(t0 + Duration::from_secs(111));
        assert!(matches!(shared.take_events()[..], [Event::Expired { .. }]));
        assert_eq!((r.stats.checks, r.stats.failed, r.stats.transferred, r.stats.expired), (3, 1, 1, 1));
    }

    #[test]
    fn zones_added_are_checked_at_once_and_removed_ones_no_more() {
        let p = (IpAddr::V4(wire::Ipv4Addr([198, 18, 0, 1])), 53);
        let spec = |o: &[u8]| SecondarySpec { origin: o.to_vec(), primaries: vec![p], key: None };
        let shared = Secondaries::new(vec![spec(ORIGIN)], &[None]);
        let mut r = Refresher::new(shared.clone());
        let t0 = Instant::from_millis(1_000_000);
        assert_eq!(r.due(t0).map(|j| j.zone), Some(0));
        let other = b"\x05other\x07example\x00";
        let i = shared.add(spec(other), None);
        assert_eq!(r.due(t0).map(|j| j.zone), Some(i), "the new zone at the next look");
        shared.remove(other);
        assert!(shared.find(other).is_none() && shared.len() == 1);
        let timers = Timers { refresh: 60, retry: 10, expire: 100 };
        r.finished(t0, i, Outcome::Transferred { serial: 1, timers, records: Vec::new() });
        assert!(shared.take_events().is_empty(), "a removed zone's transfer is dropped");
        shared.notify(i);
        r.finished(t0, 0, Outcome::Failed("no answer".into()));
        assert!(r.due(t0 + Duration::from_secs(100)).map(|j| j.zone) == Some(0), "only the zone still served");
    }
}
