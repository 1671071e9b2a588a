// The simplest AF_XDP sender: the floor under streaming on a path. Copy mode, one queue, TX
// only: full-sized UDP frames built once in the UMEM, put on the TX ring as fast as the
// completion ring gives their buffers back, one sendto() kick per batch. With -g each packet
// is two descriptors (XDP_USE_SG): 42 bytes of headers, then 1472 of payload elsewhere in the
// UMEM — the shape of sirocco's gathered segments. Prints frames/s.
//
// usage: xsk_send IFNAME SRC_MAC SRC_IP DST_MAC DST_IP SECONDS [-g]
// XSK_PAYLOAD=N in the environment sends N-byte UDP payloads (18 to 1472; 1472 by default).
#include <arpa/inet.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9
#endif

#define FRAMES 4096
#define FRAME 4096
#define RING 2048
#define PAYLOAD 1472
#define HDRS 42
#include "../xsk_ring.h"

static uint16_t csum(const uint8_t *p, int n) {
    uint32_t s = 0;
    for (int i = 0; i + 1 < n; i += 2) s += (uint32_t)(p[i] << 8 | p[i + 1]);
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}


int main(int argc, char **argv) {
    if (argc < 7) { fprintf(stderr, "usage: %s IFNAME SRC_MAC SRC_IP DST_MAC DST_IP SECONDS [-g]\n", argv[0]); return 2; }
    int gather = argc > 7 && strcmp(argv[7], "-g") == 0;
    int payload = getenv("XSK_PAYLOAD") ? atoi(getenv("XSK_PAYLOAD")) : PAYLOAD;
    if (payload < 18 || payload > PAYLOAD) { fprintf(stderr, "XSK_PAYLOAD must be 18 to %d\n", PAYLOAD); return 2; }
    unsigned ifindex = if_nametoindex(argv[1]);
    if (!ifindex) die("if_nametoindex");
    uint8_t *umem = mmap(NULL, (size_t)FRAMES * FRAME, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (umem == MAP_FAILED) die("mmap umem");

    // One frame: Ethernet, IPv4, UDP to port 9, payload; the same bytes in every frame.
    uint8_t f[HDRS + PAYLOAD] = {0};
    unsigned m[12];
    if (sscanf(argv[4], "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6 ||
        sscanf(argv[2], "%x:%x:%x:%x:%x:%x", &m[6], &m[7], &m[8], &m[9], &m[10], &m[11]) != 6) {
        fprintf(stderr, "bad MAC address\n");
        return 2;
    }
    for (int i = 0; i < 12; i++) f[i] = (uint8_t)m[i];
    f[12] = 0x08;
    uint8_t *ip = f + 14;
    ip[0] = 0x45; ip[8] = 64; ip[9] = 17;
    uint16_t tot = htons(20 + 8 + payload);
    memcpy(ip + 2, &tot, 2);
    if (inet_pton(AF_INET, argv[3], ip + 12) != 1 || inet_pton(AF_INET, argv[5], ip + 16) != 1) {
        fprintf(stderr, "bad IPv4 address\n");
        return 2;
    }
    uint16_t c = htons(csum(ip, 20));
    memcpy(ip + 10, &c, 2);
    uint8_t *udp = ip + 20;
    udp[1] = 0x30; udp[3] = 9;
    uint16_t ulen = htons(8 + payload);
    memcpy(udp + 4, &ulen, 2);
    for (int i = 0; i < PAYLOAD; i++) f[HDRS + i] = (uint8_t)i;
    // Plain: whole frames in frames 0..FRAMES/2. Gathered: headers at the start of those
    // frames, payload in the upper half of the UMEM, one per header frame.
    for (int i = 0; i < FRAMES / 2; i++) {
        memcpy(umem + (size_t)i * FRAME, f, gather ? HDRS : sizeof f);
        if (gather) memcpy(umem + (size_t)(FRAMES / 2 + i) * FRAME + 100, f + HDRS, PAYLOAD);
    }

    int fd = socket(AF_XDP, SOCK_RAW, 0);
    if (fd < 0) die("socket");
    struct xdp_umem_reg reg = { .addr = (uint64_t)(uintptr_t)umem, .len = (uint64_t)FRAMES * FRAME,
                                .chunk_size = FRAME, .flags = gather ? XDP_UMEM_UNALIGNED_CHUNK_FLAG : 0 };
    if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof reg)) die("XDP_UMEM_REG");
    int n = RING;
    if (setsockopt(fd, SOL_XDP, XDP_UMEM_FILL_RING, &n, sizeof n)) die("fill ring");
    if (setsockopt(fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &n, sizeof n)) die("completion ring");
    if (setsockopt(fd, SOL_XDP, XDP_TX_RING, &n, sizeof n)) die("tx ring");
    struct xdp_mmap_offsets off;
    socklen_t ol = sizeof off;
    if (getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &ol)) die("offsets");
    struct ring tx = map_ring(fd, &off.tx, sizeof(struct xdp_desc), XDP_PGOFF_TX_RING);
    struct ring cq = map_ring(fd, &off.cr, sizeof(uint64_t), XDP_UMEM_PGOFF_COMPLETION_RING);
    struct sockaddr_xdp sa = { .sxdp_family = AF_XDP, .sxdp_ifindex = ifindex, .sxdp_queue_id = 0,
                               .sxdp_flags = XDP_COPY | (gather ? XDP_USE_SG : 0) };
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa)) die("bind");
    int budget = RING;  // a whole ring per kick where the kernel allows it (6.17+)
    setsockopt(fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &budget, sizeof budget);

    // Free header frames, as indices; a completed packet's frames come back through the
    // completion ring (its payload descriptor's address is simply skipped).
    static uint32_t free_list[FRAMES / 2];
    int nfree = FRAMES / 2;
    for (int i = 0; i < nfree; i++) free_list[i] = (uint32_t)i;
    uint32_t per = gather ? 2 : 1;
    uint64_t sent = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double secs = atof(argv[6]);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs) break;
        // Reap completions.
        uint32_t cp = __atomic_load_n(cq.prod, __ATOMIC_ACQUIRE);
        for (; cq.cached != cp; cq.cached++) {
            uint64_t a = ((uint64_t *)cq.desc)[cq.cached & (RING - 1)];
            if (a < (uint64_t)(FRAMES / 2) * FRAME) free_list[nfree++] = (uint32_t)(a / FRAME);
        }
        __atomic_store_n(cq.cons, cq.cached, __ATOMIC_RELEASE);
        // Fill the TX ring.
        uint32_t cons = __atomic_load_n(tx.cons, __ATOMIC_ACQUIRE);
        uint32_t room = RING - (tx.cached - cons);
        uint32_t k = 0;
        while (room >= per && nfree > 0) {
            uint32_t i = free_list[--nfree];
            struct xdp_desc *d = (struct xdp_desc *)tx.desc;
            if (gather) {
                d[(tx.cached + k) & (RING - 1)] = (struct xdp_desc){ (uint64_t)i * FRAME, HDRS, XDP_PKT_CONTD };
                d[(tx.cached + k + 1) & (RING - 1)] = (struct xdp_desc){ (uint64_t)(FRAMES / 2 + i) * FRAME + 100, (uint32_t)payload, 0 };
            } else {
                d[(tx.cached + k) & (RING - 1)] = (struct xdp_desc){ (uint64_t)i * FRAME, (uint32_t)(HDRS + payload), 0 };
            }
            k += per;
            room -= per;
            sent++;
        }
        tx.cached += k;
        __atomic_store_n(tx.prod, tx.cached, __ATOMIC_RELEASE);
        if (sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0) {
            // Device queue full: let the peer drain it.
            struct pollfd p = { fd, POLLOUT, 0 };
            poll(&p, 1, 1);
        }
    }
    // Packets still on the ring were not sent: count only what the kernel took.
    uint32_t left = tx.cached - __atomic_load_n(tx.cons, __ATOMIC_ACQUIRE);
    sent -= left / per;
    printf("sent %llu frames in %.1f s: %.0f frames/s%s\n", (unsigned long long)sent, secs, sent / secs,
           gather ? " (2 descriptors each)" : "");
    return 0;
}
