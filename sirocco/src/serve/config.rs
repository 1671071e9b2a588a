//! TOML config files of the server commands. One file holds the keys every server shares
//! ([`Common`]: where to serve) and the server's own; a key neither knows, a value of the
//! wrong type, or a file that cannot be read is one error line naming the file and the line.

use serde::de::{self, DeserializeOwned, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

/// The keys every server's config file takes (the same as the command-line options).
#[derive(Deserialize, Default, Debug, Clone, PartialEq)]
pub struct Common {
    /// Interface.
    pub iface: Option<String>,
    /// Address: one (`addr = "198.18.0.10"`), or one of each family
    /// (`addr = ["198.18.0.10", "2001:2::10"]`).
    pub addr: Option<Addrs>,
    /// Queues.
    pub queues: Option<u32>,
    /// CPUs to pin the engines to.
    pub cpus: Option<Vec<usize>>,
    /// Port.
    pub port: Option<u16>,
    /// The metrics endpoint (`--metrics`).
    #[serde(default, deserialize_with = "metrics_addr")]
    pub metrics: Option<String>,
    /// Preferred busy polling (`--busy-poll`): "off", "on" or "auto".
    pub busy_poll: Option<crate::dataplane::busy_poll::BusyPollMode>,
}

/// `metrics`, checked as it is read (so a bad one is reported at its line).
fn metrics_addr<'de, D: de::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    crate::dataplane::metrics::parse_addr(&s).map_err(|e| de::Error::custom(e.replace("--metrics ", "metrics ")))?;
    Ok(Some(s))
}

/// The `addr` key: one address or a list.
#[derive(Debug, Clone, PartialEq)]
pub enum Addrs {
    /// One address.
    One(IpAddr),
    /// Several.
    Many(Vec<IpAddr>),
}

impl<'de> Deserialize<'de> for Addrs {
    /// A string or a list of strings, each an IPv4 or IPv6 address; an error says which
    /// value is not one (serde's untagged enums only say that nothing matched).
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Addrs, D::Error> {
        struct V;
        fn ip<E: de::Error>(s: &str) -> Result<IpAddr, E> {
            s.parse().map_err(|_| E::custom(format!("addr {s:?} is not an IPv4 or IPv6 address")))
        }
        impl<'de> Visitor<'de> for V {
            type Value = Addrs;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an address, or a list of addresses (one of each family)")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Addrs, E> {
                ip(s).map(Addrs::One)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Addrs, A::Error> {
                let mut v = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    v.push(ip(&s)?);
                }
                Ok(Addrs::Many(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Addrs {
    /// The addresses, in order.
    pub fn list(self) -> Vec<IpAddr> {
        match self {
            Addrs::One(a) => vec![a],
            Addrs::Many(v) => v,
        }
    }
}

/// A config file read: the common keys and the server's own (`C`, a struct deriving
/// `Deserialize` *without* `deny_unknown_fields`: the keys of both are checked here).
pub struct File<C> {
    /// Where to serve.
    pub common: Common,
    /// The server's own keys.
    pub own: C,
}

/// Reads and parses `path`.
pub fn read<C: DeserializeOwned>(path: &Path) -> Result<File<C>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|(line, msg)| format!("{}:{line}: {msg}", path.display()))
}

/// Parses a config file's text; an error is its line and message.
fn parse<C: DeserializeOwned>(text: &str) -> Result<File<C>, (usize, String)> {
    let line_of = |at: usize| text.as_bytes()[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1;
    let err = |e: toml::de::Error| (e.span().map_or(1, |s| line_of(s.start)), e.message().to_string());
    let keys: BTreeMap<toml::Spanned<String>, toml::Value> = toml::from_str(text).map_err(err)?;
    let (common_keys, own_keys) = (field_names::<Common>(), field_names::<C>());
    for k in keys.keys() {
        let name = k.get_ref().as_str();
        if !common_keys.contains(&name) && !own_keys.contains(&name) {
            let mut expected: Vec<&str> = common_keys.iter().chain(own_keys).copied().collect();
            expected.sort_unstable();
            return Err((
                line_of(k.span().start),
                format!("unknown key `{name}`, expected one of: {}", expected.join(", ")),
            ));
        }
    }
    Ok(File { common: toml::from_str(text).map_err(err)?, own: toml::from_str(text).map_err(err)? })
}

/// The field names a derived `Deserialize` struct declares: it hands them to
/// `deserialize_struct`, which this deserializer records and then refuses.
fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    struct Names<'a>(&'a mut &'static [&'static str]);
    impl<'de> de::Deserializer<'de> for Names<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("names taken"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
            unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut names: &'static [&'static str] = &[];
    let _ = T::deserialize(Names(&mut names));
    names
}

/// A server whose file has no keys of its own.
#[derive(Deserialize, Default)]
pub struct NoOwnKeys {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Default, Debug)]
    struct Own {
        root: Option<String>,
        #[serde(default)]
        zone: Vec<Zone>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Zone {
        #[allow(dead_code)]
        file: String,
    }

    #[test]
    fn common_and_own_keys_are_split() {
        let f: File<Own> = parse("iface = \"eth1\"\nport = 8080\nroot = \"site\"\n[[zone]]\nfile = \"z\"\n").unwrap();
        assert_eq!(f.common.iface.as_deref(), Some("eth1"));
        assert_eq!(f.common.port, Some(8080));
        assert_eq!(f.own.root.as_deref(), Some("site"));
        assert_eq!(f.own.zone.len(), 1);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse::<Own>("iface = \"x\"\nadress = \"198.18.0.10\"\n").err().unwrap();
        assert_eq!(e.0, 2);
        assert!(e.1.contains("unknown key `adress`") && e.1.contains("addr"), "{}", e.1);
        let e = parse::<Own>("\n\nqueues = \"two\"\n").err().unwrap();
        assert_eq!(e.0, 3, "{}", e.1);
        let e = parse::<Own>("[[zone]]\nfile = \"z\"\nfiel = \"y\"\n").err().unwrap();
        assert!(e.1.contains("fiel"), "nested tables keep their own checks: {}", e.1);
        let e = parse::<Own>("root = \n").err().unwrap();
        assert_eq!(e.0, 1);
        // Values checked as they are read, at their own line (issue 39).
        let e = parse::<Own>("iface = \"x\"\naddr = \"198.18.0.300\"\n").err().unwrap();
        assert_eq!(e.0, 2, "{}", e.1);
        assert!(e.1.contains("\"198.18.0.300\" is not an IPv4 or IPv6 address"), "{}", e.1);
        let e = parse::<Own>("addr = [\"198.18.0.1\", \"x::y::z\"]\n").err().unwrap();
        assert!(e.1.contains("\"x::y::z\" is not"), "{}", e.1);
        let e = parse::<Own>("\nmetrics = \"127.0.0.1:99999\"\n").err().unwrap();
        assert_eq!(e.0, 2, "{}", e.1);
        assert!(e.1.contains("metrics \"127.0.0.1:99999\""), "{}", e.1);
        let f: File<Own> = parse("addr = [\"198.18.0.1\", \"2001:2::1\"]\nmetrics = \"9100\"\n").unwrap();
        assert_eq!(f.common.addr.map(Addrs::list).map(|v| v.len()), Some(2));
        assert_eq!(f.common.metrics.as_deref(), Some("9100"));
    }

    #[test]
    fn field_names_are_read_from_the_derive() {
        assert_eq!(field_names::<Common>(), &["iface", "addr", "queues", "cpus", "port", "metrics", "busy_poll"]);
        assert!(field_names::<NoOwnKeys>().is_empty());
    }
}
