// Fills and reads a memcached-protocol cache for bench/scale/kv.py, over the kernel's TCP.
//
//   kvload fill DST PORT FIRST COUNT CONNS
//       stores keys FIRST..FIRST+COUNT-1 with `set KEY 0 0 LEN noreply`, spread over CONNS
//       connections. Every PROBE sets a connection also sends `mn` (meta no-op) and never has
//       more than two unanswered: the no-op's round trip is how long the server took for the
//       sets before it, so a pause (a table rehashed in one go) shows as a long one.
//   kvload get DST PORT N SECS CONNS DEPTH SEED
//       asks for uniformly drawn keys of 0..N-1 for SECS seconds, DEPTH gets outstanding per
//       connection, and checks each value found (its length and bytes follow from the key).
//
// Key i is "k" and i in 11 digits (12 bytes); its value is 38 + (mix(i) mod 51) bytes, so an
// item's key and value take 50 to 100 bytes (75 on average). Prints one JSON line.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROBE 20000
#define MAXC 64
#define BUF (1 << 20)
#define MAXLAT (1 << 22)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static unsigned vlen(uint64_t i) { return 38 + (unsigned)(mix(i) % 51); }

static int put_value(char *p, uint64_t i) {
    unsigned n = vlen(i);
    for (unsigned j = 0; j < n; j++) p[j] = 'a' + (char)((i + j) % 26);
    return (int)n;
}

static int dial(const char *dst, int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, dst, &a.sin_addr) != 1) {
        fprintf(stderr, "kvload: bad address %s\n", dst);
        exit(2);
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("kvload: connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = 30};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            perror("kvload: write");
            exit(1);
        }
        p += w;
        n -= (size_t)w;
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// One connection's no-op replies: counts "MN\r\n" in what arrives; anything else is an error.
static int read_noops(int fd, int *partial) {
    char b[4096];
    ssize_t r = read(fd, b, sizeof b);
    if (r <= 0) {
        fprintf(stderr, "kvload: read: %s\n", r == 0 ? "closed" : strerror(errno));
        exit(1);
    }
    int done = 0;
    for (ssize_t k = 0; k < r; k++) {
        static const char want[] = "MN\r\n";
        if (b[k] != want[*partial]) {
            fprintf(stderr, "kvload: unexpected reply: %.*s\n", (int)(r - k), b + k);
            exit(1);
        }
        if (++*partial == 4) {
            *partial = 0;
            done++;
        }
    }
    return done;
}

static int fill(const char *dst, int port, uint64_t first, uint64_t count, int conns) {
    int fd[MAXC], partial[MAXC] = {0}, out[MAXC] = {0};
    uint64_t next[MAXC];
    double sent_at[MAXC][2];
    static double lat[MAXLAT];
    size_t nlat = 0;
    char *buf = malloc(BUF);
    int ep = epoll_create1(0);
    for (int c = 0; c < conns; c++) {
        fd[c] = dial(dst, port);
        next[c] = first + (uint64_t)c;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)c};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd[c], &ev);
    }
    uint64_t end = first + count, payload = 0;
    for (uint64_t i = first; i < end; i++) payload += 12 + vlen(i);
    double t0 = now(), deadline = t0 + 3600;
    int live = conns;
    int finished[MAXC] = {0};
    while (live > 0) {
        // Each connection with room for another batch sends PROBE sets and a no-op.
        for (int c = 0; c < conns; c++) {
            if (finished[c] || out[c] >= 2 || next[c] >= end) continue;
            size_t n = 0;
            for (int k = 0; k < PROBE && next[c] < end; k++, next[c] += (uint64_t)conns) {
                if (n + 256 > BUF) {
                    write_all(fd[c], buf, n);
                    n = 0;
                }
                n += (size_t)sprintf(buf + n, "set k%011llu 0 0 %u noreply\r\n", (unsigned long long)next[c], vlen(next[c]));
                n += (size_t)put_value(buf + n, next[c]);
                buf[n++] = '\r';
                buf[n++] = '\n';
            }
            memcpy(buf + n, "mn\r\n", 4);
            n += 4;
            write_all(fd[c], buf, n);
            sent_at[c][out[c]++] = now();
        }
        struct epoll_event evs[MAXC];
        int ne = epoll_wait(ep, evs, MAXC, 1000);
        if (now() > deadline) {
            fprintf(stderr, "kvload: fill did not finish within an hour\n");
            return 1;
        }
        for (int e = 0; e < ne; e++) {
            int c = (int)evs[e].data.u32;
            int done = read_noops(fd[c], &partial[c]);
            for (int d = 0; d < done && out[c] > 0; d++) {
                if (nlat < MAXLAT) lat[nlat++] = now() - sent_at[c][0];
                sent_at[c][0] = sent_at[c][1];
                out[c]--;
            }
            if (out[c] == 0 && next[c] >= end && !finished[c]) {
                finished[c] = 1;
                live--;
            }
        }
    }
    double secs = now() - t0;
    qsort(lat, nlat, sizeof lat[0], cmp_double);
    size_t slow = 0;
    for (size_t k = 0; k < nlat; k++) slow += lat[k] > 0.5;
    printf("{\"sets\": %llu, \"payload\": %llu, \"secs\": %.3f, \"per_s\": %.0f, \"probe_ms_p50\": %.2f, "
           "\"probe_ms_p99\": %.2f, \"probe_ms_max\": %.2f, \"probes\": %zu, \"probes_over_500ms\": %zu}\n",
           (unsigned long long)count, (unsigned long long)payload, secs, count / secs, nlat ? 1e3 * lat[nlat / 2] : 0,
           nlat ? 1e3 * lat[nlat * 99 / 100] : 0, nlat ? 1e3 * lat[nlat - 1] : 0, nlat, slow);
    for (int c = 0; c < conns; c++) close(fd[c]);
    return 0;
}

struct gconn {
    int fd;
    uint64_t key[256];
    double at[256];
    int head, tail; // outstanding gets, in order
    char in[BUF / 16];
    size_t len;
};

// Parses complete replies at the front of g->in; returns -1 on a bad reply.
static int parse_gets(struct gconn *g, uint64_t *hits, uint64_t *misses, double *lat, size_t *nlat, double t) {
    size_t off = 0;
    for (;;) {
        char *p = g->in + off;
        size_t left = g->len - off;
        char *eol = memmem(p, left, "\r\n", 2);
        if (!eol) break;
        if (g->head == g->tail) return -1;
        uint64_t want = g->key[g->head % 256];
        if (eol - p == 3 && memcmp(p, "END", 3) == 0) {
            ++*misses;
            off += 5;
        } else if (left > 6 && memcmp(p, "VALUE ", 6) == 0) {
            unsigned long long k;
            unsigned flags, n;
            if (sscanf(p, "VALUE k%llu %u %u", &k, &flags, &n) != 3 || k != want || n != vlen(want)) return -1;
            size_t need = (size_t)(eol - p) + 2 + n + 2 + 5;
            if (left < need) break;
            char v[128];
            put_value(v, want);
            char *data = eol + 2;
            if (memcmp(data, v, n) != 0 || memcmp(data + n, "\r\nEND\r\n", 7) != 0) return -1;
            ++*hits;
            off += need;
        } else {
            return -1;
        }
        if (*nlat < MAXLAT) lat[(*nlat)++] = t - g->at[g->head % 256];
        g->head++;
    }
    memmove(g->in, g->in + off, g->len - off);
    g->len -= off;
    return 0;
}

static int get(const char *dst, int port, uint64_t n, double secs, int conns, int depth, uint64_t seed) {
    static struct gconn g[MAXC];
    static double lat[MAXLAT];
    size_t nlat = 0;
    uint64_t hits = 0, misses = 0, rng = seed;
    int ep = epoll_create1(0);
    if (depth > 256) depth = 256;
    for (int c = 0; c < conns; c++) {
        g[c].fd = dial(dst, port);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)c};
        epoll_ctl(ep, EPOLL_CTL_ADD, g[c].fd, &ev);
    }
    char out[256 * 24];
    double t0 = now(), stop = t0 + secs;
    int sending = 1;
    for (;;) {
        double t = now();
        if (t >= stop) sending = 0;
        int pending = 0;
        for (int c = 0; c < conns; c++) {
            size_t k = 0;
            while (sending && g[c].tail - g[c].head < depth) {
                rng = mix(rng);
                uint64_t key = rng % n;
                g[c].key[g[c].tail % 256] = key;
                g[c].at[g[c].tail % 256] = t;
                g[c].tail++;
                k += (size_t)sprintf(out + k, "get k%011llu\r\n", (unsigned long long)key);
            }
            if (k) write_all(g[c].fd, out, k);
            pending += g[c].tail - g[c].head;
        }
        if (!sending && pending == 0) break;
        if (t > stop + 10) {
            fprintf(stderr, "kvload: %d gets unanswered 10 s after the end\n", pending);
            return 1;
        }
        struct epoll_event evs[MAXC];
        int ne = epoll_wait(ep, evs, MAXC, 100);
        for (int e = 0; e < ne; e++) {
            struct gconn *q = &g[evs[e].data.u32];
            ssize_t r = read(q->fd, q->in + q->len, sizeof q->in - q->len);
            if (r <= 0) {
                fprintf(stderr, "kvload: read: %s\n", r == 0 ? "closed" : strerror(errno));
                return 1;
            }
            q->len += (size_t)r;
            if (parse_gets(q, &hits, &misses, lat, &nlat, now()) != 0) {
                fprintf(stderr, "kvload: bad reply: %.*s\n", (int)(q->len < 200 ? q->len : 200), q->in);
                return 1;
            }
        }
    }
    double took = now() - t0;
    qsort(lat, nlat, sizeof lat[0], cmp_double);
    uint64_t ops = hits + misses;
    printf("{\"gets\": %llu, \"hits\": %llu, \"misses\": %llu, \"secs\": %.3f, \"per_s\": %.0f, \"p50_us\": %.1f, "
           "\"p99_us\": %.1f}\n",
           (unsigned long long)ops, (unsigned long long)hits, (unsigned long long)misses, took, ops / took,
           nlat ? 1e6 * lat[nlat / 2] : 0, nlat ? 1e6 * lat[nlat * 99 / 100] : 0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 7 && strcmp(argv[1], "fill") == 0) {
        int conns = atoi(argv[6]);
        if (conns < 1 || conns > MAXC) return 2;
        return fill(argv[2], atoi(argv[3]), strtoull(argv[4], 0, 10), strtoull(argv[5], 0, 10), conns);
    }
    if (argc == 9 && strcmp(argv[1], "get") == 0) {
        int conns = atoi(argv[6]);
        if (conns < 1 || conns > MAXC) return 2;
        return get(argv[2], atoi(argv[3]), strtoull(argv[4], 0, 10), atof(argv[5]), conns, atoi(argv[7]),
                   strtoull(argv[8], 0, 10));
    }
    fprintf(stderr, "usage: kvload fill DST PORT FIRST COUNT CONNS | kvload get DST PORT N SECS CONNS DEPTH SEED\n");
    return 2;
}
