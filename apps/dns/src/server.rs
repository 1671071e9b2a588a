//! The per-engine DNS application: parse, look up, copy the prepared response behind the
//! client's header and question, patch, sum, done. No allocation per query.

use crate::compile::{Catalog, CompiledZone, Lookup, Step};
use crate::message::{sum_at, Cover};
use crate::notify::Notifier;
use crate::resolve::MAX_CHAIN;
use crate::rrl::{self, Decision, Rrl};
use crate::secondary::Secondaries;
pub use crate::wall::unix_now;
use dns::name::{wire_ends_with, Name};
use dns::tsig::{self, Chain, Check};
use dns::{class, rcode, rtype, Edns, KeyMode, QName, Query, QueryError, HEADER_LEN};
use engine::published::Follower;
use engine::{Datagram, Service, Verdict};
use std::sync::Arc;
use wire::checksum;

/// Largest UDP response sirocco sends (the DNS flag day 2020 size), whatever the client offers.
pub const MAX_UDP: usize = 1232;
/// Size of the OPT record sirocco appends.
const OPT_LEN: usize = 11;
/// Size of the edns-tcp-keepalive option with its TIMEOUT.
const KEEPALIVE_LEN: usize = 6;
/// Size of the COOKIE option sirocco answers with (client cookie and a 16-byte server cookie).
const COOKIE_LEN: usize = 4 + 8 + 16;
/// BADCOOKIE (RFC 7873): extended rcode 23.
const BADCOOKIE: u16 = 23;

/// What one engine's DNS application counted.
#[derive(Debug, Default, Clone, Copy)]
pub struct DnsStats {
    /// Queries answered, by rcode (0..=5), YXDOMAIN at 6, BADVERS at 7, NOTAUTH at 8.
    pub rcodes: [u64; 9],
    /// Signed queries (TSIG) answered, whether the signature held or not.
    pub signed: u64,
    /// Responses truncated (TC set) to fit the client's size.
    pub truncated: u64,
    /// Messages dropped without an answer (responses, runts).
    pub dropped: u64,
    /// Responses not sent: over the rate limit.
    pub rrl_dropped: u64,
    /// Responses over the rate limit sent truncated instead (slipped).
    pub rrl_slipped: u64,
    /// NOTIFYs from a primary accepted (sirocco as a secondary).
    pub notify_in: u64,
    /// NOTIFYs refused: not a secondary zone here, not from its primary, not signed.
    pub notify_refused: u64,
    /// Queries with a COOKIE option: with a valid server cookie, and without one (a client
    /// cookie alone, or a server cookie not ours or expired).
    pub cookies_valid: u64,
    /// See `cookies_valid`.
    pub cookies_fresh: u64,
    /// Responses over the rate limit sent as BADCOOKIE with a fresh server cookie instead.
    pub badcookie: u64,
}

/// A response built in the query's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// Message length.
    pub len: usize,
    /// Folded one's-complement sum of the message (for the UDP checksum).
    pub sum: u16,
    /// End of the question echoed.
    pub q_end: usize,
    /// What answered it: the address of the first prepared response copied (0 for none),
    /// the same for every name a wildcard or a zone's denial answers (the RRL key).
    pub key: usize,
    /// An OPT record ends it.
    pub edns: bool,
}

impl Response {
    /// The class response rate limiting counts this response under.
    pub fn rrl_class(&self, buf: &[u8]) -> rrl::Class {
        let rcode = buf[3] & 0x0f;
        let qtype = if self.q_end >= HEADER_LEN + 5 {
            u16::from_be_bytes([buf[self.q_end - 4], buf[self.q_end - 3]])
        } else {
            0
        };
        match rcode {
            rcode::NXDOMAIN => rrl::Class::Nxdomain,
            0 if qtype == rtype::ANY => rrl::Class::Any,
            0 if self.len > 1024 => rrl::Class::Large,
            0 if buf[6..8] == [0, 0] && buf[2] & 0x04 != 0 => rrl::Class::Empty,
            0 => rrl::Class::Normal,
            _ => rrl::Class::Error,
        }
    }
}

/// The DNS server for one engine.
pub struct DnsServer {
    catalog: Follower<Catalog>,
    port: u16,
    mode: KeyMode,
    /// Response rate limiting over UDP, if on.
    rrl: Option<Rrl>,
    /// NOTIFY to secondaries (the server of one engine only).
    notifier: Option<Notifier>,
    /// The catalog's zones were not looked at for NOTIFY yet.
    announce: bool,
    /// The zones served as a secondary, which NOTIFYs may name.
    secondaries: Option<Arc<Secondaries>>,
    /// DNS cookies, if on.
    cookies: Option<crate::cookies::Cookies>,
    /// The client of the query being answered (for its cookie).
    client: Option<wire::IpAddr>,
    /// The COOKIE option of the answer being built (client and server cookie), and whether
    /// the query's server cookie was valid.
    cookie: Option<([u8; 24], bool)>,
    /// Counters.
    pub stats: DnsStats,
}

/// The sections being assembled behind the question.
struct Body {
    start: usize,
    end: usize,
    counts: [u16; 3],
    sum: u64,
    rcode: u16,
    aa: bool,
    tc: bool,
    /// The first prepared response copied (its address), 0 for none.
    key: usize,
}

impl DnsServer {
    /// Serves `catalog` on UDP `port`.
    pub fn new(catalog: Arc<Catalog>, port: u16) -> Self {
        DnsServer::following(Follower::fixed(catalog), port)
    }

    /// Serves the catalog `catalog` follows, switching when a new one is published (between
    /// batches: the engine calls `produce` once per loop iteration).
    pub fn following(catalog: Follower<Catalog>, port: u16) -> Self {
        DnsServer {
            catalog,
            port,
            mode: KeyMode::default(),
            rrl: None,
            notifier: None,
            announce: true,
            secondaries: None,
            cookies: None,
            client: None,
            cookie: None,
            stats: DnsStats::default(),
        }
    }

    /// Answers DNS cookies (RFC 7873, RFC 9018 server cookies under `c`'s secret).
    pub fn with_cookies(mut self, c: crate::cookies::Cookies) -> Self {
        self.cookies = Some(c);
        self
    }

    /// Sends the NOTIFY messages of zones that name secondaries (one engine's server).
    pub fn with_notify(mut self) -> Self {
        self.notifier = Some(Notifier::default());
        self
    }

    /// Takes NOTIFYs for the secondary zones of `s` from their primaries.
    pub fn with_secondaries(mut self, s: Arc<Secondaries>) -> Self {
        self.secondaries = Some(s);
        self
    }

    /// A NOTIFY (RFC 1996) in `buf[..len]` from `src`, over UDP or TCP: a secondary zone's
    /// primary says it has a new version. Accepted, it makes engine 0 check the zone; the answer echoes the
    /// question (signed if the NOTIFY was).
    fn notify_in(&mut self, buf: &mut [u8], len: usize, src: wire::IpAddr) -> Option<Response> {
        let secondaries = self.secondaries.clone()?;
        if buf[4..6] != [0, 1] {
            return None;
        }
        let (name, next) = Name::read(&buf[..len], HEADER_LEN).ok()?;
        let q_end = next + 4;
        if q_end > len {
            return None;
        }
        let zone = secondaries.find(name.as_wire());
        let spec = zone.as_ref().map(|z| &z.1.spec);
        let now = unix_now();
        let catalog = self.catalog.get().clone();
        let signed = tsig::find(&buf[..len]).map(|at| tsig::verify(catalog.keys(), &buf[..len], at, now));
        let mut mac = None;
        let rc = match (spec, &signed) {
            (None, _) => rcode::NOTAUTH,
            (Some(s), _) if !s.primaries.iter().any(|p| p.0 == src) => rcode::REFUSED,
            (Some(s), Some(Check::Valid { key, mac: m })) if s.key.as_ref().is_none_or(|k| k.name() == key.name()) => {
                mac = Some((*key, *m));
                rcode::NOERROR
            }
            (Some(_), Some(Check::Valid { .. })) => rcode::REFUSED,
            (Some(_), Some(_)) => rcode::NOTAUTH,
            (Some(s), None) if s.key.is_some() => rcode::REFUSED,
            (Some(_), None) => rcode::NOERROR,
        };
        if rc == rcode::NOERROR {
            secondaries.notify(zone.expect("a zone").0);
            self.stats.notify_in += 1;
        } else {
            self.stats.notify_refused += 1;
        }
        // QR, opcode NOTIFY, AA; the question alone.
        buf[2] = 0x80 | (4 << 3) | 0x04;
        buf[3] = rc;
        buf[6..12].fill(0);
        let mut end = q_end;
        match (mac, signed) {
            (Some((key, m)), _) => end = tsig::sign(key, buf, end, Chain::Answer(m.as_bytes()), now, 0, &[])?.0,
            (None, Some(Check::Failed { error, key_name, alg_name, .. })) => {
                end = tsig::append_unsigned(buf, end, key_name.as_wire(), alg_name.as_wire(), now, error)?
            }
            _ => {}
        }
        Some(Response { len: end, sum: checksum::fold(checksum::add(0, &buf[..end])), q_end, key: 0, edns: false })
    }

    /// Writes the counters for the metrics endpoint.
    pub fn metrics(&self, out: &mut engine::Samples) {
        const RCODES: [&str; 9] =
            ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "BADVERS", "NOTAUTH"];
        let st = &self.stats;
        for (name, v) in RCODES.iter().zip(st.rcodes) {
            out.counter_with("sirocco_dns_responses_total", "DNS responses sent, by rcode.", ("rcode", name), v);
        }
        out.counter("sirocco_dns_truncated_total", "Responses truncated (TC) to fit the client's size.", st.truncated);
        out.counter("sirocco_dns_dropped_total", "Messages dropped without an answer (responses, runts).", st.dropped);
        out.counter("sirocco_dns_signed_queries_total", "Signed queries (TSIG) answered, valid or not.", st.signed);
        let rrl = "Responses over the rate limit (RRL), dropped or slipped (sent truncated).";
        out.counter_with("sirocco_dns_rrl_limited_total", rrl, ("action", "dropped"), st.rrl_dropped);
        out.counter_with("sirocco_dns_rrl_limited_total", rrl, ("action", "slipped"), st.rrl_slipped);
        let cookies = "Queries with a DNS cookie, by what their server cookie was.";
        out.counter_with("sirocco_dns_cookies_total", cookies, ("server_cookie", "valid"), st.cookies_valid);
        out.counter_with("sirocco_dns_cookies_total", cookies, ("server_cookie", "fresh"), st.cookies_fresh);
        let bad = "Responses over the rate limit sent as BADCOOKIE with a fresh server cookie.";
        out.counter("sirocco_dns_badcookie_total", bad, st.badcookie);
        let notify = "NOTIFY messages from primaries, accepted or refused.";
        out.counter_with("sirocco_dns_notify_received_total", notify, ("result", "accepted"), st.notify_in);
        out.counter_with("sirocco_dns_notify_received_total", notify, ("result", "refused"), st.notify_refused);
        if let Some(n) = &self.notifier {
            let help = "NOTIFY to secondaries: messages sent, changes acknowledged or never acknowledged.";
            for (what, v) in
                [("sent", n.stats.sent), ("acknowledged", n.stats.acked), ("unanswered", n.stats.unanswered)]
            {
                out.counter_with("sirocco_dns_notify_sent_total", help, ("event", what), v);
            }
        }
        let catalog = self.catalog.get();
        out.gauge("sirocco_dns_zones", "Zones served.", catalog.zones().len() as u64);
        // The compiled zones' size (the engines share them): what a reload with more names
        // grows, beside the process's memory.
        let (mut names, mut responses, mut bytes) = (0, 0, 0);
        for z in catalog.zones() {
            (names, responses, bytes) = (names + z.names(), responses + z.responses(), bytes + z.memory_bytes());
        }
        out.gauge("sirocco_dns_names", "Names with prepared answers, over the zones served.", names as u64);
        out.gauge(
            "sirocco_dns_prepared_responses",
            "Distinct prepared responses, over the zones served.",
            responses as u64,
        );
        out.gauge(
            "sirocco_dns_compiled_bytes",
            "Memory the compiled zones hold (shared by the engines).",
            bytes as u64,
        );
    }

    /// The NOTIFY side, if this server sends them.
    pub fn notifier(&self) -> Option<&Notifier> {
        self.notifier.as_ref()
    }

    /// Limits the responses over UDP as `settings` say.
    pub fn with_rrl(mut self, settings: rrl::RrlSettings, exempt: crate::transfer::Acl) -> Self {
        self.rrl = Some(Rrl::new(settings).with_exempt(exempt));
        self
    }

    /// Turns the response `r` in `buf` into its truncated form: TC set, nothing behind the
    /// question but the OPT record (a slipped response under rate limiting).
    fn slip(buf: &mut [u8], r: Response) -> Response {
        buf[2] |= 0x02;
        buf[6..10].fill(0);
        buf[10..12].copy_from_slice(&u16::from(r.edns).to_be_bytes());
        let mut len = r.q_end;
        if r.edns {
            buf.copy_within(r.len - OPT_LEN..r.len, len);
            len += OPT_LEN;
        }
        Response { len, sum: checksum::fold(checksum::add(0, &buf[..len])), ..r }
    }

    /// Turns the response `r` in `buf` (to a query with a cookie whose server cookie was not
    /// valid, over the rate limit) into BADCOOKIE: the question and the OPT record with the
    /// fresh server cookie, so a real client asks again with it and is not limited (RFC 7873
    /// section 5.2.3, a server enforcing cookies).
    fn badcookie(buf: &mut [u8], r: Response) -> Response {
        let tail = OPT_LEN + COOKIE_LEN;
        buf.copy_within(r.len - tail..r.len, r.q_end);
        buf[2] &= !0x02;
        buf[3] = (buf[3] & 0xf0) | (BADCOOKIE & 0x0f) as u8;
        buf[6..10].fill(0);
        buf[10..12].copy_from_slice(&1u16.to_be_bytes());
        buf[r.q_end + 5] = (BADCOOKIE >> 4) as u8;
        let len = r.q_end + tail;
        Response { len, sum: checksum::fold(checksum::add(0, &buf[..len])), ..r }
    }

    /// Keys question names as `mode` says.
    pub fn with_key_mode(mut self, mode: KeyMode) -> Self {
        self.mode = mode;
        self
    }

    /// The catalog served.
    pub fn catalog(&self) -> &Arc<Catalog> {
        self.catalog.get()
    }

    /// Builds the response to the message `buf[..len]` in place; None to stay silent.
    pub fn respond(&mut self, buf: &mut [u8], len: usize) -> Option<Response> {
        self.answer(buf, len, None, 0)
    }

    /// As [`DnsServer::respond`], for a query that came over TCP (RFC 7766): the answer may
    /// fill `buf` up to 65 535 bytes and is never truncated for size below that. A query
    /// with the edns-tcp-keepalive option is told `keepalive`, the idle timeout in units of
    /// 100 ms (RFC 7828).
    /// `src` is the client (a NOTIFY must come from a primary).
    pub fn respond_tcp(&mut self, buf: &mut [u8], len: usize, keepalive: u16, src: wire::IpAddr) -> Option<usize> {
        if len >= HEADER_LEN && buf[2] & 0xf8 == 4 << 3 && self.secondaries.is_some() {
            return self.notify_in(buf, len, src).map(|r| r.len);
        }
        self.client = Some(src);
        let r = self.answer(buf, len, Some(keepalive), 0).map(|r| r.len);
        self.client = None;
        r
    }

    /// The COOKIE option to answer `edns` with, if it carries one and cookies are on; the
    /// bytes it takes in the answer.
    fn take_cookie(&mut self, edns: &Option<Edns>) -> usize {
        self.cookie = None;
        let (Some(c), Some(e), Some(ip)) = (&self.cookies, edns, self.client) else { return 0 };
        let Some(qc) = e.cookie else { return 0 };
        let (verdict, server) = c.check(&qc.client, qc.server(), ip, unix_now() as u32);
        let valid = verdict == crate::cookies::Verdict::Valid;
        if valid {
            self.stats.cookies_valid += 1;
        } else {
            self.stats.cookies_fresh += 1;
        }
        let mut out = [0u8; 24];
        out[..8].copy_from_slice(&qc.client);
        out[8..].copy_from_slice(&server);
        self.cookie = Some((out, valid));
        COOKIE_LEN
    }

    /// `tcp`: the keep-alive timeout to tell a client that asks, for a query over TCP;
    /// `reserve`: bytes to leave free behind the answer (for its TSIG record).
    fn answer(&mut self, buf: &mut [u8], len: usize, tcp: Option<u16>, reserve: usize) -> Option<Response> {
        // Over TCP the option is answered; over UDP it is ignored (RFC 7828 3.3.1).
        let keepalive = |e: &Option<Edns>| tcp.filter(|_| e.is_some_and(|e| e.tcp_keepalive));
        self.cookie = None;
        let q = match Query::parse_keyed(&buf[..len], self.mode) {
            Ok(q) => q,
            Err(QueryError::Drop) => {
                self.stats.dropped += 1;
                return None;
            }
            Err(QueryError::Respond { rcode: rc, question_end, edns }) => {
                // A compressed question is echoed only if its name is whole in it: a
                // pointer may lead to bytes past the question, which the answer does not
                // keep (RFC 1035 lets an error answer leave the question out).
                let plain =
                    |e: usize| matches!(Name::scan(&buf[..e], HEADER_LEN), Ok(Some(l)) if HEADER_LEN + l + 4 == e);
                let question_end = question_end.filter(|&e| plain(e));
                let qd = question_end.is_some() as u16;
                let q_end = question_end.unwrap_or(HEADER_LEN);
                let rd_cd = u16::from_be_bytes([buf[2], buf[3]]) & 0x0110;
                let body = Body::empty(q_end, rc);
                self.take_cookie(&edns);
                return Some(self.finish(buf, q_end, body, rd_cd, qd, edns, keepalive(&edns)));
            }
        };
        if let Some(at) = q.tsig {
            return self.answer_signed(buf, len, &q, at, tcp);
        }
        let cookie_len = self.take_cookie(&q.edns);
        let rd_cd = (u16::from(q.rd) << 8) | (u16::from(q.cd) << 4);
        let qlen = q.qname(buf).len();
        let mut q_end = q.question_end;
        if let QName::Copied(n) = &q.qname {
            if q_end - 4 - HEADER_LEN != qlen {
                // The question name was compressed: write it out in full so that pointers
                // into it (which the prepared responses use) mean what they should.
                let tail = [buf[q_end - 4], buf[q_end - 3], buf[q_end - 2], buf[q_end - 1]];
                buf[HEADER_LEN..HEADER_LEN + qlen].copy_from_slice(n.as_wire());
                buf[HEADER_LEN + qlen..HEADER_LEN + qlen + 4].copy_from_slice(&tail);
                q_end = HEADER_LEN + qlen + 4;
            }
        }
        if tcp.is_none() && q.qtype == rtype::AXFR {
            // A transfer over UDP is not defined (RFC 5936 section 4.2): NOTIMP, as Knot
            // and NSD answer.
            let body = Body::empty(q_end, u16::from(rcode::NOTIMP));
            return Some(self.finish(buf, q_end, body, rd_cd, 1, q.edns, None));
        }
        // IXFR over UDP gets the zone's SOA alone: the client then transfers over TCP (RFC
        // 1995 section 2); over TCP it never comes here.
        let qtype = if q.qtype == rtype::IXFR { rtype::SOA } else { q.qtype };
        let refused = Body::empty(q_end, u16::from(rcode::REFUSED));
        if q.qclass != class::IN && q.qclass != class::ANY {
            // Only class IN is served (QCLASS * asks for it too); CHAOS identity queries are
            // refused, as NSD does with hide-version and hide-identity.
            return Some(self.finish(buf, q_end, refused, rd_cd, 1, q.edns, keepalive(&q.edns)));
        }
        // Borrowed, not cloned: an Arc clone per query would bounce its count between cores.
        let catalog = self.catalog.get();
        // The key: the copy (decompress mode) or the bytes in the query (wire mode).
        let copied = match &q.qname {
            QName::Copied(n) => Some(n),
            QName::InPlace(_) => None,
        };
        let lim = match tcp {
            Some(_) => buf.len().min(usize::from(u16::MAX)) - OPT_LEN - KEEPALIVE_LEN,
            None => limit(q.edns, buf.len()),
        }
        .saturating_sub(reserve + cookie_len);
        let key = |buf: &[u8]| -> Lookup<'_> {
            let w = copied.map(|n| n.as_wire()).unwrap_or(&buf[HEADER_LEN..HEADER_LEN + qlen]);
            catalog.zone_for(w, q.qtype)
        };
        let dnssec = q.edns.is_some_and(|e| e.dnssec_ok);
        let body = match key(buf) {
            Lookup::Zone(z) => assemble(buf, q_end, lim, z, copied, qlen, Question { qtype, dnssec }),
            Lookup::Refused => refused,
        };
        Some(self.finish(buf, q_end, body, rd_cd, 1, q.edns, keepalive(&q.edns)))
    }

    /// Answers a signed query (RFC 8945 section 5.2): checks its TSIG record at `at`, then
    /// answers the query without it and signs the answer over the query's MAC; a signature
    /// that does not hold gets NOTAUTH with the TSIG error. Off the fast path: only zone
    /// transfer clients and operators sign queries.
    fn answer_signed(
        &mut self,
        buf: &mut [u8],
        len: usize,
        q: &Query,
        at: usize,
        tcp: Option<u16>,
    ) -> Option<Response> {
        let now = unix_now();
        // A clone of the handle, not a borrow: `self` answers while the key is in use.
        let catalog = self.catalog.get().clone();
        let check = tsig::verify(catalog.keys(), &buf[..len], at, now);
        // The query as it was before it was signed: without the record.
        let ar = u16::from_be_bytes([buf[10], buf[11]]) - 1;
        buf[10..12].copy_from_slice(&ar.to_be_bytes());
        let (len, r) = match check {
            Check::Valid { key, mac } => {
                let r = self.answer(buf, at, tcp, key.record_len(0))?;
                (tsig::sign(key, buf, r.len, Chain::Answer(mac.as_bytes()), now, 0, &[])?.0, r)
            }
            Check::BadTime { key, mac, time } => {
                let r = self.refuse(buf, q, rcode::NOTAUTH, tcp);
                let ours = now.to_be_bytes();
                let other = &ours[2..];
                let signed =
                    tsig::sign(key, buf, r.len, Chain::Answer(mac.as_bytes()), time, tsig::error::BADTIME, other);
                (signed?.0, r)
            }
            Check::Failed { error, key_name, alg_name, .. } => {
                let r = self.refuse(buf, q, rcode::NOTAUTH, tcp);
                (tsig::append_unsigned(buf, r.len, key_name.as_wire(), alg_name.as_wire(), now, error)?, r)
            }
            Check::Malformed => {
                let r = self.refuse(buf, q, rcode::FORMERR, tcp);
                (r.len, r)
            }
        };
        self.stats.signed += 1;
        Some(Response { len, sum: checksum::fold(checksum::add(0, &buf[..len])), ..r })
    }

    /// An answer with `rc` and the question alone (the question written out in full).
    fn refuse(&mut self, buf: &mut [u8], q: &Query, rc: u8, tcp: Option<u16>) -> Response {
        let mut q_end = q.question_end;
        if let QName::Copied(n) = &q.qname {
            let (qlen, tail) = (n.as_wire().len(), [buf[q_end - 4], buf[q_end - 3], buf[q_end - 2], buf[q_end - 1]]);
            buf[HEADER_LEN..HEADER_LEN + qlen].copy_from_slice(n.as_wire());
            buf[HEADER_LEN + qlen..HEADER_LEN + qlen + 4].copy_from_slice(&tail);
            q_end = HEADER_LEN + qlen + 4;
        }
        let rd_cd = (u16::from(q.rd) << 8) | (u16::from(q.cd) << 4);
        let keepalive = tcp.filter(|_| q.edns.is_some_and(|e| e.tcp_keepalive));
        self.finish(buf, q_end, Body::empty(q_end, u16::from(rc)), rd_cd, 1, q.edns, keepalive)
    }

    /// Writes header flags and counts and the OPT record (with the keep-alive option if
    /// `keepalive`); returns the message and its sum.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        buf: &mut [u8],
        q_end: usize,
        body: Body,
        rd_cd: u16,
        qdcount: u16,
        edns: Option<Edns>,
        keepalive: Option<u16>,
    ) -> Response {
        let rc = body.rcode;
        let mut flags: u16 = 0x8000 | rd_cd | (rc & 0x000f);
        if body.aa {
            flags |= 0x0400;
        }
        if body.tc {
            flags |= 0x0200;
            self.stats.truncated += 1;
        }
        buf[2..4].copy_from_slice(&flags.to_be_bytes());
        buf[4..6].copy_from_slice(&qdcount.to_be_bytes());
        buf[6..8].copy_from_slice(&body.counts[0].to_be_bytes());
        buf[8..10].copy_from_slice(&body.counts[1].to_be_bytes());
        let ar = body.counts[2] + u16::from(edns.is_some());
        buf[10..12].copy_from_slice(&ar.to_be_bytes());
        // The header's words from the values just written, not read back: a load over bytes
        // still in the store buffer cannot be forwarded from them, and over IPv6 the header
        // straddles a cache line too (the profile had half of this function on that load).
        let id = u16::from_be_bytes([buf[0], buf[1]]);
        let header =
            [id, flags, qdcount, body.counts[0], body.counts[1], ar].iter().map(|&w| u64::from(w)).sum::<u64>();
        let mut sum = checksum::add(body.sum + header, &buf[12..q_end]);
        let mut end = body.end;
        if edns.is_some() {
            let ext = (rc >> 4) as u8;
            let size = (MAX_UDP as u16).to_be_bytes();
            // The DO bit is copied into the response (RFC 3225 section 3).
            let dnssec_ok = if edns.is_some_and(|e| e.dnssec_ok) { 0x80 } else { 0 };
            let cookie = self.cookie.take();
            let rdlen = if keepalive.is_some() { KEEPALIVE_LEN as u8 } else { 0 }
                + if cookie.is_some() { COOKIE_LEN as u8 } else { 0 };
            let opt = [0, 0, 41, size[0], size[1], ext, 0, dnssec_ok, 0, 0, rdlen];
            buf[end..end + OPT_LEN].copy_from_slice(&opt);
            sum += sum_at(checksum::fold(checksum::add(0, &opt)), end);
            end += OPT_LEN;
            if let Some(t) = keepalive {
                let (code, t) = (dns::option::TCP_KEEPALIVE.to_be_bytes(), t.to_be_bytes());
                let option = [code[0], code[1], 0, 2, t[0], t[1]];
                buf[end..end + KEEPALIVE_LEN].copy_from_slice(&option);
                // Over TCP the sum goes unused; kept right all the same.
                sum += sum_at(checksum::fold(checksum::add(0, &option)), end);
                end += KEEPALIVE_LEN;
            }
            if let Some((c, valid)) = cookie {
                let head = [0, dns::option::COOKIE as u8, 0, 24];
                buf[end..end + 4].copy_from_slice(&head);
                buf[end + 4..end + COOKIE_LEN].copy_from_slice(&c);
                sum += sum_at(checksum::fold(checksum::add(0, &buf[end..end + COOKIE_LEN])), end);
                end += COOKIE_LEN;
                // Kept for the rate limiter's decision (a valid cookie is exempt).
                self.cookie = Some((c, valid));
            }
        }
        let slot = match rc {
            rcode::BADVERS => 7,
            r if r == u16::from(rcode::NOTAUTH) => 8,
            r if r <= 6 => usize::from(r),
            _ => 2,
        };
        self.stats.rcodes[slot] += 1;
        Response { len: end, sum: checksum::fold(sum), q_end, key: body.key, edns: edns.is_some() }
    }
}

impl Body {
    fn empty(q_end: usize, rcode: u16) -> Body {
        Body { start: q_end, end: q_end, counts: [0; 3], sum: 0, rcode, aa: false, tc: false, key: 0 }
    }

    /// RFC 2181 section 9: a response that does not fit is sent with TC set and nothing
    /// behind the question, so the client retries over TCP.
    fn truncated(self) -> Body {
        Body { end: self.start, counts: [0; 3], sum: 0, tc: true, key: 0, ..self }
    }
}

/// The size a response must fit: the client's EDNS size (512 without EDNS), at most
/// [`MAX_UDP`], less the OPT record sirocco adds.
fn limit(edns: Option<Edns>, buf_len: usize) -> usize {
    match edns {
        Some(e) => usize::from(e.udp_size.max(512)).min(MAX_UDP).min(buf_len) - OPT_LEN,
        None => 512.min(buf_len),
    }
}

/// What is asked, as the prepared responses tell apart.
#[derive(Clone, Copy)]
struct Question {
    qtype: u16,
    /// The DO bit.
    dnssec: bool,
}

/// Copies the prepared response(s) for the question behind it. A DNAME (rare) makes the
/// server synthesise the CNAME itself and continue at its target; everything else is one
/// prepared response, and with DO, for a name that does not exist, the NSEC covering it.
fn assemble(
    buf: &mut [u8],
    q_end: usize,
    limit: usize,
    z: &CompiledZone,
    copied: Option<&Name>,
    qlen: usize,
    q: Question,
) -> Body {
    let Question { qtype, dnssec } = q;
    let mut b = Body { aa: true, ..Body::empty(q_end, 0) };
    let (mut name_at, mut name_len) = (HEADER_LEN, qlen);
    for depth in 0..MAX_CHAIN {
        let step = match copied.filter(|_| depth == 0) {
            Some(n) => z.lookup(n.as_wire(), qtype, dnssec),
            None => z.lookup(&buf[name_at..name_at + name_len], qtype, dnssec),
        };
        match step {
            Step::Answer(p) => {
                let n = p.body.len();
                if p.oversize || b.end + n > limit {
                    return b.truncated();
                }
                b.sum += p.write(&mut buf[b.end..b.end + n], b.end, name_at, name_len);
                b.end += n;
                if b.key == 0 {
                    b.key = p.body.as_ptr() as usize;
                }
                for (c, add) in b.counts.iter_mut().zip(p.counts) {
                    *c += add;
                }
                b.rcode = u16::from(p.rcode);
                if depth == 0 {
                    b.aa = p.aa;
                }
                if dnssec && p.cover.mode != Cover::NONE {
                    // The body ends with its authority section: the record goes right after.
                    if let Some(c) = z.covering(&p.cover, &buf[name_at..name_at + name_len]) {
                        if b.end + c.bytes.len() > limit {
                            return b.truncated();
                        }
                        buf[b.end..b.end + c.bytes.len()].copy_from_slice(c.bytes);
                        b.sum += sum_at(c.sum, b.end);
                        b.end += c.bytes.len();
                        b.counts[1] += c.count;
                    }
                }
                return b;
            }
            Step::Dname(d) => {
                let record = d.record(dnssec);
                let n = record.body.len();
                let prefix = name_len - d.owner_len;
                let target_len = prefix + d.target.len();
                let cname_len = 2 + 10 + target_len;
                if b.end + n + cname_len > limit {
                    return b.truncated();
                }
                b.sum += record.write(&mut buf[b.end..b.end + n], b.end, name_at, name_len);
                b.end += n;
                b.key = record.body.as_ptr() as usize;
                b.counts[0] += record.counts[0];
                if target_len > dns::name::MAX_NAME {
                    b.rcode = u16::from(rcode::YXDOMAIN);
                    return b;
                }
                // The synthesised CNAME: owner is the name being resolved, data the
                // substituted name, written out in full so later answers can point into it.
                let start = b.end;
                let ptr = 0xc000 | name_at as u16;
                buf[start..start + 2].copy_from_slice(&ptr.to_be_bytes());
                buf[start + 2..start + 4].copy_from_slice(&rtype::CNAME.to_be_bytes());
                buf[start + 4..start + 6].copy_from_slice(&class::IN.to_be_bytes());
                buf[start + 6..start + 10].copy_from_slice(&d.ttl.to_be_bytes());
                buf[start + 10..start + 12].copy_from_slice(&(target_len as u16).to_be_bytes());
                let t_at = start + 12;
                buf.copy_within(name_at..name_at + prefix, t_at);
                buf[t_at + prefix..t_at + target_len].copy_from_slice(&d.target);
                let mut s = checksum::add(0, &buf[start..t_at + target_len]);
                if start & 1 == 1 {
                    s = u64::from(checksum::fold(s).swap_bytes());
                }
                b.sum += s;
                b.end = t_at + target_len;
                b.counts[0] += 1;
                b.rcode = u16::from(rcode::NOERROR);
                if !wire_ends_with(&buf[t_at..t_at + target_len], z.origin.as_wire()) {
                    return b;
                }
                (name_at, name_len) = (t_at, target_len);
            }
        }
    }
    b
}

impl Service for DnsServer {
    fn udp_ports(&self) -> Vec<u16> {
        vec![self.port]
    }

    fn produce(&mut self, now: engine::Instant, out: &mut dyn engine::Originate) -> usize {
        // Called once per engine loop iteration: the place to switch catalogs.
        let switched = self.catalog.refresh();
        let Some(n) = self.notifier.as_mut() else { return 0 };
        if switched || self.announce {
            self.announce = false;
            n.catalog(self.catalog.get(), now);
        }
        if n.waiting() == 0 {
            return 0;
        }
        n.produce(now, self.port, out)
    }

    fn udp(&mut self, now: engine::Instant, d: Datagram<'_>) -> Verdict {
        if d.len >= 12 && d.buf[2] & 0xf8 == 4 << 3 && self.secondaries.is_some() {
            return match self.notify_in(d.buf, d.len, d.src) {
                Some(r) => Verdict::ReplySummed { len: r.len, sum: r.sum },
                None => Verdict::Drop,
            };
        }
        if d.len >= 12 && d.buf[2] & 0x80 != 0 {
            // A response: only a secondary's answer to our NOTIFY is expected.
            if let Some(n) = self.notifier.as_mut() {
                if n.response(d.src, &d.buf[..d.len]) {
                    return Verdict::Drop;
                }
            }
        }
        self.client = Some(d.src);
        let answered = self.respond(d.buf, d.len);
        self.client = None;
        let Some(mut r) = answered else {
            return Verdict::Drop;
        };
        // A valid server cookie proves the address: no rate limit for it.
        let cookie = self.cookie.take();
        if let Some(rrl) = self.rrl.as_mut().filter(|_| !cookie.is_some_and(|c| c.1)) {
            match rrl.check(now.as_millis(), d.src, r.rrl_class(d.buf), r.key) {
                Decision::Pass => {}
                Decision::Drop => {
                    self.stats.rrl_dropped += 1;
                    return Verdict::Drop;
                }
                Decision::Slip if cookie.is_some() && r.edns => {
                    self.stats.badcookie += 1;
                    r = DnsServer::badcookie(d.buf, r);
                }
                Decision::Slip => {
                    self.stats.rrl_slipped += 1;
                    r = DnsServer::slip(d.buf, r);
                }
            }
        }
        Verdict::ReplySummed { len: r.len, sum: r.sum }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::CompiledZone;
    use std::fmt::Write as _;

    fn server(zone: &str) -> DnsServer {
        let z = crate::zone::load_text(std::path::Path::new("t.zone"), zone.as_bytes(), None).unwrap();
        DnsServer::new(Arc::new(Catalog::new(vec![CompiledZone::compile(&z)])), 53)
    }

    fn ask(s: &mut DnsServer, name: &[u8], qtype: u16) -> Vec<u8> {
        let mut buf = vec![0u8; 1500];
        let mut q = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
        q.extend_from_slice(name);
        q.extend(qtype.to_be_bytes());
        q.extend([0, 1, 0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0]);
        buf[..q.len()].copy_from_slice(&q);
        let r = s.respond(&mut buf, q.len()).expect("answered");
        buf.truncate(r.len);
        buf
    }

    #[test]
    fn oversized_rrsets_and_many_types_at_one_name() {
        let mut zone = String::from("$ORIGIN t.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.0.1\n");
        let long = "x".repeat(250);
        for i in 0..300 {
            let _ = writeln!(zone, "big TXT \"{i:03}{long}\"");
        }
        for t in 1000..1300 {
            let _ = writeln!(zone, "many TYPE{t} \\# 1 {:02x}", t % 256);
        }
        let mut s = server(&zone);
        let r = ask(&mut s, b"\x03big\x01t\x00", 16);
        assert_eq!((r[2] & 0x02, r[7]), (0x02, 0), "over 64 KiB of answer: TC, nothing behind the question");
        for t in [1000u16, 1255, 1256, 1299] {
            let r = ask(&mut s, b"\x04many\x01t\x00", t);
            assert_eq!(r[7], 1, "type {t} of 300 at one name");
            assert_eq!(r[r.len() - 12], (t % 256) as u8, "its own data");
        }
    }

    #[test]
    fn the_sum_covers_the_keepalive_option() {
        let mut s = server("$ORIGIN t.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.0.1\n");
        for name in [&b"\x02ns\x01t\x00"[..], b"\x03nsx\x01t\x00"] {
            let mut q = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
            q.extend_from_slice(name);
            q.extend([0, 1, 0, 1, 0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 4, 0, 11, 0, 0]);
            let mut buf = vec![0u8; 1500];
            buf[..q.len()].copy_from_slice(&q);
            let r = s.answer(&mut buf, q.len(), Some(100), 0).unwrap();
            assert_eq!(&buf[r.len - 6..r.len], &[0, 11, 0, 2, 0, 100]);
            assert_eq!(r.sum, checksum::fold(checksum::add(0, &buf[..r.len])), "odd and even lengths");
        }
    }

    #[test]
    fn over_the_rate_limit_responses_are_dropped_or_slipped_truncated() {
        use engine::Service as _;
        let zone = "$ORIGIN t.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.0.1\n*.w A 198.18.0.2\n";
        let settings = crate::rrl::RrlSettings { rate: 1, slip: 2, ..Default::default() };
        let mut s = server(zone).with_rrl(settings, Default::default());
        let client = wire::IpAddr::V4(wire::Ipv4Addr([198, 18, 7, 1]));
        let mut ask = |name: &[u8]| {
            let mut buf = vec![0u8; 1500];
            let mut q = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
            q.extend_from_slice(name);
            q.extend([0, 1, 0, 1, 0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0]);
            buf[..q.len()].copy_from_slice(&q);
            let d = Datagram { src: client, src_port: 5000, dst_port: 53, buf: &mut buf, len: q.len() };
            match s.udp(engine::Instant::from_millis(5000), d) {
                Verdict::ReplySummed { len, sum } => {
                    assert_eq!(sum, checksum::fold(checksum::add(0, &buf[..len])));
                    Some(buf[..len].to_vec())
                }
                Verdict::Drop => None,
                _ => unreachable!(),
            }
        };
        let full = ask(b"\x02ns\x01t\x00").expect("the first within the rate");
        assert_eq!((full[2] & 0x02, full[7]), (0, 1));
        assert_eq!(ask(b"\x02ns\x01t\x00"), None, "the second dropped");
        let slipped = ask(b"\x02ns\x01t\x00").expect("the third slipped");
        assert_eq!(slipped[2] & 0x02, 0x02, "TC");
        assert_eq!(&slipped[6..12], &[0, 0, 0, 0, 0, 1], "no records but the OPT");
        assert_eq!(slipped.len(), 12 + 6 + 4 + 11, "header, question, OPT");
        assert_eq!(&slipped[22..25], &[0, 0, 41]);
        // Names under one wildcard share its bucket; another answer has its own.
        assert!(ask(b"\x01a\x01w\x01t\x00").is_some());
        assert!(ask(b"\x01b\x01w\x01t\x00").is_none(), "one bucket for the wildcard");
        assert!(ask(b"\x01t\x00").is_some(), "NODATA at the apex: its own class");
        assert!(ask(b"\x03nx1\x01t\x00").is_some());
        assert!(ask(b"\x03nx2\x01t\x00").is_none(), "NXDOMAIN for another name: one bucket per denial");
        assert_eq!((s.stats.rrl_dropped, s.stats.rrl_slipped), (3, 1));
    }

    #[test]
    fn transfers_over_udp_notimp_for_axfr_and_the_soa_for_ixfr() {
        let mut s = server("$ORIGIN t.\n$TTL 60\n@ SOA ns h 7 2 3 4 5\n@ NS ns\nns A 198.18.0.1\n");
        let r = ask(&mut s, b"\x01t\x00", 252);
        assert_eq!((r[3] & 0x0f, r[7]), (4, 0), "AXFR over UDP: NOTIMP");
        // IXFR with the client's SOA (serial 3) in the authority section.
        let mut q = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0];
        q.extend(b"\x01t\x00\x00\xfb\x00\x01");
        q.extend([0xc0, 12, 0, 6, 0, 1, 0, 0, 0, 60, 0, 22]);
        q.extend(b"\x02ns\xc0\x0c\x01h\xc0\x0c");
        q.extend([0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5]);
        let mut buf = vec![0u8; 1500];
        buf[..q.len()].copy_from_slice(&q);
        let r = s.respond(&mut buf, q.len()).expect("answered");
        let m = &buf[..r.len];
        assert_eq!((m[3] & 0x0f, m[7], m[2] & 0x04), (0, 1, 0x04), "NOERROR, the SOA alone, authoritative");
        assert_eq!(&m[r.len - 4..], &[0, 0, 0, 5], "the SOA record last");
    }
}
