// sirocco's XDP filter: the kernel stays the control plane and grants sirocco its flows.
//
// A packet goes to sirocco's AF_XDP socket on the queue it arrived on only if it was granted:
//   - UDP/TCP to a granted (address, protocol, port) triple, or to (address, protocol, 0),
//     which grants every port of that address and protocol (the load generator's replies);
//   - for IPv4 addresses sirocco owns alone (the kernel does not have them): ARP asking for
//     them, ICMP to them, and IPv4 fragments to them (which sirocco counts and drops);
//   - the same for IPv6 (grants6, owned6): UDP/TCP after at most MAX_EXT extension headers
//     (hop-by-hop, destination options, routing), and for addresses owned alone ICMPv6 to
//     them, fragments to them, and neighbour solicitations for them (sent to their
//     solicited-node group). Neighbour discovery for the kernel's addresses, router
//     advertisements and MLD stay with the kernel.
// A pipeline (`sirocco pipeline`) that names the interface as one of its ports takes the whole
// interface instead: `whole[0]` set sends it every frame, as a switch port must.
// Everything else is passed to the kernel untouched, so SSH and every other service on the
// interface keep working. If no socket is bound on the queue, the redirect falls back to
// XDP_PASS.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "arp.h"
// Built twice: with the DNS answers, and without (NO_DNS_ANSWERS) for a server that does not
// answer in the driver. The answers are most of the program: the kernel's verifier takes
// about 0.3 s over them at every start, a few milliseconds over the rest.
#ifndef NO_DNS_ANSWERS
#include "dns_answer.h"
#endif

struct grant_key {
    __u32 addr;  // network order
    __u16 port;  // network order; 0 = any port
    __u8 proto;
    __u8 pad;
};

struct grant6_key {
    __u8 addr[16];
    __u16 port;  // network order; 0 = any port
    __u8 proto;
    __u8 pad;
};

#define OWNED_ALONE 1
// Extension headers skipped before the upper layer; a longer chain goes to the kernel.
#define MAX_EXT 4
#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_ICMPV6 58
#define NEXTHDR_DEST 60
#define ND_NEIGHBOR_SOLICIT 135

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
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, struct grant6_key);
    __type(value, __u32);
} grants6 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, struct in6_addr);
    __type(value, __u32);
} owned6 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} whole SEC(".maps");

// Per-CPU counters: 0 redirected, 1 passed, 2 answered here (DNS), 3 dropped here.
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 4);
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

#ifndef NO_DNS_ANSWERS
// A granted UDP flow: answered here if it is a DNS grant and the answer is prepared,
// else to sirocco's socket.
static __always_inline int granted_udp(struct xdp_md *ctx, int answered)
{
    if (answered == XDP_TX)
        return count(2, XDP_TX);
    if (answered == -2)
        return count(3, XDP_DROP);
    return to_sirocco(ctx);
}
#endif

static __always_inline int owned_alone(__u32 addr)
{
    __u32 *f = bpf_map_lookup_elem(&owned, &addr);
    return f && (*f & OWNED_ALONE);
}

static __always_inline int owned6_alone(const struct in6_addr *addr)
{
    __u32 *f = bpf_map_lookup_elem(&owned6, addr);
    return f && (*f & OWNED_ALONE);
}

static __always_inline int ipv6(struct xdp_md *ctx, struct ipv6hdr *ip, void *end, int tagged)
{
    if ((void *)(ip + 1) > end)
        return count(1, XDP_PASS);
    __u8 nh = ip->nexthdr;
    __u8 *l4 = (__u8 *)(ip + 1);
#pragma unroll
    for (int i = 0; i < MAX_EXT; i++) {
        if (nh != NEXTHDR_HOP && nh != NEXTHDR_ROUTING && nh != NEXTHDR_DEST)
            break;
        if ((void *)(l4 + 2) > end)
            return count(1, XDP_PASS);
        nh = l4[0];
        l4 += ((__u32)l4[1] + 1) * 8;
    }
    if (nh == NEXTHDR_FRAGMENT || nh == NEXTHDR_ICMPV6) {
        if (owned6_alone(&ip->daddr))
            return to_sirocco(ctx);
        if (nh == NEXTHDR_FRAGMENT)
            return count(1, XDP_PASS);
        // A solicitation for an address owned alone, to its solicited-node group.
        if ((void *)(l4 + 24) > end || l4[0] != ND_NEIGHBOR_SOLICIT)
            return count(1, XDP_PASS);
        struct in6_addr target;
        __builtin_memcpy(&target, l4 + 8, 16);
        if (owned6_alone(&target))
            return to_sirocco(ctx);
        return count(1, XDP_PASS);
    }
    if (nh != IPPROTO_UDP && nh != IPPROTO_TCP)
        return count(1, XDP_PASS);
    __be16 *ports = (__be16 *)l4;
    if ((void *)(ports + 2) > end)
        return count(1, XDP_PASS);
    struct grant6_key k = { .port = ports[1], .proto = nh, .pad = 0 };
    __builtin_memcpy(k.addr, &ip->daddr, 16);
    __u32 *g = bpf_map_lookup_elem(&grants6, &k);
#ifndef NO_DNS_ANSWERS
    if (g && (*g & GRANT_DNS) && nh == IPPROTO_UDP) {
        if (tagged || l4 != (__u8 *)(ip + 1))
            return granted_udp(ctx, dns_count(DNS_LAYOUT));
        return granted_udp(ctx, dns_reply6(ctx, ip, (struct udphdr *)l4, end));
    }
#endif
    if (g)
        return to_sirocco(ctx);
    k.port = 0;
    if (bpf_map_lookup_elem(&grants6, &k))
        return to_sirocco(ctx);
    return count(1, XDP_PASS);
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
    if (proto == bpf_htons(ETH_P_IPV6))
        return ipv6(ctx, l3, end, l3 != (void *)(eth + 1));
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
    __u32 *g = bpf_map_lookup_elem(&grants, &k);
#ifndef NO_DNS_ANSWERS
    if (g && (*g & GRANT_DNS) && ip->protocol == IPPROTO_UDP) {
        if (l3 != (void *)(eth + 1))
            return granted_udp(ctx, dns_count(DNS_LAYOUT));
        return granted_udp(ctx, dns_reply4(ctx, ip, (struct udphdr *)ports, end));
    }
#endif
    if (g)
        return to_sirocco(ctx);
    k.port = 0;
    if (bpf_map_lookup_elem(&grants, &k))
        return to_sirocco(ctx);
    return count(1, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
