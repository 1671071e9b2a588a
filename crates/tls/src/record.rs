//! TLS 1.3 records (RFC 8446 §5): the header, the inner content type, and sealing and opening
//! in place with a record number as the nonce's variable part. Nothing here allocates.

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use rustls::ConnectionTrafficSecrets;

/// Record header: type, legacy version, length.
pub const HEADER: usize = 5;
/// AEAD tag.
pub const TAG: usize = 16;
/// Bytes a protected record adds to its content: header, inner content type, tag.
pub const OVERHEAD: usize = HEADER + 1 + TAG;
/// Most content one record carries.
pub const MAX_PLAIN: usize = 16_384;
/// Most a protected record's length field may say (RFC 8446 §5.2).
pub const MAX_CIPHER: usize = MAX_PLAIN + 256;

/// Content types.
pub mod content {
    /// change_cipher_spec (only as a middlebox-compatibility record during the handshake).
    pub const CHANGE_CIPHER_SPEC: u8 = 20;
    /// alert.
    pub const ALERT: u8 = 21;
    /// handshake.
    pub const HANDSHAKE: u8 = 22;
    /// application_data (also the outer type of every protected record).
    pub const APPLICATION_DATA: u8 = 23;
}

/// Alert descriptions sirocco sends or acts on.
pub mod alert {
    /// close_notify.
    pub const CLOSE_NOTIFY: u8 = 0;
    /// unexpected_message.
    pub const UNEXPECTED_MESSAGE: u8 = 10;
    /// bad_record_mac.
    pub const BAD_RECORD_MAC: u8 = 20;
    /// record_overflow.
    pub const RECORD_OVERFLOW: u8 = 22;
    /// handshake_failure.
    pub const HANDSHAKE_FAILURE: u8 = 40;
    /// illegal_parameter.
    pub const ILLEGAL_PARAMETER: u8 = 47;
    /// decode_error.
    pub const DECODE_ERROR: u8 = 50;
    /// internal_error.
    pub const INTERNAL_ERROR: u8 = 80;
    /// user_canceled (a warning; the close_notify that follows ends the stream).
    pub const USER_CANCELED: u8 = 90;
}

/// A record header: outer content type and the length of what follows.
pub fn parse_header(b: &[u8]) -> Option<(u8, usize)> {
    let h = b.get(..HEADER)?;
    Some((h[0], usize::from(u16::from_be_bytes([h[3], h[4]]))))
}

/// The header of a protected record whose content is `plain` bytes.
pub fn protected_header(plain: usize) -> [u8; HEADER] {
    let len = (plain + 1 + TAG) as u16;
    let l = len.to_be_bytes();
    [content::APPLICATION_DATA, 3, 3, l[0], l[1]]
}

/// A record could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    /// Authentication failed (bad_record_mac).
    BadMac,
    /// All padding, no content type (unexpected_message).
    NoContentType,
    /// Longer than a record may be (record_overflow).
    Overflow,
}

/// One direction's traffic key and IV.
pub struct Keys {
    key: LessSafeKey,
    iv: [u8; 12],
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys").field("aead", self.key.algorithm()).finish_non_exhaustive()
    }
}

impl Keys {
    /// The keys of secrets rustls derived; None for a suite the record layer does not know.
    pub fn from_secrets(s: &ConnectionTrafficSecrets) -> Option<Keys> {
        let (alg, key, iv) = match s {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&aead::AES_128_GCM, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&aead::AES_256_GCM, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => (&aead::CHACHA20_POLY1305, key, iv),
            _ => return None,
        };
        Keys::new(alg, key.as_ref(), iv.as_ref())
    }

    /// Keys for `alg` from raw bytes (tests, and the secrets above).
    pub fn new(alg: &'static aead::Algorithm, key: &[u8], iv: &[u8]) -> Option<Keys> {
        let key = LessSafeKey::new(UnboundKey::new(alg, key).ok()?);
        Some(Keys { key, iv: iv.try_into().ok()? })
    }

    /// The per-record nonce: the IV with the record number XORed into its last 8 bytes.
    fn nonce(&self, seq: u64) -> Nonce {
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(seq.to_be_bytes()) {
            *b ^= s;
        }
        Nonce::assume_unique_for_key(n)
    }

    /// Protects record `seq` in place. `rec` is the whole record: `HEADER` bytes of room,
    /// the content, one byte of room for the inner type, `TAG` bytes of room.
    pub fn seal(&self, seq: u64, inner_type: u8, rec: &mut [u8]) {
        let plain = rec.len() - OVERHEAD;
        rec[..HEADER].copy_from_slice(&protected_header(plain));
        rec[HEADER + plain] = inner_type;
        let (head, rest) = rec.split_at_mut(HEADER);
        let (body, tag) = rest.split_at_mut(plain + 1);
        let aad = Aad::from(<[u8; HEADER]>::try_from(&*head).expect("header"));
        let t = self
            .key
            .seal_in_place_separate_tag(self.nonce(seq), aad, body)
            .expect("record content is far below the AEAD's limit");
        tag.copy_from_slice(t.as_ref());
    }

    /// As [`Keys::seal`] with `padding` zero bytes after the inner type (RFC 8446 §5.4): `rec`
    /// has room for them before the tag.
    pub fn seal_padded(&self, seq: u64, inner_type: u8, rec: &mut [u8], padding: usize) {
        let plain = rec.len() - OVERHEAD - padding;
        let l = ((plain + 1 + padding + TAG) as u16).to_be_bytes();
        rec[..HEADER].copy_from_slice(&[content::APPLICATION_DATA, 3, 3, l[0], l[1]]);
        rec[HEADER + plain] = inner_type;
        rec[HEADER + plain + 1..HEADER + plain + 1 + padding].fill(0);
        let (head, rest) = rec.split_at_mut(HEADER);
        let (body, tag) = rest.split_at_mut(plain + 1 + padding);
        let aad = Aad::from(<[u8; HEADER]>::try_from(&*head).expect("header"));
        let t = self.key.seal_in_place_separate_tag(self.nonce(seq), aad, body).expect("within the AEAD's limit");
        tag.copy_from_slice(t.as_ref());
    }

    /// Protects record `seq`'s content in place where it lies (in the application's own
    /// buffer, between other records' content): `content` is the record's content and one
    /// more byte, which is borrowed for the inner type and given back. Returns the encrypted
    /// inner type and the tag, which follow the content on the wire.
    pub fn seal_content(&self, seq: u64, inner_type: u8, content: &mut [u8]) -> [u8; 1 + TAG] {
        let plain = content.len() - 1;
        let aad = Aad::from(protected_header(plain));
        let kept = content[plain];
        content[plain] = inner_type;
        let t = self
            .key
            .seal_in_place_separate_tag(self.nonce(seq), aad, content)
            .expect("record content is far below the AEAD's limit");
        let mut trailer = [0u8; 1 + TAG];
        trailer[0] = content[plain];
        trailer[1..].copy_from_slice(t.as_ref());
        content[plain] = kept;
        trailer
    }

    /// Opens protected record `seq` (header included) in place: its inner type and where its
    /// content lies in `rec`.
    pub fn open(&self, seq: u64, rec: &mut [u8]) -> Result<(u8, std::ops::Range<usize>), OpenError> {
        if rec.len() < HEADER + 1 + TAG {
            return Err(OpenError::BadMac);
        }
        if rec.len() - HEADER > MAX_CIPHER {
            return Err(OpenError::Overflow);
        }
        let (head, body) = rec.split_at_mut(HEADER);
        let aad = Aad::from(<[u8; HEADER]>::try_from(&*head).expect("header"));
        let plain = self.key.open_in_place(self.nonce(seq), aad, body).map_err(|_| OpenError::BadMac)?;
        // RFC 8446 §5.4: the whole TLSInnerPlaintext — content, type and padding — is at
        // most 2^14 + 1 bytes, not only the content.
        if plain.len() > MAX_PLAIN + 1 {
            return Err(OpenError::Overflow);
        }
        // Zero padding, then the real content type as the last non-zero byte.
        let end = plain.iter().rposition(|&b| b != 0).ok_or(OpenError::NoContentType)?;
        Ok((plain[end], HEADER..HEADER + end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Keys {
        Keys::new(&aead::AES_128_GCM, &[7; 16], &[9; 12]).unwrap()
    }

    #[test]
    fn seal_then_open_gives_the_content_back() {
        let k = keys();
        let msg = b"HTTP/1.1 200 OK\r\n\r\n";
        let mut rec = vec![0; msg.len() + OVERHEAD];
        rec[HEADER..HEADER + msg.len()].copy_from_slice(msg);
        k.seal(5, content::APPLICATION_DATA, &mut rec);
        assert_eq!(parse_header(&rec), Some((23, msg.len() + 17)));
        let mut copy = rec.clone();
        let (t, r) = k.open(5, &mut copy).unwrap();
        assert_eq!((t, &copy[r]), (23, &msg[..]));
        // Another record number, or one flipped bit, does not open.
        assert_eq!(k.open(6, &mut rec.clone()), Err(OpenError::BadMac));
        rec[HEADER + 2] ^= 1;
        assert_eq!(k.open(5, &mut rec), Err(OpenError::BadMac));
    }

    #[test]
    fn sealing_in_the_content_gives_the_same_record() {
        let k = keys();
        let msg: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let mut rec = vec![0; msg.len() + OVERHEAD];
        rec[HEADER..HEADER + msg.len()].copy_from_slice(&msg);
        k.seal(9, content::APPLICATION_DATA, &mut rec);
        // The same content amid other bytes: the byte after it is borrowed and given back.
        let mut buf = [&[0xaa; 7][..], &msg, &[0x55; 3]].concat();
        let trailer = k.seal_content(9, content::APPLICATION_DATA, &mut buf[7..7 + msg.len() + 1]);
        assert_eq!(buf[7 + msg.len()], 0x55, "the borrowed byte is back");
        let rebuilt = [&protected_header(msg.len())[..], &buf[7..7 + msg.len()], &trailer].concat();
        assert_eq!(rebuilt, rec);
    }

    #[test]
    fn sealing_is_deterministic_per_record_number() {
        let k = keys();
        let mut a = vec![1u8; 100 + OVERHEAD];
        let mut b = a.clone();
        k.seal(42, content::APPLICATION_DATA, &mut a);
        k.seal(42, content::APPLICATION_DATA, &mut b);
        assert_eq!(a, b);
        let mut c = vec![1u8; 100 + OVERHEAD];
        k.seal(43, content::APPLICATION_DATA, &mut c);
        assert_ne!(a, c);
    }

    #[test]
    fn padding_is_stripped_and_all_padding_refused() {
        let k = keys();
        // Content "ab", type 21, then three bytes of zero padding: sealed by hand.
        let mut rec = vec![0u8; HEADER + 6 + TAG];
        rec[HEADER..HEADER + 3].copy_from_slice(&[b'a', b'b', 21]);
        let mut body = rec[HEADER..HEADER + 6].to_vec();
        let aad = protected_header_len(6);
        let tag = k.key.seal_in_place_separate_tag(k.nonce(0), Aad::from(aad), &mut body).unwrap();
        rec[..HEADER].copy_from_slice(&aad);
        rec[HEADER..HEADER + 6].copy_from_slice(&body);
        rec[HEADER + 6..].copy_from_slice(tag.as_ref());
        let (t, r) = k.open(0, &mut rec.clone()).unwrap();
        assert_eq!((t, r.len()), (21, 2));
        let mut zeros = vec![0u8; HEADER + 4 + TAG];
        let aad = protected_header_len(4);
        let mut body = vec![0u8; 4];
        let tag = k.key.seal_in_place_separate_tag(k.nonce(0), Aad::from(aad), &mut body).unwrap();
        zeros[..HEADER].copy_from_slice(&aad);
        zeros[HEADER..HEADER + 4].copy_from_slice(&body);
        zeros[HEADER + 4..].copy_from_slice(tag.as_ref());
        assert_eq!(k.open(0, &mut zeros), Err(OpenError::NoContentType));
    }

    fn protected_header_len(inner: usize) -> [u8; HEADER] {
        let l = ((inner + TAG) as u16).to_be_bytes();
        [23, 3, 3, l[0], l[1]]
    }
}
