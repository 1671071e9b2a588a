// Holds many idle TCP connections for bench/scale/tcp.py: opens N connections to DST:PORT
// from NSRC source addresses (SRC_BASE and the next ones, bound with IP_BIND_ADDRESS_NO_PORT
// so each address has its own ports), at most WINDOW connects in flight at once, and prints
// one JSON line when all are up (or the time limit passed). With BODY > 0 each connection
// first asks `GET PATH` once and reads the response (headers, then BODY bytes), so it idles as
// a keep-alive connection after a request. Then it holds them, idle, until a line comes on
// stdin; it closes them all at once and prints how long that took. A line starting with `c`
// (with PATH and BODY) asks instead, on every connection at once, for PATH again with
// `Connection: close`, so that the server closes first, and closes each connection when it
// has read the response and the server's FIN (bench/scale/close.py). One process holds at
// most its file limit (20 000 here, not raisable without CAP_SYS_RESOURCE): the bench runs
// several.
//
// usage: holder DST PORT N SRC_BASE NSRC WINDOW LIMIT_SECS [PATH BODY]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// Asks every connection for `path` with `Connection: close` at once, then reads each until
// the server's FIN (or an error) and closes it. Prints the outcome, the monotonic times of
// the asking and of the first and last FIN, and how many FINs came in each 10 ms since the
// asking (as [bucket, count] pairs, the last bucket holding the rest) for percentiles.
static int ask_to_close(int ep, int *fds, long n, long up, const char *path, long body, double limit) {
    char req[512];
    int len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n", path);
    long *got = calloc(n, sizeof(long));
    long open = 0, complete = 0, short_ = 0, reset = 0;
    double asked = now();
    for (long j = 0; j < n; j++) {
        if (fds[j] < 0)
            continue;
        struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP, .data.u64 = (uint64_t)j};
        if (write(fds[j], req, len) != len || epoll_ctl(ep, EPOLL_CTL_ADD, fds[j], &e) != 0) {
            reset++;
            close(fds[j]);
            fds[j] = -1;
            continue;
        }
        open++;
    }
    double first = 0, last = 0;
    enum { BUCKETS = 12000 };
    long *fins = calloc(BUCKETS, sizeof(long));
    if (!fins) {
        perror("calloc");
        return -1;
    }
    struct epoll_event evs[1024];
    while (open > 0 && now() - asked < limit) {
        int k = epoll_wait(ep, evs, 1024, 100);
        for (int i = 0; i < k; i++) {
            long j = (long)evs[i].data.u64;
            char buf[4096];
            ssize_t r;
            while ((r = read(fds[j], buf, sizeof buf)) > 0)
                got[j] += r;
            if (r < 0 && errno == EAGAIN)
                continue;
            // The FIN (r == 0) after at least the body: the server answered and closed.
            if (r == 0 && got[j] > body)
                complete++;
            else if (r == 0)
                short_++;
            else
                reset++;
            last = now();
            if (first == 0)
                first = last;
            long b = (long)((last - asked) * 100);
            fins[b < BUCKETS ? b : BUCKETS - 1]++;
            close(fds[j]);
            fds[j] = -1;
            open--;
        }
    }
    printf("{\"asked\": %.6f, \"complete\": %ld, \"short\": %ld, \"reset\": %ld, \"unanswered\": %ld, "
           "\"first_fin\": %.6f, \"last_fin\": %.6f, \"held\": %ld, \"fins\": [",
           asked, complete, short_, reset, open, first, last, up);
    const char *sep = "";
    for (long b = 0; b < BUCKETS; b++)
        if (fins[b]) {
            printf("%s[%ld, %ld]", sep, b, fins[b]);
            sep = ", ";
        }
    printf("]}\n");
    free(fins);
    for (long j = 0; j < n; j++)
        if (fds[j] >= 0)
            close(fds[j]);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 8 && argc != 10) {
        fprintf(stderr, "usage: holder DST PORT N SRC_BASE NSRC WINDOW LIMIT_SECS [PATH BODY]\n");
        return 2;
    }
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1) {
        fprintf(stderr, "holder: bad address %s\n", argv[1]);
        return 2;
    }
    long n = atol(argv[3]);
    struct in_addr base;
    if (inet_pton(AF_INET, argv[4], &base) != 1) {
        fprintf(stderr, "holder: bad address %s\n", argv[4]);
        return 2;
    }
    int nsrc = atoi(argv[5]);
    long window = atol(argv[6]);
    double limit = atof(argv[7]);
    char req[512] = "";
    long body = 0;
    if (argc == 10) {
        snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: bench\r\n\r\n", argv[8]);
        body = atol(argv[9]);
    }
    // Per connection while it waits for its response: the bytes of the header end matched so
    // far (0-4), then the body bytes still to come.
    unsigned char *matched = calloc(n, 1);
    long *left = calloc(n, sizeof(long));
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if ((rlim_t)n + 16 > rl.rlim_max) {
        fprintf(stderr, "holder: %ld connections need more files than the limit of %lu\n", n, (unsigned long)rl.rlim_max);
        return 2;
    }
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int *fds = calloc(n, sizeof(int));
    int ep = epoll_create1(0);
    struct epoll_event evs[1024];
    long next = 0, pending = 0, up = 0, failed = 0;
    double t0 = now(), last_up = t0;
    while ((next < n || pending > 0) && now() - t0 < limit) {
        while (next < n && pending < window) {
            int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
            if (fd < 0) {
                perror("holder: socket");
                return 1;
            }
            int one = 1;
            setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
            struct sockaddr_in src = {.sin_family = AF_INET};
            src.sin_addr.s_addr = htonl(ntohl(base.s_addr) + (uint32_t)(next % nsrc));
            if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0) {
                perror("holder: bind");
                return 1;
            }
            if (connect(fd, (struct sockaddr *)&dst, sizeof dst) != 0 && errno != EINPROGRESS) {
                failed++;
                close(fd);
                fds[next++] = -1;
                continue;
            }
            left[next] = body;
            struct epoll_event e = {.events = EPOLLOUT, .data.u64 = (uint64_t)next};
            epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
            fds[next++] = fd;
            pending++;
        }
        int k = epoll_wait(ep, evs, 1024, 100);
        for (int i = 0; i < k; i++) {
            long j = (long)evs[i].data.u64;
            int err = 0;
            socklen_t len = sizeof err;
            if (evs[i].events & EPOLLIN) {
                char buf[4096];
                ssize_t r;
                while (left[j] > 0 && (r = read(fds[j], buf, sizeof buf)) > 0) {
                    // A 200 or nothing: another status is no answer to hold after.
                    if (left[j] == body && matched[j] == 0 && (r < 12 || memcmp(buf + 9, "200", 3) != 0)) {
                        r = 0;
                        break;
                    }
                    for (ssize_t b = 0; b < r && left[j] > 0; b++) {
                        if (matched[j] == 4)
                            left[j]--;
                        else
                            matched[j] = buf[b] == "\r\n\r\n"[matched[j]] ? matched[j] + 1 : buf[b] == '\r';
                    }
                }
                if (left[j] > 0 && !(r < 0 && errno == EAGAIN))
                    err = ECONNRESET;
                else if (left[j] > 0)
                    continue;
            } else {
                getsockopt(fds[j], SOL_SOCKET, SO_ERROR, &err, &len);
                if (err == 0 && body > 0) {
                    // Connected: ask once, then wait for the answer.
                    if (write(fds[j], req, strlen(req)) != (ssize_t)strlen(req))
                        err = EIO;
                    else {
                        struct epoll_event e = {.events = EPOLLIN, .data.u64 = (uint64_t)j};
                        epoll_ctl(ep, EPOLL_CTL_MOD, fds[j], &e);
                        continue;
                    }
                }
            }
            epoll_ctl(ep, EPOLL_CTL_DEL, fds[j], NULL);
            pending--;
            if (err != 0) {
                failed++;
                close(fds[j]);
                fds[j] = -1;
            } else {
                up++;
                last_up = now();
            }
        }
    }
    printf("{\"wanted\": %ld, \"up\": %ld, \"failed\": %ld, \"pending\": %ld, \"secs\": %.3f}\n", n, up, failed,
           pending, last_up - t0);
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) {
        // stdin closed: close all the same.
        line[0] = 0;
    }
    if (line[0] == 'c' && body > 0)
        return ask_to_close(ep, fds, n, up, argv[8], body, limit);
    double c0 = now();
    for (long j = 0; j < n; j++)
        if (fds[j] >= 0)
            close(fds[j]);
    printf("{\"closed\": %ld, \"close_secs\": %.3f}\n", up, now() - c0);
    return 0;
}
