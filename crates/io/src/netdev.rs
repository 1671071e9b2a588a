//! The kernel's `netdev` generic netlink family: an interface's NAPI instances and the
//! per-NAPI settings this kernel has (Linux 6.9 lists NAPI instances; 6.13 added per-NAPI
//! `defer-hard-irqs`, `gro-flush-timeout` and `irq-suspend-timeout`).
//!
//! Busy polling asks for it because IRQ suspension (`irq-suspend-timeout`) is only found this
//! way: a kernel that has it lists the attribute on every NAPI instance, one that does not
//! leaves it out, so sirocco detects it instead of guessing from the kernel's version.
//!
//! The messages are built and read here without a netlink library: a request is a dozen
//! bytes, and reading keeps to the lengths the kernel gives (every read is bounds-checked, so
//! a short or odd reply is an error, never a panic).

use crate::sys;
use std::io;
use std::os::fd::OwnedFd;

pub(crate) const NETLINK_GENERIC: i32 = 16;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;

pub(crate) const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
pub(crate) const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;

const NETDEV_CMD_NAPI_GET: u8 = 11;
const NAPI_IFINDEX: u16 = 1;
const NAPI_ID: u16 = 2;
const NAPI_IRQ: u16 = 3;
const NAPI_PID: u16 = 4;
const NAPI_DEFER_HARD_IRQS: u16 = 5;
const NAPI_GRO_FLUSH_TIMEOUT: u16 = 6;
const NAPI_IRQ_SUSPEND_TIMEOUT: u16 = 7;

const HEADER: usize = 16;
pub(crate) const GENL_HEADER: usize = 4;
/// Attribute types carry two flag bits (nested, network byte order) above the type.
const ATTR_TYPE_MASK: u16 = 0x3fff;

/// One NAPI instance as the kernel lists it; a setting is `None` where this kernel has none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Napi {
    /// Its id, as `SO_INCOMING_NAPI_ID` gives it.
    pub id: u32,
    /// The interface it belongs to.
    pub ifindex: u32,
    /// The device interrupt it serves (none for software devices such as veth).
    pub irq: Option<u32>,
    /// Its kernel thread, when NAPI is threaded.
    pub pid: Option<u32>,
    /// Its own `napi_defer_hard_irqs` (6.13+; the sysfs knob sets every instance's).
    pub defer_hard_irqs: Option<u32>,
    /// Its own `gro_flush_timeout` (6.13+).
    pub gro_flush_timeout_ns: Option<u64>,
    /// IRQ suspension (6.13+): how long interrupts stay off while an application's epoll
    /// busy-polls and finds work.
    pub irq_suspend_timeout_ns: Option<u64>,
}

/// The NAPI instances of interface `ifindex` (empty where it has none enabled).
pub fn napis(ifindex: u32) -> io::Result<Vec<Napi>> {
    let fd = sys::netlink_socket(NETLINK_GENERIC)?;
    let family = family_id(&fd, "netdev")?;
    send(&fd, &napi_dump_request(family, ifindex, 2))?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 32 << 10];
    // A dump ends with NLMSG_DONE; bounded in case a kernel never sends it.
    for _ in 0..1024 {
        let n = sys::recv_bytes(&fd, &mut buf)?;
        for msg in messages(&buf[..n]) {
            let (kind, payload) = msg?;
            match kind {
                NLMSG_DONE => return Ok(out),
                NLMSG_ERROR => error_of(payload)?,
                k if k == family => {
                    let napi = parse_napi(payload)?;
                    if napi.ifindex == ifindex {
                        out.push(napi);
                    }
                }
                _ => {}
            }
        }
    }
    Err(io::Error::new(io::ErrorKind::InvalidData, "netdev napi dump did not end"))
}

/// Whether this kernel has IRQ suspension, judged from the interface's NAPI instances.
pub fn irq_suspension(napis: &[Napi]) -> bool {
    napis.iter().any(|n| n.irq_suspend_timeout_ns.is_some())
}

pub(crate) fn send(fd: &OwnedFd, msg: &[u8]) -> io::Result<()> {
    if sys::send_bytes(fd, msg)? != msg.len() {
        return Err(io::Error::new(io::ErrorKind::WriteZero, "netlink request cut short"));
    }
    Ok(())
}

/// The id the kernel gave the generic netlink family `name`.
pub(crate) fn family_id(fd: &OwnedFd, name: &str) -> io::Result<u16> {
    send(fd, &family_request(name, 1))?;
    let mut buf = vec![0u8; 8 << 10];
    let n = sys::recv_bytes(fd, &mut buf)?;
    for msg in messages(&buf[..n]) {
        let (kind, payload) = msg?;
        match kind {
            NLMSG_ERROR => error_of(payload)?,
            GENL_ID_CTRL => {
                for attr in attributes(payload.get(GENL_HEADER..).unwrap_or_default()) {
                    let (t, v) = attr?;
                    if t == CTRL_ATTR_FAMILY_ID {
                        return read_u16(v);
                    }
                }
            }
            _ => {}
        }
    }
    Err(io::Error::new(io::ErrorKind::NotFound, format!("no generic netlink family {name}")))
}

pub(crate) fn message(kind: u16, flags: u16, seq: u32, cmd: u8, attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut m = vec![0u8; HEADER];
    m[4..6].copy_from_slice(&kind.to_ne_bytes());
    m[6..8].copy_from_slice(&flags.to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&[cmd, 1, 0, 0]);
    for (t, v) in attrs {
        m.extend_from_slice(&((4 + v.len()) as u16).to_ne_bytes());
        m.extend_from_slice(&t.to_ne_bytes());
        m.extend_from_slice(v);
        m.resize(m.len().next_multiple_of(4), 0);
    }
    let len = m.len() as u32;
    m[0..4].copy_from_slice(&len.to_ne_bytes());
    m
}

fn family_request(name: &str, seq: u32) -> Vec<u8> {
    let mut z = name.as_bytes().to_vec();
    z.push(0);
    message(GENL_ID_CTRL, NLM_F_REQUEST, seq, CTRL_CMD_GETFAMILY, &[(CTRL_ATTR_FAMILY_NAME, &z)])
}

fn napi_dump_request(family: u16, ifindex: u32, seq: u32) -> Vec<u8> {
    message(family, NLM_F_REQUEST | NLM_F_DUMP, seq, NETDEV_CMD_NAPI_GET, &[(NAPI_IFINDEX, &ifindex.to_ne_bytes())])
}

pub(crate) fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("netlink: {what}"))
}

/// The messages in one receive: (type, payload after the header) each.
pub(crate) fn messages(mut buf: &[u8]) -> impl Iterator<Item = io::Result<(u16, &[u8])>> {
    std::iter::from_fn(move || {
        if buf.len() < HEADER {
            return None;
        }
        let len = u32::from_ne_bytes(buf[0..4].try_into().unwrap()) as usize;
        if len < HEADER || len > buf.len() {
            buf = &[];
            return Some(Err(invalid("message length")));
        }
        let kind = u16::from_ne_bytes(buf[4..6].try_into().unwrap());
        let payload = &buf[HEADER..len];
        buf = &buf[len.next_multiple_of(4).min(buf.len())..];
        Some(Ok((kind, payload)))
    })
}

/// The attributes of a payload: (type without flags, value) each.
pub(crate) fn attributes(mut buf: &[u8]) -> impl Iterator<Item = io::Result<(u16, &[u8])>> {
    std::iter::from_fn(move || {
        if buf.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([buf[0], buf[1]]) as usize;
        if len < 4 || len > buf.len() {
            buf = &[];
            return Some(Err(invalid("attribute length")));
        }
        let t = u16::from_ne_bytes([buf[2], buf[3]]) & ATTR_TYPE_MASK;
        let value = &buf[4..len];
        buf = &buf[len.next_multiple_of(4).min(buf.len())..];
        Some(Ok((t, value)))
    })
}

/// An NLMSG_ERROR's payload: a negative errno (0 is an acknowledgement).
pub(crate) fn error_of(payload: &[u8]) -> io::Result<()> {
    let code = i32::from_ne_bytes(payload.get(0..4).ok_or_else(|| invalid("short error"))?.try_into().unwrap());
    if code == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(-code))
    }
}

fn read_u16(v: &[u8]) -> io::Result<u16> {
    Ok(u16::from_ne_bytes(v.get(0..2).ok_or_else(|| invalid("short u16"))?.try_into().unwrap()))
}

pub(crate) fn read_u32(v: &[u8]) -> io::Result<u32> {
    Ok(u32::from_ne_bytes(v.get(0..4).ok_or_else(|| invalid("short u32"))?.try_into().unwrap()))
}

/// A u64 attribute: the kernel sends 4 bytes where the value fits (`nla_put_uint`).
fn read_uint(v: &[u8]) -> io::Result<u64> {
    match v.len() {
        4 => Ok(u64::from(read_u32(v)?)),
        8 => Ok(u64::from_ne_bytes(v.try_into().unwrap())),
        _ => Err(invalid("uint length")),
    }
}

fn parse_napi(payload: &[u8]) -> io::Result<Napi> {
    let mut n = Napi::default();
    for attr in attributes(payload.get(GENL_HEADER..).ok_or_else(|| invalid("short genl header"))?) {
        let (t, v) = attr?;
        match t {
            NAPI_IFINDEX => n.ifindex = read_u32(v)?,
            NAPI_ID => n.id = read_u32(v)?,
            NAPI_IRQ => n.irq = Some(read_u32(v)?),
            NAPI_PID => n.pid = Some(read_u32(v)?),
            NAPI_DEFER_HARD_IRQS => n.defer_hard_irqs = Some(read_u32(v)?),
            NAPI_GRO_FLUSH_TIMEOUT => n.gro_flush_timeout_ns = Some(read_uint(v)?),
            NAPI_IRQ_SUSPEND_TIMEOUT => n.irq_suspend_timeout_ns = Some(read_uint(v)?),
            _ => {}
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn napi_reply(attrs: &[(u16, &[u8])]) -> Vec<u8> {
        message(0x20, 0, 2, NETDEV_CMD_NAPI_GET, attrs)
    }

    #[test]
    fn a_request_is_a_header_a_genl_header_and_padded_attributes() {
        let m = family_request("netdev", 7);
        // 16 + 4 + (4 + 7 bytes of "netdev\0", padded to 8)
        assert_eq!(m.len(), 32);
        assert_eq!(u32::from_ne_bytes(m[0..4].try_into().unwrap()), 32);
        assert_eq!(u16::from_ne_bytes(m[4..6].try_into().unwrap()), GENL_ID_CTRL);
        assert_eq!(u32::from_ne_bytes(m[8..12].try_into().unwrap()), 7);
        assert_eq!(m[16], CTRL_CMD_GETFAMILY);
        assert_eq!(u16::from_ne_bytes(m[20..22].try_into().unwrap()), 11);
        assert_eq!(&m[24..31], b"netdev\0");
        let d = napi_dump_request(0x23, 5, 2);
        assert_eq!(u16::from_ne_bytes(d[6..8].try_into().unwrap()), NLM_F_REQUEST | NLM_F_DUMP);
        assert_eq!(d[16], NETDEV_CMD_NAPI_GET);
    }

    #[test]
    fn a_napi_reply_gives_each_setting_and_leaves_out_what_the_kernel_left_out() {
        let reply = napi_reply(&[
            (NAPI_IFINDEX, &5u32.to_ne_bytes()),
            (NAPI_ID, &8193u32.to_ne_bytes()),
            (NAPI_PID, &4242u32.to_ne_bytes()),
            (NAPI_DEFER_HARD_IRQS, &2u32.to_ne_bytes()),
            (NAPI_GRO_FLUSH_TIMEOUT, &200_000u32.to_ne_bytes()),
            (NAPI_IRQ_SUSPEND_TIMEOUT, &(20_000_000_000u64).to_ne_bytes()),
        ]);
        let msgs: Vec<_> = messages(&reply).collect::<io::Result<_>>().unwrap();
        assert_eq!(msgs.len(), 1);
        let n = parse_napi(msgs[0].1).unwrap();
        assert_eq!(
            n,
            Napi {
                id: 8193,
                ifindex: 5,
                irq: None,
                pid: Some(4242),
                defer_hard_irqs: Some(2),
                gro_flush_timeout_ns: Some(200_000),
                irq_suspend_timeout_ns: Some(20_000_000_000),
            }
        );
        assert!(irq_suspension(std::slice::from_ref(&n)));
        let older = Napi { irq_suspend_timeout_ns: None, ..n };
        assert!(!irq_suspension(&[older]));
    }

    #[test]
    fn several_messages_in_one_receive_are_read_in_turn() {
        let mut buf = napi_reply(&[(NAPI_ID, &1u32.to_ne_bytes())]);
        buf.extend(napi_reply(&[(NAPI_ID, &2u32.to_ne_bytes())]));
        let ids: Vec<u32> = messages(&buf).map(|m| parse_napi(m.unwrap().1).unwrap().id).collect();
        assert_eq!(ids, vec![1, 2]);
    }

    #[test]
    fn an_error_message_is_its_errno_and_zero_an_acknowledgement() {
        assert_eq!(error_of(&(-2i32).to_ne_bytes()).unwrap_err().raw_os_error(), Some(2));
        assert!(error_of(&0i32.to_ne_bytes()).is_ok());
        assert!(error_of(&[1]).is_err());
    }

    #[test]
    fn truncated_or_lying_lengths_are_errors_not_panics() {
        let good = napi_reply(&[(NAPI_ID, &1u32.to_ne_bytes()), (NAPI_IRQ, &9u32.to_ne_bytes())]);
        for cut in 0..good.len() {
            let part = &good[..cut];
            for (_, payload) in messages(part).flatten() {
                let _ = parse_napi(payload);
            }
        }
        let mut lying = good.clone();
        lying[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(messages(&lying).next().unwrap().is_err());
        let mut bad_attr = good;
        bad_attr[20..22].copy_from_slice(&2u16.to_ne_bytes());
        let payload = messages(&bad_attr).next().unwrap().unwrap().1;
        assert!(parse_napi(payload).is_err());
        assert!(read_uint(&[1, 2, 3]).is_err());
    }
}
