//! The DNS server on its engine, queried over a lossy, duplicating, reordering link by a
//! resolver that is itself an application on a second engine. Answers are read with the
//! `domain` crate's parser; every answer must be the right one for its question, whatever
//! the link lost or repeated.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use dns_server::{zone, Catalog, CompiledZone, DnsServer};
use domain::base::iana::Rcode;
use domain::base::Message;
use engine::{Datagram, Duration, Instant, Originate, Service, Verdict};
use sim::engines::EngineNet;
use sim::{Link, Rng};
use wire::Ipv4Addr;

const SRV: Ipv4Addr = Ipv4Addr([198, 18, 4, 1]);
const CLI: Ipv4Addr = Ipv4Addr([198, 18, 4, 2]);
const CLIENT_PORT: u16 = 5300;

const ZONE: &str = "$ORIGIN example.\n$TTL 300\n@ SOA ns1 hostmaster 1 7200 3600 1209600 60\n@ NS ns1\n\
ns1 A 198.18.0.53\nwww A 198.18.0.80\nmail A 198.18.0.25\nalias CNAME www\n";

/// Questions in turn, with what the answer must be: its rcode and the answer count.
const QUESTIONS: &[(&[u8], u16, Rcode, u16)] = &[
    (b"\x03www\x07example\x00", 1, Rcode::NOERROR, 1),
    (b"\x04mail\x07example\x00", 1, Rcode::NOERROR, 1),
    (b"\x05alias\x07example\x00", 1, Rcode::NOERROR, 2),
    (b"\x04nope\x07example\x00", 1, Rcode::NXDOMAIN, 0),
    (b"\x03www\x07example\x00", 15, Rcode::NOERROR, 0),
    (b"\x03www\x07example\x03org\x00", 1, Rcode::REFUSED, 0),
];

/// A stub resolver: one query a millisecond, each with its own id.
struct Resolver {
    to_send: u64,
    sent: u64,
    next_at: Instant,
    /// Query id → question index.
    out: HashMap<u16, usize>,
    answered: u64,
    duplicates: u64,
    wrong: Vec<String>,
}

impl Service for Resolver {
    fn udp_ports(&self) -> Vec<u16> {
        vec![CLIENT_PORT]
    }

    fn udp(&mut self, _now: Instant, d: Datagram<'_>) -> Verdict {
        let m = match Message::from_octets(d.buf[..d.len].to_vec()) {
            Ok(m) => m,
            Err(e) => {
                self.wrong.push(format!("not a DNS message: {e}"));
                return Verdict::Consume;
            }
        };
        let Some(q) = self.out.remove(&m.header().id()) else {
            // The link duplicated the query or the answer.
            self.duplicates += 1;
            return Verdict::Consume;
        };
        let (_, _, rcode, count) = QUESTIONS[q];
        if m.header().rcode() != rcode || m.header_counts().ancount() != count {
            self.wrong.push(format!(
                "question {q}: {:?} with {} answers",
                m.header().rcode(),
                m.header_counts().ancount()
            ));
        }
        self.answered += 1;
        Verdict::Consume
    }

    fn produce(&mut self, now: Instant, out: &mut dyn Originate) -> usize {
        if self.sent == self.to_send || now < self.next_at {
            return 0;
        }
        let q = (self.sent % QUESTIONS.len() as u64) as usize;
        let id = self.sent as u16;
        let (name, qtype, _, _) = QUESTIONS[q];
        let mut fill = |b: &mut [u8]| {
            let mut m = vec![(id >> 8) as u8, id as u8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
            m.extend_from_slice(name);
            m.extend(qtype.to_be_bytes());
            m.extend([0, 1]);
            b[..m.len()].copy_from_slice(&m);
            m.len()
        };
        match out.udp(SRV.into(), 53, CLIENT_PORT, &mut fill) {
            Ok(()) => {
                self.out.insert(id, q);
                self.sent += 1;
                self.next_at = now + Duration::from_millis(1);
                1
            }
            // The server's MAC is being resolved: ask again next time.
            Err(_) => 0,
        }
    }
}

#[test]
fn every_answer_is_right_whatever_the_link_does() {
    let z = zone::load_text(Path::new("sim.zone"), ZONE.as_bytes(), None).expect("zone");
    sim::replay::seeds("engine_dns::every_answer_is_right_whatever_the_link_does", 8, |seed| {
        let mut r = Rng::new(seed);
        let mut server = DnsServer::new(Arc::new(Catalog::new(vec![CompiledZone::compile(&z)])), 53);
        let mut client = Resolver {
            to_send: 2000,
            sent: 0,
            next_at: Instant::ZERO,
            out: HashMap::new(),
            answered: 0,
            duplicates: 0,
            wrong: Vec::new(),
        };
        let mut net = EngineNet::new(r.next_u64());
        net.add(SRV, &server);
        net.add(CLI, &client);
        let loss = [0.0, 0.02, 0.1][r.range(0, 2) as usize];
        net.set_links(Link {
            delay: Duration::from_micros(r.range(50, 5_000)),
            loss,
            dup: 0.05,
            reorder: 0.2,
            jitter: Duration::from_millis(3),
            ..Link::default()
        });
        while client.sent < client.to_send {
            assert!(net.now < Instant::ZERO + Duration::from_secs(30), "seed {seed}: bounded");
            net.step(&mut [&mut server as &mut dyn Service, &mut client]);
        }
        net.run_for(Duration::from_millis(100), &mut [&mut server, &mut client]);
        assert!(client.wrong.is_empty(), "seed {seed}: {:?}", &client.wrong[..client.wrong.len().min(5)]);
        let lost = net.stats().lost;
        assert!(client.answered + lost >= client.sent, "seed {seed}: {} answered, {lost} frames lost", client.answered);
        assert!(
            client.answered as f64 >= client.sent as f64 * (1.0 - 2.5 * loss) - 10.0,
            "seed {seed}: too few answers"
        );
        assert!(client.duplicates > 0, "seed {seed}: the link duplicated frames");
        assert_eq!(server.stats.dropped, 0, "seed {seed}: every query was well formed");
        Ok(())
    });
}
