//! An interface's receive-side scaling, as its driver reports it through ethtool's generic
//! netlink family (`ETHTOOL_MSG_RSS_GET`, Linux 6.3): the hash function, key and indirection
//! table, which say which receive queue — which engine — each flow's packets reach. With
//! them, a connection sirocco opens can take a source port whose replies come back to the
//! engine that opened it. Drivers without RSS (veth, most virtual NICs) do not report it.

use crate::netdev::{
    attributes, error_of, family_id, invalid, message, messages, read_u32, send, GENL_HEADER, NETLINK_GENERIC,
    NLMSG_ERROR, NLM_F_REQUEST,
};
use crate::sys;
use std::io;

const ETHTOOL_MSG_RSS_GET: u8 = 38;
const RSS_HEADER: u16 = 1;
const RSS_HFUNC: u16 = 3;
const RSS_INDIR: u16 = 4;
const RSS_HKEY: u16 = 5;
const RSS_INPUT_XFRM: u16 = 6;
const HEADER_DEV_INDEX: u16 = 1;
const NLA_F_NESTED: u16 = 0x8000;
/// `ETH_RSS_HASH_TOP`: the Toeplitz function.
const HASH_TOEPLITZ: u32 = 1;

/// What the driver says of its RSS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RssInfo {
    /// Toeplitz over the 4-tuple with this key and indirection table (queue per entry).
    Toeplitz {
        /// The hash key.
        key: Vec<u8>,
        /// The indirection table.
        table: Vec<u32>,
    },
    /// Another hash function, or an input transformation (symmetric hashing): the queue of
    /// a flow cannot be computed here.
    Other(String),
    /// The driver does not report it (no RSS, or a kernel before 6.3).
    NotReported(String),
}

/// The RSS of interface `ifindex`.
pub fn rss(ifindex: u32) -> RssInfo {
    match query(ifindex) {
        Ok(info) => info,
        Err(e) => RssInfo::NotReported(e.to_string()),
    }
}

fn query(ifindex: u32) -> io::Result<RssInfo> {
    let fd = sys::netlink_socket(NETLINK_GENERIC)?;
    let family = family_id(&fd, "ethtool")?;
    send(&fd, &request(family, ifindex, 2))?;
    let mut buf = vec![0u8; 32 << 10];
    let n = sys::recv_bytes(&fd, &mut buf)?;
    for msg in messages(&buf[..n]) {
        let (kind, payload) = msg?;
        match kind {
            NLMSG_ERROR => error_of(payload)?,
            k if k == family => return parse(payload.get(GENL_HEADER..).unwrap_or_default()),
            _ => {}
        }
    }
    Err(invalid("no RSS reply"))
}

fn request(family: u16, ifindex: u32, seq: u32) -> Vec<u8> {
    // The request header, nested: the device by index.
    let mut header = Vec::with_capacity(8);
    header.extend_from_slice(&8u16.to_ne_bytes());
    header.extend_from_slice(&HEADER_DEV_INDEX.to_ne_bytes());
    header.extend_from_slice(&ifindex.to_ne_bytes());
    message(family, NLM_F_REQUEST, seq, ETHTOOL_MSG_RSS_GET, &[(RSS_HEADER | NLA_F_NESTED, &header)])
}

/// The attributes of an RSS reply (after its generic netlink header).
fn parse(attrs: &[u8]) -> io::Result<RssInfo> {
    let (mut hfunc, mut xfrm, mut key, mut table) = (None, 0, Vec::new(), Vec::new());
    for attr in attributes(attrs) {
        let (t, v) = attr?;
        match t {
            RSS_HFUNC => hfunc = Some(read_u32(v)?),
            RSS_INPUT_XFRM => xfrm = read_u32(v)?,
            RSS_HKEY => key = v.to_vec(),
            RSS_INDIR => {
                if v.len() % 4 != 0 {
                    return Err(invalid("RSS indirection table length"));
                }
                table = v.chunks_exact(4).map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
            }
            _ => {}
        }
    }
    Ok(match hfunc {
        Some(HASH_TOEPLITZ) if xfrm == 0 && key.len() >= 16 && !table.is_empty() => RssInfo::Toeplitz { key, table },
        Some(HASH_TOEPLITZ) if xfrm != 0 => RssInfo::Other(format!("Toeplitz with input transformation {xfrm:#x}")),
        Some(HASH_TOEPLITZ) => RssInfo::NotReported("no key or indirection table".into()),
        Some(f) => RssInfo::Other(format!("hash function {f:#x}, not Toeplitz")),
        None => RssInfo::NotReported("no hash function reported".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(t: u16, v: &[u8]) -> Vec<u8> {
        let mut a = ((4 + v.len()) as u16).to_ne_bytes().to_vec();
        a.extend_from_slice(&t.to_ne_bytes());
        a.extend_from_slice(v);
        a.resize(a.len().next_multiple_of(4), 0);
        a
    }

    #[test]
    fn a_toeplitz_reply_gives_key_and_table() {
        let key: Vec<u8> = (0..40).collect();
        let table: Vec<u8> = [0u32, 1, 0, 1].iter().flat_map(|q| q.to_ne_bytes()).collect();
        let reply = [attr(RSS_HFUNC, &1u32.to_ne_bytes()), attr(RSS_INDIR, &table), attr(RSS_HKEY, &key)].concat();
        assert_eq!(parse(&reply).unwrap(), RssInfo::Toeplitz { key, table: vec![0, 1, 0, 1] });
        let xor = attr(RSS_HFUNC, &2u32.to_ne_bytes());
        assert!(matches!(parse(&xor).unwrap(), RssInfo::Other(w) if w.contains("not Toeplitz")));
        let symmetric = [attr(RSS_HFUNC, &1u32.to_ne_bytes()), attr(RSS_INPUT_XFRM, &1u32.to_ne_bytes())].concat();
        assert!(matches!(parse(&symmetric).unwrap(), RssInfo::Other(_)));
        assert!(parse(&attr(RSS_INDIR, &[1, 2, 3])).is_err(), "a table of partial entries");
    }

    #[test]
    fn the_request_names_the_device_in_a_nested_header() {
        let r = request(0x1c, 7, 2);
        assert_eq!(r[16], ETHTOOL_MSG_RSS_GET);
        let nested = &r[20..];
        assert_eq!(u16::from_ne_bytes([nested[2], nested[3]]), RSS_HEADER | NLA_F_NESTED);
        assert_eq!(&nested[8..12], &7u32.to_ne_bytes());
    }

    #[test]
    fn loopback_reports_no_rss() {
        // Every kernel has lo; none gives it RSS. A kernel without the ethtool family or the
        // message says so too: never a panic, never a made-up table.
        assert!(matches!(rss(1), RssInfo::NotReported(_)), "{:?}", rss(1));
    }
}
