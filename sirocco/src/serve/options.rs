//! A server's own options, declared once: one struct is both the command line's options
//! (clap) and the config file's keys (serde, the same names with `_` for `-`), and the
//! command line's values go over the file's field by field.

/// Declares a server's own options (every field an `Option`) with both derives and
/// `or(self, file)`, which takes each option from the command line, else from the file.
macro_rules! own_options {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident : Option<$t:ty>,)* }) => {
        $(#[$m])*
        #[derive(clap::Args, serde::Deserialize, Default, Clone, Debug)]
        pub struct $name {
            $($(#[$fm])* pub $f: Option<$t>,)*
        }

        impl $name {
            /// The command line's options (`self`) over the config file's.
            pub fn or(self, file: $name) -> $name {
                $name { $($f: self.$f.or(file.$f),)* }
            }
        }
    };
}
pub(crate) use own_options;

/// A size: bytes, or with a k or m suffix (`1m`, `512k`); in a config file also a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub usize);

impl std::str::FromStr for Size {
    type Err = String;

    fn from_str(s: &str) -> Result<Size, String> {
        let t = s.trim().to_ascii_lowercase();
        let (num, mul) = match t.strip_suffix('k') {
            Some(n) => (n, 1 << 10),
            None => match t.strip_suffix('m') {
                Some(n) => (n, 1 << 20),
                None => (t.as_str(), 1),
            },
        };
        num.parse::<usize>()
            .ok()
            .and_then(|n| n.checked_mul(mul))
            .map(Size)
            .ok_or(format!("{s:?} is not a size (bytes, or with k or m)"))
    }
}

impl<'de> serde::Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Size, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Either {
            Bytes(u64),
            Text(String),
        }
        match Either::deserialize(d)? {
            Either::Bytes(b) => Ok(Size(b as usize)),
            Either::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    own_options! {
        /// Two options.
        pub struct Two {
            /// A.
            #[arg(long)]
            pub a: Option<u32>,
            /// B.
            #[arg(long)]
            pub b: Option<Size>,
        }
    }

    #[test]
    fn sizes() {
        assert_eq!("1m".parse(), Ok(Size(1 << 20)));
        assert_eq!("512K".parse(), Ok(Size(512 << 10)));
        assert_eq!("2048".parse(), Ok(Size(2048)));
        assert!("lots".parse::<Size>().is_err());
    }

    #[test]
    fn the_command_line_goes_over_the_file_option_by_option() {
        let file: Two = toml::from_str("a = 1\nb = \"2k\"").unwrap();
        let cli = Two { a: Some(5), b: None };
        let both = cli.or(file);
        assert_eq!((both.a, both.b), (Some(5), Some(Size(2048))));
        let file: Two = toml::from_str("b = 300").unwrap();
        assert_eq!(file.b, Some(Size(300)));
    }
}
