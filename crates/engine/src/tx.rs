//! The transmit path: the frames of an iteration on their way to the TX ring, and the
//! [`Originate`] the application builds its own frames through (UDP datagrams, TCP segments,
//! segments in pinned frames). Every originated frame's link and IPv4 headers are written
//! here, through `wire`'s builders, and only when a TX slot and a frame are free.

use crate::config::TTL;
use crate::counters::DropReason;
use crate::neighbour_cache::Lookup;
use crate::node::Node;
use crate::service::{Originate, SendError};
use io::pcap::CaptureTap;
use io::{Frame, Port};
use timer::Instant;
use wire::build::{self, Ipv4Frame, UdpFrame, IPV4_PAYLOAD_AT, IPV6_PAYLOAD_AT, UDP6_HEADERS, UDP_HEADERS};
use wire::ethernet::{self, MacAddr};
use wire::ipv4::{self, Ipv4Addr, Protocol};
use wire::ipv6::{self, Ipv6Addr, NextHeader};
use wire::IpAddr;

/// Where the TCP segment starts in an untagged frame to `dst` (no IP options or extension
/// headers).
#[inline]
fn segment_at(dst: IpAddr) -> usize {
    match dst {
        IpAddr::V4(_) => IPV4_PAYLOAD_AT,
        IpAddr::V6(_) => IPV6_PAYLOAD_AT,
    }
}

/// Frames ready for the TX ring, in order.
pub(crate) struct TxQueue {
    frames: Vec<Frame>,
    /// A gathered packet's bytes, put together for the capture.
    joined: Vec<u8>,
}

impl TxQueue {
    pub(crate) fn with_capacity(n: usize) -> TxQueue {
        TxQueue { frames: Vec::with_capacity(n), joined: Vec::new() }
    }

    #[inline]
    pub(crate) fn push(&mut self, f: Frame) {
        self.frames.push(f);
    }

    pub(crate) fn len(&self) -> usize {
        self.frames.len()
    }

    fn last_mut(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a frame was queued")
    }

    /// Puts the queued frames on the TX ring (captured, then through the impairment);
    /// frames the ring has no room for are freed and counted.
    pub(crate) fn flush<P: Port>(&mut self, port: &mut P, node: &mut Node, tap: Option<&CaptureTap>) {
        if self.frames.is_empty() {
            return;
        }
        // Captured as sent, like tcpdump on a sending host: the impairment stands for loss on
        // the wire beyond the interface, so a frame it drops is in the capture once and its
        // retransmission again.
        if let Some(tap) = tap {
            let mut partial = false;
            for f in &self.frames {
                partial |= f.meta;
                let bytes = if f.more || f.meta || !self.joined.is_empty() {
                    self.joined.extend_from_slice(port.data(*f));
                    if f.more {
                        continue;
                    }
                    // Captured as it leaves the device: with the checksum the device adds.
                    if std::mem::take(&mut partial) {
                        finish_tcp_checksum(&mut self.joined);
                    }
                    &self.joined[..]
                } else {
                    port.data(*f)
                };
                if !tap.offer(bytes) {
                    node.counters.capture_dropped += 1;
                }
                self.joined.clear();
            }
        }
        if node.cfg.loss_ppm > 0 {
            // Whole packets, in order: a gathered packet's frames go together.
            let (mut keep, mut start, mut lose) = (0, 0, None);
            for i in 0..self.frames.len() {
                let f = self.frames[i];
                let lost = *lose.get_or_insert_with(|| node.impaired());
                if lost {
                    port.free(f);
                } else {
                    self.frames[keep] = f;
                    keep += 1;
                }
                if !f.more {
                    if lost {
                        node.counters.count_drop(DropReason::Impaired);
                    }
                    start = i + 1;
                    lose = None;
                }
            }
            debug_assert_eq!(start, self.frames.len(), "a packet's last frame is queued with it");
            self.frames.truncate(keep);
        }
        let sent = port.send(&self.frames);
        let c = &mut node.counters;
        for f in &self.frames[..sent] {
            c.tx_bytes += u64::from(f.len);
            c.tx_packets += u64::from(!f.more);
        }
        for &f in &self.frames[sent..] {
            port.free(f);
            if !f.more {
                c.count_drop(DropReason::TxRingFull);
            }
        }
        self.frames.clear();
    }
}

/// Completes the TCP checksum of an Ethernet/IPv4 or IPv6 frame whose checksum field holds
/// the pseudo-header sum (what a device does with CHECKSUM_PARTIAL).
fn finish_tcp_checksum(frame: &mut [u8]) {
    let at = if frame.get(12..14) == Some(&[0x86, 0xdd]) { IPV6_PAYLOAD_AT } else { IPV4_PAYLOAD_AT };
    let Some(seg) = frame.get_mut(at..) else { return };
    if seg.len() < wire::tcp::HEADER_LEN {
        return;
    }
    let at = wire::tcp::CHECKSUM_AT;
    let c = !wire::checksum::fold(wire::checksum::add(0, seg));
    seg[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// The engine's [`Originate`] for one iteration: room is what the TX ring and the free frames
/// allowed when the application was called.
pub(crate) struct Out<'a, P: Port> {
    pub(crate) port: &'a mut P,
    pub(crate) node: &'a mut Node,
    pub(crate) tx: &'a mut TxQueue,
    pub(crate) room: usize,
    pub(crate) now: Instant,
    /// Frames kept for the application this iteration, with their TCP payload's place.
    pub(crate) held: &'a [(Frame, u16, u16)],
}

impl<P: Port> Out<'_, P> {
    #[inline]
    fn full(&self) -> bool {
        self.room <= self.tx.len()
    }

    /// The engine's IPv4 address, as the source of what it sends to `dst`.
    fn src4(&self) -> Result<Ipv4Addr, SendError> {
        self.node.cfg.addr.ok_or(SendError::NoAddress)
    }

    /// A UDP datagram over IPv6 (see [`Originate::udp`]).
    fn udp6(
        &mut self,
        dst: Ipv6Addr,
        dst_port: u16,
        src_port: u16,
        fill: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Result<(), SendError> {
        let src = self.node.cfg.addr6.ok_or(SendError::NoAddress)?;
        let mac = self.resolve(IpAddr::V6(dst))?;
        let Some(f) = self.port.alloc() else {
            self.node.counters.count_drop(DropReason::NoBuffer);
            return Err(SendError::Full);
        };
        let (src_mac, mtu) = (self.node.cfg.mac, self.node.cfg.mtu);
        let buf = self.port.data_mut(f);
        let max = (ethernet::HEADER_LEN + mtu).min(buf.len()) - UDP6_HEADERS;
        let n = fill(&mut buf[UDP6_HEADERS..UDP6_HEADERS + max]);
        if n > max {
            self.port.free(f);
            return Err(SendError::TooLong);
        }
        let len = build::udp6(buf, (src_mac, src, src_port), (mac, dst, dst_port), n, TTL);
        self.tx.push(Frame::new(f.addr, len as u32));
        Ok(())
    }

    /// The next hop's MAC for `dst`: from the family's neighbour cache; else, for an address
    /// sirocco owns alone, from an ARP request or neighbour solicitation of its own (the
    /// caller waits); for one shared with the kernel, from the kernel's ARP table (IPv6: only
    /// what traffic taught the cache is known).
    fn resolve(&mut self, dst: IpAddr) -> Result<MacAddr, SendError> {
        let (now, node) = (self.now, &mut *self.node);
        let (known, alone) = match dst {
            IpAddr::V4(d) => (node.arp.lookup(d, now), node.cfg.owns_alone),
            IpAddr::V6(d) => (node.nd.lookup(d, now), node.cfg.owns_alone6),
        };
        match known {
            Lookup::Known(m) => return Ok(m),
            // The reply to this engine's request may have reached another engine.
            _ if node.shared.is_some() => {
                if let Some(m) = node.learned_elsewhere(dst, now) {
                    return Ok(m);
                }
            }
            _ => {}
        }
        if known == Lookup::Pending {
            return Err(SendError::Unresolved);
        }
        if !alone {
            if let IpAddr::V4(d) = dst {
                if let Some(m) = io::iface::kernel_neighbour(&node.cfg.iface, d) {
                    node.arp.insert(d, m, now);
                    return Ok(m);
                }
            }
            self.mark_pending(dst);
            return Err(SendError::Unresolved);
        }
        let src = match dst {
            IpAddr::V4(_) => IpAddr::V4(self.src4()?),
            IpAddr::V6(_) => IpAddr::V6(self.node.cfg.addr6.ok_or(SendError::NoAddress)?),
        };
        if self.full() {
            return Err(SendError::Full);
        }
        let Some(f) = self.port.alloc() else {
            return Err(SendError::Full);
        };
        let (mac, buf) = (self.node.cfg.mac, self.port.data_mut(f));
        let len = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                self.node.counters.arp_requests += 1;
                build::arp_request(buf, mac, s, d)
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                self.node.counters.nd_requests += 1;
                build::neighbor_solicit(buf, mac, s, d)
            }
            _ => unreachable!("the source is of the destination's family"),
        };
        self.tx.push(Frame::new(f.addr, len as u32));
        self.mark_pending(dst);
        Err(SendError::Unresolved)
    }

    /// Records that `dst`'s resolution is under way.
    fn mark_pending(&mut self, dst: IpAddr) {
        match dst {
            IpAddr::V4(d) => self.node.arp.mark_pending(d, self.now),
            IpAddr::V6(d) => self.node.nd.mark_pending(d, self.now),
        }
    }

    /// Room, length and next hop for a TCP segment of `len` bytes to `dst`.
    fn tcp_check(&mut self, dst: IpAddr, len: usize) -> Result<MacAddr, SendError> {
        let ip_header = match dst {
            IpAddr::V4(_) => self.src4().map(|_| ipv4::HEADER_LEN)?,
            IpAddr::V6(_) => self.node.cfg.addr6.map(|_| ipv6::HEADER_LEN).ok_or(SendError::NoAddress)?,
        };
        if self.full() {
            return Err(SendError::Full);
        }
        if len > self.node.cfg.mtu - ip_header {
            return Err(SendError::TooLong);
        }
        self.resolve(dst).inspect_err(|_| self.node.counters.count_drop(DropReason::ArpUnresolved))
    }

    /// Writes the link and IP headers of a TCP segment of `len` bytes from this engine to
    /// `dst` via `mac` in front of the segment at `buf[segment_at(dst)..]` (only once
    /// [`Out::tcp_check`] found the engine an address of `dst`'s family); returns the frame
    /// length.
    fn tcp_headers(&mut self, buf_addr: u64, mac: MacAddr, dst: IpAddr, len: usize) -> usize {
        let src_mac = self.node.cfg.mac;
        match dst {
            IpAddr::V4(dst) => {
                let src = self.node.cfg.addr.unwrap_or(Ipv4Addr::UNSPECIFIED);
                let ident = self.node.next_ident();
                let buf = self.port.data_mut(Frame::new(buf_addr, 0));
                Ipv4Frame { src_mac, dst_mac: mac, src, dst, protocol: Protocol::TCP }.emit(buf, len, ident, TTL)
            }
            IpAddr::V6(dst) => {
                let src = self.node.cfg.addr6.unwrap_or(Ipv6Addr::UNSPECIFIED);
                let buf = self.port.data_mut(Frame::new(buf_addr, 0));
                let n = build::ipv6_headers(buf, (src_mac, src), (mac, dst), NextHeader::TCP, len, TTL);
                let p = &buf[IPV6_PAYLOAD_AT..];
                let (sport, dport) = (u16::from_be_bytes([p[0], p[1]]), u16::from_be_bytes([p[2], p[3]]));
                let label = self.node.flow_label(&dst.0, sport, dport);
                let buf = self.port.data_mut(Frame::new(buf_addr, 0));
                wire::Ipv6Packet::new_unchecked(&mut buf[ethernet::HEADER_LEN..]).set_flow_label(label);
                n
            }
        }
    }

    /// Has `write` fill the segment in the frame at `addr`, writes the link and IP headers
    /// in front of it and queues it.
    fn tcp_frame(
        &mut self,
        addr: u64,
        mac: MacAddr,
        dst: IpAddr,
        len: usize,
        write: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(), SendError> {
        let at = segment_at(dst);
        let buf = self.port.data_mut(Frame::new(addr, 0));
        if buf.len() < at + len {
            self.port.free(Frame::new(addr, 0));
            return Err(SendError::TooLong);
        }
        write(&mut buf[at..at + len]);
        let n = self.tcp_headers(addr, mac, dst, len);
        self.tx.push(Frame::new(addr, n as u32));
        self.node.counters.tcp_sent += 1;
        Ok(())
    }
}

impl<P: Port> Originate for Out<'_, P> {
    fn view(&self, view: u32) -> &[u8] {
        match self.held.get(view as usize) {
            Some(&(f, at, len)) => &self.port.data(f)[usize::from(at)..usize::from(at) + usize::from(len)],
            None => &[],
        }
    }

    fn room(&self) -> usize {
        self.room.saturating_sub(self.tx.len())
    }

    fn udp(
        &mut self,
        dst: IpAddr,
        dst_port: u16,
        src_port: u16,
        fill: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Result<(), SendError> {
        if self.full() {
            return Err(SendError::Full);
        }
        let dst = match dst {
            IpAddr::V4(a) => a,
            IpAddr::V6(a) => return self.udp6(a, dst_port, src_port, fill),
        };
        let src = self.src4()?;
        let mac = self.resolve(IpAddr::V4(dst))?;
        let Some(f) = self.port.alloc() else {
            self.node.counters.count_drop(DropReason::NoBuffer);
            return Err(SendError::Full);
        };
        let (src_mac, mtu) = (self.node.cfg.mac, self.node.cfg.mtu);
        let buf = self.port.data_mut(f);
        let max = (ethernet::HEADER_LEN + mtu).min(buf.len()) - UDP_HEADERS;
        let n = fill(&mut buf[UDP_HEADERS..UDP_HEADERS + max]);
        if n > max {
            self.port.free(f);
            return Err(SendError::TooLong);
        }
        let ident = self.node.next_ident();
        let buf = self.port.data_mut(f);
        let len = UdpFrame { src_mac, dst_mac: mac, src, dst, src_port, dst_port }.emit(buf, n, ident, TTL);
        self.tx.push(Frame::new(f.addr, len as u32));
        Ok(())
    }

    fn tcp(&mut self, dst: IpAddr, len: usize, write: &mut dyn FnMut(&mut [u8])) -> Result<(), SendError> {
        let mac = self.tcp_check(dst, len)?;
        let Some(f) = self.port.alloc() else {
            self.node.counters.count_drop(DropReason::NoBuffer);
            return Err(SendError::Full);
        };
        self.tcp_frame(f.addr, mac, dst, len, write)
    }

    fn tcp_gather(
        &mut self,
        dst: IpAddr,
        header_len: usize,
        runs: &[tcp::Placed],
        fill: &mut dyn FnMut(u64, &mut [u8]),
        header: &mut dyn FnMut(&mut [u8], Option<u64>),
    ) -> Result<(), SendError> {
        use tcp::Placed;
        // The first frame holds the headers and the copied bytes before the first lent run;
        // each lent run is a frame of its own, and so is each copied run after one.
        let lead: usize = runs.iter().take_while(|r| matches!(r, Placed::Copy { .. })).map(|r| r.len() as usize).sum();
        let pieces = 1 + runs.iter().skip_while(|r| matches!(r, Placed::Copy { .. })).count();
        let payload: usize = runs.iter().map(|r| r.len() as usize).sum();
        if self.room < self.tx.len() + pieces || self.port.free_frames() < pieces {
            return Err(SendError::Full);
        }
        let mac = self.tcp_check(dst, header_len + payload)?;
        // The headers start TX_META_ROOM into their frame, where the port may put metadata
        // asking the device to finish the TCP checksum: then nobody reads the payload here.
        let head = self.port.alloc().expect("counted above").addr + io::port::TX_META_ROOM;
        let seg_at = segment_at(dst);
        let partial = self.port.tx_csum_partial(head, seg_at as u16, wire::tcp::CHECKSUM_AT as u16);
        let (mut at, mut sum) = (0usize, 0u64);
        let start = self.tx.len();
        {
            let seg = &mut self.port.data_mut(Frame::new(head, 0))[seg_at..];
            fill(0, &mut seg[header_len..header_len + lead]);
            if !partial {
                sum = wire::checksum::add_at(sum, &seg[header_len..header_len + lead], 0);
            }
        }
        at += lead;
        let head_len = seg_at + header_len + lead;
        self.tx.push(Frame { addr: head, len: head_len as u32, more: true, meta: partial });
        for r in runs.iter().skip_while(|r| matches!(r, Placed::Copy { .. })) {
            let f = match *r {
                Placed::Arena { addr, len } => Frame { addr, len, more: true, meta: false },
                Placed::Copy { len } => {
                    let f = self.port.alloc().expect("counted above");
                    fill(at as u64, &mut self.port.data_mut(f)[..len as usize]);
                    Frame { addr: f.addr, len, more: true, meta: false }
                }
            };
            if !partial {
                sum = wire::checksum::add_at(sum, self.port.data(f), at);
            }
            at += f.len as usize;
            self.tx.push(f);
        }
        self.tx.last_mut().more = false;
        let buf = self.port.data_mut(Frame::new(head, 0));
        header(&mut buf[seg_at..seg_at + header_len], (!partial).then_some(sum));
        self.tcp_headers(head, mac, dst, header_len + payload);
        debug_assert_eq!(self.tx.len() - start, pieces);
        self.node.counters.tcp_sent += 1;
        self.node.counters.tx_gathered += 1;
        Ok(())
    }

    fn region_busy(&self, addr: u64, len: usize) -> bool {
        self.port.region_busy(addr, len)
    }

    fn pin(&mut self) -> Option<u64> {
        self.port.pin().map(|f| f.addr)
    }

    fn unpin(&mut self, frame: u64) {
        self.port.unpin(frame);
    }

    fn returned(&mut self, each: &mut dyn FnMut(u64)) {
        self.port.returned(each);
    }

    fn pinned_segment(&mut self, frame: u64, v6: bool) -> &mut [u8] {
        let at = if v6 { IPV6_PAYLOAD_AT } else { IPV4_PAYLOAD_AT };
        &mut self.port.data_mut(Frame::new(frame, 0))[at..]
    }

    fn tcp_pinned(
        &mut self,
        dst: IpAddr,
        frame: u64,
        len: usize,
        write: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(), SendError> {
        match self.tcp_check(dst, len) {
            Ok(mac) => self.tcp_frame(frame, mac, dst, len, write),
            Err(e) => {
                // Back to the application through `returned`, like a sent one.
                self.port.free(Frame::new(frame, 0));
                Err(e)
            }
        }
    }
}
