//! Fuzz targets: each takes arbitrary bytes, must never panic, and checks that whatever parses
//! survives a round trip (emit, parse again, same meaning).

mod control;
mod dns_msgs;
mod frames;
mod http_msgs;
mod memcached;
mod pipeline_in;
mod redis;
mod tls_io;

use wire::arp::{ArpPacket, ArpRepr};
use wire::ethernet::{EthernetFrame, EthernetRepr};
use wire::icmp::{IcmpPacket, IcmpRepr};
use wire::ipv4::{Ipv4Addr, Ipv4Packet, Ipv4Repr};
use wire::tcp::{TcpOptions, TcpPacket, TcpRepr};
use wire::udp::{UdpPacket, UdpRepr};

pub(crate) const A: Ipv4Addr = Ipv4Addr([198, 18, 0, 2]);
pub(crate) const B: Ipv4Addr = Ipv4Addr([198, 18, 0, 10]);
/// 2001:2::10 (RFC 5180's benchmarking range).
pub(crate) const V6_SERVER: wire::Ipv6Addr = wire::Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10]);

/// A fuzz target.
pub type Target = fn(&[u8]);

/// Every target by name.
pub const TARGETS: &[(&str, Target)] = &[
    ("ethernet", frames::ethernet),
    ("arp", frames::arp),
    ("ipv4", frames::ipv4),
    ("ipv6", frames::ipv6),
    ("icmpv6", frames::icmpv6),
    ("icmp", frames::icmp),
    ("udp", frames::udp),
    ("tcp", frames::tcp),
    ("tcp_options", frames::tcp_options),
    ("engine", frames::engine_frame),
    ("tcp_endpoint", frames::tcp_endpoint),
    ("dns_query", dns_msgs::dns_query),
    ("dns_server", dns_msgs::dns_server),
    ("dns_tcp", dns_msgs::dns_tcp),
    ("dns_signed", dns_msgs::dns_signed),
    ("dns_tsig", dns_msgs::dns_tsig),
    ("dns_xfr_in", dns_msgs::dns_xfr_in),
    ("zone_text", dns_msgs::zone_text),
    ("catalog_zone", dns_msgs::catalog_zone),
    ("http_request", http_msgs::http_request),
    ("web_server", http_msgs::web_server),
    ("http_response", http_msgs::http_response),
    ("tls_handshake", tls_io::tls_handshake),
    ("tls_records", tls_io::tls_records),
    ("memcache_text", memcached::memcache_text),
    ("memcache_binary", memcached::memcache_binary),
    ("kv_session", memcached::kv_session),
    ("resp_request", redis::resp_request),
    ("store_log_record", redis::store_log_record),
    ("store_log_walk", redis::store_log_walk),
    ("store_log_payload", redis::store_log_payload),
    ("store_rdb", redis::store_rdb),
    ("store_session", redis::store_session),
    ("pipeline_script", pipeline_in::pipeline_script),
    ("pipeline_frames", pipeline_in::pipeline_frames),
    ("ctl_request", control::ctl_request),
    ("ctl_policy", control::ctl_policy),
];

/// Inputs each target starts from: one valid example per target (its area's), so mutation
/// starts near the interesting paths; else one empty input.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    [
        frames::seeds,
        dns_msgs::seeds,
        http_msgs::seeds,
        tls_io::seeds,
        memcached::seeds,
        redis::seeds,
        pipeline_in::seeds,
        control::seeds,
    ]
    .iter()
    .find_map(|area| area(target))
    .unwrap_or_else(|| vec![vec![]])
}

/// Bytes from hex digits (a seed written as a packet dump).
pub(crate) fn hex(h: &[u8]) -> Vec<u8> {
    let digit = |c: u8| (c as char).to_digit(16).expect("hex digit") as u8;
    h.chunks(2).map(|p| digit(p[0]) << 4 | digit(p[1])).collect()
}
