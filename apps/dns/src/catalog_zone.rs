//! Catalog zones (RFC 9432) as a consumer: the member zones a catalog lists, read from one of
//! its versions, and what each new version changes — zones to add, remove, or reset — given
//! which catalog owns which member. Sans-IO: the loader (`zones.rs`) does the adding,
//! transferring and deleting.

use crate::zone::Zone;
use dns::name::wire_ends_with;
use dns::rtype;
use std::collections::{BTreeMap, HashMap};

/// The schema version this consumer knows (RFC 9432 section 4.2.1).
const VERSION: &[u8] = b"\x012";

/// A member zone as a catalog lists it (RFC 9432 section 4.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The member zone's name, lowercase wire form.
    pub zone: Vec<u8>,
    /// Its unique ID: the member node's first label, lowercase.
    pub id: Vec<u8>,
    /// Its groups (section 4.4.2), in the catalog's order.
    pub groups: Vec<String>,
    /// The catalog it is to move to (the `coo` property, section 4.4.1), lowercase wire.
    pub coo: Option<Vec<u8>>,
}

/// The member zones of catalog `z`, by member node name; an error says why the catalog is
/// broken (section 5.1) and must not be processed.
pub fn read(z: &Zone) -> Result<Vec<Member>, String> {
    let origin = z.origin.as_wire();
    let mut version = b"\x07version".to_vec();
    version.extend_from_slice(origin);
    match z.rrset(&version, rtype::TXT).map(|r| r.rdatas.only()) {
        Some(Some(v)) if v == VERSION => {}
        Some(Some(v)) => return Err(format!("its schema version is {:?}, not 2", String::from_utf8_lossy(&v[1..]))),
        Some(None) => return Err("it has more than one version record".into()),
        None => return Err("it has no version record (version TXT \"2\")".into()),
    }
    let mut zones = b"\x05zones".to_vec();
    zones.extend_from_slice(origin);
    // Member nodes first, in a stable order, then their properties.
    let mut members: BTreeMap<Vec<u8>, Member> = BTreeMap::new();
    for (owner, sets) in z.nodes.iter() {
        if !wire_ends_with(owner, &zones) || owner.len() == zones.len() {
            continue;
        }
        let id_len = usize::from(owner[0]) + 1;
        if owner.len() - id_len != zones.len() {
            continue;
        }
        let Some(ptr) = sets.iter().find(|s| s.rtype == rtype::PTR) else { continue };
        let Some(target) = ptr.rdatas.only() else {
            return Err(format!("member node {} has more than one PTR record", text(owner)));
        };
        let member =
            Member { zone: target.to_ascii_lowercase(), id: owner[1..id_len].to_vec(), groups: Vec::new(), coo: None };
        members.insert(owner.to_vec(), member);
    }
    for (owner, m) in &mut members {
        let property = |name: &[u8]| [&[name.len() as u8][..], name, owner].concat();
        if let Some(coo) = z.rrset(&property(b"coo"), rtype::PTR) {
            let Some(target) = coo.rdatas.only() else {
                return Err(format!("member node {} has more than one coo record", text(owner)));
            };
            m.coo = Some(target.to_ascii_lowercase());
        }
        if let Some(groups) = z.rrset(&property(b"group"), rtype::TXT) {
            m.groups = groups.rdatas.iter().filter_map(txt_string).collect();
        }
    }
    Ok(members.into_values().collect())
}

/// The single string of TXT record data `r`, if it has exactly one.
fn txt_string(r: &[u8]) -> Option<String> {
    let n = usize::from(*r.first()?);
    (r.len() == n + 1).then(|| String::from_utf8_lossy(&r[1..]).into_owned())
}

fn text(wire: &[u8]) -> String {
    dns::Name::from_wire(wire).map(|n| n.to_string()).unwrap_or_default()
}

/// What a catalog's new version asks for one zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A new member: serve it (transfer it from its primaries).
    Add(Member),
    /// A member no longer listed: stop serving it and drop what was received.
    Remove(Vec<u8>),
    /// A member whose unique ID changed (section 5.6), or that moved here from another
    /// catalog under another ID (section 5.5): drop what was received and transfer it anew.
    Reset(Member),
    /// A member whose groups changed, or that moved here under the same ID: keep the version
    /// received, take its new settings.
    Update(Member),
}

/// Which catalog owns which member zone: each zone belongs to one catalog at a time.
#[derive(Debug, Default)]
pub struct Owners {
    by_zone: HashMap<Vec<u8>, (Vec<u8>, Member)>,
}

impl Owners {
    /// The changes the version of catalog `catalog` listing `members` makes, applied to the
    /// ownership; `configured` says which zones are configured otherwise (a catalog cannot
    /// take them over). Also returns a line for each member left out and why.
    pub fn follow(
        &mut self,
        catalog: &[u8],
        members: Vec<Member>,
        configured: impl Fn(&[u8]) -> bool,
    ) -> (Vec<Change>, Vec<String>) {
        let (mut changes, mut log) = (Vec::new(), Vec::new());
        let mut listed: HashMap<Vec<u8>, ()> = HashMap::new();
        let cat = text(catalog);
        for m in members {
            let name = text(&m.zone);
            if listed.insert(m.zone.clone(), ()).is_some() {
                log.push(format!("catalog {cat}: zone {name} is listed twice; the one with ID {} is left out", id(&m)));
                continue;
            }
            if configured(&m.zone) {
                log.push(format!("catalog {cat}: zone {name} is configured on this server; left out of the catalog"));
                continue;
            }
            let change = match self.by_zone.get(&m.zone) {
                None => Some(Change::Add(m.clone())),
                Some((owner, had)) if owner == catalog => {
                    if had.id != m.id {
                        Some(Change::Reset(m.clone()))
                    } else if had.groups != m.groups {
                        Some(Change::Update(m.clone()))
                    } else {
                        None
                    }
                }
                Some((owner, had)) if had.coo.as_deref() == Some(catalog) => {
                    log.push(format!("catalog {cat}: zone {name} moves here from catalog {}", text(owner)));
                    Some(if had.id != m.id { Change::Reset(m.clone()) } else { Change::Update(m.clone()) })
                }
                Some((owner, _)) => {
                    log.push(format!(
                        "catalog {cat}: zone {name} belongs to catalog {} (whose coo does not name this one); left out",
                        text(owner)
                    ));
                    continue;
                }
            };
            changes.extend(change);
            self.by_zone.insert(m.zone.clone(), (catalog.to_vec(), m));
        }
        let gone: Vec<Vec<u8>> = self
            .by_zone
            .iter()
            .filter(|(zone, (owner, _))| owner == catalog && !listed.contains_key(*zone))
            .map(|(zone, _)| zone.clone())
            .collect();
        for zone in gone {
            self.by_zone.remove(&zone);
            changes.push(Change::Remove(zone));
        }
        (changes, log)
    }

    /// The members and the catalog owning each.
    pub fn members(&self) -> impl Iterator<Item = (&[u8], &Member)> {
        self.by_zone.values().map(|(c, m)| (c.as_slice(), m))
    }
}

fn id(m: &Member) -> String {
    String::from_utf8_lossy(&m.id).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn catalog(body: &str) -> Zone {
        let text = format!(
            "$ORIGIN catalog.invalid.\n$TTL 0\n@ SOA invalid. invalid. 1 3600 600 86400 0\n@ NS invalid.\n{body}"
        );
        crate::zone::load_text(Path::new("catalog"), text.as_bytes(), None).expect("a zone")
    }

    fn wire(s: &str) -> Vec<u8> {
        dns::name::wire_from_text(s).unwrap()
    }

    fn member(zone: &str, id: &str) -> Member {
        Member { zone: wire(zone), id: id.as_bytes().to_vec(), groups: Vec::new(), coo: None }
    }

    #[test]
    fn members_and_their_properties_are_read() {
        let z = catalog(
            "version TXT \"2\"\nm1.zones PTR Example.COM.\ngroup.m1.zones TXT \"gold\"\n\
             m2.zones PTR example.net.\ncoo.m2.zones PTR other.invalid.\nx.m3.zones PTR not.a.member.\n\
             ext.zones TXT \"a member node needs a PTR\"\n",
        );
        let got = read(&z).unwrap();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], Member { groups: vec!["gold".into()], ..member("example.com", "m1") });
        assert_eq!(got[1], Member { coo: Some(wire("other.invalid")), ..member("example.net", "m2") });
    }

    #[test]
    fn a_broken_catalog_says_why() {
        let cases = [
            ("m1.zones PTR example.com.\n", "no version"),
            ("version TXT \"1\"\n", "not 2"),
            ("version TXT \"2\"\nversion TXT \"3\"\n", "more than one version"),
            ("version TXT \"2\"\nm1.zones PTR a.example.\nm1.zones PTR b.example.\n", "more than one PTR"),
            ("version TXT \"2\"\nm1.zones PTR a.example.\ncoo.m1.zones PTR x.\ncoo.m1.zones PTR y.\n", "coo"),
        ];
        for (body, why) in cases {
            let e = read(&catalog(body)).unwrap_err();
            assert!(e.contains(why), "{body:?}: {e}");
        }
    }

    #[test]
    fn versions_add_remove_reset_and_update() {
        let cat = wire("catalog.invalid");
        let mut o = Owners::default();
        let (c, _) = o.follow(&cat, vec![member("a.example", "1"), member("b.example", "2")], |_| false);
        assert_eq!(c, [Change::Add(member("a.example", "1")), Change::Add(member("b.example", "2"))]);
        let (c, _) = o.follow(&cat, vec![member("a.example", "1"), member("b.example", "2")], |_| false);
        assert!(c.is_empty(), "the same version changes nothing: {c:?}");
        let gold = Member { groups: vec!["gold".into()], ..member("a.example", "1") };
        let (c, _) = o.follow(&cat, vec![gold.clone(), member("b.example", "9"), member("c.example", "3")], |_| false);
        assert_eq!(
            c,
            [
                Change::Update(gold.clone()),
                Change::Reset(member("b.example", "9")),
                Change::Add(member("c.example", "3"))
            ]
        );
        let (c, _) = o.follow(&cat, vec![gold], |_| false);
        let mut removed: Vec<_> =
            c.iter().filter_map(|c| if let Change::Remove(z) = c { Some(z.clone()) } else { None }).collect();
        removed.sort();
        assert_eq!(removed, [wire("b.example"), wire("c.example")]);
        assert_eq!(o.members().count(), 1);
    }

    #[test]
    fn a_member_of_another_catalog_moves_only_by_its_coo() {
        let (one, two) = (wire("one.invalid"), wire("two.invalid"));
        let mut o = Owners::default();
        o.follow(&one, vec![member("a.example", "1")], |_| false);
        let (c, log) = o.follow(&two, vec![member("a.example", "1")], |_| false);
        assert!(c.is_empty() && log[0].contains("belongs to catalog one.invalid."), "{c:?} {log:?}");
        let leaving = Member { coo: Some(two.clone()), ..member("a.example", "1") };
        o.follow(&one, vec![leaving], |_| false);
        let (c, log) = o.follow(&two, vec![member("a.example", "1")], |_| false);
        assert_eq!(c, [Change::Update(member("a.example", "1"))], "{log:?}");
        let (c, _) = o.follow(&one, vec![], |_| false);
        assert!(c.is_empty(), "the old catalog no longer owns it: {c:?}");
        let (c, log) =
            o.follow(&two, vec![member("a.example", "1"), member("a.example", "2"), member("own.example", "3")], |z| {
                z == wire("own.example")
            });
        assert!(c.is_empty(), "{c:?}");
        assert!(log[0].contains("listed twice") && log[1].contains("configured on this server"), "{log:?}");
    }
}
