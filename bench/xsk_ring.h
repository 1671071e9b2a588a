// What the benchmarks' small AF_XDP programs in C share: an error exit and a mapped ring.
// Include after defining RING (entries per ring, a power of two).
#include <linux/if_xdp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static void die(const char *what) { perror(what); exit(1); }

struct ring { uint32_t *prod, *cons; void *desc; uint32_t cached; };

static struct ring map_ring(int fd, struct xdp_ring_offset *o, size_t entry, off_t pgoff) {
    size_t len = o->desc + RING * entry;
    uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, pgoff);
    if (m == MAP_FAILED) die("mmap ring");
    return (struct ring){ (uint32_t *)(m + o->producer), (uint32_t *)(m + o->consumer), m + o->desc, 0 };
}
