// The kernel's own fast paths for the pipeline benchmark, one program per build:
//   default:            `sink` drops every frame (the receiving end, as cheap as can be);
//   -DOUT_IFINDEX=N:     `redirect` sends every frame out of interface N (XDP_REDIRECT, the
//                        limit of forwarding between two veth pairs inside the driver's hook).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifdef OUT_IFINDEX
SEC("xdp")
int redirect(struct xdp_md *ctx)
{
    return bpf_redirect(OUT_IFINDEX, 0);
}
#else
SEC("xdp")
int sink(struct xdp_md *ctx)
{
    return XDP_DROP;
}
#endif

char _license[] SEC("license") = "GPL";
