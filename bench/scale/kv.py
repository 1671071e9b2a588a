#!/usr/bin/env python3
"""How the cache's cost grows with the items it holds (issue 44): sirocco kv against memcached
1.6.18 (`-t 1`), each confined to the server core, taking turns. For each size N of ITEMS
(default 1 M, 3 M, 10 M, 30 M, 100 M) a fresh server with room for all of them (MEMORY_PER_ITEM
bytes each) is filled by bench/scale/kvload.c from the client core: N keys of 12 bytes with
values of 38 to 88 bytes (key and value 50 to 100 bytes, 75 on average: the machine's 24 GiB
hold 100 M such items in one server, not 100 M of up to 300 bytes), `set ... noreply`
pipelined on 4 kernel TCP connections. Measured per round and server:

- **overhead per item**: the server's resident memory after the fill less before it, per
  item, less the item's own key and value bytes (what memcached's and sirocco's headers,
  slab rounding and hash tables cost);
- **fill**: sets/s, and the round trip of a meta no-op sent after every 20 000 sets of a
  connection (median, 99th percentile, longest): a server that stops to grow a table shows
  as a long one; the client kernel's retransmitted segments during the fill (the veth drops
  frames when the server core falls behind, and each loss costs the sender a recovery);
- **gets/s** of uniformly drawn keys, 8 connections with 16 gets outstanding each, SECS
  seconds, with their median and 99th-percentile latency (closed loop: queueing included),
  every value checked;
- **under memory pressure** (PRESSURE=items:MB, default 10 000 000 items in 600 MB): the
  items each server keeps and the hit rate of uniform gets over all of them.

Writes bench/results/scale-kv.{md,json,png} (OUT_NAME to change the name)."""

import json, os, re, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from lib import (sh, ns, env_list, preflight, Cpuset, Testnet, stop_process, SECS, REPS, SIROCCO,  # noqa: E402
                 SRV_CPU, GEN_CPU, run_meta, save, size_curves, server_kind, rss_of_group)

ITEMS = env_list("ITEMS", "1000000,3000000,10000000,30000000,100000000", int)
SERVERS = env_list("SERVERS", "sirocco,memcached")
# Rounds for sizes above 10 M (a 100 M fill takes minutes per server; memory per item does
# not depend on the host's speed, rates do: see the spread).
BIG_REPS = int(os.environ.get("BIG_REPS", "1"))
MEMORY_PER_ITEM = 200
PRESSURE = os.environ.get("PRESSURE", "10000000:600")
OUT_NAME = os.environ.get("OUT_NAME", "scale-kv")
NET = Testnet("bk")
KERNEL_ADDR, OWN_ADDR = "198.18.0.1", "198.18.0.10"
FILL_CONNS, GET_CONNS, GET_DEPTH = 4, 8, 16


class Server:
    def __init__(self, kind, cs, memory_mb):
        self.kind, self.cs, self.memory_mb = kind, cs, memory_mb
        self.bin = server_kind(kind, SIROCCO)[1]
        self.addr = KERNEL_ADDR if kind == "memcached" else OWN_ADDR
        self.proc = None

    def start(self):
        if self.kind == "memcached":
            argv = ["memcached", "-u", "nobody", "-l", KERNEL_ADDR, "-p", "11211", "-U", "0", "-t", "1",
                    "-m", str(self.memory_mb), "-c", "1024"]
        else:
            argv = [self.bin, "kv", "--iface", NET.srv_if, "--addr", OWN_ADDR, "--queues", "1", "--cpus", str(SRV_CPU),
                    "--memory", str(self.memory_mb)]
        self.proc = subprocess.Popen(self.cs.wrap(["ip", "netns", "exec", NET.srv_ns] + argv), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        for _ in range(100):
            time.sleep(0.1)
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} did not start: {self.proc.stdout.read()}")
            if "curr_items" in self.stats():
                return
        raise RuntimeError(f"{self.kind} does not answer stats")

    def rss(self):
        return rss_of_group(self.proc.pid)

    def stats(self):
        out = ns(NET.cli_ns, "sh", "-c", f"printf 'stats\\r\\nquit\\r\\n' | timeout 3 nc {self.addr} 11211",
                 check=False).stdout
        return {m.group(1): m.group(2) for m in re.finditer(r"^STAT (\S+) (\S+)\r?$", out, re.M)}

    def stop(self):
        stop_process(self.proc)


def retrans_segs():
    out = ns(NET.cli_ns, "cat", "/proc/net/snmp").stdout
    head, vals = [line.split() for line in out.splitlines() if line.startswith("Tcp:")][:2]
    return int(vals[head.index("RetransSegs")])


def kvload(*args, timeout=4000):
    r = ns(NET.cli_ns, "taskset", "-c", str(GEN_CPU), KVLOAD, *map(str, args), check=False, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"kvload {args[0]}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def one_round(kind, n, cs, memory_mb):
    srv = Server(kind, cs, memory_mb)
    srv.start()
    try:
        rss0 = srv.rss()
        re0 = retrans_segs()
        fill = kvload("fill", srv.addr, 11211, 0, n, FILL_CONNS)
        retrans = retrans_segs() - re0
        time.sleep(0.5)
        rss1 = srv.rss()
        st = srv.stats()
        get = kvload("get", srv.addr, 11211, n, SECS, GET_CONNS, GET_DEPTH, 7)
    finally:
        srv.stop()
    held = int(st.get("curr_items", -1))
    r = {"items": n, "memory_mb": memory_mb, "held": held, "evictions": int(st.get("evictions", -1)),
         "rss_start": rss0, "rss_delta": rss1 - rss0, "payload": fill["payload"],
         "overhead_per_item": (rss1 - rss0 - fill["payload"] * held / n) / max(held, 1),
         "fill_per_s": fill["per_s"], "fill_s": fill["secs"], "probe_ms_p50": fill["probe_ms_p50"],
         "probe_ms_p99": fill["probe_ms_p99"], "probe_ms_max": fill["probe_ms_max"], "fill_retrans": retrans,
         "get_per_s": get["per_s"], "get_p50_us": get["p50_us"], "get_p99_us": get["p99_us"],
         "hit_rate": get["hits"] / max(get["gets"], 1)}
    print(f"  {kind:9} N={n} ({memory_mb} MB): held {held}, +{r['rss_delta'] / 2**20:.0f} MiB = "
          f"{r['overhead_per_item']:.1f} B/item over the payload; fill {fill['per_s']:.0f}/s probe p50/p99/max "
          f"{fill['probe_ms_p50']:.0f}/{fill['probe_ms_p99']:.0f}/{fill['probe_ms_max']:.0f} ms, {retrans} retrans; "
          f"gets {get['per_s']:.0f}/s p99 {get['p99_us']:.0f} us, hits {r['hit_rate']:.3f}", flush=True)
    return r


def main():
    preflight()
    global KVLOAD
    tmp = tempfile.mkdtemp(prefix="sirocco-bench-scale-kv-")
    KVLOAD = os.path.join(tmp, "kvload")
    sh("gcc", "-O2", "-o", KVLOAD, os.path.join(HERE, "kvload.c"))
    p_items, p_mb = (int(x) for x in PRESSURE.split(":"))
    cs = Cpuset("sirocco-bench-scale", SRV_CPU)
    results = {k: {n: [] for n in ITEMS} for k in SERVERS}
    pressure = {k: [] for k in SERVERS}
    try:
        with NET:
            for rep in range(REPS):
                order = SERVERS if rep % 2 == 0 else SERVERS[::-1]
                for n in ITEMS:
                    if n > 10_000_000 and rep >= BIG_REPS:
                        continue
                    mb = max(256, -(-n * MEMORY_PER_ITEM // 2**20) + 64)
                    for kind in order:
                        results[kind][n].append(one_round(kind, n, cs, mb))
                for kind in order:
                    pressure[kind].append(one_round(kind, p_items, cs, p_mb))
    finally:
        cs.remove()
        sh("rm", "-rf", tmp)
    report(results, pressure, p_items, p_mb)


def med(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else None


def spread(xs):
    xs = [x for x in xs if x is not None]
    return f"{min(xs):.2f}–{max(xs):.2f}" if len(xs) > 1 else "one round"


def report(results, pressure, p_items, p_mb):
    meta = run_meta(secs=SECS, reps=REPS, big_reps=BIG_REPS, items=ITEMS, servers=SERVERS, pressure=PRESSURE,
                    memory_per_item=MEMORY_PER_ITEM)
    lines = [f"# The cache as its items grow ({meta['date']}, kernel {meta['kernel']})", "",
             f"Keys of 12 bytes, values of 38–88 (items of 50–100 bytes, 75 on average), stored by `set noreply` on "
             f"{FILL_CONNS} connections; servers in turns on the server core; medians of {REPS} rounds "
             f"({BIG_REPS} above 10 M items). Overhead: resident memory per item over its key and value.", "",
             "| items | server | held | overhead B/item | fill sets/s | no-op round trip p50 / p99 / max ms | "
             "client retransmits | gets/s | get p50 / p99 µs |",
             "|---|---|---|---|---|---|---|---|---|"]
    summary = {}
    for n in ITEMS:
        for kind in SERVERS:
            rs = results[kind][n]
            if not rs:
                continue
            s = summary.setdefault(str(n), {})[kind] = {k: med([r[k] for r in rs]) for k in rs[0]}
            lines.append(f"| {n:,} | {kind} | {s['held']:,} | {s['overhead_per_item']:.1f} | {s['fill_per_s']:,.0f} | "
                         f"{s['probe_ms_p50']:.0f} / {s['probe_ms_p99']:.0f} / {s['probe_ms_max']:.0f} | "
                         f"{s['fill_retrans']:,} | {s['get_per_s']:,.0f} | {s['get_p50_us']:.0f} / {s['get_p99_us']:.0f} |")
    if "sirocco" in SERVERS and "memcached" in SERVERS:
        lines += ["", "## sirocco / memcached, per round then median (spread)", "",
                  "| items | overhead per item | gets/s | fill sets/s |", "|---|---|---|---|"]
        for n in ITEMS:
            pairs = list(zip(results["sirocco"][n], results["memcached"][n]))
            if not pairs:
                continue
            ratios = {k: [a[k] / b[k] for a, b in pairs if b[k]] for k in ("overhead_per_item", "get_per_s", "fill_per_s")}
            summary[str(n)]["ratios"] = {k: med(v) for k, v in ratios.items()}
            lines.append(f"| {n:,} | " + " | ".join(f"{med(v):.2f}× ({spread(v)})" for v in ratios.values()) + " |")
    lines += ["", f"## Under memory pressure: {p_items:,} items offered, {p_mb} MB of item memory", "",
              "| server | items kept | evictions | hit rate of uniform gets | gets/s |", "|---|---|---|---|---|"]
    for kind in SERVERS:
        rs = pressure[kind]
        if rs:
            lines.append(f"| {kind} | {med([r['held'] for r in rs]):,} | {med([r['evictions'] for r in rs]):,} | "
                         f"{med([r['hit_rate'] for r in rs]):.3f} | {med([r['get_per_s'] for r in rs]):,.0f} |")
    save(OUT_NAME, meta, lines, results={k: {str(n): v for n, v in d.items()} for k, d in results.items()},
         pressure=pressure, summary=summary)
    size_curves(OUT_NAME, "items", results, [("overhead, bytes per item", "overhead_per_item", 1),
                                             ("gets/s (thousands)", "get_per_s", 1e-3),
                                             ("get p99 (µs, closed loop)", "get_p99_us", 1)])


if __name__ == "__main__":
    main()
