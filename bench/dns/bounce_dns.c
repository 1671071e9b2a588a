// The upper limit of answering DNS at the driver on this path: an XDP program that answers
// every UDP query to port 53 with the query itself, its QR bit set (NOERROR, no records),
// out of the interface it came in on (XDP_TX) — no parsing, no lookup, no copy. What
// sirocco's answers in XDP do on top of it is the name lookup and the answer's bytes.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

SEC("xdp")
int bounce_dns(struct xdp_md *ctx)
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
    __u8 *dns = (void *)(udp + 1);
    if ((void *)(dns + 12) > end || udp->dest != bpf_htons(53) || (dns[2] & 0x80))
        return XDP_PASS;
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
    return XDP_TX;
}

char _license[] SEC("license") = "GPL";
