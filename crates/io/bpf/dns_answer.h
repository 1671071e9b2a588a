// DNS answers at the driver (Namestorm's prepared answers, in the XDP program itself).
//
// A UDP query to a flow granted with GRANT_DNS is answered here with XDP_TX when its answer
// is fixed bytes the server prepared: the name (lower-cased, right-aligned in a fixed key so
// that every suffix of it is the same key with its front zeroed) and type are looked up in
// the index of the current generation; a name that does not exist is answered through its
// closest encloser (NXDOMAIN, a wildcard, a referral) when that answer is fixed. The answer
// body is copied behind the client's own question, its name pointers moved by the question's
// length, the header and an OPT record written, addresses, ports and checksums fixed.
// Everything else — misses, TCP, options, DNSSEC denial chosen per name, long or compressed
// names, a client over its rate — goes to the engine, which answers it as before; the
// reason is counted.
#pragma once

#define DNS_NAME_MAX 64
#define DNS_SHORT_MAX 32
#define DNS_BODY_SMALL 104
#define DNS_BODY_MAX 488
#define DNS_LARGE_ID 0x80000000u
#define DNS_PATCHES 4
#define DNS_SUFFIXES 8
#define DNS_TYPES 6
#define DNS_PROBES 16
#define DNS_SLOT_SIZE 384
#define DNS_LONG_NODE 0x80000000u
#define DNS_PASS_ID 0xffffffffu
#define DNS_SAME_ID 0xfffffffeu
#define DNS_SELF_CUT 1
#define DNS_WILD_CUT 2
#define DNS_INLINE 4
#define GRANT_DNS 2
#define MAX_UDP_ANSWER 1232
#define OPT_LEN 11
// Keeps clang from dropping a bound it can prove but the verifier cannot.
#define OPAQUE(v) asm volatile("" : "+r"(v))

// Why a query was not answered here (per-CPU counters; 0 counts the answers).
enum dns_why {
    DNS_ANSWERED = 0,
    DNS_OFF,          // answers off, or no generation installed
    DNS_NOT_QUERY,    // not a plain query (opcode, flags, counts, TC)
    DNS_EDNS,         // EDNS options (cookies, padding...), a version, trailing bytes
    DNS_NAME,         // name longer than the key, compressed, or malformed
    DNS_TYPE,         // class other than IN, or a meta type (ANY, AXFR, ...)
    DNS_MISS,         // no prepared answer for the name
    DNS_NOT_FIXED,    // the answer depends on the query (DNSSEC denial, DNAME, ...)
    DNS_TOO_BIG,      // larger than the client takes (the engine truncates)
    DNS_RATE,         // the client's prefix is over the rate limit (the engine decides)
    DNS_LAYOUT,       // IP options, extension headers, a VLAN tag, a fragment
    DNS_TAIL,         // the frame could not be grown (or, once changed, written: dropped)
    DNS_WHY_COUNT,
};

struct dns_key {
    __u8 name[DNS_NAME_MAX];  // wire form, lower case, right-aligned, zeros in front
};

// Which answer: its id (DNS_PASS_ID: the engine answers) and the one with DO (DNS_SAME_ID:
// the same).
struct dns_pick {
    __u16 qtype;
    __u16 pad;
    __u32 id;
    __u32 id_do;
};


#define DNS_ANSWER_HEAD                                                                       \
    __u16 len;        /* body bytes */                                                        \
    __u16 flags;      /* header flags without RD and CD */                                    \
    __u16 counts[3];  /* answer, authority, additional (no OPT) */                            \
    __u16 sum;        /* the body's folded one's-complement sum, as at an even offset */      \
    __u16 base_len;   /* the question name length the pointers were written for */            \
    __u8 npatch;                                                                              \
    __u8 pad;                                                                                 \
    __u16 patch[DNS_PATCHES]; /* body offsets of pointers that move with the question */

// Answers come in two sizes (most are small; signed ones are not), ids of the large ones
// have DNS_LARGE_ID set.
struct dns_answer {
    DNS_ANSWER_HEAD
    __u8 body[DNS_BODY_SMALL];
};

struct dns_answer_large {
    DNS_ANSWER_HEAD
    __u8 body[DNS_BODY_MAX];
};

// Everything a name answers, found with one lookup: its own types and every other, and for
// names below it that do not exist, a wildcard's types and every other. A list cut short
// (more types than it holds) sends the types not in it to the engine. The answer to its first
// type is kept in it too (DNS_INLINE), saving the most common query a second lookup — a
// cache miss. In the order that query reads it: behind a short name's key, the first type
// and its answer's header fill the first cache line, the answer's body the next; what other
// types and names below it need comes last.
struct dns_node {
    __u8 pad, nself, nwild, flags;
    struct dns_pick self0;                 // the first of the own types
    struct dns_answer first;               // its answer, with DNS_INLINE
    struct dns_pick self[DNS_TYPES - 1];   // the other own types
    __u32 other, other_do;
    __u32 below, below_do;
    struct dns_pick wild[DNS_TYPES];
};

// The index is open-addressed in an array of 8-byte slots (an array's lookup is inlined;
// a hash map's walks a bucket, then its element: two cache misses and a call), small enough
// to stay in cache: a slot holds a tag of the name's hash and the position of its node in a
// dense array of nodes (DNS_LONG_NODE: in the long names'). Filled by Robin Hood insertion, so
// a name sits in the run of used slots that starts at its hash (within DNS_PROBES), and a name
// not there is not in the index.
struct dns_slot {
    __u32 tag;  // 0: unused
    __u32 node;
};

// A node with its name: whole cache lines, the array's values start on a page
// (BPF_F_MMAPABLE), so the key and the common query's fields share the first line. Most names
// are short: their key is the last 32 bytes of the long one, in an array of their own.
struct dns_short_slot {
    __u8 name[DNS_SHORT_MAX];
    struct dns_node node;
    __u8 pad[DNS_SLOT_SIZE - DNS_SHORT_MAX - sizeof(struct dns_node)];
};

struct dns_long_slot {
    __u8 name[DNS_NAME_MAX];
    struct dns_node node;
    __u8 pad[DNS_SLOT_SIZE - DNS_NAME_MAX - sizeof(struct dns_node)];
};

struct dns_cfg {
    __u32 gen;       // the generation queries are answered from
    __u32 on;        // 0: every query goes to the engine
    __u32 rrl_rate;  // responses per second per prefix answered here; 0: no limit
    __u32 v4_mask;   // network order
    __u8 v6_mask[16];
    __u64 seed;      // of the index's hash
    __u32 mask;      // slots - 1 of the index (a power of two)
    __u32 pad;
};

struct dns_scratch {
    __u8 pre[64];
    struct dns_key key;  // at 64; the name ends at 128
    __u8 post[76];       // room the verifier counts for the right-aligned load
    __u16 starts[DNS_SUFFIXES + 1];
    __u32 name_len;
    __u32 labels;
    __u32 no_tail;       // this CPU's driver refused to grow a frame at its end: grow in front
    __u8 front[256];     // the headers and the question, while they move
};

struct rrl_key {
    __u8 addr[16];
};

struct rrl_slot {
    __u32 second;
    __u32 count;
};

// Sized at load for the zones served (a table much larger than its contents spreads every
// lookup over memory no cache holds); answers in arrays, found by their index.
#define DNS_INDEX(n, v)                              \
    struct {                                         \
        __uint(type, BPF_MAP_TYPE_ARRAY);            \
        __uint(max_entries, 1024);                   \
        __uint(map_flags, BPF_F_MMAPABLE);           \
        __type(key, __u32);                          \
        __type(value, v);                            \
    } n SEC(".maps")
#define DNS_ANSWERS(n, v)                            \
    struct {                                         \
        __uint(type, BPF_MAP_TYPE_ARRAY);            \
        __uint(max_entries, 1024);                   \
        __uint(map_flags, BPF_F_MMAPABLE);           \
        __type(key, __u32);                          \
        __type(value, v);                            \
    } n SEC(".maps")

// Two generations: a reload fills the one not in use, then flips dns_cfg.gen.
DNS_INDEX(dns_index0, struct dns_slot);
DNS_INDEX(dns_index1, struct dns_slot);
DNS_INDEX(dns_long0, struct dns_long_slot);
DNS_INDEX(dns_long1, struct dns_long_slot);
DNS_INDEX(dns_short0, struct dns_short_slot);
DNS_INDEX(dns_short1, struct dns_short_slot);
DNS_ANSWERS(dns_answers0, struct dns_answer);
DNS_ANSWERS(dns_answers1, struct dns_answer);
DNS_ANSWERS(dns_large0, struct dns_answer_large);
DNS_ANSWERS(dns_large1, struct dns_answer_large);

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct dns_cfg);
} dns_cfg SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct dns_scratch);
} dns_scratch SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, DNS_WHY_COUNT);
    __type(key, __u32);
    __type(value, __u64);
} dns_stats SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 65536);
    __type(key, struct rrl_key);
    __type(value, struct rrl_slot);
} dns_rrl SEC(".maps");

static __always_inline int dns_count(__u32 why)
{
    __u64 *c = bpf_map_lookup_elem(&dns_stats, &why);
    if (c)
        *c += 1;
    return -1;
}

static __always_inline int dns_drop(void)
{
    dns_count(DNS_TAIL);
    return -2;
}

// One's-complement sum of a byte at message offset `at` (even: high byte of its word).
static __always_inline __u32 sum_byte(__u8 b, __u32 at)
{
    return (at & 1) ? b : ((__u32)b << 8);
}

static __always_inline __u16 fold(__u64 s)
{
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    return (__u16)s;
}

static __always_inline __u16 swab16(__u16 v)
{
    return (v >> 8) | (v << 8);
}

// The index's hash of a key's words (as crates/io/src/dns_answers.rs computes it).
static __always_inline __u64 dns_hash(const __u64 *w, int n, __u64 seed)
{
    __u64 h = seed;
    for (int i = 0; i < n; i++) {
        h ^= w[i];
        h *= 0x9e3779b97f4a7c15ull;
        h ^= h >> 32;
    }
    return h;
}

// A map's value at `idx`, the lookup kept apart from any other (a distinct `tag`): clang
// would otherwise make one call of two that differ in the map, which the verifier cannot
// inline.
#define DNS_GET(map, idx, tag)                                 \
    ({                                                         \
        __u32 i_ = (idx);                                      \
        void *v_ = bpf_map_lookup_elem(&map, &i_);             \
        asm volatile("/* " tag " */" : "+r"(v_));              \
        v_;                                                    \
    })

// Whether node `id` of `nodes` holds the name (its `nw` words at `w`).
#define DNS_SAME(nodes, slot_t, id, w, nw, tag)                                               \
    ({                                                                                       \
        slot_t *n_ = DNS_GET(nodes, id, tag);                                                \
        int same_ = n_ != 0;                                                                 \
        if (n_) {                                                                            \
            const __u64 *nw_ = (const __u64 *)n_->name;                                      \
            for (int j = 0; j < (nw); j++)                                                   \
                same_ &= nw_[j] == (w)[j];                                                   \
        }                                                                                    \
        same_;                                                                               \
    })

// The slots of `index` from the name's home on, up to an unused one: the node (in `nodes`)
// whose tag and name match, or -1.
#define DNS_PROBE(index, nodes, slot_t, w, nw, long_bit, t1, t2)                              \
    for (int i = 0; i < DNS_PROBES; i++) {                                                   \
        struct dns_slot *sl = DNS_GET(index, (home + i) & mask, t1);                         \
        if (!sl || !sl->tag)                                                                 \
            return -1;                                                                       \
        __u32 id = sl->node;                                                                 \
        if (sl->tag == tag && (id & DNS_LONG_NODE) == (long_bit) &&                          \
            DNS_SAME(nodes, slot_t, id & ~DNS_LONG_NODE, w, nw, t2))                          \
            return id & ~DNS_LONG_NODE;                                                      \
    }                                                                                        \
    return -1;

// The node of the name right-aligned in this CPU's key, `len` bytes long, in generation
// `gen` (in the short names' array for a short one), or -1. A function the verifier checks
// once, whoever calls it.
__attribute__((noinline)) int dns_find_node(__u32 gen, __u32 len)
{
    __u32 zero = 0;
    struct dns_cfg *cfg = bpf_map_lookup_elem(&dns_cfg, &zero);
    struct dns_scratch *s = bpf_map_lookup_elem(&dns_scratch, &zero);
    if (!cfg || !s)
        return -1;
    const __u64 *w = (const __u64 *)s->key.name;
    __u32 mask = cfg->mask;
    if (len <= DNS_SHORT_MAX) {
        __u64 h = dns_hash(w + 4, 4, cfg->seed);
        __u32 home = (__u32)h, tag = (__u32)(h >> 32) | 1;
        if (gen) {
            DNS_PROBE(dns_index1, dns_short1, struct dns_short_slot, w + 4, 4, 0, "i1s", "n1s")
        }
        DNS_PROBE(dns_index0, dns_short0, struct dns_short_slot, w + 4, 4, 0, "i0s", "n0s")
    }
    __u64 h = dns_hash(w, 8, cfg->seed);
    __u32 home = (__u32)h, tag = (__u32)(h >> 32) | 1;
    if (gen) {
        DNS_PROBE(dns_index1, dns_long1, struct dns_long_slot, w, 8, DNS_LONG_NODE, "i1l", "n1l")
    }
    DNS_PROBE(dns_index0, dns_long0, struct dns_long_slot, w, 8, DNS_LONG_NODE, "i0l", "n0l")
}

// The node of the name right-aligned in this CPU's key, `len` bytes long.
static __always_inline struct dns_node *dns_find(__u32 gen, __u32 len)
{
    int at = dns_find_node(gen, len);
    if (at < 0)
        return 0;
    if (len <= DNS_SHORT_MAX) {
        struct dns_short_slot *sh = gen ? DNS_GET(dns_short1, at, "s1") : DNS_GET(dns_short0, at, "s0");
        if (!sh)
            return 0;
        OPAQUE(sh);  // after the check: clang would take the field's address before it
        return &sh->node;
    }
    struct dns_long_slot *lg = gen ? DNS_GET(dns_long1, at, "l1") : DNS_GET(dns_long0, at, "l0");
    if (!lg)
        return 0;
    OPAQUE(lg);
    return &lg->node;
}

static __always_inline struct dns_answer *dns_body(__u32 gen, __u32 id)
{
    if (gen)
        return bpf_map_lookup_elem(&dns_answers1, &id);
    return bpf_map_lookup_elem(&dns_answers0, &id);
}

static __always_inline struct dns_answer_large *dns_body_large(__u32 gen, __u32 id)
{
    if (gen)
        return bpf_map_lookup_elem(&dns_large1, &id);
    return bpf_map_lookup_elem(&dns_large0, &id);
}

// Over the rate for the client's prefix: the engine (whose limiter decides) gets it.
static __always_inline int over_rate(struct dns_cfg *cfg, const __u8 *src, int v6)
{
    if (!cfg->rrl_rate)
        return 0;
    struct rrl_key k = {};
    if (v6) {
        for (int i = 0; i < 16; i++)
            k.addr[i] = src[i] & cfg->v6_mask[i];
    } else {
        __u32 a;
        __builtin_memcpy(&a, src, 4);
        a &= cfg->v4_mask;
        __builtin_memcpy(k.addr, &a, 4);
        k.addr[15] = 4;
    }
    __u32 now = (__u32)(bpf_ktime_get_ns() / 1000000000ull);
    struct rrl_slot *s = bpf_map_lookup_elem(&dns_rrl, &k);
    if (!s) {
        struct rrl_slot fresh = { .second = now, .count = 1 };
        bpf_map_update_elem(&dns_rrl, &k, &fresh, BPF_ANY);
        return 0;
    }
    if (s->second != now) {
        s->second = now;
        s->count = 1;
        return 0;
    }
    if (s->count >= cfg->rrl_rate)
        return 1;
    __sync_fetch_and_add(&s->count, 1);
    return 0;
}

// The answer `list` (its first `n` entries; `cut`: it had more) gives `qtype`, else the one
// for every other type — or none (the engine's) when the list was cut short.
static __always_inline void pick_type(const struct dns_pick *list, __u32 n, int cut, __u16 qtype, __u32 other,
                                      __u32 other_do, __u32 *id, __u32 *id_do)
{
    for (int i = 0; i < DNS_TYPES; i++) {
        if ((__u32)i >= n)
            break;
        if (list[i].qtype == qtype) {
            *id = list[i].id;
            *id_do = list[i].id_do;
            return;
        }
    }
    *id = cut ? DNS_PASS_ID : other;
    *id_do = cut ? DNS_PASS_ID : other_do;
}

// Lower-cases the letters of eight name bytes at once (no branch for the verifier to follow).
static __always_inline __u64 lower8(__u64 x)
{
    __u64 h = x & 0x7f7f7f7f7f7f7f7full;
    __u64 ge_a = h + 0x3f3f3f3f3f3f3f3full;  // bit 7 set where the byte is >= 'A'
    __u64 gt_z = h + 0x2525252525252525ull;  // ... and where it is > 'Z'
    __u64 m = (ge_a ^ gt_z) & ~x & 0x8080808080808080ull;
    return x | (m >> 2);
}

// Clears the first `lim - first` bytes (0 to 8) of the eight at `first` (little-endian load).
static __always_inline __u64 clear_front(__u64 x, __s32 lim, __s32 first)
{
    __s32 t = lim - first;
    t = t & ~(t >> 31);
    __s32 d = t - 8;
    t = t - (d & ~(d >> 31));
    OPAQUE(t);
    __u64 low = ((1ull << (4 * t)) << (4 * t)) - 1;
    return x & ~low;
}

// One's-complement sum of 64 bytes read as little-endian words, as big-endian words would give.
static __always_inline __u16 sum64_be(const __u64 *w)
{
    __u64 acc = 0;
    for (int i = 0; i < 8; i++)
        acc += (w[i] & 0xffffffffull) + (w[i] >> 32);
    return swab16(fold(acc));
}

// Answers the DNS query at `off` (the UDP payload, `msg_len` bytes; `v6` says which header
// is below) in place when a prepared answer fits it. Returns (sum << 16 | length) of the
// response written — the frame resized, the caller fixes the lower layers — or -1 to hand the
// query to the engine, -2 to drop the frame (changed already). A function of its own, so
// the verifier checks it once for both families.
__attribute__((noinline)) long dns_answer(struct xdp_md *ctx, __u32 off, __u32 msg_len, __u32 v6)
{
    __u32 zero = 0;
    struct dns_cfg *cfg = bpf_map_lookup_elem(&dns_cfg, &zero);
    if (!cfg || !cfg->on)
        return dns_count(DNS_OFF);
    __u32 gen = cfg->gen;
    struct dns_scratch *s = bpf_map_lookup_elem(&dns_scratch, &zero);
    if (!s)
        return dns_count(DNS_OFF);
    if (msg_len < 17 || msg_len > 512 || off > 64)
        return dns_count(DNS_NOT_QUERY);
    // Read in place (a helper's copy is a call each).
    __u8 *end = (__u8 *)(long)ctx->data_end;
    __u32 at_msg = off;
    OPAQUE(at_msg);  // so that clang keeps the mask the verifier needs (it knows off <= 64)
    at_msg &= 0x7f;
    __u8 *hdr = (__u8 *)(long)ctx->data + at_msg;
    if (hdr + 12 > end)
        return dns_count(DNS_NOT_QUERY);
    // A query (QR 0, opcode 0), not truncated, no Z or rcode bits; one question, nothing
    // else but at most an OPT record.
    if ((hdr[2] & 0xfa) != 0 || (hdr[3] & 0x4f) != 0)
        return dns_count(DNS_NOT_QUERY);
    if (hdr[4] != 0 || hdr[5] != 1 || hdr[6] || hdr[7] || hdr[8] || hdr[9] || hdr[10] || hdr[11] > 1)
        return dns_count(DNS_NOT_QUERY);
    __u16 rd_cd = ((__u16)(hdr[2] & 0x01) << 8) | (hdr[3] & 0x10);
    __u16 id = ((__u16)hdr[0] << 8) | hdr[1];
    int edns = hdr[11];
    // The question and what follows it (an OPT record), as far as the message goes.
    __u32 qoff = off + 12;
    __u32 avail = msg_len - 12;
    if (avail > DNS_NAME_MAX + 4 + OPT_LEN)
        avail = DNS_NAME_MAX + 4 + OPT_LEN;
    avail = ((avail - 1) & 0x7f) + 1;
    __u8 *question = hdr + 12;
    __u32 pos = 0;
    __u32 labels = 0;
    int whole = 0;
    for (int i = 0; i < 33; i++) {
        if (pos >= avail)
            return dns_count(DNS_NAME);
        __u8 *at = question + (pos & 0x7f);
        if (at + 1 > end)
            return dns_count(DNS_NAME);
        __u8 l = *at;
        if (l == 0) {
            pos += 1;
            whole = 1;
            break;
        }
        if (l > 63)
            return dns_count(DNS_NAME);
        if (labels < DNS_SUFFIXES)
            s->starts[labels & 7] = pos;
        labels++;
        pos += l + 1;
        if (pos >= DNS_NAME_MAX)
            return dns_count(DNS_NAME);
    }
    if (!whole)
        return dns_count(DNS_NAME);
    // Through memory: every way out of the walk continues as one state for the verifier
    // (kept apart, the rest would be verified once per name length).
    *(volatile __u32 *)&s->name_len = pos;
    *(volatile __u32 *)&s->labels = labels;
    __u32 n = *(volatile __u32 *)&s->name_len;
    labels = *(volatile __u32 *)&s->labels;
    if (n < 1 || n > DNS_NAME_MAX || labels > 32 || n + 4 > avail)
        return dns_count(DNS_NAME);
    __u32 q_end = 12 + n + 4;
    __u8 *qt = question + (n & 0x7f);
    if (qt + 4 > end)
        return dns_count(DNS_NAME);
    __u16 qtype = ((__u16)qt[0] << 8) | qt[1];
    if (qt[2] != 0 || qt[3] != 1)
        return dns_count(DNS_TYPE);
    if (qtype == 0 || qtype == 41 || (qtype >= 128 && qtype <= 255))
        return dns_count(DNS_TYPE);
    int dnssec = 0;
    __u16 udp_size = 512;
    if (edns) {
        // The OPT record: root owner, type 41, version 0, no flag but DO, no options, and
        // the end of the message.
        if (msg_len != q_end + OPT_LEN || n + 4 + OPT_LEN > avail)
            return dns_count(DNS_EDNS);
        __u8 *o = question + ((n + 4) & 0x7f);
        if (o + OPT_LEN > end)
            return dns_count(DNS_EDNS);
        if (o[0] != 0 || o[1] != 0 || o[2] != 41 || o[6] != 0 || (o[7] & 0x7f) || o[8] || o[9] || o[10])
            return dns_count(DNS_EDNS);
        udp_size = ((__u16)o[3] << 8) | o[4];
        dnssec = o[7] >> 7;
    } else if (msg_len != q_end) {
        return dns_count(DNS_EDNS);
    }
    // The key: the name right-aligned at 128 (bounds the verifier follows: a length of 1
    // to 64 ending there), summed as the client wrote it, then lower-cased.
    struct dns_key *k = &s->key;
    __builtin_memset(k, 0, sizeof(*k));
    __u32 len = ((n - 1) & 0x3f) + 1;
    if (bpf_xdp_load_bytes(ctx, qoff, &((__u8 *)s)[128 - len], len))
        return dns_count(DNS_NAME);
    __u64 *words = (__u64 *)k->name;
    __u16 name_sum = sum64_be(words);
    // The name starts at an even offset in the key when its length is even; in the
    // message it starts at 12.
    __u64 sum = (n & 1) ? swab16(name_sum) : name_sum;
    for (int i = 0; i < 8; i++)
        words[i] = lower8(words[i]);
    // The name itself, else its closest encloser: each shorter suffix in turn, to the root.
    __u32 pick = DNS_PASS_ID, pick_do = DNS_PASS_ID;
    int found = 0;
    struct dns_node *node = dns_find(gen, n);
    if (node) {
        found = 1;
        if (node->nself && node->self0.qtype == qtype) {
            pick = node->self0.id;
            pick_do = node->self0.id_do;
        } else {
            __u32 rest = node->nself ? node->nself - 1 : 0;
            pick_type(node->self, rest, node->flags & DNS_SELF_CUT, qtype, node->other, node->other_do, &pick,
                      &pick_do);
        }
    } else {
        for (__u32 j = 1; j <= DNS_SUFFIXES; j++) {
            if (j > labels)
                break;
            // Past the labels recorded, the walk stops short: the engine finds the encloser.
            if (j < labels && j >= DNS_SUFFIXES)
                break;
            __u32 cut = j < labels ? s->starts[j & 7] : n - 1;
            __s32 lim = 64 - (__s32)n + (__s32)cut;
            for (int i = 0; i < 8; i++)
                words[i] = clear_front(words[i], lim, 8 * i);
            node = dns_find(gen, n - cut);
            if (node) {
                found = 1;
                pick_type(node->wild, node->nwild, node->flags & DNS_WILD_CUT, qtype, node->below, node->below_do,
                          &pick, &pick_do);
                break;
            }
            if (j == labels)
                break;
        }
    }
    if (!found)
        return dns_count(DNS_MISS);
    __u32 aid = pick;
    if (dnssec && pick_do != DNS_SAME_ID)
        aid = pick_do;
    if (aid == DNS_PASS_ID)
        return dns_count(DNS_NOT_FIXED);
    // The header fields sit alike in both sizes; the body is read through its own bound.
    struct dns_answer *a;
    const __u8 *body;
    __u32 blen;
    if (node && (node->flags & DNS_INLINE) && aid == node->self0.id) {
        a = &node->first;
        blen = a->len;
        if (blen > DNS_BODY_SMALL)
            return dns_count(DNS_TOO_BIG);
        body = a->body;
    } else if (aid & DNS_LARGE_ID) {
        struct dns_answer_large *l = dns_body_large(gen, aid & ~DNS_LARGE_ID);
        if (!l)
            return dns_count(DNS_MISS);
        blen = l->len;
        if (blen > DNS_BODY_MAX)
            return dns_count(DNS_TOO_BIG);
        a = (struct dns_answer *)l;
        body = l->body;
    } else {
        a = dns_body(gen, aid);
        if (!a)
            return dns_count(DNS_MISS);
        blen = a->len;
        if (blen > DNS_BODY_SMALL)
            return dns_count(DNS_TOO_BIG);
        body = a->body;
    }
    __u32 limit = 512;
    if (edns) {
        limit = udp_size < 512 ? 512 : udp_size;
        if (limit > MAX_UDP_ANSWER)
            limit = MAX_UDP_ANSWER;
        limit -= OPT_LEN;
    }
    if (q_end + blen > limit)
        return dns_count(DNS_TOO_BIG);
    __u8 src[16] = {};
    if (cfg->rrl_rate) {
        if (bpf_xdp_load_bytes(ctx, v6 ? 14 + 8 : 14 + 12, src, v6 ? 16 : 4))
            return dns_count(DNS_LAYOUT);
        if (over_rate(cfg, src, v6))
            return dns_count(DNS_RATE);
    }
    sum += (n & 1) ? swab16(qtype) : qtype;
    sum += (n & 1) ? 0x0100 : 0x0001;  // QCLASS IN
    __u32 resp_len = q_end + blen + (edns ? OPT_LEN : 0);
    int delta = (int)resp_len - (int)msg_len;
    // A driver that gives no room behind its frames (veth, most of the time) refuses: after a
    // refusal this CPU grows frames in front straight away, a helper call less — when the
    // headroom can take it; a larger answer still tries the tail.
    int tail_failed = 0;
    if (delta && (delta < 0 || delta > 255 || !s->no_tail)) {
        tail_failed = bpf_xdp_adjust_tail(ctx, delta) != 0;
        if (tail_failed && delta > 0)
            s->no_tail = 1;
    } else if (delta) {
        tail_failed = 1;
    }
    if (tail_failed) {
        // No room behind the frame (veth hands XDP small buffers): grow it in front, into
        // the headroom every XDP frame has, and move the headers and the question there.
        if (delta < 0 || delta > 255 || bpf_xdp_adjust_head(ctx, -delta))
            return dns_count(DNS_TAIL);
        __u32 front = ((off + q_end - 1) & 0xff) + 1;
        if (bpf_xdp_load_bytes(ctx, delta, s->front, front) || bpf_xdp_store_bytes(ctx, 0, s->front, front))
            return dns_drop();
    }
    // From here the frame is the answer's: a failure drops it, never passes it on.
    __u32 body_off = off + q_end;
    if (blen >= 1 && bpf_xdp_store_bytes(ctx, body_off, (void *)body, blen))
        return dns_drop();
    __u16 bsum = a->sum;
    sum += (q_end & 1) ? swab16(bsum) : bsum;
    // The small writes go straight to the frame (a helper is a call each).
    __u8 *data = (__u8 *)(long)ctx->data;
    end = (__u8 *)(long)ctx->data_end;  // the frame was resized
    // Pointers into the question (and past it) move with its length — not at all for a
    // question as long as the one the answer was prepared for.
    __s32 shift = (__s32)n - (__s32)a->base_len;
    __u32 npatch = shift ? a->npatch : 0;
    for (int i = 0; i < DNS_PATCHES; i++) {
        if ((__u32)i >= npatch)
            break;
        __u32 p = a->patch[i];
        if (p + 2 > blen)
            break;
        __u8 *w = data + ((body_off + p) & 0x3ff);
        if (w + 2 > end)
            return dns_drop();
        __u16 old = ((__u16)w[0] << 8) | w[1];
        __u16 now = (__u16)((__s32)old + shift);
        w[0] = now >> 8;
        w[1] = now & 0xff;
        int odd = (q_end + p) & 1;
        sum += odd ? swab16(now) : now;
        sum += 0xffff - (odd ? swab16(old) : old);
    }
    if (edns) {
        __u8 opt[OPT_LEN] = { 0, 0, 41, MAX_UDP_ANSWER >> 8, MAX_UDP_ANSWER & 0xff, 0, 0,
                              dnssec ? 0x80 : 0, 0, 0, 0 };
        __u32 o = q_end + blen;
        __u64 os = 0;
        for (int i = 0; i < OPT_LEN; i++)
            os += (i & 1) ? opt[i] : ((__u32)opt[i] << 8);
        sum += (o & 1) ? swab16(fold(os)) : fold(os);
        __u8 *at = data + ((off + o) & 0x3ff);
        if (at + OPT_LEN > end)
            return dns_drop();
        __builtin_memcpy(at, opt, OPT_LEN);
    }
    // The header: the query's ID, the answer's flags with the query's RD and CD.
    __u16 flags = a->flags | rd_cd;
    __u16 ar = a->counts[2] + (edns ? 1 : 0);
    __u8 out[12] = { id >> 8, id & 0xff, flags >> 8, flags & 0xff, 0, 1,
                     a->counts[0] >> 8, a->counts[0] & 0xff, a->counts[1] >> 8, a->counts[1] & 0xff,
                     ar >> 8, ar & 0xff };
    __u8 *h = data + (off & 0x7f);
    if (h + 12 > end)
        return dns_drop();
    __builtin_memcpy(h, out, 12);
    sum += (__u64)id + flags + 1 + a->counts[0] + a->counts[1] + ar;
    dns_count(DNS_ANSWERED);
    return ((long)fold(sum) << 16) | resp_len;
}

static __always_inline void swap_macs(struct ethhdr *eth)
{
    __u8 t[ETH_ALEN];
    __builtin_memcpy(t, eth->h_dest, ETH_ALEN);
    __builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
    __builtin_memcpy(eth->h_source, t, ETH_ALEN);
}

static __always_inline __u64 sum_words(const void *p, int words)
{
    const __u16 *w = p;
    __u64 s = 0;
    for (int i = 0; i < words; i++)
        s += bpf_ntohs(w[i]);
    return s;
}

// The UDP header of the answer: ports swapped, its length, the checksum over `sum` (the
// message's and the addresses').
static __always_inline int udp_back(struct udphdr *udp, __u32 msg_len, __u64 sum)
{
    __be16 p = udp->source;
    udp->source = udp->dest;
    udp->dest = p;
    udp->len = bpf_htons(8 + msg_len);
    udp->check = 0;
    __u64 s = sum + IPPROTO_UDP + (8 + msg_len) + sum_words(udp, 4);
    __u16 c = ~fold(s) & 0xffff;
    udp->check = bpf_htons(c ? c : 0xffff);
    return XDP_TX;
}

// A query over IPv4 (no options) to a DNS grant: XDP_TX, -1 (to the engine) or -2 (drop).
static __always_inline int dns_reply4(struct xdp_md *ctx, struct iphdr *ip, struct udphdr *udp, void *end)
{
    if (ip->ihl != 5 || (void *)(udp + 1) > end)
        return dns_count(DNS_LAYOUT);
    __u32 ulen = bpf_ntohs(udp->len);
    if (ulen < 8 + 12 || (void *)udp + ulen > end || bpf_ntohs(ip->tot_len) != 20 + ulen)
        return dns_count(DNS_NOT_QUERY);
    long r = dns_answer(ctx, sizeof(struct ethhdr) + 20 + 8, ulen - 8, 0);
    if (r < 0)
        return r;
    __u32 msg_len = r & 0xffff;
    __u64 msg_sum = (r >> 16) & 0xffff;
    void *data = (void *)(long)ctx->data;
    end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    ip = (void *)(eth + 1);
    udp = (void *)(ip + 1);
    if ((void *)(udp + 1) > end)
        return dns_drop();
    swap_macs(eth);
    __be32 a = ip->saddr;
    ip->saddr = ip->daddr;
    ip->daddr = a;
    ip->tot_len = bpf_htons(20 + 8 + msg_len);
    ip->ttl = 64;
    ip->check = 0;
    ip->check = bpf_htons(~fold(sum_words(ip, 10)) & 0xffff);
    return udp_back(udp, msg_len, msg_sum + sum_words(&ip->saddr, 4));
}

// A query over IPv6 (UDP right after the fixed header) to a DNS grant: XDP_TX, -1 or -2.
static __always_inline int dns_reply6(struct xdp_md *ctx, struct ipv6hdr *ip, struct udphdr *udp, void *end)
{
    if ((void *)(udp + 1) > end)
        return dns_count(DNS_LAYOUT);
    __u32 ulen = bpf_ntohs(udp->len);
    if (ulen < 8 + 12 || (void *)udp + ulen > end || bpf_ntohs(ip->payload_len) != ulen)
        return dns_count(DNS_NOT_QUERY);
    long r = dns_answer(ctx, sizeof(struct ethhdr) + 40 + 8, ulen - 8, 1);
    if (r < 0)
        return r;
    __u32 msg_len = r & 0xffff;
    __u64 msg_sum = (r >> 16) & 0xffff;
    void *data = (void *)(long)ctx->data;
    end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    ip = (void *)(eth + 1);
    udp = (void *)(ip + 1);
    if ((void *)(udp + 1) > end)
        return dns_drop();
    swap_macs(eth);
    struct in6_addr t = ip->saddr;
    ip->saddr = ip->daddr;
    ip->daddr = t;
    ip->payload_len = bpf_htons(8 + msg_len);
    ip->hop_limit = 64;
    return udp_back(udp, msg_len, msg_sum + sum_words(&ip->saddr, 16));
}
