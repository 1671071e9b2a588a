#!/usr/bin/env python3
"""Static web benchmark (Sandstorm, thesis §3, figure 3.4): sirocco web in both modes
(pre-copy, memcpy) against nginx (one worker, sendfile, access log off), in one run, on the
placement of BENCHMARKING.md: the server on CPU 1, the load on CPU 0, each veth end's NAPI
thread on its own side's CPU.

The load is `sirocco gen http` (HTTP/1.1 on sirocco's own TCP, closed loop) on CPU 0, the same
for every server: a kernel client cannot load a fast server from one core. For each point,
REPS runs of SECS seconds; reported: median requests/s, Gb/s (response bytes, heads included),
p99 latency, and the server's cost — requests per server-core CPU-second (the core's busy time
from /proc/stat, which also holds the veth receive work and, for nginx, the kernel's TCP) and
per server-process CPU-second. A wrk run against each server at one point checks the generator.

Points: file sizes 1 KB .. 1 MB and a Yahoo!-CDN-like mix (90 % under 25 KB), keep-alive and one
request per connection, at CONNS connections; and a concurrency sweep (1 .. 1000) at 1 KB.
Writes bench/results/web.{json,md,png}."""

import os, random, shutil, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (ns, cpu_busy, median_of, env_list, preflight, turn_runs, WebServer, gen_http,  # noqa: E402
                 Testnet, Cpuset, SECS, REPS, SRV_CPU, GEN_CPU, fmt, run_meta, save, plot, finish)

NET = Testnet("bw")
SRV_NS, CLI_NS, SRV_IF, CLI_IF = NET.srv_ns, NET.cli_ns, NET.srv_if, NET.cli_if
CONNS = int(os.environ.get("CONNS", "100"))
SIZES = env_list("SIZES", "1k,4k,16k,64k,256k,1m,mix")
SWEEP = env_list("SWEEP", "1,10,100,1000", int)
# Ordinary load: 1 KB keep-alive on CONNS connections, paced to these requests/s in all.
RATES = env_list("RATES", "", int)
SERVERS = env_list("SERVERS", "precopy,memcpy,nginx")
DOCROOT = "/tmp/sirocco-bench-web"
BYTES = {"1k": 1024, "4k": 4096, "16k": 16384, "64k": 65536, "256k": 262144, "1m": 1 << 20}
CPUSET = None


def make_root():
    """The files, and the mix: 400 files with log-normal sizes (median ~6 KB), 90 % under
    25 KB, capped at 2 MB, asked for uniformly in a shuffled order."""
    shutil.rmtree(DOCROOT, ignore_errors=True)
    os.makedirs(os.path.join(DOCROOT, "mix"))
    rnd = random.Random(7)
    for name, n in BYTES.items():
        with open(os.path.join(DOCROOT, f"{name}.bin"), "wb") as f:
            f.write(bytes(rnd.getrandbits(8) for _ in range(min(n, 4096))) * (n // min(n, 4096)))
    sizes = []
    for i in range(400):
        n = int(min(2 << 20, max(100, rnd.lognormvariate(8.7, 1.1))))
        sizes.append(n)
        with open(os.path.join(DOCROOT, "mix", f"{i}.bin"), "wb") as f:
            f.write(os.urandom(n))
    order = [f"/mix/{i}.bin" for i in range(400)]
    rnd.shuffle(order)
    with open(os.path.join(DOCROOT, "mix.paths"), "w") as f:
        f.write("\n".join(order) + "\n")
    under = sum(1 for s in sizes if s < 25_000) / len(sizes)
    return {"files": len(sizes), "under_25k": under, "mean_bytes": sum(sizes) / len(sizes),
            "median_bytes": sorted(sizes)[len(sizes) // 2], "max_bytes": max(sizes)}


def server(kind):
    return WebServer(kind, NET, CPUSET, DOCROOT, ["--mode", kind.partition("@")[0]])


def gen(server, paths, conns, close, rate=0):
    """One generator run against `server`, with the server core's and process's CPU."""
    # Receiving bulk, the generator's core drops frames from a full RX ring with the
    # default batch of 64 (RTOs at the server, for every server alike); 256 keeps up.
    bulk = paths.split("/")[-1] in ("64k.bin", "256k.bin", "1m.bin")
    b0, p0 = cpu_busy(SRV_CPU), server.cs.cpu()
    g = gen_http(NET, server.addr, paths, conns, close, batch=256 if bulk else None, rate=rate)
    b1, p1 = cpu_busy(SRV_CPU), server.cs.cpu()
    bad = g["bad_responses"] + g["not_ok"] + g["broken"]
    done = g["completed"]
    return {"req_per_s": g["req_per_s"], "gbps": g["gbps"], "p50_us": g["latency_ns"]["p50"] / 1e3,
            "p99_us": g["latency_ns"]["p99"] / 1e3, "errors": bad, "core_busy_s": b1 - b0, "proc_cpu_s": p1 - p0,
            "req_per_core_cpu_s": done / (b1 - b0) if b1 > b0 else None,
            "req_per_proc_cpu_s": done / (p1 - p0) if p1 > p0 else None}


def wrk(server, path):
    r = ns(CLI_NS, "taskset", "-c", str(GEN_CPU), "wrk", "-t1", f"-c{CONNS}", f"-d{SECS:.0f}s",
           f"http://{server.addr}{path}", check=False)
    for line in r.stdout.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    return None


def main():
    preflight()
    mix = make_root()
    global CPUSET
    CPUSET = Cpuset("sirocco-bench-web", SRV_CPU)
    points = [(s, CONNS, close, 0) for close in (False, True) for s in SIZES]
    points += [("1k", c, False, 0) for c in SWEEP if c != CONNS]
    points += [("1k", CONNS, False, r) for r in RATES]
    results = {k: [] for k in SERVERS}
    check = {}
    try:
        with NET:
            ns(SRV_NS, "sysctl", "-qw", "net.core.somaxconn=4096", "net.ipv4.tcp_max_syn_backlog=8192")
            for (size, conns, close, rate) in points:
                paths = os.path.join(DOCROOT, "mix.paths") if size == "mix" else f"/{size}.bin"

                def show(kind, rep, r, log):
                    print(f"{kind:8} {size:>5} {conns:>5} conns {'close' if close else 'keep '} {rate or 'closed':>6} rep {rep}: "
                          f"{r['req_per_s']:>9.0f} req/s {r['gbps']:6.2f} Gb/s p99 {r['p99_us']:8.0f} us "
                          f"{r['req_per_core_cpu_s'] or 0:>9.0f} req/core-CPU-s errors {r['errors']}", flush=True)
                    if kind != "nginx" and rep == 0 and size == "1k" and conns == CONNS and not close and not rate:
                        print("   " + "\n   ".join(l for l in log.splitlines() if l.startswith("engine 0 ")), flush=True)
                runs = turn_runs(SERVERS, server, lambda srv: gen(srv, paths, conns, close, rate), show)
                for kind in SERVERS:
                    point = {k: median_of(runs[kind], k) for k in runs[kind][0]}
                    point.update({"size": size, "conns": conns, "close": close, "rate": rate, "runs": runs[kind]})
                    results[kind].append(point)
            for kind in SERVERS:
                srv = server(kind)
                srv.start()
                try:
                    check[kind] = {"wrk_req_per_s": wrk(srv, "/1k.bin")}
                finally:
                    srv.stop()
                check[kind]["gen_req_per_s"] = next((p["req_per_s"] for p in results[kind]
                                                     if p["size"] == "1k" and p["conns"] == CONNS and not p["close"] and not p.get("rate")), None)
                print(f"{kind}: wrk -c{CONNS} 1k keep-alive {check[kind]['wrk_req_per_s']} req/s", flush=True)
    finally:
        CPUSET.remove()
    write(results, check, mix)


def conn_label(p):
    return "close" if p["close"] else f"keep-alive at {p['rate']}/s" if p.get("rate") else "keep-alive"


def write(results, check, mix):
    meta = run_meta(secs=SECS, reps=REPS,
            conns=CONNS, mix=mix, placement="server CPU 1 (cpuset), gen http CPU 0, threaded NAPI pinned per side")
    stamp = meta["date"]
    lines = [f"# Static web: sirocco web (pre-copy, memcpy) vs nginx ({stamp}, kernel {meta['kernel']})", "",
             f"Median of {REPS} run(s) of {SECS:.0f} s per point, the servers taking turns within each repetition. Server on CPU 1, `sirocco gen http` (closed loop) on "
             "CPU 0. nginx: 1 worker, sendfile, access_log off, keepalive_requests 10000. 'core CPU-s': the server "
             "core's busy time from /proc/stat (veth receive work and, for nginx, the kernel's TCP included). "
             f"Mix: {mix['files']} files, {mix['under_25k'] * 100:.0f} % under 25 KB, median {mix['median_bytes']} B, "
             f"mean {mix['mean_bytes']:.0f} B.", "",
             "| server | file | conns | conn | req/s | Gb/s | p99 µs | req per core CPU-s | req per process CPU-s | errors |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for kind, pts in results.items():
        for p in pts:
            lines.append(f"| {kind} | {p['size']} | {p['conns']} | {conn_label(p)} | "
                         f"{fmt(p['req_per_s'])} | {fmt(p['gbps'], '{:.2f}')} | {fmt(p['p99_us'])} | "
                         f"{fmt(p['req_per_core_cpu_s'])} | {fmt(p['req_per_proc_cpu_s'])} | {fmt(p['errors'])} |")
    ng = results.get("nginx")
    if ng:
        lines += ["", "## Ratios to nginx (requests per server-core CPU-second; req/s in brackets)", "",
                  "| file | conns | conn | " + " | ".join(k for k in results if k != "nginx") + " |",
                  "|---|---|---|" + "---|" * (len(results) - 1)]
        for i, p in enumerate(ng):
            cells = []
            for kind, pts in results.items():
                if kind == "nginx":
                    continue
                s = pts[i]
                r1 = s["req_per_core_cpu_s"] / p["req_per_core_cpu_s"] if s["req_per_core_cpu_s"] and p["req_per_core_cpu_s"] else None
                r2 = s["req_per_s"] / p["req_per_s"] if p["req_per_s"] else None
                cells.append(f"{fmt(r1, '{:.2f}×')} ({fmt(r2, '{:.2f}×')})")
            lines.append(f"| {p['size']} | {p['conns']} | {conn_label(p)} | " + " | ".join(cells) + " |")
    if check:
        lines += ["", f"## Generator check: wrk -t1 -c{CONNS} vs gen http, 1 KB keep-alive", "",
                  f"| server | wrk req/s | gen http req/s ({CONNS} conns) |", "|---|---|---|"]
        for k, c in check.items():
            lines.append(f"| {k} | {fmt(c.get('wrk_req_per_s'))} | {fmt(c.get('gen_req_per_s'))} |")
    save("web", meta, lines, results=results, wrk_check=check)
    def draw(plt):
        fig, axes = plt.subplots(2, 3, figsize=(15, 8))
        for row, close in enumerate((False, True)):
            for kind, pts in results.items():
                sel = [p for p in pts if p["close"] == close and p["conns"] == CONNS and not p.get("rate")]
                xs = [p["size"] for p in sel]
                axes[row][0].plot(xs, [(p["req_per_core_cpu_s"] or 0) / 1e3 for p in sel], "o-", label=kind)
                axes[row][1].plot(xs, [p["gbps"] or 0 for p in sel], "o-", label=kind)
                axes[row][2].plot(xs, [p["p99_us"] or 0 for p in sel], "o-", label=kind)
            what = "one request per connection" if close else "keep-alive"
            for a, t in zip(axes[row], ("k requests per server-core CPU-s", "Gb/s", "p99 latency (µs)")):
                a.set_title(f"{t} — {what}", fontsize=9)
            axes[row][2].set_yscale("log")
        finish(fig, [a for row in axes for a in row], "web", dpi=100, legend_size=8)
        if SWEEP:
            fig, a = plt.subplots(1, 2, figsize=(10, 4))
            for kind, pts in results.items():
                sel = sorted([p for p in pts if p["size"] == "1k" and not p["close"]], key=lambda p: p["conns"])
                a[0].plot([p["conns"] for p in sel], [(p["req_per_core_cpu_s"] or 0) / 1e3 for p in sel], "o-", label=kind)
                a[1].plot([p["conns"] for p in sel], [p["p99_us"] or 0 for p in sel], "o-", label=kind)
            for ax, t in zip(a, ("k req per core CPU-s vs connections (1 KB)", "p99 µs vs connections (1 KB)")):
                ax.set_xscale("log")
                ax.set_title(t, fontsize=9)
            a[1].set_yscale("log")
            finish(fig, a, "web-conns", dpi=100, legend_size=8)

    plot(draw)


if __name__ == "__main__":
    main()
