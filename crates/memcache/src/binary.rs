//! The binary protocol's framing: a 24-byte header (magic 0x80 for requests, 0x81 for
//! responses), then extras, key and value. A connection speaks it when its first byte is 0x80.

/// Request magic.
pub const REQUEST: u8 = 0x80;
/// Response magic.
pub const RESPONSE: u8 = 0x81;
/// Header length.
pub const HEADER: usize = 24;

/// Opcodes.
#[allow(missing_docs)]
pub mod op {
    pub const GET: u8 = 0x00;
    pub const SET: u8 = 0x01;
    pub const ADD: u8 = 0x02;
    pub const REPLACE: u8 = 0x03;
    pub const DELETE: u8 = 0x04;
    pub const INCREMENT: u8 = 0x05;
    pub const DECREMENT: u8 = 0x06;
    pub const QUIT: u8 = 0x07;
    pub const FLUSH: u8 = 0x08;
    pub const GETQ: u8 = 0x09;
    pub const NOOP: u8 = 0x0a;
    pub const VERSION: u8 = 0x0b;
    pub const GETK: u8 = 0x0c;
    pub const GETKQ: u8 = 0x0d;
    pub const APPEND: u8 = 0x0e;
    pub const PREPEND: u8 = 0x0f;
    pub const STAT: u8 = 0x10;
    pub const SETQ: u8 = 0x11;
    pub const ADDQ: u8 = 0x12;
    pub const REPLACEQ: u8 = 0x13;
    pub const DELETEQ: u8 = 0x14;
    pub const INCREMENTQ: u8 = 0x15;
    pub const DECREMENTQ: u8 = 0x16;
    pub const QUITQ: u8 = 0x17;
    pub const FLUSHQ: u8 = 0x18;
    pub const APPENDQ: u8 = 0x19;
    pub const PREPENDQ: u8 = 0x1a;
    pub const VERBOSITY: u8 = 0x1b;
    pub const TOUCH: u8 = 0x1c;
    pub const GAT: u8 = 0x1d;
    pub const GATQ: u8 = 0x1e;
    pub const GATK: u8 = 0x23;
    pub const GATKQ: u8 = 0x24;
}

/// Response statuses, with the text memcached puts in the body of an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Status {
    /// Success.
    Ok = 0x0000,
    /// Key not found.
    NotFound = 0x0001,
    /// Key exists (or CAS mismatch).
    Exists = 0x0002,
    /// Value too large.
    TooLarge = 0x0003,
    /// Invalid arguments.
    Invalid = 0x0004,
    /// Item not stored.
    NotStored = 0x0005,
    /// Incr/decr on a non-numeric value.
    NonNumeric = 0x0006,
    /// Unknown command.
    UnknownCommand = 0x0081,
    /// Out of memory.
    NoMemory = 0x0082,
}

impl Status {
    /// The body memcached sends with this status.
    pub fn text(self) -> &'static [u8] {
        match self {
            Status::Ok => b"",
            Status::NotFound => b"Not found",
            Status::Exists => b"Data exists for key.",
            Status::TooLarge => b"Too large.",
            Status::Invalid => b"Invalid arguments",
            Status::NotStored => b"Not stored.",
            Status::NonNumeric => b"Non-numeric server-side value for incr or decr",
            Status::UnknownCommand => b"Unknown command",
            Status::NoMemory => b"Out of memory",
        }
    }
}

/// A request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The opcode.
    pub opcode: u8,
    /// Key length.
    pub keylen: u16,
    /// Extras length.
    pub extlen: u8,
    /// Data type (0 = raw bytes).
    pub datatype: u8,
    /// Length of extras, key and value together.
    pub bodylen: u32,
    /// Echoed back in the response.
    pub opaque: u32,
    /// CAS unique (0 = none).
    pub cas: u64,
}

impl Header {
    /// The value's length, or None if the header's lengths do not add up.
    pub fn valuelen(&self) -> Option<u32> {
        self.bodylen.checked_sub(u32::from(self.keylen) + u32::from(self.extlen))
    }
}

/// Reads a request header from the start of `buf`; None until 24 bytes are there. The magic
/// is the caller's to check ([`REQUEST`]).
pub fn header(buf: &[u8]) -> Option<Header> {
    let h: &[u8; HEADER] = buf.get(..HEADER)?.try_into().ok()?;
    Some(Header {
        opcode: h[1],
        keylen: u16::from_be_bytes([h[2], h[3]]),
        extlen: h[4],
        datatype: h[5],
        bodylen: u32::from_be_bytes([h[8], h[9], h[10], h[11]]),
        opaque: u32::from_be_bytes([h[12], h[13], h[14], h[15]]),
        cas: u64::from_be_bytes([h[16], h[17], h[18], h[19], h[20], h[21], h[22], h[23]]),
    })
}

/// A response header.
pub fn response(
    opcode: u8,
    keylen: u16,
    extlen: u8,
    status: Status,
    bodylen: u32,
    opaque: u32,
    cas: u64,
) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[0] = RESPONSE;
    h[1] = opcode;
    h[2..4].copy_from_slice(&keylen.to_be_bytes());
    h[4] = extlen;
    h[6..8].copy_from_slice(&(status as u16).to_be_bytes());
    h[8..12].copy_from_slice(&bodylen.to_be_bytes());
    h[12..16].copy_from_slice(&opaque.to_be_bytes());
    h[16..24].copy_from_slice(&cas.to_be_bytes());
    h
}

/// True for the quiet opcodes, which answer only what a client cannot do without (a get's
/// hit, any error).
pub fn quiet(opcode: u8) -> bool {
    matches!(
        opcode,
        op::GETQ
            | op::GETKQ
            | op::SETQ
            | op::ADDQ
            | op::REPLACEQ
            | op::DELETEQ
            | op::INCREMENTQ
            | op::DECREMENTQ
            | op::QUITQ
            | op::FLUSHQ
            | op::APPENDQ
            | op::PREPENDQ
            | op::GATQ
            | op::GATKQ
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        let mut req = [0u8; 24];
        req[0] = REQUEST;
        req[1] = op::SET;
        req[2..4].copy_from_slice(&3u16.to_be_bytes());
        req[4] = 8;
        req[8..12].copy_from_slice(&16u32.to_be_bytes());
        req[12..16].copy_from_slice(&0xdead_beefu32.to_be_bytes());
        let h = header(&req).unwrap();
        assert_eq!((h.opcode, h.keylen, h.extlen, h.bodylen, h.opaque), (op::SET, 3, 8, 16, 0xdead_beef));
        assert_eq!(h.valuelen(), Some(5));
        assert!(header(&req[..23]).is_none());
        let bad = Header { bodylen: 2, ..h };
        assert_eq!(bad.valuelen(), None);
        let r = response(op::GET, 0, 4, Status::NotFound, 9, 7, 0);
        assert_eq!((r[0], r[7], r[11], r[15]), (RESPONSE, 1, 9, 7));
        assert!(quiet(op::GETKQ) && !quiet(op::GETK));
    }
}
