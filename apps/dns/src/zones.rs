//! The zones a server is given, from load to catalog: what each zone is ([`ZoneSpec`]: a
//! file, or primaries to transfer it from), compiling them into a [`Catalog`], and the
//! versions of secondary zones received ([`Received`]): loaded from their files at start,
//! replaced by each transfer (whole or as IXFR changes) and stored back atomically, dropped
//! when they expire; and the members of catalog zones, added, reset and removed as each
//! version of their catalog says. The command line and config files only say what the specs
//! are.

use crate::catalog_zone::{self, Change, Member, Owners};
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
    /// The zone is a catalog (RFC 9432): its members are served as secondaries too.
    pub catalog: Option<CatalogSpec>,
}

/// How the members of a catalog zone are served.
#[derive(Debug, Clone, Default)]
pub struct CatalogSpec {
    /// Where each member's versions are stored (`NAME.zone`) and loaded from at start; none:
    /// members are kept in memory only.
    pub member_dir: Option<PathBuf>,
    /// Settings by group name (RFC 9432 section 4.4.2); a member in none of these takes the
    /// catalog's primaries and key.
    pub groups: Vec<GroupSpec>,
}

/// The settings of the members of a catalog's group.
#[derive(Debug, Clone, Default)]
pub struct GroupSpec {
    /// The group's name, as the catalog's `group` property gives it.
    pub name: String,
    /// Its members' primaries, ADDR or ADDR@PORT (none: the catalog's).
    pub primaries: Vec<String>,
    /// Its members' TSIG key (none: the catalog's).
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

/// The secondary zones among `specs`: origin, primaries, key; the settings of catalogs'
/// groups are checked too, so that a member added later cannot fail on them.
pub fn secondary_specs(specs: &[ZoneSpec], keys: &tsig::Keyring) -> Result<Vec<SecondarySpec>, String> {
    let mut out = Vec::new();
    if let Some(s) = specs.iter().find(|s| s.catalog.is_some() && !s.is_secondary()) {
        return Err(format!("{}: a catalog zone is followed from a primary (primary = [...])", s.label()));
    }
    for spec in specs.iter().filter(|s| s.is_secondary()) {
        for g in spec.catalog.iter().flat_map(|c| &c.groups) {
            let what = |e: String| format!("{}: group {:?}: {e}", spec.label(), g.name);
            if let Some(k) = g.tsig_key.as_ref().filter(|k| keys.named(k).is_none()) {
                return Err(what(format!("tsig_key {k:?}: no such key (give it with --key or [[key]])")));
            }
            for p in &g.primaries {
                endpoint(p, "primary").map_err(what)?;
            }
        }
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

/// Creates the directories catalogs store their members in.
pub fn make_member_dirs(specs: &[ZoneSpec]) -> Result<(), String> {
    for spec in specs {
        if let Some(d) = spec.catalog.as_ref().and_then(|c| c.member_dir.as_ref()) {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: member_dir {}: {e}", spec.label(), d.display()))?;
        }
    }
    Ok(())
}

/// The lowercase wire form of a zone name given in text.
fn origin_wire(origin: &str) -> Vec<u8> {
    dns::name::wire_from_text(&origin.to_ascii_lowercase()).unwrap_or_default()
}

fn zone_name(origin: &[u8]) -> String {
    dns::Name::from_wire(origin).map(|n| n.to_string()).unwrap_or_default()
}

fn member_name(m: &Member) -> String {
    zone_name(&m.zone)
}

fn loaded(initial: Option<(u32, Timers)>) -> String {
    initial.map_or(String::new(), |(serial, _)| format!(" (serial {serial} from its file)"))
}

/// How member `m` of the catalog `catalog` is served: its group's primaries and key, else
/// the catalog's; stored in the catalog's member directory.
fn member_spec(catalog: &ZoneSpec, m: &Member) -> ZoneSpec {
    let c = catalog.catalog.as_ref().expect("a catalog");
    let group = c.groups.iter().find(|g| m.groups.contains(&g.name));
    let primaries = group.filter(|g| !g.primaries.is_empty()).map_or(&catalog.primaries, |g| &g.primaries);
    let name = zone_name(&m.zone);
    ZoneSpec {
        file: c.member_dir.as_ref().map(|d| d.join(member_file(&name))),
        origin: Some(name),
        primaries: primaries.clone(),
        tsig_key: group.and_then(|g| g.tsig_key.clone()).or(catalog.tsig_key.clone()),
        allow_transfer: catalog.allow_transfer.clone(),
        notify: catalog.notify.clone(),
        catalog: None,
    }
}

/// The file name of member zone `name` (text, with its final dot): `NAME.zone`, with every
/// byte but letters, digits, `-`, `_` and `.` written `%XX`, so that no name leaves the
/// directory or clashes with another.
fn member_file(name: &str) -> String {
    let mut out = String::new();
    for b in name.to_ascii_lowercase().bytes() {
        match b {
            b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => out.push(char::from(b)),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out.push_str("zone");
    out
}

/// A catalog built, and a line per zone saying what it cost.
pub struct Built {
    /// The compiled zones.
    pub catalog: Catalog,
    /// Records, names, responses, bytes and times of each zone.
    pub report: Vec<String>,
    /// The parsed zones, done with: freeing a million names' records takes a good part of a
    /// second, which the caller may spend elsewhere ([`Built::free_parsed_in_background`]).
    pub parsed: Vec<Arc<Zone>>,
}

impl Built {
    /// Frees the parsed zones on a thread of their own, then `after` (giving the heap's pages
    /// back): the server answers meanwhile. Where the process has one CPU the thread first
    /// calls `humble`, which makes it run only when that CPU is otherwise idle (it would take
    /// the engine's turns). Here and now for a small zone set.
    pub fn free_parsed_in_background(&mut self, humble: fn(), after: fn()) {
        let parsed = std::mem::take(&mut self.parsed);
        if parsed.iter().map(|z| z.records).sum::<usize>() < 100_000 {
            drop(parsed);
            after();
            return;
        }
        let one_cpu = !crate::compile::several_cpus();
        let freed = std::thread::Builder::new().name("sirocco-free".into()).spawn(move || {
            if one_cpu {
                humble();
            }
            drop(parsed);
            after();
        });
        if freed.is_err() {
            // No thread: the zones went with the closure, here.
            after();
        }
    }
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
    let mut parsed = Vec::new();
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
        parsed.push(z);
    }
    Ok(Built { catalog: Catalog::new(compiled).with_keys(keys), report, parsed })
}

/// The versions of the secondary zones received so far (or loaded from their files at
/// start), by origin in lowercase wire form, and the members of catalog zones; shared by the
/// reload and the start.
#[derive(Clone, Default)]
pub struct Received {
    zones: Arc<Mutex<HashMap<Vec<u8>, Arc<Zone>>>>,
    members: Arc<Mutex<Members>>,
}

/// The members of the catalogs followed: who owns each, and how each is served.
#[derive(Default)]
struct Members {
    owners: Owners,
    specs: HashMap<Vec<u8>, ZoneSpec>,
}

impl Received {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Arc<Zone>>> {
        self.zones.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn members(&self) -> std::sync::MutexGuard<'_, Members> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The zones the catalogs followed add, to serve beside `specs`' (each a secondary).
    pub fn member_specs(&self) -> Vec<ZoneSpec> {
        let mut v: Vec<ZoneSpec> = self.members().specs.values().cloned().collect();
        v.sort_by(|a, b| a.origin.cmp(&b.origin));
        v
    }

    /// Takes the members of every catalog among `specs` whose version is loaded (from its
    /// file, at start), their own stored versions loaded too. Returns what happened.
    pub fn follow_catalogs(&self, shared: &Secondaries, specs: &[ZoneSpec], keys: &tsig::Keyring) -> Vec<String> {
        let mut log = Vec::new();
        for spec in specs.iter().filter(|s| s.catalog.is_some()) {
            self.follow(&spec.origin_wire(), shared, specs, keys, &mut log);
        }
        log
    }

    /// Applies the version served of catalog `origin` to its members: adds, resets,
    /// updates and removes them as secondaries; `specs` are the zones configured.
    fn follow(
        &self,
        origin: &[u8],
        shared: &Secondaries,
        specs: &[ZoneSpec],
        keys: &tsig::Keyring,
        log: &mut Vec<String>,
    ) {
        let Some(spec) = specs.iter().find(|s| s.catalog.is_some() && s.origin_wire() == origin) else { return };
        let Some(z) = self.map().get(origin).cloned() else { return };
        let name = zone_name(origin);
        let serial = z.soa().and_then(|s| Timers::of_soa(&s.rdatas[0])).map_or(0, |s| s.0);
        let listed = match catalog_zone::read(&z) {
            Ok(m) => m,
            Err(why) => {
                log.push(format!("catalog {name} serial {serial} is broken ({why}); its members stay as they were"));
                return;
            }
        };
        let configured = |zone: &[u8]| specs.iter().any(|s| s.origin_wire() == zone);
        let (changes, mut lines) = self.members().owners.follow(origin, listed, configured);
        log.append(&mut lines);
        for change in changes {
            match change {
                Change::Add(m) => {
                    let member = member_spec(spec, &m);
                    let initial = self.load_member(&member, log);
                    log.push(format!("catalog {name}: zone {} added{}", member_name(&m), loaded(initial)));
                    self.serve_member(shared, member, &m, initial, keys);
                }
                Change::Update(m) => {
                    shared.remove(&m.zone);
                    let initial = self.map().get(&m.zone).and_then(|z| Timers::of_soa(&z.soa()?.rdatas[0]));
                    log.push(format!("catalog {name}: zone {} now in group(s) {:?}", member_name(&m), m.groups));
                    self.serve_member(shared, member_spec(spec, &m), &m, initial, keys);
                }
                Change::Reset(m) => {
                    let member = member_spec(spec, &m);
                    self.forget(shared, &m.zone, log);
                    log.push(format!(
                        "catalog {name}: zone {} reset (ID {}); transferring it anew",
                        member_name(&m),
                        String::from_utf8_lossy(&m.id)
                    ));
                    self.serve_member(shared, member, &m, None, keys);
                }
                Change::Remove(zone) => {
                    self.forget(shared, &zone, log);
                    log.push(format!("catalog {name}: zone {} removed; no longer served", zone_name(&zone)));
                }
            }
        }
    }

    /// Serves member `m` as `spec` says, its version `initial` loaded.
    fn serve_member(
        &self,
        shared: &Secondaries,
        spec: ZoneSpec,
        m: &Member,
        initial: Option<(u32, Timers)>,
        keys: &tsig::Keyring,
    ) {
        // The catalog's settings and groups were checked at start.
        if let Ok([secondary]) = secondary_specs(std::slice::from_ref(&spec), keys).as_deref() {
            shared.add(secondary.clone(), initial);
        }
        self.members().specs.insert(m.zone.clone(), spec);
    }

    /// Stops serving member `zone`: what was received and its file go.
    fn forget(&self, shared: &Secondaries, zone: &[u8], log: &mut Vec<String>) {
        shared.remove(zone);
        self.map().remove(zone);
        if let Some(f) = self.members().specs.remove(zone).and_then(|s| s.file) {
            if let Err(e) =
                std::fs::remove_file(&f)
                    .or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) })
            {
                log.push(format!("zone {}: could not remove {}: {e}", zone_name(zone), f.display()));
            }
        }
    }

    /// Loads a new member's stored version, if it has one.
    fn load_member(&self, spec: &ZoneSpec, log: &mut Vec<String>) -> Option<(u32, Timers)> {
        let (initial, mut unusable) = self.load_stored(std::slice::from_ref(spec));
        log.append(&mut unusable);
        initial.into_iter().next().flatten()
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
    /// has one), changes to apply, expired zones; a catalog's new version changes its
    /// members. Returns what happened, for the log.
    pub fn take_transfers(&self, shared: &Secondaries, specs: &[ZoneSpec], keys: &tsig::Keyring) -> Vec<String> {
        let mut log = Vec::new();
        let mut catalogs = Vec::new();
        let config = specs;
        let all: Vec<ZoneSpec> = specs.iter().cloned().chain(self.member_specs()).collect();
        let specs = &all[..];
        for e in shared.take_events() {
            let origin = match &e {
                Event::Transferred { origin, .. } | Event::Changed { origin, .. } | Event::Expired { origin } => origin,
            };
            if shared.find(origin).is_none() {
                // A member removed while its transfer ran.
                continue;
            }
            if specs.iter().any(|s| s.catalog.is_some() && s.origin_wire() == *origin) && !catalogs.contains(origin) {
                catalogs.push(origin.clone());
            }
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
                                shared.resync(i.0);
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
        for c in catalogs {
            self.follow(&c, shared, config, keys, &mut log);
        }
        log
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog_zone(serial: u32, members: &[(&str, &str)]) -> Zone {
        let mut text = format!(
            "$ORIGIN catalog.invalid.\n$TTL 0\n@ SOA invalid. invalid. {serial} 3600 600 86400 0\n@ NS invalid.\nversion TXT \"2\"\n"
        );
        for (id, zone) in members {
            text.push_str(&format!("{id}.zones PTR {zone}.\n"));
        }
        zone::load_text(Path::new("catalog"), text.as_bytes(), None).unwrap()
    }

    #[test]
    fn catalog_versions_add_reset_and_remove_members_and_their_files() {
        let dir = std::env::temp_dir().join(format!("sirocco-catalog-unit-{}", std::process::id()));
        let members = dir.join("members");
        let spec = ZoneSpec {
            origin: Some("catalog.invalid".into()),
            primaries: vec!["198.18.0.1".into()],
            catalog: Some(CatalogSpec { member_dir: Some(members.clone()), groups: Vec::new() }),
            ..ZoneSpec::default()
        };
        let specs = [spec];
        make_member_dirs(&specs).unwrap();
        let a_file = members.join("a.example.zone");
        std::fs::write(&a_file, "$ORIGIN a.example.\n@ 60 SOA ns h 5 3600 600 86400 60\n@ 60 NS ns\n").unwrap();
        let keys = tsig::Keyring::new(Vec::new()).unwrap();
        let received = Received::default();
        let (initial, _) = received.load_stored(&specs);
        let shared = Secondaries::new(secondary_specs(&specs, &keys).unwrap(), &initial);
        let origin = origin_wire("catalog.invalid");
        received.map().insert(origin.clone(), Arc::new(catalog_zone(1, &[("m1", "a.example"), ("m2", "b.example")])));
        let log = received.follow_catalogs(&shared, &specs, &keys);
        assert_eq!(shared.len(), 3, "{log:?}");
        assert!(log.iter().any(|l| l.ends_with("zone a.example. added (serial 5 from its file)")), "{log:?}");
        let names: Vec<_> = received.member_specs().into_iter().map(|s| (s.origin.unwrap(), s.file.unwrap())).collect();
        assert_eq!(
            names,
            [("a.example.".into(), a_file.clone()), ("b.example.".into(), members.join("b.example.zone"))]
        );
        let (a_slot, _) = shared.find(&origin_wire("a.example")).unwrap();

        // a.example under a new ID: reset; b.example gone.
        received.map().insert(origin.clone(), Arc::new(catalog_zone(2, &[("m9", "a.example")])));
        let mut log = Vec::new();
        received.follow(&origin, &shared, &specs, &keys, &mut log);
        assert!(log.iter().any(|l| l.contains("zone a.example. reset (ID m9)")), "{log:?}");
        assert!(log.iter().any(|l| l.contains("zone b.example. removed")), "{log:?}");
        let (again, _) = shared.find(&origin_wire("a.example")).unwrap();
        assert_ne!(again, a_slot, "a fresh slot: checked anew");
        assert!(shared.find(&origin_wire("b.example")).is_none());
        assert!(!received.map().contains_key(&origin_wire("a.example")), "its version dropped");
        assert!(!a_file.exists(), "and its file");
        assert_eq!(shared.len(), 2);

        // A broken version changes nothing.
        let mut broken = catalog_zone(3, &[]);
        broken.nodes.retain(|owner, _| !owner.starts_with(b"\x07version"));
        received.map().insert(origin.clone(), Arc::new(broken));
        let mut log = Vec::new();
        received.follow(&origin, &shared, &specs, &keys, &mut log);
        assert!(log[0].contains("serial 3 is broken (it has no version record"), "{log:?}");
        assert_eq!(shared.len(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
