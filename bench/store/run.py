#!/usr/bin/env python3
"""Durable store benchmark (Arrakis's Redis experiment): `sirocco store` against Redis 7 with
`appendonly yes` + `appendfsync always` (the same promise: a write is acknowledged once it is
on the device) and, for reference, Redis with `appendfsync everysec` (up to a second of
acknowledged writes lost in a crash) and without persistence, in one run (`SERVERS=`
picks: sirocco, redis-always, redis-everysec, redis-none). `LOADS=redis-benchmark:hset:50:1,...`
runs redis-benchmark's other tests (hset, lpush, sadd, zadd: a write per request of each
type); `gen:multi5:C:D` runs transactions of five 1 KB SETs (MULTI, 5 × SET, EXEC) from
`sirocco gen kv --workload multi5` (ops are transactions).

Placement as BENCHMARKING.md: each server alone on CPU 1 (the same cpuset cgroup for all, so
the kernel threads a server starts stay on its core too), load from CPU 0. Loads:
redis-benchmark (the kernel's TCP; SET and GET of 1 KB values, 50 and 500 clients, without and
with pipelining of 16), and `sirocco gen kv --protocol redis` (sirocco's TCP, SET of 1 KB
values, open loop far above what any server answers, so it measures the most a server does;
redis-benchmark on one core tops out near 60-70k SET/s). Reports operations/s, operations per
server CPU-second (the process's CPU time, all its threads), p99 (redis-benchmark's), and the
device's flushes per second (/sys/block/DEV/stat). The bare floor of the path is measured in
the same run: O_DIRECT|O_DSYNC writes through sirocco's storage port, one at a time
(crates/io/examples/dsync_writes), the most commits per second one log can make here."""

import csv, io, json, os, shutil, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (ns, proc_cpu, median_of, stop_process, env_list, preflight, fresh_runs, server_kind,  # noqa: E402
                 Testnet, Cpuset, SIROCCO, ROOT, REPS, SRV_CPU, GEN_CPU, fmt, run_meta, save, plot, finish)

SECS = float(os.environ.get("SECS", "5"))
NET = Testnet("bs")
SRV_NS, CLI_NS, SRV_IF, CLI_IF = NET.srv_ns, NET.cli_ns, NET.srv_if, NET.cli_if
SERVER_ADDR, GEN_ADDR = "198.18.0.1", "198.18.0.20"
SERVERS = env_list("SERVERS", "sirocco,redis-always,redis-none")
RB_REQUESTS = int(os.environ.get("RB_REQUESTS", "200000"))
DATA = os.environ.get("DATA", "/var/tmp")
KEYS = 10000
BARE = os.path.join(ROOT, "target", "release", "examples", "dsync_writes")
# (tool, test, clients, pipeline)
LOADS = [("redis-benchmark", t, c, p) for t in ("set", "get") for c in (50, 500) for p in (1, 16)] + \
        [("gen", "set", c, d) for c, d in ((50, 1), (500, 1), (50, 16))]
# LOADS=tool:test:clients:pipeline,... runs only those (an A/B of two builds, say).
LOADS = env_list("LOADS", "", lambda x: (lambda t: (t[0], t[1], int(t[2]), int(t[3])))(x.split(":"))) or LOADS


def block_stat(path):
    """/sys/block/DEV/stat of the device holding `path` (the whole disk for a partition)."""
    src = subprocess.run(["findmnt", "-no", "SOURCE", "-T", path], capture_output=True, text=True).stdout.strip()
    dev = os.path.basename(src)
    parent = subprocess.run(["lsblk", "-no", "pkname", src], capture_output=True, text=True).stdout.strip()
    name = parent or dev
    p = f"/sys/block/{name}/stat"
    return p if os.path.exists(p) else None


def flushes(stat):
    """Flush requests the device completed so far (the 16th field of the stat file), or None."""
    if not stat:
        return None
    with open(stat) as f:
        v = f.read().split()
    return int(v[15]) if len(v) > 15 else None


class Server:
    def __init__(self, kind):
        # "sirocco@base": the build BASE_BIN names, with the same arguments (see lib.server_kind).
        self.kind, self.bin = server_kind(kind, SIROCCO)
        self.proc = None
        self.dir = os.path.join(DATA, f"sirocco-bench-store-{kind}")

    def start(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.cpuset = Cpuset("sirocco-bench-store", SRV_CPU)
        if self.kind == "sirocco":
            argv = [self.bin, "store", "--iface", SRV_IF, "--addr", SERVER_ADDR, "--queues", "1", "--cpus",
                    str(SRV_CPU), "--dir", self.dir]
        else:
            persist = {"redis-always": ["--appendonly", "yes", "--appendfsync", "always"],
                       "redis-everysec": ["--appendonly", "yes", "--appendfsync", "everysec"]}.get(
                self.kind, ["--appendonly", "no"])
            argv = ["redis-server", "--bind", SERVER_ADDR, "--port", "6379", "--save", "", "--protected-mode", "no",
                    "--dir", self.dir, "--maxclients", "10000", "--logfile", ""] + persist
        self.proc = subprocess.Popen(self.cpuset.wrap(["ip", "netns", "exec", SRV_NS] + argv),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        t = time.time()
        while time.time() - t < 20:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} did not start: {self.proc.stdout.read()}")
            r = ns(CLI_NS, "redis-cli", "-h", SERVER_ADDR, "ping", check=False)
            if r.stdout.strip() == "PONG":
                return
            time.sleep(0.2)
        raise RuntimeError(f"{self.kind} did not answer PING")

    def pid(self):
        # The cpuset shell and `ip netns exec` exec the server: the child's pid is its.
        return self.proc.pid

    def stop(self):
        stop_process(self.proc)
        out = self.proc.stdout.read()
        self.cpuset.remove()
        shutil.rmtree(self.dir, ignore_errors=True)
        return out


def redis_benchmark(test, clients, pipe, n):
    argv = ["taskset", "-c", str(GEN_CPU), "redis-benchmark", "-h", SERVER_ADDR, "-t", test, "-d", "1024", "-c",
            str(clients), "-n", str(n), "-P", str(pipe), "-r", str(KEYS), "--csv"]
    r = ns(CLI_NS, *argv, check=False)
    rows = [row for row in csv.reader(io.StringIO(r.stdout)) if row and row[0] != "test"]
    if r.returncode != 0 or not rows:
        raise RuntimeError(f"redis-benchmark failed: {r.stdout}{r.stderr}")
    row = rows[-1]
    return {"ops_per_s": float(row[1]), "p50_ms": float(row[4]), "p99_ms": float(row[6])}


def gen(conns, depth, secs, workload="set1k"):
    path = f"/tmp/sirocco-bench-store-{os.getpid()}.json"
    argv = [SIROCCO, "gen", "kv", "--iface", CLI_IF, "--addr", GEN_ADDR, "--dst", SERVER_ADDR, "--port", "6379",
            "--cpus", str(GEN_CPU), "--queues", "1", "--protocol", "redis", "--workload", workload, "--keys", "100000",
            "--rate", "400000", "--conns", str(conns), "--depth", str(depth), "--duration", str(secs), "--drain", "1",
            "--no-preload", "--json", path]
    r = ns(CLI_NS, *argv, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"gen kv failed: {r.stdout}{r.stderr}")
    with open(path) as f:
        j = json.load(f)
    os.remove(path)
    if j["errors"]:
        raise RuntimeError(f"gen kv: {j['errors']} errors")
    return {"ops_per_s": j["per_s"], "p50_ms": None, "p99_ms": None, "ops": j["completed"]}


def one_run(server, load, stat):
    tool, test, clients, pipe = load
    if test == "get":
        # The keys the GETs ask for, stored first (not measured).
        redis_benchmark("set", 20, 32, KEYS * 5)
    n = RB_REQUESTS * (4 if pipe > 1 else 1)
    f0, c0, t0 = flushes(stat), proc_cpu(server.pid()), time.time()
    r = redis_benchmark(test, clients, pipe, n) if tool == "redis-benchmark" else \
        gen(clients, pipe, SECS, "multi5" if test == "multi5" else "set1k")
    f1, c1, t1 = flushes(stat), proc_cpu(server.pid()), time.time()
    cpu = (c1 - c0) if c0 is not None and c1 is not None else None
    ops = r.pop("ops", n)
    r.update({"cpu_s": cpu, "ops_per_cpu_s": ops / cpu if cpu else None,
              "flushes_per_s": (f1 - f0) / (t1 - t0) if f0 is not None and f1 is not None else None})
    return r


def bare_floor():
    out = {}
    for kb in (4, 32):
        r = subprocess.run(["taskset", "-c", str(SRV_CPU), BARE, os.path.join(DATA, "sirocco-bench-dsync"), str(kb),
                            "2000", "poll"], capture_output=True, text=True)
        try:
            out[kb] = float(r.stdout.split(":")[-1].split()[0])
        except (ValueError, IndexError):
            out[kb] = None
    return out


def key(load):
    tool, test, clients, pipe = load
    return f"{tool} {test.upper()} c{clients} P{pipe}"


def main():
    preflight()
    stat = block_stat(DATA)
    results = {}
    floor = bare_floor()
    print(f"bare O_DIRECT|O_DSYNC write through the storage port: 4 KB {fmt(floor[4])} us, 32 KB {fmt(floor[32])} us",
          flush=True)
    with NET:
        for load in LOADS:
            for kind in SERVERS:
                def show(rep, r, _):
                    print(f"{key(load):32} {kind:13} rep {rep}: {r['ops_per_s']:>9.0f} ops/s, "
                          f"{fmt(r['ops_per_cpu_s'])} per CPU-s, p99 {fmt(r['p99_ms'], '{:.2f}')} ms, "
                          f"{fmt(r['flushes_per_s'])} flushes/s", flush=True)
                runs = fresh_runs(lambda: Server(kind), lambda srv: one_run(srv, load, stat), show)
                point = {k: median_of(runs, k) for k in runs[0]}
                point["runs"] = runs
                results.setdefault(key(load), {})[kind] = point
    write(results, floor, stat)


def write(results, floor, stat):
    meta = run_meta(secs=SECS, reps=REPS, rb_requests=RB_REQUESTS, device=stat,
                    placement="each server alone in a cpuset of CPU 1; load on CPU 0; threaded NAPI pinned per side")
    lines = [f"# Durable Redis protocol: sirocco store vs Redis 7 ({meta['date']}, kernel {meta['kernel']})", "",
             f"Median of {REPS} runs per point, each on a fresh server and an empty directory on {DATA}. 1 KB values. "
             "redis-benchmark: `-d 1024 -r 10000`, the given clients and pipeline (P); `gen`: `sirocco gen kv "
             "--protocol redis --workload set1k`, open loop at 400k/s (far above any server here), the given "
             "connections and requests outstanding each. CPU: the server process's CPU-seconds (all threads). "
             "Flushes: the device's completed flush requests per second during the run. Servers: `sirocco store` "
             "(one engine, one log lane), Redis `appendonly yes` + `appendfsync always`, Redis without persistence.",
             "",
             f"The path's floor, same run: one O_DIRECT|O_DSYNC write at a time through sirocco's storage port takes "
             f"{fmt(floor[4])} µs for 4 KB and {fmt(floor[32])} µs for 32 KB (so one log makes at most "
             f"{fmt(1e6 / floor[32] if floor[32] else None)} commits/s of 32 KB).", "",
             "| load | server | ops/s | ops per CPU-s | p99 ms | flushes/s |", "|---|---|---|---|---|---|"]
    for load, by in results.items():
        for kind, p in by.items():
            lines.append(f"| {load} | {kind} | {fmt(p['ops_per_s'])} | {fmt(p['ops_per_cpu_s'])} | "
                         f"{fmt(p['p99_ms'], '{:.2f}')} | {fmt(p['flushes_per_s'])} |")
    lines += ["", "## sirocco store / Redis", "",
              "| load | ops/s vs always | per CPU-s vs always | ops/s vs no persistence | per CPU-s vs no persistence |",
              "|---|---|---|---|---|"]
    for load, by in results.items():
        s = by.get("sirocco")
        if not s:
            continue

        def ratio(other, k):
            o = by.get(other)
            return f"{s[k] / o[k]:.2f}×" if o and s.get(k) and o.get(k) else "–"
        lines.append(f"| {load} | {ratio('redis-always', 'ops_per_s')} | {ratio('redis-always', 'ops_per_cpu_s')} | "
                     f"{ratio('redis-none', 'ops_per_s')} | {ratio('redis-none', 'ops_per_cpu_s')} |")
    save("store", meta, lines, results=results, floor_us=floor)

    def draw(plt):
        loads = list(results)
        fig, axes = plt.subplots(1, 2, figsize=(14, 5))
        width = 0.8 / max(1, len(SERVERS))
        for i, kind in enumerate(SERVERS):
            xs = [j + i * width for j in range(len(loads))]
            axes[0].bar(xs, [(results[ld].get(kind, {}).get("ops_per_s") or 0) / 1e3 for ld in loads], width, label=kind)
            axes[1].bar(xs, [(results[ld].get(kind, {}).get("ops_per_cpu_s") or 0) / 1e3 for ld in loads], width,
                        label=kind)
        for a, t in zip(axes, ["k ops/s", "k ops per server CPU-second"]):
            a.set_xticks([j + width for j in range(len(loads))])
            a.set_xticklabels(loads, rotation=60, ha="right", fontsize=7)
            a.set_ylabel(t)
        axes[0].set_title("throughput, 1 KB values")
        axes[1].set_title("cost")
        finish(fig, axes, "store", grid="y")

    plot(draw)


if __name__ == "__main__":
    main()
