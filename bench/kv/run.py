#!/usr/bin/env python3
"""memcached benchmark (the IX memcached experiment, Fig. 5 / Table 2): `sirocco kv` vs memcached
`-t 1`, both on the server core (CPU 1), loaded by `sirocco gen kv` (mutilate-like, open loop)
from CPU 0, on the placement of BENCHMARKING.md (threaded NAPI pinned per side), in one run.

For each workload (USR, ETC), server and offered rate: REPS runs of SECS seconds, each on a
freshly started server whose key space was stored first (not measured). Reports the median of
answers/s, p50/p99/p99.9 latency (from each request's due time), and the server's cost: its
process CPU-seconds (from /proc/PID/stat) and the server core's busy CPU-seconds (from
/proc/stat, which also holds the kernel's receive work for either server), as operations per
CPU-second. Writes JSON, a markdown table and throughput-p99 curves to bench/results/."""

import json, os, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (sh, ns, cpu_busy, proc_cpu, median_of, stop_process, server_kind, server_flags, env_list, preflight, fresh_runs,  # noqa: E402
                 Testnet, Cpuset, SIROCCO, SECS, REPS, SRV_CPU, GEN_CPU, fmt, run_meta, save, plot, finish)

NET = Testnet("bk")
SRV_NS, CLI_NS, SRV_IF, CLI_IF = NET.srv_ns, NET.cli_ns, NET.srv_if, NET.cli_if
SERVER_ADDR, GEN_ADDR = "198.18.0.1", "198.18.0.20"
SERVERS = env_list("SERVERS", "sirocco,memcached")
RATES = {
    "usr": env_list("USR_RATES", "50000,100000,150000,200000,300000,400000", int),
    "etc": env_list("ETC_RATES", "50000,100000,150000,200000,300000", int),
}
KEYS = int(os.environ.get("KEYS", "100000"))
CONNS = int(os.environ.get("CONNS", "32"))
DEPTH = int(os.environ.get("DEPTH", "4"))


class Server:
    def __init__(self, kind):
        self.proc, self.cpuset = None, None
        self.kind, self.bin = server_kind(kind, SIROCCO)
        self.flags = server_flags(kind)

    def start(self):
        if self.kind == "sirocco":
            argv = [self.bin, "kv", "--iface", SRV_IF, "--addr", SERVER_ADDR, "--queues", "1", "--cpus", str(SRV_CPU),
                    "--memory", "1024"] + self.flags
            self.proc = subprocess.Popen(["ip", "netns", "exec", SRV_NS, "taskset", "-c", str(SRV_CPU)] + argv,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        else:
            self.cpuset = Cpuset("sirocco-bench-kv", SRV_CPU)
            argv = ["memcached", "-u", "nobody", "-l", SERVER_ADDR, "-p", "11211", "-U", "0", "-t", "1", "-m", "1024",
                    "-c", "4096"]
            self.proc = subprocess.Popen(self.cpuset.wrap(["ip", "netns", "exec", SRV_NS] + argv),
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.5)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.kind} did not start: {self.proc.stdout.read()}")

    def pid(self):
        # `ip netns exec` (and the cpuset shell) exec the server, so the child's pid is its.
        return self.proc.pid

    def stop(self):
        stop_process(self.proc)
        out = self.proc.stdout.read()
        if self.cpuset:
            self.cpuset.remove()
        return out


def gen(workload, rate, secs, preload, json_path=None):
    argv = [SIROCCO, "gen", "kv", "--iface", CLI_IF, "--addr", GEN_ADDR, "--dst", SERVER_ADDR, "--cpus", str(GEN_CPU),
            "--queues", "1", "--workload", workload, "--keys", str(KEYS), "--rate", str(rate), "--conns", str(CONNS),
            "--depth", str(DEPTH), "--duration", str(secs), "--drain", "1"]
    if not preload:
        argv.append("--no-preload")
    if json_path:
        argv += ["--json", json_path]
    r = ns(CLI_NS, *argv, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"gen kv failed: {r.stdout}{r.stderr}")
    return r.stdout


def one_run(server, workload, rate):
    # The key space is stored first, at a modest rate, and not measured.
    gen(workload, 1000, 0.2, True)
    path = f"/tmp/sirocco-bench-kv-{os.getpid()}.json"
    b0, p0 = cpu_busy(SRV_CPU), proc_cpu(server.pid())
    gen(workload, rate, SECS, False, path)
    b1, p1 = cpu_busy(SRV_CPU), proc_cpu(server.pid())
    with open(path) as f:
        j = json.load(f)
    os.remove(path)
    if j["errors"] or j["misses"]:
        raise RuntimeError(f"{server.kind}: {j['errors']} errors, {j['misses']} misses")
    proc = (p1 - p0) if p0 is not None and p1 is not None else None
    core = b1 - b0
    ops = j["completed"]
    lat = j["latency_ns"]
    return {
        "offered": rate, "ops_per_s": j["per_s"], "p50_us": lat["p50"] / 1e3, "p99_us": lat["p99"] / 1e3,
        "p999_us": lat["p999"] / 1e3, "behind": j["behind"], "broken": j["broken"],
        "proc_cpu_s": proc, "core_busy_s": core,
        "ops_per_proc_cpu_s": ops / proc if proc else None, "ops_per_core_cpu_s": ops / core if core else None,
    }


def main():
    preflight()
    results = {}
    with NET:
        for workload, rates in RATES.items():
            for kind in SERVERS:
                pts = results.setdefault(workload, {}).setdefault(kind, [])
                for rate in rates:
                    def show(rep, r, _):
                        print(f"{workload} {kind:9} offered {rate:>7} rep {rep}: {r['ops_per_s']:>8.0f} ops/s "
                              f"p50 {r['p50_us']:.0f} p99 {r['p99_us']:.0f} us, "
                              f"{r['ops_per_core_cpu_s'] or 0:.0f} ops per core CPU-s, "
                              f"{r['ops_per_proc_cpu_s'] or 0:.0f} per process CPU-s", flush=True)
                    runs = fresh_runs(lambda: Server(kind), lambda srv: one_run(srv, workload, rate), show)
                    point = {k: median_of(runs, k) for k in runs[0]}
                    point["runs"] = runs
                    pts.append(point)
    write(results)


def best(pts, key, within_us=None):
    ok = [p for p in pts if within_us is None or (p["p99_us"] or 1e12) <= within_us]
    return max(ok, key=lambda p: p[key] or 0) if ok else None


def write(results):
    meta = run_meta(secs=SECS, reps=REPS, keys=KEYS, conns=CONNS, depth=DEPTH,
                    placement="server CPU 1, gen kv CPU 0, threaded NAPI pinned per side")
    lines = [f"# memcached protocol: sirocco kv vs memcached -t 1 ({meta['date']}, kernel {meta['kernel']})", "",
             f"Median of {REPS} runs of {SECS:.0f} s per point; {KEYS} keys stored first; `sirocco gen kv` open loop, "
             f"{CONNS} connections, up to {DEPTH} requests outstanding each, latency from due time. Server on CPU 1, "
             "load on CPU 0. CPU: the server process's own CPU-seconds and the server core's busy CPU-seconds "
             "(which also hold the kernel's receive work).", "",
             "| workload | server | offered/s | answered/s | p50 µs | p99 µs | p99.9 µs | ops per process CPU-s | ops per core CPU-s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for workload, by in results.items():
        for kind, pts in by.items():
            for p in pts:
                lines.append(f"| {workload} | {kind} | {p['offered']} | {fmt(p['ops_per_s'])} | {fmt(p['p50_us'])} | "
                             f"{fmt(p['p99_us'])} | {fmt(p['p999_us'])} | {fmt(p['ops_per_proc_cpu_s'])} | "
                             f"{fmt(p['ops_per_core_cpu_s'])} |")
    lines += ["", "## sirocco / memcached", "",
              "| workload | offered/s | answered/s | ops per core CPU-s | ops per process CPU-s | p99 (sirocco vs memcached, µs) |",
              "|---|---|---|---|---|---|"]
    summary = {}
    for workload, by in results.items():
        s_pts, m_pts = by.get("sirocco", []), by.get("memcached", [])
        for s, m in zip(s_pts, m_pts):
            def ratio(k):
                return f"{s[k] / m[k]:.2f}×" if s.get(k) and m.get(k) else "–"
            lines.append(f"| {workload} | {s['offered']} | {ratio('ops_per_s')} | {ratio('ops_per_core_cpu_s')} | "
                         f"{ratio('ops_per_proc_cpu_s')} | {fmt(s['p99_us'])} vs {fmt(m['p99_us'])} |")
        if s_pts and m_pts:
            bs, bm = best(s_pts, "ops_per_s", 500), best(m_pts, "ops_per_s", 500)
            summary[workload] = {"sirocco_at_500us": bs and bs["ops_per_s"], "memcached_at_500us": bm and bm["ops_per_s"]}
    if summary:
        lines += ["", "## Highest answered rate with p99 ≤ 500 µs (IX's SLA)", "", "| workload | sirocco | memcached | ratio |",
                  "|---|---|---|---|"]
        for w, v in summary.items():
            r = (v["sirocco_at_500us"] / v["memcached_at_500us"]) if v["sirocco_at_500us"] and v["memcached_at_500us"] else None
            lines.append(f"| {w} | {fmt(v['sirocco_at_500us'])} | {fmt(v['memcached_at_500us'])} | {fmt(r, '{:.2f}×')} |")
    save("kv", meta, lines, results=results, summary=summary)

    def draw(plt):
        fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.5), squeeze=False)
        for a, (workload, by) in zip(axes[0], results.items()):
            for kind, pts in by.items():
                a.plot([p["ops_per_s"] / 1e3 for p in pts], [p["p99_us"] for p in pts], "o-", label=kind)
            a.axhline(500, color="grey", ls=":", lw=1)
            a.set_yscale("log")
            a.set_xlabel("answered (k ops/s)")
            a.set_ylabel("p99 latency (µs)")
            a.set_title(f"{workload.upper()}: throughput vs p99")
        finish(fig, axes[0], "kv")

    plot(draw)


if __name__ == "__main__":
    main()
