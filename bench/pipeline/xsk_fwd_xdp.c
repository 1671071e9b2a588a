// For xsk_fwd.c: every frame on the interface to the AF_XDP socket in `xsk_fwd_map`.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} xsk_fwd_map SEC(".maps");

SEC("xdp")
int to_xsk(struct xdp_md *ctx)
{
    return bpf_redirect_map(&xsk_fwd_map, 0, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
