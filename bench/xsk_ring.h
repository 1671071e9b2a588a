// What the benchmarks' small AF_XDP programs in C share: an error exit, a socket on queue 0
// in copy mode with its mapped rings, and the XSKMAP their XDP program brought. Include after
// defining RING (entries per ring, a power of two), FRAMES and FRAME (UMEM frames, bytes each).
#include <linux/bpf.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static void die(const char *what) { perror(what); exit(1); }

struct ring { uint32_t *prod, *cons; void *desc; uint32_t cached; };

// Hands `n` more entries of a ring we produce into (fill, TX) to the kernel.
static inline void produced(struct ring *r, uint32_t n) {
    r->cached += n;
    __atomic_store_n(r->prod, r->cached, __ATOMIC_RELEASE);
}

// Gives `n` more entries of a ring we consume from (RX, completion) back to the kernel.
static inline void consumed(struct ring *r, uint32_t n) {
    r->cached += n;
    __atomic_store_n(r->cons, r->cached, __ATOMIC_RELEASE);
}

static struct ring map_ring(int fd, struct xdp_ring_offset *o, size_t entry, off_t pgoff) {
    size_t len = o->desc + RING * entry;
    uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, pgoff);
    if (m == MAP_FAILED) die("mmap ring");
    return (struct ring){ (uint32_t *)(m + o->producer), (uint32_t *)(m + o->consumer), m + o->desc, 0 };
}

static long bpf(int cmd, union bpf_attr *a) { return syscall(__NR_bpf, cmd, a, sizeof *a); }

// The newest map named `name` (the one the caller's program `obj` just brought).
static int find_map(const char *name, const char *obj) {
    uint32_t id = 0, best = 0;
    for (;;) {
        union bpf_attr a = {0};
        a.start_id = id;
        if (bpf(BPF_MAP_GET_NEXT_ID, &a)) break;
        id = a.next_id;
        union bpf_attr g = {0};
        g.map_id = id;
        int fd = (int)bpf(BPF_MAP_GET_FD_BY_ID, &g);
        if (fd < 0) continue;
        struct bpf_map_info info = {0};
        union bpf_attr i = {0};
        i.info.bpf_fd = (uint32_t)fd;
        i.info.info_len = sizeof info;
        i.info.info = (uint64_t)(uintptr_t)&info;
        if (bpf(BPF_OBJ_GET_INFO_BY_FD, &i) == 0 && strcmp(info.name, name) == 0 && id > best) best = id;
        close(fd);
    }
    if (!best) { fprintf(stderr, "no map %s: attach %s first\n", name, obj); exit(1); }
    union bpf_attr g = {0};
    g.map_id = best;
    int fd = (int)bpf(BPF_MAP_GET_FD_BY_ID, &g);
    if (fd < 0) die("map fd");
    return fd;
}

// Puts socket `xsk` at key 0 of XSKMAP `map`.
static void set_xsk(int map, int xsk) {
    uint32_t key = 0, val = (uint32_t)xsk;
    union bpf_attr u = {0};
    u.map_fd = (uint32_t)map;
    u.key = (uint64_t)(uintptr_t)&key;
    u.value = (uint64_t)(uintptr_t)&val;
    if (bpf(BPF_MAP_UPDATE_ELEM, &u)) die("xskmap update");
}

struct xsk { int fd; uint8_t *umem; struct ring rx, tx, fill, comp; };

static struct xsk open_xsk(const char *ifname) {
    struct xsk x = {0};
    unsigned ifindex = if_nametoindex(ifname);
    if (!ifindex) die(ifname);
    x.umem = mmap(NULL, (size_t)FRAMES * FRAME, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (x.umem == MAP_FAILED) die("mmap umem");
    x.fd = socket(AF_XDP, SOCK_RAW, 0);
    if (x.fd < 0) die("socket");
    struct xdp_umem_reg reg = { .addr = (uint64_t)(uintptr_t)x.umem, .len = (uint64_t)FRAMES * FRAME, .chunk_size = FRAME };
    if (setsockopt(x.fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof reg)) die("XDP_UMEM_REG");
    int n = RING;
    if (setsockopt(x.fd, SOL_XDP, XDP_UMEM_FILL_RING, &n, sizeof n) || setsockopt(x.fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &n, sizeof n) ||
        setsockopt(x.fd, SOL_XDP, XDP_RX_RING, &n, sizeof n) || setsockopt(x.fd, SOL_XDP, XDP_TX_RING, &n, sizeof n))
        die("rings");
    struct xdp_mmap_offsets off;
    socklen_t ol = sizeof off;
    if (getsockopt(x.fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &ol)) die("offsets");
    x.rx = map_ring(x.fd, &off.rx, sizeof(struct xdp_desc), XDP_PGOFF_RX_RING);
    x.tx = map_ring(x.fd, &off.tx, sizeof(struct xdp_desc), XDP_PGOFF_TX_RING);
    x.fill = map_ring(x.fd, &off.fr, sizeof(uint64_t), XDP_UMEM_PGOFF_FILL_RING);
    x.comp = map_ring(x.fd, &off.cr, sizeof(uint64_t), XDP_UMEM_PGOFF_COMPLETION_RING);
    struct sockaddr_xdp sa = { .sxdp_family = AF_XDP, .sxdp_ifindex = ifindex, .sxdp_queue_id = 0, .sxdp_flags = XDP_COPY };
    if (bind(x.fd, (struct sockaddr *)&sa, sizeof sa)) die("bind");
    int budget = RING;  // a whole ring per kick where the kernel allows it (6.17+)
    setsockopt(x.fd, SOL_XDP, 9 /* XDP_MAX_TX_SKB_BUDGET */, &budget, sizeof budget);
    return x;
}
