// `sirocco ctl`'s data path: the control daemon's two XDP programs (Arrakis's virtual NIC
// filters, on a NIC that cannot steer flows itself).
//
// ctl_ingress, on the shared interface: a UDP/TCP frame to a granted (address, protocol,
// port) — or into a granted port range, such as the ephemeral ports a server's own
// connections use — is redirected to that grant's daemon-side veth, whose peer is the
// application's interface; ARP requests for addresses the daemon answers for (the kernel does not have
// them) are answered here; everything else passes to the kernel untouched.
//
// ctl_egress, at TC ingress of every grant's daemon-side veth: what the application
// transmits arrives here. A frame leaves through the shared interface only if it is the grant's own — IPv4 from
// the grant's address, with the protocol and source port of one of its flows, or ARP from its address — and only within the
// grant's token buckets (packets/s, bits/s); otherwise it is dropped and counted. The
// application cannot get around either: the check runs below it, in the kernel.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "arp.h"

struct flow_key {
    __u32 addr;  // network order
    __u16 port;  // network order
    __u8 proto;
    __u8 pad;
};

struct rx_grant {
    __u32 ifindex;  // the grant's daemon-side veth
    __u32 slot;     // its counters
};

struct owned_addr {
    __u8 mac[6];
    __u16 pad;
};

#define MAX_FLOWS 4

// A flow a grant may send from: its protocol and source ports lo..hi (host order; an unused
// one has lo > hi).
struct tx_flow {
    __u8 proto;
    __u8 pad;
    __u16 lo;
    __u16 hi;
    __u16 pad2;
};

struct tx_grant {
    struct bpf_spin_lock lock;
    __u32 addr;  // network order
    __u32 out_ifindex;
    __u32 slot;
    struct tx_flow flows[MAX_FLOWS];
    __u64 pps;    // 0: unlimited
    __u64 bps;    // 0: unlimited
    __u64 last_ns;
    __u64 tok_p;  // packet-nanoseconds: a packet costs 1e9
    __u64 tok_b;  // bit-nanoseconds: a bit costs 1e9
};

// A granted port range (host order), looked at only for frames no exact flow takes.
struct rx_range {
    __u32 addr;  // network order
    __u8 proto;
    __u8 used;
    __u16 lo;
    __u16 hi;
    __u16 pad;
    __u32 ifindex;
    __u32 slot;
};

#define MAX_RANGES 16

struct grant_stats {
    __u64 rx;        // frames redirected to the application
    __u64 tx;        // frames it sent that left
    __u64 tx_bytes;
    __u64 refused;   // frames it sent outside its grant
    __u64 limited;   // frames over its rate
    __u64 arp;       // ARP requests answered for it (slot 0: all)
};

#define SLOTS 256
#define NS 1000000000ULL
// The buckets hold 10 ms of rate, and never less than a 128-frame burst: an application
// sends in batches, and a bucket smaller than one would drop under the rate.
#define BURST_NS 10000000ULL
#define MIN_BURST_PKTS 128ULL
#define MIN_BURST_BITS (128ULL * 1514 * 8)

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, struct flow_key);
    __type(value, struct rx_grant);
} ctl_rx SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 256);
    __type(key, __u32);
    __type(value, struct owned_addr);
} ctl_owned SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, MAX_RANGES);
    __type(key, __u32);
    __type(value, struct rx_range);
} ctl_ranges SEC(".maps");

// How many ranges are in use: while none is, a frame no exact flow takes costs nothing more.
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} ctl_nranges SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 256);
    __type(key, __u32);
    __type(value, struct tx_grant);
} ctl_tx SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, SLOTS);
    __type(key, __u32);
    __type(value, struct grant_stats);
} ctl_stats SEC(".maps");

static __always_inline struct grant_stats *stats(__u32 slot)
{
    return bpf_map_lookup_elem(&ctl_stats, &slot);
}

static __always_inline int answer_arp(struct xdp_md *ctx, struct ethhdr *eth, struct arp_ipv4 *a)
{
    if (a->htype != bpf_htons(1) || a->ptype != bpf_htons(ETH_P_IP) || a->hlen != 6 || a->plen != 4 ||
        a->op != bpf_htons(1))
        return XDP_PASS;
    __u32 tpa;
    __builtin_memcpy(&tpa, a->tpa, 4);
    struct owned_addr *o = bpf_map_lookup_elem(&ctl_owned, &tpa);
    if (!o)
        return XDP_PASS;
    __builtin_memcpy(eth->h_dest, eth->h_source, 6);
    __builtin_memcpy(eth->h_source, o->mac, 6);
    a->op = bpf_htons(2);
    __builtin_memcpy(a->tha, a->sha, 6);
    __builtin_memcpy(a->tpa, a->spa, 4);
    __builtin_memcpy(a->sha, o->mac, 6);
    __builtin_memcpy(a->spa, &tpa, 4);
    struct grant_stats *s = stats(0);
    if (s)
        s->arp += 1;
    // A redirect to the interface itself rather than XDP_TX: on veth, XDP_TX does not wake a
    // peer that has NAPI for GRO but no XDP program, and the answer would wait there.
    return bpf_redirect(ctx->ingress_ifindex, 0);
}

// Whether a granted range takes (addr, proto, port); if so, where to.
static __always_inline int in_range(__u32 addr, __u8 proto, __u16 port, __u32 *ifindex, __u32 *slot)
{
    __u32 zero = 0;
    __u32 *n = bpf_map_lookup_elem(&ctl_nranges, &zero);
    if (!n || *n == 0)
        return 0;
    for (__u32 i = 0; i < MAX_RANGES; i++) {
        __u32 key = i;
        struct rx_range *r = bpf_map_lookup_elem(&ctl_ranges, &key);
        if (r && r->used && r->addr == addr && r->proto == proto && port >= r->lo && port <= r->hi) {
            *ifindex = r->ifindex;
            *slot = r->slot;
            return 1;
        }
    }
    return 0;
}

SEC("xdp")
int ctl_ingress(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end)
        return XDP_PASS;
    if (eth->h_proto == bpf_htons(ETH_P_ARP)) {
        struct arp_ipv4 *a = (void *)(eth + 1);
        if ((void *)(a + 1) > end)
            return XDP_PASS;
        return answer_arp(ctx, eth, a);
    }
    if (eth->h_proto != bpf_htons(ETH_P_IP))
        return XDP_PASS;
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end)
        return XDP_PASS;
    if (ip->protocol != IPPROTO_UDP && ip->protocol != IPPROTO_TCP)
        return XDP_PASS;
    if (ip->frag_off & bpf_htons(0x3fff))
        return XDP_PASS;
    __u32 ihl = ip->ihl * 4;
    if (ihl < sizeof(*ip))
        return XDP_PASS;
    __be16 *ports = (void *)ip + ihl;
    if ((void *)(ports + 2) > end)
        return XDP_PASS;
    struct flow_key k = { .addr = ip->daddr, .port = ports[1], .proto = ip->protocol, .pad = 0 };
    struct rx_grant *g = bpf_map_lookup_elem(&ctl_rx, &k);
    __u32 ifindex, slot;
    if (g) {
        ifindex = g->ifindex;
        slot = g->slot;
    } else if (!in_range(ip->daddr, ip->protocol, bpf_ntohs(ports[1]), &ifindex, &slot)) {
        return XDP_PASS;
    }
    struct grant_stats *s = stats(slot);
    if (s)
        s->rx += 1;
    return bpf_redirect(ifindex, 0);
}

// Refills a bucket of `rate` per second for `dt` ns and takes `cost` from it if it holds that
// much; returns whether it did.
static __always_inline int bucket_ok(__u64 tok, __u64 rate, __u64 dt, __u64 floor, __u64 cost, __u64 *out)
{
    __u64 cap = rate * BURST_NS;
    if (cap < floor * NS)
        cap = floor * NS;
    tok += dt * rate;
    if (tok > cap)
        tok = cap;
    *out = tok;
    return tok >= cost;
}

// Whether the grant may send `data..end` now: 1 yes, 0 not its own (counted), -1 over its
// rate (counted).
static __always_inline int may_send(void *data, void *end, __u64 len, struct tx_grant *g, struct grant_stats *s)
{
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end)
        goto refuse;
    if (eth->h_proto == bpf_htons(ETH_P_ARP)) {
        struct arp_ipv4 *a = (void *)(eth + 1);
        if ((void *)(a + 1) > end)
            goto refuse;
        __u32 spa;
        __builtin_memcpy(&spa, a->spa, 4);
        if (spa != g->addr)
            goto refuse;
    } else {
        if (eth->h_proto != bpf_htons(ETH_P_IP))
            goto refuse;
        struct iphdr *ip = (void *)(eth + 1);
        if ((void *)(ip + 1) > end)
            goto refuse;
        if (ip->saddr != g->addr || (ip->frag_off & bpf_htons(0x1fff)))
            goto refuse;
        __u32 ihl = ip->ihl * 4;
        if (ihl < sizeof(*ip))
            goto refuse;
        __be16 *ports = (void *)ip + ihl;
        if ((void *)(ports + 2) > end)
            goto refuse;
        __u16 sport = bpf_ntohs(ports[0]);
        int mine = 0;
        for (int i = 0; i < MAX_FLOWS; i++) {
            struct tx_flow *f = &g->flows[i];
            if (f->proto == ip->protocol && sport >= f->lo && sport <= f->hi)
                mine = 1;
        }
        if (!mine)
            goto refuse;
    }
    if (g->pps || g->bps) {
        __u64 now = bpf_ktime_get_ns();
        int ok = 1;
        bpf_spin_lock(&g->lock);
        __u64 dt = now > g->last_ns ? now - g->last_ns : 0;
        if (dt > BURST_NS * 2)
            dt = BURST_NS * 2;
        __u64 tp = g->tok_p, tb = g->tok_b;
        if (g->pps && !bucket_ok(g->tok_p, g->pps, dt, MIN_BURST_PKTS, NS, &tp))
            ok = 0;
        if (g->bps && !bucket_ok(g->tok_b, g->bps, dt, MIN_BURST_BITS, len * 8 * NS, &tb))
            ok = 0;
        if (ok) {
            if (g->pps)
                tp -= NS;
            if (g->bps)
                tb -= len * 8 * NS;
        }
        g->tok_p = tp;
        g->tok_b = tb;
        g->last_ns = now;
        bpf_spin_unlock(&g->lock);
        if (!ok) {
            s->limited += 1;
            return -1;
        }
    }
    s->tx += 1;
    s->tx_bytes += len;
    return 1;
refuse:
    s->refused += 1;
    return 0;
}

#define TC_ACT_SHOT 2

// On the grant's daemon-side veth, at TC ingress (TCX): the application's frames arrive as
// the skbs its AF_XDP socket made, and go on to the shared interface's transmit path as they
// are — no copy into an XDP buffer and back, and any device can send them.
SEC("classifier")
int ctl_egress(struct __sk_buff *skb)
{
    __u32 in = skb->ifindex;
    struct tx_grant *g = bpf_map_lookup_elem(&ctl_tx, &in);
    if (!g)
        return TC_ACT_SHOT;
    struct grant_stats *s = stats(g->slot);
    if (!s)
        return TC_ACT_SHOT;
    // The headers checked must be in the linear part.
    __u32 head = skb->len < 64 ? skb->len : 64;
    if (bpf_skb_pull_data(skb, head) < 0)
        return TC_ACT_SHOT;
    void *data = (void *)(long)skb->data;
    void *end = (void *)(long)skb->data_end;
    if (may_send(data, end, skb->len, g, s) != 1)
        return TC_ACT_SHOT;
    return bpf_redirect(g->out_ifindex, 0);
}

char _license[] SEC("license") = "GPL";
