// For xsk_echo.c: UDP to port 7 in IPv4 packets without options goes to the AF_XDP socket in
// `xsk_echo_map`; everything else (ARP, the kernel's own traffic) passes to the kernel.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} xsk_echo_map SEC(".maps");

SEC("xdp")
int udp7_to_xsk(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *ip = (void *)(eth + 1);
    struct udphdr *udp = (void *)(ip + 1);
    if ((void *)(udp + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 ||
        ip->protocol != IPPROTO_UDP || udp->dest != bpf_htons(7))
        return XDP_PASS;
    return bpf_redirect_map(&xsk_echo_map, 0, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
