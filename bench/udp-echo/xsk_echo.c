// The simplest AF_XDP UDP echo: the floor `sirocco echo` is measured against on this path
// (issue 20). Receive a batch, swap the Ethernet and IPv4 addresses and the UDP ports (the
// checksums stay valid: a swap changes no sum), transmit the same frame, give completed
// frames back to the fill ring, yield the core when nothing came. No ARP, no checks:
// xsk_echo_xdp.c redirects only UDP to port 7.
//
// With "sleep" it sleeps in poll() when nothing came instead of yielding (what sirocco's
// engines do at light load): the floor of this path at ordinary load.
//
// usage: xsk_echo IFACE [sleep]   runs until SIGTERM/SIGINT, then prints the frames echoed
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#define FRAMES 4096
#define FRAME 2048
#define RING 2048
#define BATCH 64
#include "../xsk_ring.h"

static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }

static void swap(uint8_t *a, uint8_t *b, size_t n) {
    uint8_t t[6];
    memcpy(t, a, n);
    memcpy(a, b, n);
    memcpy(b, t, n);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s IFACE [sleep]\n", argv[0]); return 2; }
    int sleep_when_idle = argc > 2 && strcmp(argv[2], "sleep") == 0;
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    struct xsk x = open_xsk(argv[1]);
    set_xsk(find_map("xsk_echo_map", "xsk_echo_xdp.o"), x.fd);
    // Half the frames wait in the fill ring; the other half are spare for when replies are
    // still on the TX ring.
    uint64_t *fq = x.fill.desc, *cq = x.comp.desc;
    static uint64_t spare[FRAMES];
    int nspare = 0;
    for (uint32_t i = 0; i < FRAMES; i++) {
        if (i < RING) fq[i] = (uint64_t)i * FRAME;
        else spare[nspare++] = (uint64_t)i * FRAME;
    }
    x.fill.cached = RING;
    __atomic_store_n(x.fill.prod, x.fill.cached, __ATOMIC_RELEASE);
    uint64_t echoed = 0;
    while (!stop) {
        // Completed replies go back to the fill ring (or wait as spares if it is full).
        uint32_t cp = __atomic_load_n(x.comp.prod, __ATOMIC_ACQUIRE);
        for (; x.comp.cached != cp; x.comp.cached++) spare[nspare++] = cq[x.comp.cached & (RING - 1)];
        __atomic_store_n(x.comp.cons, x.comp.cached, __ATOMIC_RELEASE);
        uint32_t room = RING - (x.fill.cached - __atomic_load_n(x.fill.cons, __ATOMIC_ACQUIRE));
        while (room-- && nspare) fq[x.fill.cached++ & (RING - 1)] = spare[--nspare];
        __atomic_store_n(x.fill.prod, x.fill.cached, __ATOMIC_RELEASE);

        uint32_t n = __atomic_load_n(x.rx.prod, __ATOMIC_ACQUIRE) - x.rx.cached;
        uint32_t txroom = RING - (x.tx.cached - __atomic_load_n(x.tx.cons, __ATOMIC_ACQUIRE));
        if (n > BATCH) n = BATCH;
        if (n > txroom) n = txroom;
        if (n == 0) {
            if (x.tx.cached != __atomic_load_n(x.tx.cons, __ATOMIC_ACQUIRE)) sendto(x.fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
            // In copy mode the kernel's receive work shares this core: give it the CPU rather
            // than spin on an empty ring (what sirocco's engine does too).
            if (sleep_when_idle) {
                struct pollfd p = { .fd = x.fd, .events = POLLIN };
                poll(&p, 1, 100);
            } else
                sched_yield();
            continue;
        }
        struct xdp_desc *rd = x.rx.desc, *td = x.tx.desc;
        for (uint32_t k = 0; k < n; k++) {
            struct xdp_desc d = rd[(x.rx.cached + k) & (RING - 1)];
            uint8_t *f = x.umem + d.addr;
            swap(f, f + 6, 6);            // Ethernet destination and source
            swap(f + 26, f + 30, 4);      // IPv4 source and destination (no options: the XDP program checked)
            swap(f + 34, f + 36, 2);      // UDP ports
            td[(x.tx.cached + k) & (RING - 1)] = (struct xdp_desc){ d.addr, d.len, 0 };
        }
        consumed(&x.rx, n);
        produced(&x.tx, n);
        sendto(x.fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
        echoed += n;
    }
    printf("echoed %llu frames\n", (unsigned long long)echoed);
    return 0;
}
