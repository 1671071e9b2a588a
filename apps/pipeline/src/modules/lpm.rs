//! Longest-prefix match on IPv4 in DIR-24-8 form (Gupta, Lin and McKeown, 1998): one table
//! entry per /24 answers every prefix up to /24 in one memory read; a /24 that holds longer
//! prefixes points at a 256-entry group of its own, read second. Built once from the route
//! list, so a lookup is at most two reads.

/// Most distinct next hops (gates).
pub const MAX_HOPS: u32 = 0x7ffe;
/// Most /24s that may hold prefixes longer than /24.
pub const MAX_GROUPS: usize = 1 << 15;

const GROUP_FLAG: u16 = 0x8000;

/// A route: prefix, length and next hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// The prefix (host bits are ignored).
    pub prefix: u32,
    /// Its length, 0 to 32.
    pub len: u8,
    /// The next hop (an output gate).
    pub hop: u32,
}

impl Route {
    /// Parses `A.B.C.D/LEN HOP`.
    pub fn parse(s: &str) -> Result<Route, String> {
        let mut w = s.split_whitespace();
        let (Some(net), Some(hop), None) = (w.next(), w.next(), w.next()) else {
            return Err(format!("route '{s}' must be \"A.B.C.D/LEN GATE\""));
        };
        let (addr, len) = net.split_once('/').ok_or_else(|| format!("route '{s}': the prefix needs a /LEN"))?;
        let addr: std::net::Ipv4Addr =
            addr.parse().map_err(|_| format!("route '{s}': '{addr}' is not an IPv4 address"))?;
        let len: u8 =
            len.parse().ok().filter(|l| *l <= 32).ok_or_else(|| format!("route '{s}': length must be 0 to 32"))?;
        let hop: u32 = hop
            .parse()
            .ok()
            .filter(|h| *h < MAX_HOPS)
            .ok_or_else(|| format!("route '{s}': gate must be 0 to {}", MAX_HOPS - 1))?;
        Ok(Route { prefix: u32::from(addr), len, hop })
    }

    fn mask(&self) -> u32 {
        if self.len == 0 {
            0
        } else {
            u32::MAX << (32 - self.len)
        }
    }
}

/// A DIR-24-8 table.
pub struct Dir24 {
    /// Per /24: 0 no route, `GROUP_FLAG | g` the group g, else hop + 1.
    tbl24: Vec<u16>,
    /// Groups of 256 entries (0 no route, else hop + 1).
    tbl8: Vec<u16>,
    routes: usize,
}

impl Dir24 {
    /// Builds the table of `routes`; where the same prefix appears twice, the later wins.
    pub fn build(routes: &[Route]) -> Result<Dir24, String> {
        let mut sorted: Vec<Route> = routes.iter().map(|r| Route { prefix: r.prefix & r.mask(), ..*r }).collect();
        // Shorter first, so a longer prefix overwrites what a shorter one covers; stable, so
        // a repeated prefix keeps its last hop.
        sorted.sort_by_key(|r| r.len);
        let mut t = Dir24 { tbl24: vec![0; 1 << 24], tbl8: Vec::new(), routes: routes.len() };
        for r in &sorted {
            let v = r.hop as u16 + 1;
            if r.len <= 24 {
                let from = (r.prefix >> 8) as usize;
                let n = 1usize << (24 - r.len);
                t.tbl24[from..from + n].fill(v);
                continue;
            }
            let i = (r.prefix >> 8) as usize;
            let g = if t.tbl24[i] & GROUP_FLAG != 0 {
                usize::from(t.tbl24[i] & !GROUP_FLAG)
            } else {
                let g = t.tbl8.len() / 256;
                if g >= MAX_GROUPS {
                    return Err(format!("more than {MAX_GROUPS} /24s hold prefixes longer than /24"));
                }
                // The group starts with what the /24 answered before.
                t.tbl8.extend(std::iter::repeat_n(t.tbl24[i], 256));
                t.tbl24[i] = GROUP_FLAG | g as u16;
                g
            };
            let from = g * 256 + (r.prefix & 0xff) as usize;
            t.tbl8[from..from + (1usize << (32 - r.len))].fill(v);
        }
        Ok(t)
    }

    /// The next hop for `addr`, if a route covers it.
    #[inline]
    pub fn lookup(&self, addr: u32) -> Option<u32> {
        let e = self.tbl24[(addr >> 8) as usize];
        let v = if e & GROUP_FLAG != 0 {
            self.tbl8[usize::from(e & !GROUP_FLAG) * 256 + (addr & 0xff) as usize]
        } else {
            e
        };
        v.checked_sub(1).map(u32::from)
    }

    /// Routes it was built from.
    pub fn routes(&self) -> usize {
        self.routes
    }

    /// Groups of 256 in use.
    pub fn groups(&self) -> usize {
        self.tbl8.len() / 256
    }
}

#[cfg(test)]
mod tests;
