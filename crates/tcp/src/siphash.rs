//! SipHash-2-4 (Aumasson and Bernstein), the keyed PRF behind initial sequence numbers
//! (RFC 6528) and SYN cookies (RFC 4987). Written from the paper's description.

/// A 128-bit secret key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key(pub [u64; 2]);

#[inline]
fn round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

/// SipHash-2-4 of `data` under `key`.
pub fn hash(key: Key, data: &[u8]) -> u64 {
    let mut v = [
        key.0[0] ^ 0x736f_6d65_7073_6575,
        key.0[1] ^ 0x646f_7261_6e64_6f6d,
        key.0[0] ^ 0x6c79_6765_6e65_7261,
        key.0[1] ^ 0x7465_6462_7974_6573,
    ];
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let m = u64::from_le_bytes(c.try_into().expect("8-byte chunk"));
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    }
    let rest = chunks.remainder();
    let mut last = [0u8; 8];
    last[..rest.len()].copy_from_slice(rest);
    last[7] = data.len() as u8;
    let m = u64::from_le_bytes(last);
    v[3] ^= m;
    round(&mut v);
    round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[cfg(test)]
mod tests {
    use super::*;

    // The reference vectors of the SipHash paper (appendix A): key 00..0f, message 00..(n-1).
    #[test]
    fn paper_vectors() {
        let k = Key([u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]), u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15])]);
        let msg: Vec<u8> = (0..15).collect();
        assert_eq!(hash(k, &msg), 0xa129_ca61_49be_45e5);
        assert_eq!(hash(k, &[]), 0x726f_db47_dd0e_0e31);
        assert_eq!(hash(k, &msg[..8]), 0x93f5_f579_9a93_2462);
    }
}
