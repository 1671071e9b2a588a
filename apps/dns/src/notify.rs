//! NOTIFY (RFC 1996) from a primary: when a zone is loaded or its serial changes, each of its
//! secondaries is told, over UDP from the server's port, and told again with growing pauses
//! until it answers or the tries run out. One engine sends them (the server of engine 0).

use crate::compile::Catalog;
use engine::{Duration, Instant, Originate};
use std::collections::HashMap;
use wire::IpAddr;

/// Tries per secondary and change before giving up (BIND and Knot: 5).
const TRIES: u32 = 5;
/// Pause before the first retry; doubled after each.
const FIRST_RETRY: Duration = Duration::from_millis(1000);

/// What was counted.
#[derive(Debug, Default, Clone, Copy)]
pub struct NotifyStats {
    /// NOTIFY messages sent (retries included).
    pub sent: u64,
    /// Changes a secondary acknowledged.
    pub acked: u64,
    /// Changes a secondary never acknowledged.
    pub unanswered: u64,
}

#[derive(Debug)]
struct Pending {
    dst: (IpAddr, u16),
    origin: Vec<u8>,
    /// The zone's SOA: TTL and record data, for the answer section.
    soa: (u32, Vec<u8>),
    id: u16,
    tries: u32,
    due: Instant,
    /// The zone's TSIG key: the NOTIFY is signed with it.
    key: Option<dns::tsig::Key>,
}

/// The NOTIFY side of one server.
#[derive(Debug, Default)]
pub struct Notifier {
    pending: Vec<Pending>,
    /// The serial each zone was last announced with.
    announced: HashMap<Vec<u8>, u32>,
    next_id: u16,
    /// Counters.
    pub stats: NotifyStats,
}

impl Notifier {
    /// Announces every zone of `catalog` whose serial is not the one announced last (every
    /// zone, the first time) to its secondaries.
    pub fn catalog(&mut self, catalog: &Catalog, now: Instant) {
        for z in catalog.zones() {
            let (targets, soa) = (z.notify_targets(), z.soa());
            let origin = z.origin.as_wire();
            if targets.is_empty() || self.announced.get(origin) == Some(&soa.serial) {
                continue;
            }
            self.announced.insert(origin.to_vec(), soa.serial);
            // A change supersedes what was still being announced for the zone.
            let before = self.pending.len();
            self.pending.retain(|p| p.origin != origin);
            self.stats.unanswered += (before - self.pending.len()) as u64;
            for &dst in targets {
                self.next_id = self.next_id.wrapping_add(0x3b5d);
                let soa = (soa.ttl, soa.rdata.clone());
                let key = z.key().cloned();
                let id = self.next_id;
                self.pending.push(Pending { dst, origin: origin.to_vec(), soa, id, tries: 0, due: now, key });
            }
        }
    }

    /// Sends what is due; returns how many went out.
    pub fn produce(&mut self, now: Instant, src_port: u16, out: &mut dyn Originate) -> usize {
        let mut sent = 0;
        let mut i = 0;
        while i < self.pending.len() {
            let p = &mut self.pending[i];
            if p.due > now {
                i += 1;
                continue;
            }
            if p.tries == TRIES {
                self.pending.swap_remove(i);
                self.stats.unanswered += 1;
                continue;
            }
            let (dst, port) = p.dst;
            // Not sent (no room, the neighbour being resolved): tried next iteration.
            let wall = crate::wall::unix_now();
            if out.udp(dst, port, src_port, &mut |buf: &mut [u8]| message(p, buf, wall)).is_ok() {
                p.tries += 1;
                p.due = now + Duration::from_nanos(FIRST_RETRY.as_nanos() << (p.tries - 1));
                sent += 1;
                self.stats.sent += 1;
            }
            i += 1;
        }
        sent
    }

    /// Takes a response from `src`; true if it acknowledged a NOTIFY (QR set, opcode
    /// NOTIFY, an id sent to that address).
    pub fn response(&mut self, src: IpAddr, m: &[u8]) -> bool {
        if m.len() < 12 || m[2] & 0xf8 != 0x80 | (NOTIFY << 3) {
            return false;
        }
        let id = u16::from_be_bytes([m[0], m[1]]);
        match self.pending.iter().position(|p| p.id == id && p.dst.0 == src) {
            Some(i) => {
                self.pending.swap_remove(i);
                self.stats.acked += 1;
                true
            }
            None => false,
        }
    }

    /// Announcements not acknowledged yet.
    pub fn waiting(&self) -> usize {
        self.pending.len()
    }
}

/// Opcode NOTIFY.
const NOTIFY: u8 = 4;

/// Writes the NOTIFY for `p` into `buf`: the zone's SOA as question and as answer (RFC 1996
/// section 3.7), signed at `wall` (seconds since the epoch) if the zone has a key; returns
/// its length, 0 if it does not fit.
fn message(p: &Pending, buf: &mut [u8], wall: u64) -> usize {
    let o = &p.origin;
    let len = 12 + o.len() + 4 + 2 + 10 + p.soa.1.len();
    if buf.len() < len {
        return 0;
    }
    let id = p.id.to_be_bytes();
    // Opcode NOTIFY, AA; one question, one answer.
    buf[..12].copy_from_slice(&[id[0], id[1], NOTIFY << 3 | 0x04, 0, 0, 1, 0, 1, 0, 0, 0, 0]);
    let mut at = 12;
    buf[at..at + o.len()].copy_from_slice(o);
    at += o.len();
    buf[at..at + 4].copy_from_slice(&[0, 6, 0, 1]);
    at += 4;
    // The answer's owner points at the question name.
    buf[at..at + 2].copy_from_slice(&[0xc0, 12]);
    at += 2;
    let ttl = p.soa.0.to_be_bytes();
    let rdlen = (p.soa.1.len() as u16).to_be_bytes();
    buf[at..at + 10].copy_from_slice(&[0, 6, 0, 1, ttl[0], ttl[1], ttl[2], ttl[3], rdlen[0], rdlen[1]]);
    at += 10;
    buf[at..at + p.soa.1.len()].copy_from_slice(&p.soa.1);
    match &p.key {
        Some(k) => dns::tsig::sign(k, buf, len, dns::tsig::Chain::Request, wall, 0, &[]).map_or(0, |(n, _)| n),
        None => len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notify_message_is_well_formed() {
        let p = Pending {
            dst: (IpAddr::V4(wire::Ipv4Addr([198, 18, 0, 2])), 53),
            origin: b"\x01t\x00".to_vec(),
            soa: (60, vec![1, 2, 3]),
            id: 0x1234,
            tries: 0,
            due: Instant::default(),
            key: None,
        };
        let mut buf = [0u8; 512];
        let n = message(&p, &mut buf, 0);
        let m = buf[..n].to_vec();
        assert_eq!(&m[..12], &[0x12, 0x34, 0x24, 0, 0, 1, 0, 1, 0, 0, 0, 0], "opcode 4, AA, 1 question, 1 answer");
        assert_eq!(&m[12..19], b"\x01t\x00\x00\x06\x00\x01", "the zone's SOA asked");
        assert_eq!(&m[19..], &[0xc0, 12, 0, 6, 0, 1, 0, 0, 0, 60, 0, 3, 1, 2, 3]);
        assert_eq!(message(&p, &mut [0u8; 20], 0), 0, "no room: nothing");
        let k = dns::tsig::Key::parse("notify.key:c2VjcmV0").unwrap();
        let keys = dns::tsig::Keyring::new(vec![k.clone()]).unwrap();
        let signed = Pending { key: Some(k), ..p };
        let n = message(&signed, &mut buf, 1_700_000_000);
        assert_eq!(dns::tsig::find(&buf[..n]), Some(m.len()), "a TSIG record after the NOTIFY");
        let check = dns::tsig::verify(&keys, &buf[..n], m.len(), 1_700_000_000);
        assert!(matches!(check, dns::tsig::Check::Valid { .. }), "{check:?}");
    }

    /// Keeps what is sent.
    #[derive(Default)]
    struct Wire(Vec<(IpAddr, u16, Vec<u8>)>);

    impl Originate for Wire {
        fn room(&self) -> usize {
            64
        }
        fn udp(
            &mut self,
            dst: IpAddr,
            dst_port: u16,
            _src_port: u16,
            fill: &mut dyn FnMut(&mut [u8]) -> usize,
        ) -> Result<(), engine::SendError> {
            let mut b = vec![0u8; 1500];
            let n = fill(&mut b);
            b.truncate(n);
            self.0.push((dst, dst_port, b));
            Ok(())
        }
        fn tcp(&mut self, _: IpAddr, _: usize, _: &mut dyn FnMut(&mut [u8])) -> Result<(), engine::SendError> {
            Err(engine::SendError::Full)
        }
        fn view(&self, _: u32) -> &[u8] {
            &[]
        }
    }

    fn catalog(serial: u32, targets: Vec<(IpAddr, u16)>) -> Catalog {
        let text = format!("$ORIGIN t.\n$TTL 60\n@ SOA ns h {serial} 2 3 4 5\n@ NS ns\nns A 198.18.0.1\n");
        let z = crate::zone::load_text(std::path::Path::new("t.zone"), text.as_bytes(), None).unwrap();
        Catalog::new(vec![crate::CompiledZone::compile(&z).with_notify(targets)])
    }

    #[test]
    fn each_new_serial_is_announced_retried_with_growing_pauses_and_acknowledged() {
        let sec = IpAddr::V4(wire::Ipv4Addr([198, 18, 0, 2]));
        let (mut n, mut w) = (Notifier::default(), Wire::default());
        let at = |ms: u64| Instant::from_millis(ms);
        n.catalog(&catalog(1, vec![(sec, 5302)]), at(0));
        n.catalog(&catalog(1, vec![(sec, 5302)]), at(0));
        assert_eq!(n.waiting(), 1, "one secondary, one version");
        assert_eq!(n.produce(at(0), 53, &mut w), 1);
        assert_eq!(n.produce(at(999), 53, &mut w), 0, "the first retry after a second");
        assert_eq!(n.produce(at(1000), 53, &mut w), 1);
        assert_eq!(n.produce(at(2999), 53, &mut w), 0, "then two");
        assert_eq!(n.produce(at(3000), 53, &mut w), 1);
        let (dst, port, m) = w.0.last().unwrap().clone();
        assert_eq!((dst, port, m[2]), (sec, 5302, 0x24));
        let mut answer = m.clone();
        answer[2] |= 0x80;
        assert!(!n.response(IpAddr::V4(wire::Ipv4Addr([198, 18, 0, 3])), &answer), "from another address");
        assert!(n.response(sec, &answer));
        assert_eq!((n.waiting(), n.stats.acked, n.stats.sent), (0, 1, 3));
        // A new serial: announced again; never answered, given up after 5 tries.
        n.catalog(&catalog(2, vec![(sec, 5302)]), at(10_000));
        let mut t = 10_000;
        while n.waiting() > 0 && t < 100_000 {
            n.produce(at(t), 53, &mut w);
            t += 500;
        }
        assert_eq!((n.stats.sent, n.stats.unanswered), (3 + 5, 1));
        // A zone without secondaries is not announced.
        n.catalog(&catalog(3, vec![]), at(t));
        assert_eq!(n.waiting(), 0);
    }
}
