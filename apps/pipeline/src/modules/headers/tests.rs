use crate::modules::testing::frames::udp_ttl;
use crate::modules::testing::run;

/// An Ethernet frame with an IPv4/UDP packet of TTL `ttl` and right checksums.
fn frame(ttl: u8) -> Vec<u8> {
    udp_ttl([198, 18, 0, 2], [198, 18, 1, 9], ttl, 12345, 7, b"payload!")
}

#[test]
fn vlan_push_then_pop_gives_the_frame_back() {
    let f = frame(64);
    let (g, _) = run("VLANPush", "tci=0x1001", std::slice::from_ref(&f));
    let tagged = &g[0][0];
    assert_eq!(tagged.len(), f.len() + 4);
    assert_eq!(&tagged[..12], &f[..12]);
    assert_eq!(&tagged[12..16], &[0x81, 0x00, 0x10, 0x01]);
    assert_eq!(&tagged[16..], &f[12..]);
    let (g, _) = run("VLANPop", "", &[tagged.clone(), f.clone()]);
    assert_eq!(g[0], vec![f.clone(), f], "popped, and an untagged frame unchanged");
}

#[test]
fn the_checksum_is_set_and_verified() {
    let good = frame(64);
    let mut zeroed = good.clone();
    zeroed[24..26].fill(0);
    let (g, _) = run("IPChecksum", "", &[zeroed.clone()]);
    assert_eq!(g[0], vec![good.clone()]);
    let (g, dropped) = run("IPChecksum", "verify=true", &[zeroed, good.clone()]);
    assert_eq!((g[0].clone(), dropped), (vec![good], 1));
}

#[test]
fn ttl_goes_down_with_a_right_checksum_and_expired_packets_leave_by_gate_1() {
    let (g, _) = run("UpdateTTL", "", &[frame(64), frame(1), b"not ip at all, just bytes".to_vec()]);
    assert_eq!(g[0][0], frame(63), "TTL 63 and the checksum a full computation gives");
    assert_eq!(g[0][1], b"not ip at all, just bytes".to_vec());
    assert_eq!(g[1], vec![frame(1)]);
    // Through a VLAN tag too.
    let (tagged, _) = run("VLANPush", "tci=5", &[frame(9)]);
    let (g, _) = run("UpdateTTL", "", &tagged[0]);
    let (back, _) = run("VLANPop", "", &g[0]);
    assert_eq!(back[0], vec![frame(8)]);
}

#[test]
fn loss_drops_its_rate() {
    let frames: Vec<Vec<u8>> = (0..64).map(|_| frame(64)).collect();
    let mut lost = 0;
    for seed in 1..=100 {
        lost += run("Loss", &format!("rate=0.1, seed={seed}"), &frames).1;
    }
    assert!((540..740).contains(&lost), "{lost} of 6400 at 0.1");
    assert_eq!(run("Loss", "rate=0", &frames).1, 0);
    assert_eq!(run("Loss", "rate=1", &frames).1, 64);
}
