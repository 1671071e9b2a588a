//! The per-engine DNS application: parse, look up, copy the prepared response behind the
//! client's header and question, patch, done. No allocation per query.

use crate::compile::{Catalog, Lookup, Prepared};
use dns::{class, rcode, Edns, Query, QueryError, HEADER_LEN};
use engine::{App, Datagram, Verdict};
use std::sync::Arc;

/// Largest UDP response sirocco sends (the DNS flag day 2020 size), whatever the client offers.
pub const MAX_UDP: usize = 1232;
/// Size of the OPT record sirocco appends.
const OPT_LEN: usize = 11;

/// What one engine's DNS application counted.
#[derive(Debug, Default, Clone, Copy)]
pub struct DnsStats {
    /// Queries answered, by rcode (0..=5), plus BADVERS at index 6.
    pub rcodes: [u64; 7],
    /// Responses truncated (TC set) to fit the client's size.
    pub truncated: u64,
    /// Messages dropped without an answer (responses, runts).
    pub dropped: u64,
}

/// The DNS server for one engine.
pub struct DnsServer {
    catalog: Arc<Catalog>,
    port: u16,
    /// Counters.
    pub stats: DnsStats,
}

impl DnsServer {
    /// Serves `catalog` on UDP `port`.
    pub fn new(catalog: Arc<Catalog>, port: u16) -> Self {
        DnsServer { catalog, port, stats: DnsStats::default() }
    }

    /// Builds the response to the message `buf[..len]` in place; returns its length, or None
    /// to stay silent.
    pub fn respond(&mut self, buf: &mut [u8], len: usize) -> Option<usize> {
        let q = match Query::parse(&buf[..len]) {
            Ok(q) => q,
            Err(QueryError::Drop) => {
                self.stats.dropped += 1;
                return None;
            }
            Err(QueryError::Respond { rcode: rc, question_end, edns }) => {
                let qd = question_end.is_some() as u16;
                let q_end = question_end.unwrap_or(HEADER_LEN);
                let rd_cd = u16::from_be_bytes([buf[2], buf[3]]) & 0x0110;
                let n = finish(buf, q_end, 0, None, rc, rd_cd, qd, edns, &mut self.stats);
                return Some(n);
            }
        };
        let rd_cd = (u16::from(q.rd) << 8) | (u16::from(q.cd) << 4);
        let qlen = q.qname.as_wire().len();
        let mut q_end = q.question_end;
        if q_end - 4 - HEADER_LEN != qlen {
            // The question name was compressed: write it out in full so that pointers into
            // it (which the prepared responses use) mean what they should.
            let tail = [buf[q_end - 4], buf[q_end - 3], buf[q_end - 2], buf[q_end - 1]];
            buf[HEADER_LEN..HEADER_LEN + qlen].copy_from_slice(q.qname.as_wire());
            buf[HEADER_LEN + qlen..HEADER_LEN + qlen + 4].copy_from_slice(&tail);
            q_end = HEADER_LEN + qlen + 4;
        }
        if q.qclass != class::IN {
            return Some(finish(buf, q_end, qlen, None, u16::from(rcode::REFUSED), rd_cd, 1, q.edns, &mut self.stats));
        }
        let n = match self.catalog.lookup(&q.qname, q.qtype) {
            Lookup::Answer(p) => {
                let rc = u16::from(p.rcode);
                finish(buf, q_end, qlen, Some(p), rc, rd_cd, 1, q.edns, &mut self.stats)
            }
            Lookup::Refused => {
                finish(buf, q_end, qlen, None, u16::from(rcode::REFUSED), rd_cd, 1, q.edns, &mut self.stats)
            }
        };
        Some(n)
    }
}

/// Writes header flags and counts, the prepared sections (or none if they do not fit: TC),
/// and the OPT record; returns the message length.
#[allow(clippy::too_many_arguments)]
fn finish(
    buf: &mut [u8],
    q_end: usize,
    qlen: usize,
    p: Option<&Prepared>,
    rc: u16,
    rd_cd: u16,
    qdcount: u16,
    edns: Option<Edns>,
    stats: &mut DnsStats,
) -> usize {
    let limit = edns.map(|e| usize::from(e.udp_size)).unwrap_or(512).min(MAX_UDP).min(buf.len());
    let opt = if edns.is_some() { OPT_LEN } else { 0 };
    let mut counts = [0u16; 3];
    let mut aa = false;
    let mut tc = false;
    let mut end = q_end;
    if let Some(p) = p {
        aa = p.aa;
        if q_end + p.body.len() + opt <= limit {
            buf[q_end..q_end + p.body.len()].copy_from_slice(&p.body);
            for &(at, suffix) in &p.patches {
                let ptr = 0xc000 | (HEADER_LEN + qlen - usize::from(suffix)) as u16;
                let at = q_end + usize::from(at);
                buf[at..at + 2].copy_from_slice(&ptr.to_be_bytes());
            }
            counts = p.counts;
            end = q_end + p.body.len();
        } else {
            tc = true;
            stats.truncated += 1;
        }
    }
    let mut flags: u16 = 0x8000 | rd_cd | (rc & 0x000f);
    if aa {
        flags |= 0x0400;
    }
    if tc {
        flags |= 0x0200;
    }
    buf[2..4].copy_from_slice(&flags.to_be_bytes());
    buf[4..6].copy_from_slice(&qdcount.to_be_bytes());
    buf[6..8].copy_from_slice(&counts[0].to_be_bytes());
    buf[8..10].copy_from_slice(&counts[1].to_be_bytes());
    let ar = counts[2] + u16::from(edns.is_some());
    buf[10..12].copy_from_slice(&ar.to_be_bytes());
    if edns.is_some() {
        let ext = (rc >> 4) as u8;
        let size = (MAX_UDP as u16).to_be_bytes();
        buf[end..end + OPT_LEN].copy_from_slice(&[0, 0, 41, size[0], size[1], ext, 0, 0, 0, 0, 0]);
        end += OPT_LEN;
    }
    let slot = if rc == rcode::BADVERS { 6 } else { usize::from(rc.min(5)) };
    stats.rcodes[slot] += 1;
    end
}

impl App for DnsServer {
    fn udp_ports(&self) -> Vec<u16> {
        vec![self.port]
    }

    fn udp(&mut self, _now_ns: u64, d: Datagram<'_>) -> Verdict {
        match self.respond(d.buf, d.len) {
            Some(n) => Verdict::Reply(n),
            None => Verdict::Drop,
        }
    }
}
