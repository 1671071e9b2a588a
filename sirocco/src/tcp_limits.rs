//! TCP limits for a run of sirocco, with a secret of the run's own.

/// TCP limits with a secret of this run's own: the ISNs (RFC 6528) and SYN cookies are
/// keyed with it, and a fixed key would make them predictable.
pub fn tcp_limits() -> tcp::Limits {
    let b = secret();
    let w = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    tcp::Limits { secret: [w(0), w(8)], ..tcp::Limits::default() }
}

/// 16 bytes of this run's own, unpredictable.
pub fn secret() -> [u8; 16] {
    let mut b = [0u8; 16];
    // /dev/urandom does not block and is always there on Linux; if it cannot be read,
    // fall back to the clock and the process id, still different per run.
    if std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b)).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        b[..16].copy_from_slice(&(t ^ (u128::from(std::process::id()) << 64)).to_le_bytes());
    }
    b
}
