// Closed-loop TCP echo load for bench/tcp-echo (the IX / MegaPipe echo experiment): CONNS
// connections at once, each sending a SIZE-byte message and waiting for all of it to come back,
// ROUNDS times, then closing and being replaced by a new connection; for SECS seconds.
// Prints JSON: messages, connections completed, rates, and round-trip percentiles.
// With RATE (messages/s in all, optional), each connection sends its next message no earlier
// than its turn (CONNS / RATE apart, the connections staggered), so the load is that rate and
// not the server's saturation; a connection behind its turn sends at once.
//
// usage: echo_client ADDR PORT CONNS SIZE ROUNDS SECS [RATE]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn {
    int fd, connected;
    long rounds_left;
    size_t sent, got;
    double t0;  // when the current message started
    double due; // when the next message may start (paced runs)
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// Latency histogram: 1 µs buckets up to 100 ms.
#define BUCKETS 100000
static unsigned long hist[BUCKETS + 1];

static double pct(unsigned long total, double p) {
    unsigned long want = (unsigned long)(total * p), acc = 0;
    for (int i = 0; i <= BUCKETS; i++) {
        acc += hist[i];
        if (acc > want)
            return i;
    }
    return BUCKETS;
}

static struct sockaddr_in dst;
static int ep;
static char *msg, *rbuf;
static size_t size;
static long rounds;
static unsigned long opened, failed;
static double gap; // seconds between one connection's messages; 0 = closed loop

// Starts the connection's next message now, or parks it until its turn (paced runs).
static void send_next(struct conn *c, double t) {
    if (gap > 0) {
        c->due += gap;
        if (c->due < t)
            c->due = t; // behind: no catching up in a burst
        if (c->due > t)
            return;
    }
    c->t0 = t;
    ssize_t w = write(c->fd, msg, size);
    c->sent = w > 0 ? (size_t)w : 0;
}

static void start(struct conn *c) {
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->connected = 0;
    c->rounds_left = rounds;
    c->sent = c->got = 0;
    connect(c->fd, (void *)&dst, sizeof dst);
    struct epoll_event e = {.events = EPOLLOUT, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e);
    opened++;
}

int main(int argc, char **argv) {
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: %s ADDR PORT CONNS SIZE ROUNDS SECS [RATE]\n", argv[0]);
        return 2;
    }
    dst.sin_family = AF_INET;
    dst.sin_port = htons(atoi(argv[2]));
    inet_pton(AF_INET, argv[1], &dst.sin_addr);
    int nconns = atoi(argv[3]);
    size = atol(argv[4]);
    rounds = atol(argv[5]);
    double secs = atof(argv[6]);
    double rate = argc == 8 ? atof(argv[7]) : 0;
    gap = rate > 0 ? nconns / rate : 0;
    struct rlimit rl = {nconns + 64, nconns + 64};
    setrlimit(RLIMIT_NOFILE, &rl);
    msg = malloc(size);
    rbuf = malloc(size);
    for (size_t i = 0; i < size; i++)
        msg[i] = (char)(i * 31 + 7);
    ep = epoll_create1(0);
    struct conn *conns = calloc(nconns, sizeof *conns);
    for (int i = 0; i < nconns; i++)
        start(&conns[i]);
    struct epoll_event evs[512];
    unsigned long msgs = 0, done_conns = 0, bad = 0;
    double t_start = now(), t_end = t_start + secs;
    for (int i = 0; i < nconns; i++)
        conns[i].due = t_start + i * (gap / nconns) - gap; // the first send_next adds one gap
    while (now() < t_end) {
        struct timespec wait = {0, 100 * 1000000L};
        if (gap > 0) {
            // Release the connections whose turn has come, and sleep until the next turn.
            double t = now(), next = t + 0.1;
            for (int i = 0; i < nconns; i++) {
                struct conn *c = &conns[i];
                if (!c->connected || c->sent || c->got)
                    continue;
                if (c->due <= t) {
                    c->t0 = t;
                    ssize_t w = write(c->fd, msg, size);
                    c->sent = w > 0 ? (size_t)w : 0;
                    c->due = t;
                } else if (c->due < next)
                    next = c->due;
            }
            double d = next - now();
            wait.tv_sec = 0;
            wait.tv_nsec = d > 0 ? (long)(d * 1e9) : 0;
        }
        int n = epoll_pwait2(ep, evs, 512, &wait, NULL);
        double t = now();
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (evs[i].events & (EPOLLERR | EPOLLHUP) && !(evs[i].events & EPOLLIN)) {
                failed++;
                close(c->fd);
                start(c);
                continue;
            }
            if (!c->connected) {
                c->connected = 1;
                struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
                send_next(c, t);
                continue;
            }
            ssize_t r = read(c->fd, rbuf, size - c->got);
            if (r <= 0) {
                if (r < 0 && errno == EAGAIN)
                    continue;
                failed++;
                close(c->fd);
                start(c);
                continue;
            }
            if (memcmp(rbuf, msg + c->got, r) != 0)
                bad++;
            c->got += r;
            if (c->sent < size) { // the first write was short; send the rest
                ssize_t w = write(c->fd, msg + c->sent, size - c->sent);
                if (w > 0)
                    c->sent += w;
            }
            if (c->got < size)
                continue;
            unsigned long us = (unsigned long)((t - c->t0) * 1e6);
            hist[us > BUCKETS ? BUCKETS : us]++;
            msgs++;
            c->got = 0;
            c->sent = 0;
            if (--c->rounds_left == 0) {
                done_conns++;
                close(c->fd);
                start(c);
                continue;
            }
            send_next(c, t);
        }
    }
    double el = now() - t_start;
    printf("{\"conns\": %d, \"size\": %zu, \"rounds\": %ld, \"secs\": %.3f, \"messages\": %lu, "
           "\"msgs_per_s\": %.1f, \"conns_done\": %lu, \"conns_per_s\": %.1f, \"failed\": %lu, "
           "\"corrupt\": %lu, \"p50_us\": %.0f, \"p99_us\": %.0f}\n",
           nconns, size, rounds, el, msgs, msgs / el, done_conns, done_conns / el, failed, bad, pct(msgs, 0.5),
           pct(msgs, 0.99));
    return 0;
}
