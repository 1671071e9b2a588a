// The XDP program's own cost per query, apart from the path: every query of a kxdpgun query
// file ("NAME TYPE" lines) built into an Ethernet/IPv4/UDP frame and run once through the
// loaded program with BPF_PROG_TEST_RUN, ROUNDS times over the whole file. Prints the mean
// in-kernel time per run (the kernel's own clock around the program) and the verdicts.
//
//   [WARM=1] progrun PROG_ID QUERY_FILE SRC_IP DST_IP [ROUNDS] [EDNS]
//   progrun --stats PROG_ID   (run_time_ns run_cnt, with kernel.bpf_stats_enabled=1)
//
// Nothing is sent: XDP_TX in a test run only returns the verdict.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_Q 200000
#define FRAME 512

struct frame {
    unsigned char b[FRAME];
    unsigned len;
};

static unsigned short csum(const unsigned char *p, unsigned n)
{
    unsigned long s = 0;
    for (unsigned i = 0; i + 1 < n; i += 2)
        s += (p[i] << 8) | p[i + 1];
    if (n & 1)
        s += p[n - 1] << 8;
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return ~s & 0xffff;
}

static int qtype(const char *t)
{
    static const struct { const char *n; int v; } known[] = {
        { "A", 1 }, { "NS", 2 }, { "CNAME", 5 }, { "SOA", 6 }, { "MX", 15 }, { "TXT", 16 }, { "AAAA", 28 },
    };
    for (unsigned i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (!strcasecmp(t, known[i].n))
            return known[i].v;
    return -1;
}

static int build(struct frame *f, const char *name, int type, unsigned src, unsigned dst, int edns, unsigned id)
{
    unsigned char *p = f->b;
    memset(p, 0, FRAME);
    memcpy(p, "\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00", 14);
    unsigned char *dns = p + 14 + 20 + 8;
    dns[0] = id >> 8, dns[1] = id & 0xff, dns[5] = 1, dns[11] = edns ? 1 : 0;
    unsigned q = 12;
    const char *s = name;
    while (*s && *s != '.') {
        const char *e = strchr(s, '.');
        unsigned l = e ? (unsigned)(e - s) : strlen(s);
        if (l > 63 || q + l + 2 > 300)
            return -1;
        dns[q++] = l;
        memcpy(dns + q, s, l);
        q += l;
        s += l + (e ? 1 : 0);
    }
    dns[q++] = 0;
    dns[q++] = type >> 8, dns[q++] = type & 0xff, dns[q++] = 0, dns[q++] = 1;
    if (edns) {
        memcpy(dns + q, "\0\0\x29\x04\xd0\0\0\0\0\0\0", 11);
        q += 11;
    }
    unsigned char *ip = p + 14, *udp = ip + 20;
    unsigned ulen = 8 + q;
    ip[0] = 0x45, ip[2] = (20 + ulen) >> 8, ip[3] = (20 + ulen) & 0xff, ip[8] = 64, ip[9] = 17;
    memcpy(ip + 12, &src, 4);
    memcpy(ip + 16, &dst, 4);
    unsigned short c = csum(ip, 20);
    ip[10] = c >> 8, ip[11] = c & 0xff;
    udp[0] = 0x9c, udp[1] = 0x40, udp[2] = 0, udp[3] = 53, udp[4] = ulen >> 8, udp[5] = ulen & 0xff;
    f->len = 14 + 20 + ulen;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--stats")) {
        // The kernel's own count of runs and their time (kernel.bpf_stats_enabled=1).
        int pfd = bpf_prog_get_fd_by_id(atoi(argv[2]));
        struct bpf_prog_info info = { 0 };
        __u32 len = sizeof(info);
        if (pfd < 0 || bpf_obj_get_info_by_fd(pfd, &info, &len)) {
            perror("progrun: program info");
            return 1;
        }
        printf("%llu %llu\n", (unsigned long long)info.run_time_ns, (unsigned long long)info.run_cnt);
        return 0;
    }
    if (argc < 5) {
        fprintf(stderr, "usage: progrun PROG_ID QUERY_FILE SRC_IP DST_IP [ROUNDS] [EDNS 0|1]\n");
        return 2;
    }
    int fd = bpf_prog_get_fd_by_id(atoi(argv[1]));
    if (fd < 0) {
        perror("progrun: bpf_prog_get_fd_by_id");
        return 1;
    }
    FILE *in = fopen(argv[2], "r");
    if (!in) {
        perror("progrun: query file");
        return 1;
    }
    unsigned src, dst;
    if (inet_pton(AF_INET, argv[3], &src) != 1 || inet_pton(AF_INET, argv[4], &dst) != 1) {
        fprintf(stderr, "progrun: addresses must be IPv4\n");
        return 2;
    }
    int rounds = argc > 5 ? atoi(argv[5]) : 5;
    int edns = argc > 6 ? atoi(argv[6]) : 1;
    // WARM=1: each query run twice in a row, the second run timed (its data in cache: the
    // program's instructions alone). The kernel's own repeat would run the answer again.
    int warm = getenv("WARM") && atoi(getenv("WARM"));
    static struct frame frames[MAX_Q];
    unsigned n = 0;
    char name[512], type[32];
    while (n < MAX_Q && fscanf(in, "%511s %31s%*[^\n]", name, type) == 2) {
        int t = qtype(type);
        if (t < 0 || build(&frames[n], name, t, src, dst, edns, n))
            continue;
        n++;
    }
    fclose(in);
    if (!n) {
        fprintf(stderr, "progrun: no queries read\n");
        return 1;
    }
    static unsigned char out[FRAME + 512];
    unsigned long long total = 0, runs = 0, verdicts[8] = { 0 };
    for (int r = 0; r < rounds; r++) {
        for (unsigned i = 0; i < n; i++) {
            LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frames[i].b, .data_size_in = frames[i].len, .data_out = out,
                        .data_size_out = sizeof(out), .repeat = 1);
            if (warm && bpf_prog_test_run_opts(fd, &o)) {
                perror("progrun: BPF_PROG_TEST_RUN");
                return 1;
            }
            o.data_size_out = sizeof(out);
            if (bpf_prog_test_run_opts(fd, &o)) {
                perror("progrun: BPF_PROG_TEST_RUN");
                return 1;
            }
            total += o.duration;
            runs++;
            verdicts[o.retval & 7]++;
        }
    }
    printf("queries %u runs %llu mean_ns %.1f aborted %llu drop %llu pass %llu tx %llu redirect %llu\n", n, runs,
           (double)total / runs, verdicts[0], verdicts[1], verdicts[2], verdicts[3], verdicts[4]);
    return 0;
}
