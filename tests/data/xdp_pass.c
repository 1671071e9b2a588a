// XDP_PASS on the client's veth: veth delivers the frames its peer sends back with XDP_TX
// promptly only to a device with an XDP program (answers in XDP, `--xdp-answers on`).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int pass(struct xdp_md *ctx)
{
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
