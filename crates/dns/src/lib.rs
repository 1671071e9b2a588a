//! DNS on the wire, sans-IO: what a server needs per query, with no allocation.
//!
//! - [`name`]: domain names in wire format — reading them out of a message with safe
//!   decompression (pointer loops and lengths bounded), lowercasing, hashing.
//! - [`query`]: validating a query (header, one question, EDNS(0) OPT) and saying how to
//!   answer a malformed one (FORMERR, NOTIMP, BADVERS) or whether to drop it.
//! - [`tsig`]: transaction signatures (RFC 8945), requests checked and answers signed.

pub mod name;
pub mod query;
pub mod tsig;

pub use name::{Name, NameError};
pub use query::{Cookie, Edns, KeyMode, QName, Query, QueryError};

/// Record types sirocco names in code.
pub mod rtype {
    /// IPv4 address.
    pub const A: u16 = 1;
    /// Name server.
    pub const NS: u16 = 2;
    /// Canonical name.
    pub const CNAME: u16 = 5;
    /// Start of authority.
    pub const SOA: u16 = 6;
    /// Pointer.
    pub const PTR: u16 = 12;
    /// Mail exchanger.
    pub const MX: u16 = 15;
    /// Text.
    pub const TXT: u16 = 16;
    /// IPv6 address.
    pub const AAAA: u16 = 28;
    /// Service.
    pub const SRV: u16 = 33;
    /// Delegation name.
    pub const DNAME: u16 = 39;
    /// Delegation signer.
    pub const DS: u16 = 43;
    /// EDNS(0) pseudo-record.
    pub const OPT: u16 = 41;
    /// RRSIG (RFC 4034).
    pub const RRSIG: u16 = 46;
    /// NSEC (RFC 4034).
    pub const NSEC: u16 = 47;
    /// DNSKEY (RFC 4034).
    pub const DNSKEY: u16 = 48;
    /// NSEC3 (RFC 5155).
    pub const NSEC3: u16 = 50;
    /// NSEC3PARAM (RFC 5155).
    pub const NSEC3PARAM: u16 = 51;
    /// Transaction signature (RFC 8945).
    pub const TSIG: u16 = 250;
    /// Incremental zone transfer (RFC 1995).
    pub const IXFR: u16 = 251;
    /// Whole zone transfer (RFC 5936).
    pub const AXFR: u16 = 252;
    /// Any type (RFC 8482 answers it minimally).
    pub const ANY: u16 = 255;
}

/// Classes.
pub mod class {
    /// Internet.
    pub const IN: u16 = 1;
    /// Chaos.
    pub const CH: u16 = 3;
    /// Any class (QCLASS *).
    pub const ANY: u16 = 255;
}

/// EDNS option codes.
pub mod option {
    /// COOKIE (RFC 7873).
    pub const COOKIE: u16 = 10;
    /// edns-tcp-keepalive (RFC 7828).
    pub const TCP_KEEPALIVE: u16 = 11;
}

/// Response codes.
pub mod rcode {
    /// No error.
    pub const NOERROR: u8 = 0;
    /// Format error.
    pub const FORMERR: u8 = 1;
    /// Server failure.
    pub const SERVFAIL: u8 = 2;
    /// Name does not exist.
    pub const NXDOMAIN: u8 = 3;
    /// Not implemented.
    pub const NOTIMP: u8 = 4;
    /// Refused.
    pub const REFUSED: u8 = 5;
    /// A name that should not exist does (RFC 6672: a DNAME substitution too long).
    pub const YXDOMAIN: u8 = 6;
    /// Not authoritative for the zone.
    pub const NOTAUTH: u8 = 9;
    /// Bad EDNS version (extended rcode 16: upper bits 1 in the OPT TTL, lower bits 0).
    pub const BADVERS: u16 = 16;
}

/// Length of the DNS header.
pub const HEADER_LEN: usize = 12;
