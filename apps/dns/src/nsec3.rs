//! NSEC3 (RFC 5155): the hash of a name and a zone's chain of hashed owners, used at load to
//! draft the proofs that depend only on the zone, and per query for the one that depends on
//! the query name (the NSEC3 covering its next closer name).

use dns::name::Name;
use ring::digest;

/// SHA-1 output: the only NSEC3 hash algorithm defined.
pub const HASH_LEN: usize = 20;

/// The hash parameters of a zone's chain (its NSEC3PARAM).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    /// Extra iterations.
    pub iterations: u16,
    /// Salt.
    pub salt: Vec<u8>,
}

impl Params {
    /// Reads NSEC3PARAM (or the start of NSEC3) record data; None for an unknown algorithm.
    pub fn from_rdata(r: &[u8]) -> Option<Params> {
        // Algorithm, flags, iterations (2), salt length, salt.
        if *r.first()? != 1 {
            return None;
        }
        let iterations = u16::from_be_bytes([*r.get(2)?, *r.get(3)?]);
        let salt_len = usize::from(*r.get(4)?);
        Some(Params { iterations, salt: r.get(5..5 + salt_len)?.to_vec() })
    }

    /// The hash of the wire name `w`, in any letter case (it is hashed in lowercase).
    pub fn hash(&self, w: &[u8]) -> [u8; HASH_LEN] {
        let mut lower = [0u8; 255];
        let n = w.len().min(255);
        for (d, s) in lower.iter_mut().zip(&w[..n]) {
            *d = s.to_ascii_lowercase();
        }
        let mut ctx = digest::Context::new(&digest::SHA1_FOR_LEGACY_USE_ONLY);
        ctx.update(&lower[..n]);
        ctx.update(&self.salt);
        let mut h = [0u8; HASH_LEN];
        h.copy_from_slice(ctx.finish().as_ref());
        for _ in 0..self.iterations {
            let mut ctx = digest::Context::new(&digest::SHA1_FOR_LEGACY_USE_ONLY);
            ctx.update(&h);
            ctx.update(&self.salt);
            h.copy_from_slice(ctx.finish().as_ref());
        }
        h
    }
}

/// Base32 with the extended hex alphabet (RFC 4648 section 7), lowercase, no padding: the
/// first label of an NSEC3 owner.
pub fn base32hex(h: &[u8]) -> String {
    const A: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
    let mut out = String::with_capacity(h.len() * 8 / 5 + 1);
    let (mut acc, mut bits) = (0u32, 0);
    for &b in h {
        acc = (acc << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(A[((acc >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(A[((acc << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// The hash a base32hex label stands for (any case); None if it is not one.
pub fn unbase32hex(label: &[u8]) -> Option<[u8; HASH_LEN]> {
    if label.len() != 32 {
        return None;
    }
    let mut out = [0u8; HASH_LEN];
    let (mut acc, mut bits, mut i) = (0u64, 0, 0);
    for &c in label {
        let v = match c.to_ascii_lowercase() {
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'v' => c - b'a' + 10,
            _ => return None,
        };
        acc = (acc << 5) | u64::from(v);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out[i] = (acc >> bits) as u8;
            i += 1;
        }
    }
    Some(out)
}

/// The NSEC3 owner name for `hash` in the zone `apex`.
pub fn owner(hash: &[u8; HASH_LEN], apex: &Name) -> Vec<u8> {
    let mut w = vec![32];
    w.extend_from_slice(base32hex(hash).as_bytes());
    w.extend_from_slice(apex.as_wire());
    w
}

/// A zone's NSEC3 owners sorted by hash.
#[derive(Debug, Clone, Default)]
pub struct Chain {
    /// Parameters every name is hashed with.
    pub params: Params,
    hashes: Vec<[u8; HASH_LEN]>,
    /// The first 8 bytes of each hash: the search runs over these (a compact array, one
    /// integer compare per step) and looks at whole hashes only among equal prefixes.
    prefixes: Vec<u64>,
}

/// Where a hash falls in a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// An NSEC3 has this hash: the name exists (index).
    Matches(usize),
    /// The NSEC3 at this index covers it (the last one wraps around to the first).
    Covered(usize),
}

fn prefix(h: &[u8; HASH_LEN]) -> u64 {
    u64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]])
}

impl Chain {
    /// The chain of `hashes` (sorted here) under `params`.
    pub fn new(params: Params, mut hashes: Vec<[u8; HASH_LEN]>) -> Chain {
        hashes.sort_unstable();
        let prefixes = hashes.iter().map(prefix).collect();
        Chain { params, hashes, prefixes }
    }

    /// Hashes in the chain.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// True for an empty chain.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Where `h` falls; None for an empty chain.
    pub fn place(&self, h: &[u8; HASH_LEN]) -> Option<Place> {
        let key = prefix(h);
        let mut i = self.prefixes.partition_point(|&p| p < key);
        while i < self.hashes.len() && self.prefixes[i] == key {
            match self.hashes[i].cmp(h) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Equal => return Some(Place::Matches(i)),
                std::cmp::Ordering::Greater => break,
            }
        }
        match i {
            0 => self.hashes.len().checked_sub(1).map(Place::Covered),
            i => Some(Place::Covered(i - 1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_5155_appendix_a_hashes() {
        // RFC 5155 appendix A: salt aabbccdd, 12 iterations.
        let p = Params { iterations: 12, salt: vec![0xaa, 0xbb, 0xcc, 0xdd] };
        for (name, hashed) in [
            ("example.", "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom"),
            ("a.example.", "35mthgpgcu1qg68fab165klnsnk3dpvl"),
            ("ai.example.", "gjeqe526plbf1g8mklp59enfd789njgi"),
            ("*.w.example.", "r53bq7cc2uvmubfu5ocmm6pers9tk9en"),
            ("xx.example.", "t644ebqk9bibcna874givr6joj62mlhv"),
            ("Y.W.EXAMPLE.", "ji6neoaepv8b5o6k4ev33abha8ht9fgc"),
        ] {
            let h = p.hash(&dns::name::wire_from_text(name).unwrap());
            assert_eq!(base32hex(&h), hashed, "{name}");
            assert_eq!(unbase32hex(hashed.to_ascii_uppercase().as_bytes()), Some(h));
        }
        assert_eq!(unbase32hex(b"0p9mhaveqvm6t7vbl5lop2u3t2rp3tow"), None, "w is past v");
        let rdata = [1, 1, 0, 12, 4, 0xaa, 0xbb, 0xcc, 0xdd];
        assert_eq!(Params::from_rdata(&rdata), Some(p));
        assert_eq!(Params::from_rdata(&[2, 0, 0, 0, 0]), None, "unknown algorithm");
        assert_eq!(Params::from_rdata(&[1, 0, 0, 0, 4, 1]), None, "salt past the end");
    }

    #[test]
    fn hashes_are_placed_matching_or_covered_with_wrap_around() {
        let c = Chain::new(Params::default(), vec![[9; 20], [2; 20], [5; 20]]);
        assert_eq!(c.place(&[5; 20]), Some(Place::Matches(1)));
        assert_eq!(c.place(&[6; 20]), Some(Place::Covered(1)));
        assert_eq!(c.place(&[1; 20]), Some(Place::Covered(2)), "before the first: the last wraps");
        assert_eq!(c.place(&[10; 20]), Some(Place::Covered(2)));
        assert_eq!(Chain::default().place(&[1; 20]), None);
        // Hashes that share their first 8 bytes are told apart by the rest.
        let h = |last: u8| {
            let mut x = [7u8; 20];
            x[19] = last;
            x
        };
        let c = Chain::new(Params::default(), vec![h(30), h(10), h(20), [1; 20], [200; 20]]);
        assert_eq!(c.place(&h(20)), Some(Place::Matches(2)));
        assert_eq!(c.place(&h(15)), Some(Place::Covered(1)));
        assert_eq!(c.place(&h(5)), Some(Place::Covered(0)));
        assert_eq!(c.place(&h(31)), Some(Place::Covered(3)));
        let mut after = h(0);
        after[8] = 8;
        assert_eq!(c.place(&after), Some(Place::Covered(3)), "a larger prefix-equal hash");
    }
}
