// sirocco's XDP filter: the kernel stays the control plane and grants sirocco its flows.
//
// A packet goes to sirocco's AF_XDP socket on the queue it arrived on only if it was granted:
//   - UDP/TCP to a granted (address, protocol, port) triple, or to (address, protocol, 0),
//     which grants every port of that address and protocol (the load generator's replies);
//   - for addresses sirocco owns alone (the kernel does not have them): ARP asking for them,
//     ICMP to them, and IPv4 fragments to them (which sirocco counts and drops).
// A pipeline (`sirocco pipeline`) that names the interface as one of its ports takes the whole
// interface instead: `whole[0]` set sends it every frame, as a switch port must.
// Everything else is passed to the kernel untouched, so SSH and every other service on the
// interface keep working. If no socket is bound on the queue, the redirect falls back to
// XDP_PASS.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "arp.h"

struct grant_key {
    __u32 addr;  // network order
    __u16 port;  // network order; 0 = any port
    __u8 proto;
    __u8 pad;
};

#define OWNED_ALONE 1

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} xsks SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, struct grant_key);
    __type(value, __u32);
} grants SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} owned SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} whole SEC(".maps");

// Per-CPU counters: 0 redirected, 1 passed.
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, __u64);
} verdicts SEC(".maps");

struct vlan_hdr {
    __be16 tci;
    __be16 proto;
};

static __always_inline int count(__u32 which, int verdict)
{
    __u64 *c = bpf_map_lookup_elem(&verdicts, &which);
    if (c)
        *c += 1;
    return verdict;
}

static __always_inline int to_sirocco(struct xdp_md *ctx)
{
    count(0, 0);
    return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

static __always_inline int owned_alone(__u32 addr)
{
    __u32 *f = bpf_map_lookup_elem(&owned, &addr);
    return f && (*f & OWNED_ALONE);
}

SEC("xdp")
int sirocco_filter(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    __u32 zero = 0;
    __u32 *all = bpf_map_lookup_elem(&whole, &zero);
    if (all && *all)
        return to_sirocco(ctx);
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end)
        return count(1, XDP_PASS);
    __be16 proto = eth->h_proto;
    void *l3 = eth + 1;
    if (proto == bpf_htons(ETH_P_8021Q)) {
        struct vlan_hdr *v = l3;
        if ((void *)(v + 1) > end)
            return count(1, XDP_PASS);
        proto = v->proto;
        l3 = v + 1;
    }
    if (proto == bpf_htons(ETH_P_ARP)) {
        struct arp_ipv4 *a = l3;
        if ((void *)(a + 1) > end)
            return count(1, XDP_PASS);
        __u32 tpa;
        __builtin_memcpy(&tpa, a->tpa, 4);
        if (owned_alone(tpa))
            return to_sirocco(ctx);
        return count(1, XDP_PASS);
    }
    if (proto != bpf_htons(ETH_P_IP))
        return count(1, XDP_PASS);
    struct iphdr *ip = l3;
    if ((void *)(ip + 1) > end)
        return count(1, XDP_PASS);
    __u32 dst = ip->daddr;
    if (ip->frag_off & bpf_htons(0x3fff)) {
        if (owned_alone(dst))
            return to_sirocco(ctx);
        return count(1, XDP_PASS);
    }
    if (ip->protocol == IPPROTO_ICMP) {
        if (owned_alone(dst))
            return to_sirocco(ctx);
        return count(1, XDP_PASS);
    }
    if (ip->protocol != IPPROTO_UDP && ip->protocol != IPPROTO_TCP)
        return count(1, XDP_PASS);
    __u32 ihl = ip->ihl * 4;
    if (ihl < sizeof(*ip))
        return count(1, XDP_PASS);
    __be16 *ports = l3 + ihl;
    if ((void *)(ports + 2) > end)
        return count(1, XDP_PASS);
    struct grant_key k = { .addr = dst, .port = ports[1], .proto = ip->protocol, .pad = 0 };
    if (bpf_map_lookup_elem(&grants, &k))
        return to_sirocco(ctx);
    k.port = 0;
    if (bpf_map_lookup_elem(&grants, &k))
        return to_sirocco(ctx);
    return count(1, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
