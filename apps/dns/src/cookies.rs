//! DNS cookies (RFC 7873) with interoperable server cookies (RFC 9018): version 1, a
//! timestamp and SipHash-2-4 of the client cookie, version, timestamp and client address
//! under a secret, so that several servers sharing the secret accept each other's cookies.
//!
//! A query with a valid server cookie comes from an address that has talked to us before
//! (it cannot be spoofed off-path): it is exempt from rate limiting.

use wire::IpAddr;

/// A cookie is valid this long after its timestamp (RFC 9018 section 4.3: one hour).
const LIFETIME: u32 = 3600;
/// ... and from this far in the future (clock skew between servers sharing the secret).
const SKEW: u32 = 300;
/// A valid cookie older than this gets a fresh one in the answer.
const REFRESH: u32 = 1800;

/// SipHash-2-4 of `data` under `key` (the TCP stack's, which keys ISNs and SYN cookies).
pub fn siphash24(key: &[u8; 16], data: &[u8]) -> u64 {
    let k = |i: usize| u64::from_le_bytes(key[i..i + 8].try_into().expect("8 bytes"));
    tcp::siphash::hash(tcp::siphash::Key([k(0), k(8)]), data)
}

/// What a query's cookie says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A server cookie of ours, current.
    Valid,
    /// A client cookie only, or a server cookie that is not ours or has expired.
    Fresh,
}

/// The server's secret.
#[derive(Clone)]
pub struct Cookies {
    secret: [u8; 16],
}

impl std::fmt::Debug for Cookies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cookies { secret: .. }")
    }
}

impl Cookies {
    /// Cookies under `secret` (shared by the servers of one service, RFC 9018 section 5).
    pub fn new(secret: [u8; 16]) -> Cookies {
        Cookies { secret }
    }

    /// The server cookie for `client` (the client cookie) from `ip` at `now` (seconds).
    pub fn make(&self, client: &[u8; 8], ip: IpAddr, now: u32) -> [u8; 16] {
        let mut input = [0u8; 8 + 8 + 16];
        input[..8].copy_from_slice(client);
        input[8] = 1;
        input[12..16].copy_from_slice(&now.to_be_bytes());
        let n = match ip {
            IpAddr::V4(a) => {
                input[16..20].copy_from_slice(&a.0);
                20
            }
            IpAddr::V6(a) => {
                input[16..32].copy_from_slice(&a.0);
                32
            }
        };
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&input[8..16]);
        out[8..].copy_from_slice(&siphash24(&self.secret, &input[..n]).to_le_bytes());
        out
    }

    /// Checks the server cookie `server` sent with `client` from `ip` at `now`; returns the
    /// verdict and the server cookie to answer with (the same one while it is fresh).
    pub fn check(&self, client: &[u8; 8], server: &[u8], ip: IpAddr, now: u32) -> (Verdict, [u8; 16]) {
        if server.len() == 16 && server[0] == 1 && server[1..4] == [0, 0, 0] {
            let stamp = u32::from_be_bytes([server[4], server[5], server[6], server[7]]);
            let age = now.wrapping_sub(stamp);
            let current = age <= LIFETIME || stamp.wrapping_sub(now) <= SKEW;
            if current && self.make(client, ip, stamp)[..] == *server {
                let out = if age > REFRESH && age <= LIFETIME {
                    self.make(client, ip, now)
                } else {
                    server.try_into().unwrap()
                };
                return (Verdict::Valid, out);
            }
        }
        (Verdict::Fresh, self.make(client, ip, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn siphash_reference_vectors() {
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        assert_eq!(siphash24(&key, &[]), 0x726fdb47dd0e0e31);
        let msg: Vec<u8> = (0..15).collect();
        assert_eq!(siphash24(&key, &msg), 0xa129ca6149be45e5);
    }

    #[test]
    fn rfc9018_appendix_a_server_cookies() {
        // A.1: a new server cookie for 198.51.100.100.
        let c = Cookies::new(hex("e5e973e5a6b2a43f48e7dc849e37bfcf").try_into().unwrap());
        let client: [u8; 8] = hex("2464c4abcf10c957").try_into().unwrap();
        let ip = IpAddr::V4(wire::Ipv4Addr([198, 51, 100, 100]));
        assert_eq!(c.make(&client, ip, 1559731985).to_vec(), hex("010000005cf79f111f8130c3eee29480"));
        // It is valid back, and kept while fresh.
        let (v, again) = c.check(&client, &hex("010000005cf79f111f8130c3eee29480"), ip, 1559731985 + 10);
        assert_eq!((v, again.to_vec()), (Verdict::Valid, hex("010000005cf79f111f8130c3eee29480")));
        // From another address, or expired: not valid, a fresh one instead.
        let other = IpAddr::V4(wire::Ipv4Addr([198, 51, 100, 101]));
        assert_eq!(c.check(&client, &again, other, 1559731995).0, Verdict::Fresh);
        assert_eq!(c.check(&client, &again, ip, 1559731985 + 3601).0, Verdict::Fresh);
        // Older than half an hour: still valid, renewed.
        let (v, renewed) = c.check(&client, &again, ip, 1559731985 + 2000);
        assert_eq!(v, Verdict::Valid);
        assert_ne!(renewed, again);
    }
}
