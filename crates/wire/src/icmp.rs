//! ICMPv4 (RFC 792): echo request and reply; other messages are recognised but not built.

use crate::checksum;
use crate::{be16, put16, Error, Result};

mod field {
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: usize = 2;
    pub const IDENT: usize = 4;
    pub const SEQ: usize = 6;
}

/// Length of the echo header (type, code, checksum, identifier, sequence).
pub const HEADER_LEN: usize = 8;

/// ICMP message types sirocco handles.
pub mod kind {
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 0;
    /// Destination unreachable.
    pub const DEST_UNREACHABLE: u8 = 3;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 8;
    /// Time exceeded (a router's answer to a TTL run out).
    pub const TIME_EXCEEDED: u8 = 11;

    /// True for the error messages (RFC 1122 §3.2.2), about which no error is sent.
    pub const fn is_error(t: u8) -> bool {
        matches!(t, DEST_UNREACHABLE | 4 | 5 | TIME_EXCEEDED | 12)
    }
}

/// A view of an ICMP message.
#[derive(Debug)]
pub struct IcmpPacket<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> IcmpPacket<T> {
    /// Wraps `buf` (the whole ICMP message) after checking its length.
    pub fn new_checked(buf: T) -> Result<Self> {
        if buf.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(IcmpPacket { buf })
    }
    /// Wraps `buf` without checking.
    pub fn new_unchecked(buf: T) -> Self {
        IcmpPacket { buf }
    }
    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    /// Message type.
    pub fn msg_type(&self) -> u8 {
        self.b()[field::TYPE]
    }
    /// Message code.
    pub fn code(&self) -> u8 {
        self.b()[field::CODE]
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(self.b(), field::CHECKSUM)
    }
    /// Echo identifier.
    pub fn ident(&self) -> u16 {
        be16(self.b(), field::IDENT)
    }
    /// Echo sequence number.
    pub fn seq(&self) -> u16 {
        be16(self.b(), field::SEQ)
    }
    /// Echo data.
    pub fn data(&self) -> &[u8] {
        &self.b()[HEADER_LEN..]
    }
    /// True if the checksum over the whole message verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::add(0, self.b())) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpPacket<T> {
    /// Turns an echo request into the matching reply in place: only the type changes, so the
    /// checksum is updated incrementally rather than summed over the data again.
    pub fn echo_request_to_reply(&mut self) {
        let b = self.buf.as_mut();
        let old = be16(b, field::TYPE);
        b[field::TYPE] = kind::ECHO_REPLY;
        let new = be16(b, field::TYPE);
        let c = checksum::update16(be16(b, field::CHECKSUM), old, new);
        put16(b, field::CHECKSUM, c);
    }
    /// Sets the echo identifier, updating the checksum incrementally (a NAT's rewrite).
    pub fn set_ident(&mut self, v: u16) {
        let b = self.buf.as_mut();
        let c = checksum::update16(be16(b, field::CHECKSUM), be16(b, field::IDENT), v);
        put16(b, field::IDENT, v);
        put16(b, field::CHECKSUM, c);
    }
}

/// The meaning of an ICMP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcmpRepr<'a> {
    /// Echo request.
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq: u16,
        /// Data to echo.
        data: &'a [u8],
    },
    /// Echo reply.
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq: u16,
        /// Echoed data.
        data: &'a [u8],
    },
    /// Time exceeded in transit (code 0), quoting the offending packet's header and the
    /// first 8 bytes after it (RFC 792).
    TimeExceeded {
        /// The quoted bytes.
        quote: &'a [u8],
    },
    /// Any other message, kept only by type and code.
    Other {
        /// Type.
        msg_type: u8,
        /// Code.
        code: u8,
    },
}

impl<'a> IcmpRepr<'a> {
    /// Validates the checksum and reads the message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &'a IcmpPacket<&'a T>) -> Result<Self> {
        if !p.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        Ok(match (p.msg_type(), p.code()) {
            (kind::ECHO_REQUEST, 0) => IcmpRepr::EchoRequest { ident: p.ident(), seq: p.seq(), data: p.data() },
            (kind::ECHO_REPLY, 0) => IcmpRepr::EchoReply { ident: p.ident(), seq: p.seq(), data: p.data() },
            (kind::TIME_EXCEEDED, 0) => IcmpRepr::TimeExceeded { quote: p.data() },
            (msg_type, code) => IcmpRepr::Other { msg_type, code },
        })
    }

    /// Emitted length, or `None` for messages this module does not build.
    pub fn buffer_len(&self) -> Option<usize> {
        match self {
            IcmpRepr::EchoRequest { data, .. }
            | IcmpRepr::EchoReply { data, .. }
            | IcmpRepr::TimeExceeded { quote: data } => Some(HEADER_LEN + data.len()),
            IcmpRepr::Other { .. } => None,
        }
    }

    /// Writes the message with its checksum; returns false for `Other`.
    pub fn emit(&self, buf: &mut [u8]) -> bool {
        let (t, ident, seq, data) = match *self {
            IcmpRepr::EchoRequest { ident, seq, data } => (kind::ECHO_REQUEST, ident, seq, data),
            IcmpRepr::EchoReply { ident, seq, data } => (kind::ECHO_REPLY, ident, seq, data),
            // The identifier and sequence words are "unused", zero.
            IcmpRepr::TimeExceeded { quote } => (kind::TIME_EXCEEDED, 0, 0, quote),
            IcmpRepr::Other { .. } => return false,
        };
        let b = &mut buf[..HEADER_LEN + data.len()];
        b[field::TYPE] = t;
        b[field::CODE] = 0;
        put16(b, field::CHECKSUM, 0);
        put16(b, field::IDENT, ident);
        put16(b, field::SEQ, seq);
        b[HEADER_LEN..].copy_from_slice(data);
        let c = checksum::checksum(b);
        put16(b, field::CHECKSUM, c);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn request_to_reply() {
        let data = [7u8; 56];
        let mut b = vec![0u8; 64];
        assert!(IcmpRepr::EchoRequest { ident: 0x1234, seq: 1, data: &data }.emit(&mut b));
        let mut p = IcmpPacket::new_checked(&mut b[..]).unwrap();
        p.echo_request_to_reply();
        let mut expect = vec![0u8; 64];
        IcmpRepr::EchoReply { ident: 0x1234, seq: 1, data: &data }.emit(&mut expect);
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(b, expect);
    }

    #[test]
    fn malformed() {
        assert_eq!(IcmpPacket::new_checked(&[8u8, 0, 0][..]).unwrap_err(), Error::Truncated);
        let mut b = vec![0u8; 16];
        IcmpRepr::EchoRequest { ident: 1, seq: 2, data: &[1; 8] }.emit(&mut b);
        b[9] ^= 0xff;
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(IcmpRepr::parse(&p).unwrap_err(), Error::BadChecksum);
    }

    proptest! {
        #[test]
        fn emit_then_parse(ident in any::<u16>(), seq in any::<u16>(), data in proptest::collection::vec(any::<u8>(), 0..1472)) {
            let r = IcmpRepr::EchoRequest { ident, seq, data: &data };
            let mut b = vec![0u8; r.buffer_len().unwrap()];
            r.emit(&mut b);
            let p = IcmpPacket::new_checked(&b[..]).unwrap();
            prop_assert_eq!(IcmpRepr::parse(&p).unwrap(), r);
        }
    }
}
