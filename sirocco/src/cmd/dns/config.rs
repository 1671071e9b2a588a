//! The DNS config file's own keys: scalars, `[[zone]]` and `[[key]]` tables, and the zones
//! they and the command line give.

use super::DnsOptions;
use crate::serve::relative_to;
use dns_server::zones::{endpoint, CatalogSpec, GroupSpec, ZoneSpec};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A TSIG key in the config file.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct KeyConfig {
    name: String,
    #[serde(default = "hmac_sha256")]
    algorithm: String,
    secret: String,
}

fn hmac_sha256() -> String {
    "hmac-sha256".into()
}

/// The keys of the config file and the command line.
pub(super) fn keyring(own: &DnsOptions, cli: &[String]) -> Result<dns_server::tsig::Keyring, String> {
    let mut keys = Vec::new();
    for k in own.key.iter().flatten() {
        keys.push(dns_server::tsig::Key::new(&k.algorithm, &k.name, &k.secret)?);
    }
    for k in cli {
        keys.push(dns_server::tsig::Key::parse(k).map_err(|e| format!("--key: {e}"))?);
    }
    dns_server::tsig::Keyring::new(keys)
}

/// A zone in the config file.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct ZoneConfig {
    /// The zone file; for a secondary zone, where each version transferred is stored (and
    /// loaded from at start).
    file: Option<PathBuf>,
    name: Option<String>,
    /// The zone's primaries, ADDR or ADDR@PORT: the zone is served as a secondary.
    #[serde(default, deserialize_with = "addr_ports")]
    primary: Vec<String>,
    /// Addresses or prefixes that may transfer the zone.
    #[serde(default, deserialize_with = "prefixes")]
    allow_transfer: Vec<String>,
    /// Secondaries to NOTIFY, ADDR or ADDR@PORT.
    #[serde(default, deserialize_with = "addr_ports")]
    notify: Vec<String>,
    /// The TSIG key transfers must be signed with and NOTIFYs are.
    tsig_key: Option<String>,
    /// A secondary zone that is a catalog (RFC 9432): the zones it lists are served too.
    #[serde(default)]
    catalog: bool,
    /// Where a catalog's member zones are stored, one file each.
    member_dir: Option<PathBuf>,
    /// A catalog's groups: the settings of the members in each.
    #[serde(default)]
    group: Vec<GroupConfig>,
}

/// A catalog's group in the config file (`[[zone.group]]`).
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    name: String,
    #[serde(default, deserialize_with = "addr_ports")]
    primary: Vec<String>,
    tsig_key: Option<String>,
}

impl ZoneConfig {
    /// The catalog settings, if the zone is one (member_dir relative to the config file).
    fn catalog(&self, config: Option<&Path>) -> Result<Option<CatalogSpec>, String> {
        if !self.catalog && (self.member_dir.is_some() || !self.group.is_empty()) {
            let name = self.name.as_deref().unwrap_or("a zone");
            return Err(format!("[[zone]] {name}: member_dir and [[zone.group]] are for a catalog (catalog = true)"));
        }
        let groups = self
            .group
            .iter()
            .map(|g| GroupSpec { name: g.name.clone(), primaries: g.primary.clone(), tsig_key: g.tsig_key.clone() })
            .collect();
        let member_dir = self.member_dir.as_ref().map(|d| relative_to(config, d));
        Ok(self.catalog.then_some(CatalogSpec { member_dir, groups }))
    }
}

/// What every zone gets besides its own: transfer prefixes, secondaries, a key.
pub(super) struct ForAll<'a> {
    pub(super) allow_transfer: &'a [String],
    pub(super) notify: &'a [String],
    pub(super) tsig_key: Option<&'a str>,
}

/// The zones to serve: the config's (files relative to it), then the command line's, then
/// its secondaries and catalogs (`NAME=ADDR[@PORT]`); every one may be transferred by the
/// `allow` prefixes too.
pub(super) fn zone_specs(
    config: Option<&Path>,
    own: &DnsOptions,
    cli: &[String],
    cli_secondaries: &[String],
    cli_catalogs: &[String],
    all: &ForAll<'_>,
) -> Result<Vec<ZoneSpec>, String> {
    let mut v: Vec<ZoneSpec> = own
        .zone
        .iter()
        .flatten()
        .map(|z| {
            Ok(ZoneSpec {
                origin: z.name.clone(),
                file: z.file.as_ref().map(|f| relative_to(config, f)),
                primaries: z.primary.clone(),
                allow_transfer: z.allow_transfer.iter().chain(all.allow_transfer).cloned().collect(),
                notify: z.notify.iter().chain(all.notify).cloned().collect(),
                tsig_key: z.tsig_key.clone().or(all.tsig_key.map(String::from)),
                catalog: z.catalog(config)?,
            })
        })
        .collect::<Result<_, String>>()?;
    for spec in cli {
        let (origin, file) = match spec.split_once('=') {
            Some((n, f)) => (Some(n.to_string()), f),
            None => (None, spec.as_str()),
        };
        v.push(ZoneSpec {
            origin,
            file: Some(PathBuf::from(file)),
            primaries: Vec::new(),
            allow_transfer: all.allow_transfer.to_vec(),
            notify: all.notify.to_vec(),
            tsig_key: all.tsig_key.map(String::from),
            catalog: None,
        });
    }
    let secondaries = cli_secondaries.iter().map(|s| (s, None));
    for (spec, catalog) in secondaries.chain(cli_catalogs.iter().map(|s| (s, Some(CatalogSpec::default())))) {
        let (origin, primary) = spec.split_once('=').unwrap_or(("", spec));
        v.push(ZoneSpec {
            origin: Some(origin.to_string()),
            file: None,
            primaries: vec![primary.to_string()],
            allow_transfer: all.allow_transfer.to_vec(),
            notify: all.notify.to_vec(),
            tsig_key: all.tsig_key.map(String::from),
            catalog,
        });
    }
    Ok(v)
}

/// A config file's list of ADDR or ADDR@PORT, checked as it is read, so that a bad one is
/// reported at its line of the config file.
fn addr_ports<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for s in &v {
        endpoint(s, "address").map_err(serde::de::Error::custom)?;
    }
    Ok(v)
}

/// A config file's list of addresses or prefixes, checked as it is read.
fn prefixes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    dns_server::transfer::Acl::parse(&v).map_err(serde::de::Error::custom)?;
    Ok(v)
}
