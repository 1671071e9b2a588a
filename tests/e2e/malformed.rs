//! Crafted malformed frames from the client namespace through a raw AF_PACKET socket: each
//! is counted under its reason and dropped, and sirocco keeps serving.

use crate::common::*;
use wire::build::UdpFrame;
use wire::ethernet::MacAddr;
use wire::ipv4::Ipv4Packet;
use wire::Ipv4Addr;

pub fn mac_of(net: &TestNet, ns: &str, ifname: &str) -> MacAddr {
    let out = net.exec(ns, &["cat", &format!("/sys/class/net/{ifname}/address")]);
    MacAddr::parse(String::from_utf8_lossy(&out.stdout).trim()).unwrap()
}

fn udp_frame(src_mac: MacAddr, dst_mac: MacAddr, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = (Ipv4Addr([198, 18, 0, 2]), Ipv4Addr([198, 18, 0, 10]));
    UdpFrame { src_mac, dst_mac, src, dst, src_port: 40000, dst_port: 7 }.to_vec(payload)
}

fn fix_ip(b: &mut [u8]) {
    Ipv4Packet::new_unchecked(&mut b[14..]).fill_checksum();
}

/// Sends raw frames out of `ifname` from inside `ns`.
pub fn send_raw(ns: &str, ifname: &str, frames: Vec<Vec<u8>>) {
    let ifname = ifname.to_string();
    in_netns(ns, move || {
        let c = std::ffi::CString::new(ifname.clone()).unwrap();
        // SAFETY: plain system calls on a socket this closure owns and closes.
        unsafe {
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            assert!(fd >= 0, "AF_PACKET socket: {}", std::io::Error::last_os_error());
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_ifindex = libc::if_nametoindex(c.as_ptr()) as i32;
            sll.sll_halen = 6;
            for f in &frames {
                let r = libc::sendto(
                    fd,
                    f.as_ptr() as *const libc::c_void,
                    f.len(),
                    0,
                    &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                );
                assert_eq!(r, f.len() as isize, "sendto: {}", std::io::Error::last_os_error());
            }
            libc::close(fd);
        }
    });
}

#[test]
fn malformed_frames_from_the_wire_are_counted_and_dropped() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let srv_mac = mac_of(&net, &net.srv_ns, &net.srv_if);
    let cli_mac = mac_of(&net, &net.cli_ns, &net.cli_if);
    let good = udp_frame(cli_mac, srv_mac, b"0123456789");

    // Each of these reaches sirocco (the filter grants UDP to .10:7, and fragments to an
    // address sirocco owns) and must be counted under the named reason.
    let mut frames = vec![];
    let mut bad_ip_sum = good.clone();
    bad_ip_sum[24] ^= 0x5a;
    frames.push(bad_ip_sum); // ipv4_bad_checksum
    let mut frag = good.clone();
    frag[20] = 0x20; // more fragments
    fix_ip(&mut frag);
    frames.push(frag); // ipv4_fragment
    let mut later = good.clone();
    later[20] = 0x00;
    later[21] = 0x20; // offset 256, carries no UDP header
    fix_ip(&mut later);
    frames.push(later); // ipv4_fragment
    let mut long = good.clone();
    long[16..18].copy_from_slice(&900u16.to_be_bytes());
    fix_ip(&mut long);
    frames.push(long); // ipv4_truncated: total length beyond the frame
    let mut udp_sum = good.clone();
    udp_sum[44] ^= 0xff;
    frames.push(udp_sum); // udp_bad_checksum
    let mut udp_len = good.clone();
    udp_len[38..40].copy_from_slice(&200u16.to_be_bytes());
    frames.push(udp_len); // udp_malformed
    let mut version = good.clone();
    version[14] = 0x65;
    fix_ip(&mut version);
    frames.push(version); // ipv4_bad_version
    send_raw(&net.cli_ns, &net.cli_if, frames);

    // Still serving.
    let echoed = one_echo(&net.cli_ns, SERVER_OWN);
    assert!(echoed, "sirocco stopped serving after malformed input");
    let c = stop_and_count(s);
    assert_eq!(total(&c, "drop_ipv4_bad_checksum"), 1, "{c}");
    assert_eq!(total(&c, "drop_ipv4_fragment"), 2, "{c}");
    assert_eq!(total(&c, "drop_ipv4_truncated"), 1, "{c}");
    assert_eq!(total(&c, "drop_udp_bad_checksum"), 1, "{c}");
    assert_eq!(total(&c, "drop_udp_malformed"), 1, "{c}");
    assert_eq!(total(&c, "drop_ipv4_bad_version"), 1, "{c}");
    assert!(total(&c, "udp_replies") >= 1);
}

/// The kernel's own UDP from a veth whose TX checksum offload is on: its datagrams carry only
/// the pseudo-header's sum (the "NIC" finishes nothing on veth). They are counted apart, the
/// user gets one hint line, and once the offload is off the server answers.
#[test]
fn unfinished_checksums_from_an_offloading_sender_are_counted_apart_with_a_hint() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let offload = |on: &str| {
        let out = net.exec(&net.cli_ns, &["ethtool", "-K", &net.cli_if, "tx", on]);
        assert!(out.status.success(), "ethtool: {}", String::from_utf8_lossy(&out.stderr));
    };
    offload("on");
    assert!(!one_echo(&net.cli_ns, SERVER_OWN), "a datagram with an unfinished checksum was answered");
    s.wait_for_log("checksum unfinished", std::time::Duration::from_secs(5));
    offload("off");
    assert!(one_echo(&net.cli_ns, SERVER_OWN), "no answer once the sender sums its datagrams");
    let (c, log) = stop_with_log(s);
    assert_eq!(log.matches("checksum unfinished").count(), 1, "one hint line:\n{log}");
    assert!(total(&c, "drop_checksum_unfinished") >= 1, "{c}");
    assert_eq!(total(&c, "drop_udp_bad_checksum"), 0, "{c}");
}
