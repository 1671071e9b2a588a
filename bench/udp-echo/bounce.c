// The upper limit of this path: an in-kernel XDP program that bounces UDP datagrams to
// port 7 back out of the interface they came in on (XDP_TX), swapping addresses and ports.
// Everything else passes to the kernel.
//
// Built with -DBOUNCE_DNS (bench/dns), it is the ceiling of answering DNS at the driver: every
// query to port 53 goes back as its own answer, QR set (NOERROR, no records) — no parsing,
// no lookup, no answer bytes.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifdef BOUNCE_DNS
#define PORT 53
#else
#define PORT 7
#endif

SEC("xdp")
int bounce(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
        return XDP_PASS;
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
        return XDP_PASS;
    struct udphdr *udp = (void *)(ip + 1);
    if ((void *)(udp + 1) > end || udp->dest != bpf_htons(PORT))
        return XDP_PASS;
#ifdef BOUNCE_DNS
    __u8 *dns = (void *)(udp + 1);
    if ((void *)(dns + 12) > end || (dns[2] & 0x80))
        return XDP_PASS;
    // QR set: the flags word grows by 0x8000; the UDP checksum follows (RFC 1624).
    __u16 old = ((__u16)dns[2] << 8) | dns[3];
    dns[2] |= 0x80;
    if (udp->check) {
        __u32 s = (__u16)~bpf_ntohs(udp->check) + (__u16)~old + (__u16)(old | 0x8000);
        s = (s & 0xffff) + (s >> 16);
        s = (s & 0xffff) + (s >> 16);
        __u16 c = ~s & 0xffff;
        udp->check = bpf_htons(c ? c : 0xffff);
    }
#endif
    unsigned char mac[ETH_ALEN];
    __builtin_memcpy(mac, eth->h_source, ETH_ALEN);
    __builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
    __builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
    __u32 a = ip->saddr;
    ip->saddr = ip->daddr;
    ip->daddr = a;
    __u16 p = udp->source;
    udp->source = udp->dest;
    udp->dest = p;
    return XDP_TX;
}

char _license[] SEC("license") = "GPL";
