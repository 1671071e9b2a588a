// The reference: a kernel-socket UDP echo server, batched with recvmmsg/sendmmsg (64 per
// call), single-threaded. Usage: kecho ADDR PORT
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH 64
#define SIZE 2048

static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: kecho ADDR PORT\n");
        return 2;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int big = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };
    if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("kecho: bind");
        return 1;
    }
    struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    static char bufs[BATCH][SIZE];
    static struct sockaddr_in peers[BATCH];
    static struct iovec iov[BATCH];
    static struct mmsghdr msgs[BATCH];
    unsigned long long echoed = 0;
    fprintf(stderr, "kecho: serving %s:%s\n", argv[1], argv[2]);
    while (!stop) {
        for (int i = 0; i < BATCH; i++) {
            iov[i].iov_base = bufs[i];
            iov[i].iov_len = SIZE;
            msgs[i].msg_hdr = (struct msghdr){ .msg_name = &peers[i], .msg_namelen = sizeof peers[i], .msg_iov = &iov[i], .msg_iovlen = 1 };
        }
        int n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
        if (n <= 0)
            continue;
        for (int i = 0; i < n; i++)
            iov[i].iov_len = msgs[i].msg_len;
        int sent = 0;
        while (sent < n) {
            int r = sendmmsg(fd, msgs + sent, n - sent, 0);
            if (r <= 0)
                break;
            sent += r;
        }
        echoed += sent;
    }
    fprintf(stderr, "kecho: echoed %llu\n", echoed);
    return 0;
}
