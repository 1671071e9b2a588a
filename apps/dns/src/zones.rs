//! The zones a server is given, from load to catalog: what each zone is ([`ZoneSpec`]: a
//! file, or primaries to transfer it from), compiling them into a [`Catalog`], and the
//! versions of secondary zones received ([`Received`]): loaded from their files at start,
//! replaced by each transfer (whole or as IXFR changes) and stored back atomically, dropped
//! when they expire. The command line and config files only say what the specs are.

use crate::secondary::{Event, Secondaries, SecondarySpec, Timers};
use crate::zone::{self, Zone};
use crate::{tsig, Catalog, CompiledZone};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A zone to load: origin (if given), file, who may transfer it, whom to notify, its key;
/// or, with primaries, a zone served as a secondary (stored in the file if one is given).
#[derive(Debug, Clone, Default)]
pub struct ZoneSpec {
    /// The zone's name in text (else the file's $ORIGIN or SOA owner).
    pub origin: Option<String>,
    /// The zone file; for a secondary, where each version received is stored.
    pub file: Option<PathBuf>,
    /// Primaries, ADDR or ADDR@PORT: the zone is a secondary.
    pub primaries: Vec<String>,
    /// Addresses or prefixes that may transfer the zone.
    pub allow_transfer: Vec<String>,
    /// Secondaries to NOTIFY, ADDR or ADDR@PORT.
    pub notify: Vec<String>,
    /// The TSIG key's name.
    pub tsig_key: Option<String>,
}

impl ZoneSpec {
    /// What names the zone in errors: its file, else its name.
    pub fn label(&self) -> String {
        match (&self.file, &self.origin) {
            (Some(f), _) => f.display().to_string(),
            (None, Some(o)) => format!("zone {o}"),
            (None, None) => "a zone".into(),
        }
    }

    /// The zone's key, looked up in `keys`.
    pub fn key(&self, keys: &tsig::Keyring) -> Result<Option<tsig::Key>, String> {
        match &self.tsig_key {
            Some(name) => Ok(Some(keys.named(name).cloned().ok_or_else(|| {
                format!("{}: tsig_key {name:?}: no such key (give it with --key or [[key]])", self.label())
            })?)),
            None => Ok(None),
        }
    }

    fn is_secondary(&self) -> bool {
        !self.primaries.is_empty()
    }

    fn origin_wire(&self) -> Vec<u8> {
        origin_wire(self.origin.as_deref().unwrap_or_default())
    }
}

/// A secondary to notify or a primary (`what`): ADDR or ADDR@PORT (port 53 by default).
pub fn endpoint(s: &str, what: &str) -> Result<(wire::IpAddr, u16), String> {
    let (a, port) = match s.rsplit_once('@') {
        Some((a, p)) => {
            (a, p.parse::<u16>().ok().filter(|&p| p != 0).ok_or_else(|| format!("{what} {s:?}: bad port"))?)
        }
        None => (s, 53),
    };
    let a: std::net::IpAddr = a.parse().map_err(|_| format!("{what} {s:?}: not an address"))?;
    Ok((a.into(), port))
}

/// The secondary zones among `specs`: origin, primaries, key.
pub fn secondary_specs(specs: &[ZoneSpec], keys: &tsig::Keyring) -> Result<Vec<SecondarySpec>, String> {
    let mut out = Vec::new();
    for spec in specs.iter().filter(|s| s.is_secondary()) {
        let label = spec.label();
        let origin = spec
            .origin
            .as_deref()
            .filter(|o| !o.is_empty())
            .ok_or_else(|| format!("{label}: a zone with a primary needs its name (name = \"example.com\")"))?;
        let wire = dns::name::wire_from_text(&origin.to_ascii_lowercase())
            .map_err(|_| format!("{label}: {origin:?} is not a domain name"))?;
        let primaries = spec
            .primaries
            .iter()
            .map(|p| endpoint(p, "primary"))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{label}: {e}"))?;
        out.push(SecondarySpec { origin: wire, primaries, key: spec.key(keys)? });
    }
    Ok(out)
}

/// The lowercase wire form of a zone name given in text.
fn origin_wire(origin: &str) -> Vec<u8> {
    dns::name::wire_from_text(&origin.to_ascii_lowercase()).unwrap_or_default()
}

fn zone_name(origin: &[u8]) -> String {
    dns::Name::from_wire(origin).map(|n| n.to_string()).unwrap_or_default()
}

/// A catalog built, and a line per zone saying what it cost.
pub struct Built {
    /// The compiled zones.
    pub catalog: Catalog,
    /// Records, names, responses, bytes and times of each zone.
    pub report: Vec<String>,
}

/// Loads and compiles every zone (a secondary zone: its last version received, if any; one
/// not yet received is not served, REFUSED, until it is); the first error (naming file and
/// line) stops it.
pub fn build(specs: &[ZoneSpec], keys: tsig::Keyring, received: &Received) -> Result<Built, String> {
    if specs.is_empty() {
        return Err("no zones: give --zone FILE, --secondary NAME=PRIMARY or [[zone]] in --config".into());
    }
    let have = received.snapshot();
    let mut compiled: Vec<CompiledZone> = Vec::new();
    let mut report = Vec::new();
    for spec in specs {
        let label = spec.label();
        let t0 = Instant::now();
        let acl =
            crate::transfer::Acl::parse(&spec.allow_transfer).map_err(|e| format!("{label}: allow_transfer: {e}"))?;
        let notify = spec
            .notify
            .iter()
            .map(|n| endpoint(n, "notify"))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{label}: {e}"))?;
        let key = spec.key(&keys)?;
        let z = if spec.is_secondary() {
            match have.get(&spec.origin_wire()) {
                Some(z) => z.clone(),
                None => continue,
            }
        } else {
            let file = spec.file.as_ref().ok_or_else(|| format!("{label}: a zone needs a file or a primary"))?;
            Arc::new(zone::load(file, spec.origin.as_deref())?)
        };
        let t1 = Instant::now();
        let c = CompiledZone::compile(&z).with_transfers(&z, acl).with_notify(notify).with_key(key);
        if compiled.iter().any(|o| o.origin == c.origin) {
            return Err(format!("{label}: zone {} is given twice", c.origin));
        }
        report.push(format!(
            "zone {} from {label}: {} records, {} names, {} distinct responses, {} bytes compiled ({:.0} per name); loaded in {:.2} s, compiled in {:.2} s",
            c.origin,
            z.records,
            c.names(),
            c.responses(),
            c.memory_bytes(),
            c.memory_bytes() as f64 / c.names().max(1) as f64,
            (t1 - t0).as_secs_f64(),
            t1.elapsed().as_secs_f64()
        ));
        compiled.push(c);
    }
    Ok(Built { catalog: Catalog::new(compiled).with_keys(keys), report })
}

/// The versions of the secondary zones received so far (or loaded from their files at
/// start), by origin in lowercase wire form; shared by the reload and the start.
#[derive(Clone, Default)]
pub struct Received(Arc<Mutex<HashMap<Vec<u8>, Arc<Zone>>>>);

impl Received {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Arc<Zone>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn snapshot(&self) -> HashMap<Vec<u8>, Arc<Zone>> {
        self.map().clone()
    }

    /// Loads the files of secondary zones that have one, as the version served at start;
    /// returns each secondary's serial and timers (None: to be transferred first) and a line
    /// for each file that could not be used.
    pub fn load_stored(&self, specs: &[ZoneSpec]) -> (Vec<Option<(u32, Timers)>>, Vec<String>) {
        let (mut out, mut log) = (Vec::new(), Vec::new());
        for spec in specs.iter().filter(|s| s.is_secondary()) {
            let loaded = spec.file.as_ref().filter(|f| f.exists()).and_then(|f| {
                zone::load(f, spec.origin.as_deref())
                    .map_err(|e| log.push(format!("{e}; transferring the zone from its primary instead")))
                    .ok()
            });
            let version = loaded.and_then(|z| {
                let soa = Timers::of_soa(&z.soa()?.rdatas[0])?;
                self.map().insert(z.origin.as_wire().to_vec(), Arc::new(z));
                Some(soa)
            });
            out.push(version);
        }
        (out, log)
    }

    /// Serves `z` as the new version of the secondary zone `origin`, and stores it in the
    /// zone's file if it has one.
    fn keep(&self, z: Zone, origin: &[u8], specs: &[ZoneSpec], log: &mut Vec<String>) {
        let file = specs.iter().find(|s| s.is_secondary() && s.origin_wire() == origin).and_then(|s| s.file.clone());
        if let Some(f) = file {
            // Written whole beside it, then renamed over it: a crash leaves one version or the
            // other.
            let tmp = f.with_extension("sirocco-tmp");
            let written = std::fs::write(&tmp, zone::to_text(&z)).and_then(|_| std::fs::rename(&tmp, &f));
            if let Err(e) = written {
                log.push(format!("zone {}: could not store it in {}: {e}", zone_name(origin), f.display()));
            }
        }
        self.map().insert(origin.to_vec(), Arc::new(z));
    }

    /// Takes what the refresher reported: new versions (stored in their zone's file, if it
    /// has one), changes to apply, expired zones. Returns what happened, for the log.
    pub fn take_transfers(&self, shared: &Secondaries, specs: &[ZoneSpec]) -> Vec<String> {
        let mut log = Vec::new();
        for e in shared.take_events() {
            match e {
                Event::Transferred { origin, serial, records, from } => {
                    let name = zone_name(&origin);
                    match zone::from_records(Path::new(&name), dns::Name::from_wire(&origin).ok(), records) {
                        Ok(z) => {
                            log.push(format!(
                                "zone {name} serial {serial} transferred from {}@{}: {} records",
                                from.0, from.1, z.records
                            ));
                            self.keep(z, &origin, specs, &mut log);
                        }
                        Err(e) => {
                            log.push(format!("zone {name} serial {serial} from {}@{}: not loaded: {e}", from.0, from.1))
                        }
                    }
                }
                Event::Changed { origin, serial, changes, from } => {
                    let name = zone_name(&origin);
                    let current = self.map().get(&origin).cloned();
                    let (n, records) = (changes.len(), changes.iter().map(|c| c.0.len() + c.1.len()).sum::<usize>());
                    let next = current.ok_or_else(|| "no version to change".to_string()).and_then(|z| z.apply(changes));
                    match next {
                        Ok(z) => {
                            log.push(format!(
                                "zone {name} serial {serial} transferred from {}@{} as {n} change(s) of {records} records (IXFR)",
                                from.0, from.1
                            ));
                            self.keep(z, &origin, specs, &mut log);
                        }
                        Err(e) => {
                            log.push(format!(
                                "zone {name} serial {serial}: the changes do not apply ({e}); transferring it whole"
                            ));
                            if let Some(i) = shared.find(&origin) {
                                shared.resync(i);
                            }
                        }
                    }
                }
                Event::Expired { origin } => {
                    let name = zone_name(&origin);
                    log.push(format!("zone {name} expired: no primary answered for its expire time; not served"));
                    self.map().remove(&origin);
                }
            }
        }
        log
    }
}
