//! Validating a query: the header, exactly one question, and an EDNS(0) OPT record if any.

use crate::name::{Name, NameError};
use crate::{option, rcode, rtype, HEADER_LEN};

/// EDNS(0) as the client sent it (RFC 6891).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edns {
    /// The client's UDP payload size (values below 512 are treated as 512).
    pub udp_size: u16,
    /// EDNS version.
    pub version: u8,
    /// DNSSEC OK bit.
    pub dnssec_ok: bool,
    /// The edns-tcp-keepalive option was there (RFC 7828): over TCP the answer says how
    /// long an idle connection is kept.
    pub tcp_keepalive: bool,
    /// The COOKIE option (RFC 7873), if any.
    pub cookie: Option<Cookie>,
}

/// A COOKIE option: the client cookie and the server cookie the client holds (none yet when
/// `server_len` is 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cookie {
    /// The client cookie.
    pub client: [u8; 8],
    /// The server cookie (8 to 32 bytes), in `server[..server_len]`.
    pub server: [u8; 32],
    /// Its length.
    pub server_len: u8,
}

impl Cookie {
    /// The server cookie sent.
    pub fn server(&self) -> &[u8] {
        &self.server[..usize::from(self.server_len)]
    }
}

/// How the question name is turned into a lookup key — the two modes of the Namestorm
/// thesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyMode {
    /// Hash the name where it lies in the query, case-insensitively; only a compressed name
    /// (rare) is copied out.
    #[default]
    Wire,
    /// Decompress and lowercase the name into a buffer first, then hash that.
    Decompress,
}

/// Where the question name is.
#[derive(Debug, Clone)]
// Boxing the copy would allocate per query; the value lives on the stack for one query.
#[allow(clippy::large_enum_variant)]
pub enum QName {
    /// In the message right after the header, uncompressed, this many bytes, client's case.
    InPlace(usize),
    /// Decompressed and lowercased.
    Copied(Name),
}

/// A valid query.
#[derive(Debug, Clone)]
pub struct Query {
    /// Message ID.
    pub id: u16,
    /// Recursion desired (copied into the response).
    pub rd: bool,
    /// Checking disabled (copied into the response).
    pub cd: bool,
    /// The question name.
    pub qname: QName,
    /// Question type.
    pub qtype: u16,
    /// Question class.
    pub qclass: u16,
    /// Offset just past the question in the message (the response echoes bytes
    /// `HEADER_LEN..question_end`, keeping the client's letter case).
    pub question_end: usize,
    /// EDNS, if the query had an OPT record.
    pub edns: Option<Edns>,
    /// Where its TSIG record starts, if it is signed (RFC 8945): the last record; the
    /// message without it ends there.
    pub tsig: Option<usize>,
}

/// Why a message is not a valid query, and what to do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryError {
    /// Say nothing: too short for a header, or a response (QR set).
    Drop,
    /// Answer with this rcode (extended rcodes above 15 need EDNS). `question_end` is where
    /// the question ends if it could be read (echo it), else None (echo no question).
    Respond {
        /// The response code.
        rcode: u16,
        /// End of a readable question, if any.
        question_end: Option<usize>,
        /// EDNS of the query, if it could be read (a BADVERS answer carries an OPT).
        edns: Option<Edns>,
    },
}

fn be16(m: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*m.get(at)?, *m.get(at + 1)?]))
}

fn formerr(question_end: Option<usize>) -> QueryError {
    QueryError::Respond { rcode: u16::from(rcode::FORMERR), question_end, edns: None }
}

impl Query {
    /// Parses and validates a query message, decompressing the question name.
    pub fn parse(m: &[u8]) -> Result<Query, QueryError> {
        Query::parse_keyed(m, KeyMode::Decompress)
    }

    /// The question name in wire form: in place in `m` (the message parsed), or the copy.
    pub fn qname<'a>(&'a self, m: &'a [u8]) -> &'a [u8] {
        match &self.qname {
            QName::InPlace(len) => &m[HEADER_LEN..HEADER_LEN + len],
            QName::Copied(n) => n.as_wire(),
        }
    }

    /// Parses and validates a query message, keying the name as `mode` says.
    pub fn parse_keyed(m: &[u8], mode: KeyMode) -> Result<Query, QueryError> {
        if m.len() < HEADER_LEN {
            return Err(QueryError::Drop);
        }
        let flags = be16(m, 2).unwrap();
        if flags & 0x8000 != 0 {
            return Err(QueryError::Drop);
        }
        let (qd, an, ns, ar) = (be16(m, 4).unwrap(), be16(m, 6).unwrap(), be16(m, 8).unwrap(), be16(m, 10).unwrap());
        let opcode = ((flags >> 11) & 0xf) as u8;
        // Read the question if there is exactly one, for the echo even in error answers.
        let question = if qd == 1 { read_question(m, mode).ok() } else { None };
        if opcode != 0 {
            return Err(QueryError::Respond {
                rcode: u16::from(rcode::NOTIMP),
                question_end: question.as_ref().map(|q| q.3),
                edns: None,
            });
        }
        if qd != 1 {
            return Err(formerr(None));
        }
        let Some((qname, qtype, qclass, question_end)) = question else {
            return Err(formerr(None));
        };
        // IXFR carries the client's SOA in the authority section (RFC 1995 section 3).
        let ixfr_soa = qtype == rtype::IXFR && ns == 1;
        if an != 0 || (ns != 0 && !ixfr_soa) {
            return Err(formerr(Some(question_end)));
        }
        let additional = if ixfr_soa { skip_record(m, question_end) } else { Some(question_end) };
        let additional = additional.ok_or(formerr(Some(question_end)))?;
        let (edns, tsig) = read_additional(m, additional, ar).map_err(|_| formerr(Some(question_end)))?;
        if let Some(e) = edns {
            if e.version > 0 {
                return Err(QueryError::Respond { rcode: rcode::BADVERS, question_end: Some(question_end), edns });
            }
        }
        if qtype == rtype::OPT {
            return Err(formerr(Some(question_end)));
        }
        Ok(Query {
            id: be16(m, 0).unwrap(),
            rd: flags & 0x0100 != 0,
            cd: flags & 0x0010 != 0,
            qname,
            qtype,
            qclass,
            question_end,
            edns,
            tsig,
        })
    }
}

fn read_question(m: &[u8], mode: KeyMode) -> Result<(QName, u16, u16, usize), NameError> {
    let plain = match mode {
        KeyMode::Wire => Name::scan(m, HEADER_LEN)?,
        KeyMode::Decompress => None,
    };
    let (name, at) = match plain {
        Some(len) => (QName::InPlace(len), HEADER_LEN + len),
        None => {
            let (n, at) = Name::read(m, HEADER_LEN)?;
            (QName::Copied(n), at)
        }
    };
    let qtype = be16(m, at).ok_or(NameError::Truncated)?;
    let qclass = be16(m, at + 2).ok_or(NameError::Truncated)?;
    Ok((name, qtype, qclass, at + 4))
}

/// The end of the record at `at`, if it is whole.
fn skip_record(m: &[u8], at: usize) -> Option<usize> {
    let (_, next) = Name::read(m, at).ok()?;
    let end = next + 10 + usize::from(be16(m, next + 8)?);
    (end <= m.len()).then_some(end)
}

/// Reads the additional records, returning the OPT if one is there and where a TSIG record
/// starts. More than one OPT, an OPT not owned by the root, a TSIG record not last, or a
/// record running past the end is malformed.
fn read_additional(m: &[u8], mut at: usize, count: u16) -> Result<(Option<Edns>, Option<usize>), ()> {
    let mut edns = None;
    let mut tsig = None;
    for i in 0..count {
        let (owner, next) = Name::read(m, at).map_err(|_| ())?;
        let t = be16(m, next).ok_or(())?;
        let class = be16(m, next + 2).ok_or(())?;
        let ttl_hi = be16(m, next + 4).ok_or(())?;
        let ttl_lo = be16(m, next + 6).ok_or(())?;
        let rdlen = usize::from(be16(m, next + 8).ok_or(())?);
        let end = next + 10 + rdlen;
        if end > m.len() {
            return Err(());
        }
        if t == rtype::TSIG {
            if i + 1 != count || end != m.len() {
                return Err(());
            }
            tsig = Some(at);
        }
        if t == rtype::OPT {
            if edns.is_some() || owner.label_count() != 0 {
                return Err(());
            }
            // Only edns-tcp-keepalive is interpreted (unknown options are ignored, RFC 6891
            // 6.1.2); the framing of all is checked.
            let mut o = next + 10;
            let mut tcp_keepalive = false;
            let mut cookie = None;
            while o < end {
                let code = be16(m, o).ok_or(())?;
                let olen = usize::from(be16(m, o + 2).ok_or(())?);
                if code == option::COOKIE {
                    // A client cookie alone (8 bytes) or with a server cookie of 8 to 32;
                    // any other length is malformed (RFC 7873 section 5.2.2).
                    if !(olen == 8 || (16..=40).contains(&olen)) || o + 4 + olen > end {
                        return Err(());
                    }
                    let mut c = Cookie { client: [0; 8], server: [0; 32], server_len: (olen - 8) as u8 };
                    c.client.copy_from_slice(&m[o + 4..o + 12]);
                    c.server[..olen - 8].copy_from_slice(&m[o + 12..o + 4 + olen]);
                    cookie = Some(c);
                }
                // A client sends it without a TIMEOUT (RFC 7828 3.2.1); one that sends one
                // anyway is still told the server's.
                tcp_keepalive |= code == option::TCP_KEEPALIVE && (olen == 0 || olen == 2);
                o += 4 + olen;
            }
            if o != end {
                return Err(());
            }
            edns = Some(Edns {
                udp_size: class.max(512),
                version: (ttl_hi & 0xff) as u8,
                dnssec_ok: ttl_lo & 0x8000 != 0,
                tcp_keepalive,
                cookie,
            });
        }
        at = end;
    }
    Ok((edns, tsig))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `example.com. IN A` with id 0xbeef and RD, optionally with an OPT record.
    fn query(opt: Option<(u16, u8)>) -> Vec<u8> {
        let mut m = vec![0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend([7, b'E', b'x', b'a', b'm', b'p', b'l', b'e', 3, b'c', b'o', b'm', 0, 0, 1, 0, 1]);
        if let Some((size, version)) = opt {
            m[11] = 1;
            m.extend([0, 0, 41]);
            m.extend(size.to_be_bytes());
            m.extend([0, version, 0x80, 0, 0, 0]);
        }
        m
    }

    #[test]
    fn plain_query() {
        let q = Query::parse(&query(None)).unwrap();
        assert_eq!(q.id, 0xbeef);
        assert!(q.rd);
        assert!(matches!(&q.qname, QName::Copied(n) if n.to_string() == "example.com."));
        assert_eq!((q.qtype, q.qclass), (1, 1));
        assert_eq!(q.question_end, 12 + 13 + 4);
        assert_eq!(q.edns, None);
    }

    #[test]
    fn edns() {
        let q = Query::parse(&query(Some((1232, 0)))).unwrap();
        assert_eq!(
            q.edns,
            Some(Edns { udp_size: 1232, version: 0, dnssec_ok: true, tcp_keepalive: false, cookie: None })
        );
        let q = Query::parse(&query(Some((100, 0)))).unwrap();
        assert_eq!(q.edns.unwrap().udp_size, 512, "sizes below 512 count as 512");
        match Query::parse(&query(Some((1232, 1)))) {
            Err(QueryError::Respond { rcode, question_end: Some(_), edns: Some(_) }) => assert_eq!(rcode, 16),
            other => panic!("{other:?}"),
        }
        let mut two = query(Some((1232, 0)));
        two[11] = 2;
        two.extend([0, 0, 41, 4, 0, 0, 0, 0, 0, 0, 0]);
        assert!(matches!(Query::parse(&two), Err(QueryError::Respond { rcode: 1, .. })));
        let mut bad_opt_len = query(Some((1232, 0)));
        let n = bad_opt_len.len();
        bad_opt_len[n - 1] = 4; // rdlen 4 with nothing after
        assert!(matches!(Query::parse(&bad_opt_len), Err(QueryError::Respond { rcode: 1, .. })));
    }

    /// A query whose OPT record carries the options `opts`, parsed.
    fn with_options(opts: &[u8]) -> Result<Query, QueryError> {
        let mut m = query(Some((1232, 0)));
        let n = m.len();
        m[n - 2..].copy_from_slice(&(opts.len() as u16).to_be_bytes());
        m.extend_from_slice(opts);
        Query::parse(&m)
    }

    #[test]
    fn tcp_keepalive_option() {
        let with = |opts: &[u8]| with_options(opts).map(|q| q.edns.unwrap().tcp_keepalive);
        assert_eq!(with(&[]), Ok(false));
        assert_eq!(with(&[0, 11, 0, 0]), Ok(true));
        assert_eq!(with(&[0, 12, 0, 2, 0, 0, 0, 11, 0, 0]), Ok(true), "behind another option");
        assert_eq!(with(&[0, 11, 0, 2, 0, 50]), Ok(true), "a TIMEOUT sent anyway");
        assert_eq!(with(&[0, 11, 0, 1, 0]), Ok(false), "no valid length: ignored");
        assert_eq!(with(&[0, 12, 0, 0]), Ok(false));
        assert!(with(&[0, 11, 0, 4, 0]).is_err(), "an option past the record");
    }

    #[test]
    fn cookie_option() {
        let with = |opts: &[u8]| with_options(opts).map(|q| q.edns.unwrap().cookie);
        let client = [1, 2, 3, 4, 5, 6, 7, 8];
        let c = with(&[&[0, 10, 0, 8][..], &client].concat()).unwrap().unwrap();
        assert_eq!((c.client, c.server()), (client, &[][..]));
        let server: Vec<u8> = (0..16).collect();
        let c = with(&[&[0, 10, 0, 24][..], &client, &server].concat()).unwrap().unwrap();
        assert_eq!(c.server(), &server[..]);
        for bad in [4usize, 9, 15, 41] {
            let opt = [&[0, 10][..], &(bad as u16).to_be_bytes(), &vec![0; bad]].concat();
            assert!(with(&opt).is_err(), "a cookie of {bad} bytes is malformed");
        }
        assert_eq!(with(&[0, 11, 0, 0]), Ok(None));
    }

    #[test]
    fn refusals() {
        assert_eq!(Query::parse(&[0; 11]).unwrap_err(), QueryError::Drop);
        let mut r = query(None);
        r[2] |= 0x80;
        assert_eq!(Query::parse(&r).unwrap_err(), QueryError::Drop, "responses are dropped");
        let mut op = query(None);
        op[2] |= 4 << 3; // NOTIFY
        assert!(matches!(Query::parse(&op), Err(QueryError::Respond { rcode: 4, question_end: Some(29), .. })));
        let mut two = query(None);
        two[5] = 2;
        assert!(matches!(Query::parse(&two), Err(QueryError::Respond { rcode: 1, question_end: None, .. })));
        let mut zero = query(None);
        zero[5] = 0;
        assert!(matches!(Query::parse(&zero), Err(QueryError::Respond { rcode: 1, .. })));
        let short = &query(None)[..20];
        assert!(matches!(Query::parse(short), Err(QueryError::Respond { rcode: 1, .. })));
        let mut ans = query(None);
        ans[7] = 1;
        assert!(matches!(Query::parse(&ans), Err(QueryError::Respond { rcode: 1, .. })));
        let mut huge = query(None);
        huge[10] = 0xff;
        huge[11] = 0xff; // 65535 additional records claimed, none present
        assert!(matches!(Query::parse(&huge), Err(QueryError::Respond { rcode: 1, .. })));
    }

    #[test]
    fn a_tsig_record_is_found_when_last_and_malformed_elsewhere() {
        let tsig = [&[1u8, b'k', 0, 0, 250, 0, 255, 0, 0, 0, 0, 0, 3][..], &[0, 0, 0]].concat();
        let mut m = query(Some((1232, 0)));
        let at = m.len();
        m[11] = 2;
        m.extend_from_slice(&tsig);
        assert_eq!(Query::parse(&m).unwrap().tsig, Some(at));
        let mut first = query(None);
        first[11] = 2;
        first.extend_from_slice(&tsig);
        first.extend([0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]);
        assert!(matches!(Query::parse(&first), Err(QueryError::Respond { rcode: 1, .. })), "not last: FORMERR");
        assert_eq!(Query::parse(&query(None)).unwrap().tsig, None);
    }
}
