// The simplest AF_XDP forwarder: the floor of `sirocco pipeline` on this path. Every frame
// that arrives on IN (queue 0, copy mode) goes out of OUT unchanged: receive a batch, copy
// each frame into a free buffer of the OUT socket's UMEM, put it on OUT's TX ring, give the
// RX buffer back to the fill ring, kick, reap completions. No scheduler, no modules, no
// MAC table. The XDP program (xsk_fwd_xdp.c, attached by the caller) redirects every frame on
// IN to the socket in its map `xsk_fwd_map`, found here by name.
//
// usage: xsk_fwd IN OUT SECONDS      prints frames forwarded and frames/s
#include <linux/bpf.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FRAMES 4096
#define FRAME 2048
#define RING 2048
#define BATCH 64
#include "../xsk_ring.h"

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s IN OUT SECONDS\n", argv[0]); return 2; }
    struct xsk in = open_xsk(argv[1]), out = open_xsk(argv[2]);
    set_xsk(find_map("xsk_fwd_map", "xsk_fwd_xdp.o"), in.fd);

    // IN: every frame starts in its fill ring. OUT: every frame is a free TX buffer.
    uint64_t *fq = in.fill.desc;
    for (uint32_t i = 0; i < RING; i++) fq[i] = (uint64_t)i * FRAME;
    in.fill.cached = RING;
    __atomic_store_n(in.fill.prod, in.fill.cached, __ATOMIC_RELEASE);
    static uint64_t free_tx[FRAMES];
    int nfree = 0;
    for (int i = 0; i < FRAMES; i++) free_tx[nfree++] = (uint64_t)i * FRAME;

    uint64_t fwd = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double secs = atof(argv[3]);
    for (uint64_t loop = 0;; loop++) {
        if ((loop & 1023) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs) break;
        }
        // Completions of OUT give its buffers back.
        uint32_t cp = __atomic_load_n(out.comp.prod, __ATOMIC_ACQUIRE);
        for (; out.comp.cached != cp; out.comp.cached++) free_tx[nfree++] = ((uint64_t *)out.comp.desc)[out.comp.cached & (RING - 1)];
        __atomic_store_n(out.comp.cons, out.comp.cached, __ATOMIC_RELEASE);
        uint32_t rp = __atomic_load_n(in.rx.prod, __ATOMIC_ACQUIRE);
        uint32_t n = rp - in.rx.cached;
        uint32_t room = RING - (out.tx.cached - __atomic_load_n(out.tx.cons, __ATOMIC_ACQUIRE));
        if (n > BATCH) n = BATCH;
        if (n > room) n = room;
        if (n > (uint32_t)nfree) n = (uint32_t)nfree;
        if (n == 0) {
            if (out.tx.cached != __atomic_load_n(out.tx.cons, __ATOMIC_ACQUIRE)) sendto(out.fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
            continue;
        }
        struct xdp_desc *rd = in.rx.desc, *td = out.tx.desc;
        for (uint32_t k = 0; k < n; k++) {
            struct xdp_desc d = rd[(in.rx.cached + k) & (RING - 1)];
            uint64_t a = free_tx[--nfree];
            memcpy(out.umem + a, in.umem + d.addr, d.len);
            td[(out.tx.cached + k) & (RING - 1)] = (struct xdp_desc){ a, d.len, 0 };
            fq[(in.fill.cached + k) & (RING - 1)] = d.addr & ~(uint64_t)(FRAME - 1);
        }
        consumed(&in.rx, n);
        produced(&in.fill, n);
        produced(&out.tx, n);
        sendto(out.fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
        fwd += n;
    }
    printf("forwarded %llu frames in %.1f s: %.0f frames/s\n", (unsigned long long)fwd, secs, fwd / secs);
    return 0;
}
