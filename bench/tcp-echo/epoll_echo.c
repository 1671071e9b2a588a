// The peer for bench/tcp-echo: a single-threaded epoll TCP echo server on the kernel's stack,
// written the ordinary way (non-blocking sockets, edge-free level-triggered epoll, one buffer
// per connection for what could not be written back at once).
//
// usage: epoll_echo ADDR PORT [reuseport]
//
// Built with -DLEAN (bench/scale, hundreds of thousands of mostly idle connections), a
// connection holds no buffer of its own: reads go to one shared buffer and only what could
// not be written back is copied to a buffer made for it, as a server that holds many
// connections would do. `reuseport`: several processes share the port (one per file cap).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF 65536

struct conn {
    int fd;
    size_t pending, off; // bytes read but not yet written back
    int out;             // registered for EPOLLOUT (only while something is pending)
#ifdef LEAN
    char *buf; // only while something is pending
#else
    char buf[BUF];
#endif
};

#ifdef LEAN
static char shared[BUF];
#endif

static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }

int main(int argc, char **argv) {
    if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "reuseport"))) {
        fprintf(stderr, "usage: %s ADDR PORT [reuseport]\n", argv[0]);
        return 2;
    }
    struct rlimit nofile;
    if (!getrlimit(RLIMIT_NOFILE, &nofile)) { // as many connections as the hard cap allows
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (argc == 4)
        setsockopt(ls, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1 || bind(ls, (void *)&a, sizeof a) || listen(ls, 65535)) {
        perror("listen");
        return 1;
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    struct epoll_event evs[256];
    unsigned long accepted = 0, echoed = 0;
    while (!stop) {
        int n = epoll_wait(ep, evs, 256, 200);
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (!c) {
                for (;;) {
                    int fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
                    if (fd < 0)
                        break;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *nc = malloc(sizeof *nc);
                    nc->fd = fd;
                    nc->pending = nc->off = 0;
                    nc->out = 0;
#ifdef LEAN
                    nc->buf = NULL;
#endif
                    struct epoll_event e = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
                    accepted++;
                }
                continue;
            }
            int closed = 0;
            if (c->pending) { // finish what could not be written before reading more
                ssize_t w = write(c->fd, c->buf + c->off, c->pending);
                if (w > 0) {
                    c->off += w;
                    c->pending -= w;
                    echoed += w;
                } else if (w < 0 && errno != EAGAIN)
                    closed = 1;
            }
#ifdef LEAN
            if (!c->pending && c->buf) {
                free(c->buf);
                c->buf = NULL;
            }
            char *in = shared;
#else
            char *in = c->buf;
#endif
            if (!closed && !c->pending) {
                ssize_t r = read(c->fd, in, BUF);
                if (r == 0 || (r < 0 && errno != EAGAIN))
                    closed = 1;
                else if (r > 0) {
                    ssize_t w = write(c->fd, in, r);
                    if (w < 0 && errno != EAGAIN)
                        closed = 1;
                    else {
                        w = w < 0 ? 0 : w;
                        echoed += w;
                        c->off = w;
                        c->pending = r - w;
#ifdef LEAN
                        if (c->pending) { // keep the rest: the shared buffer is reused
                            c->buf = malloc(BUF);
                            memcpy(c->buf, in, r);
                        }
#endif
                    }
                }
            }
            if (closed) {
                close(c->fd);
#ifdef LEAN
                free(c->buf);
#endif
                free(c);
                continue;
            }
            if ((c->pending != 0) != c->out) { // a system call only when the interest changes
                c->out = c->pending != 0;
                struct epoll_event e = {.events = c->out ? EPOLLOUT : EPOLLIN, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
            }
        }
    }
    printf("{\"accepted\": %lu, \"echoed\": %lu}\n", accepted, echoed);
    return 0;
}
