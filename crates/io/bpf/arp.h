// An ARP packet for IPv4 over Ethernet, as both XDP programs read it.
#pragma once
#include <linux/types.h>

struct arp_ipv4 {
    __be16 htype, ptype;
    __u8 hlen, plen;
    __be16 op;
    __u8 sha[6];
    __u8 spa[4];
    __u8 tha[6];
    __u8 tpa[4];
};
