#!/usr/bin/env python3
"""Replication to a Redis replica (issue 42): the primary under redis-benchmark SET load (1 KB
values, 50 clients) with a `redis-server` 7 replica following it, in one run for each primary:
`sirocco store` and Redis (`appendfsync always`, the same durability). Reports the primary's
SET/s and SET per primary CPU-second with the replica attached, the replica's lag sampled
every 100 ms during the load (the primary's stream offset minus the offset the replica
acknowledged, in bytes, from INFO replication on the primary), and the catch-up time after
the load stops (until the replica's keys count equals the primary's).

Placement as run.py: the primary alone in a cpuset of CPU 1; redis-benchmark and the replica
share CPU 0 (this machine has two), so the replica competes with the load generator: the
numbers are a floor for a replica on a host of its own. REPS runs each, servers taking turns.
"""

import os, re, subprocess, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import run as store  # noqa: E402
from lib import ns, proc_cpu, median_of, preflight, fmt, run_meta, save, REPS, GEN_CPU  # noqa: E402

SERVERS = [s for s in os.environ.get("SERVERS", "sirocco,redis-always").split(",") if s]
REPLICA_ADDR, REPLICA_PORT = "198.18.0.2", "6390"
N = int(os.environ.get("RB_REQUESTS", "200000"))


def info(addr, port, section):
    r = ns(store.CLI_NS, "redis-cli", "-h", addr, "-p", str(port), "info", section, check=False)
    return dict(line.split(":", 1) for line in r.stdout.splitlines() if ":" in line)


def start_replica(tmp):
    os.makedirs(tmp, exist_ok=True)
    argv = ["taskset", "-c", str(GEN_CPU), "redis-server", "--bind", REPLICA_ADDR, "--port", REPLICA_PORT,
            "--replicaof", store.SERVER_ADDR, "6379", "--save", "", "--appendonly", "no", "--protected-mode", "no",
            "--dir", tmp, "--logfile", ""]
    p = subprocess.Popen(["ip", "netns", "exec", store.CLI_NS] + argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    t = time.time()
    while time.time() - t < 30:
        if info(REPLICA_ADDR, REPLICA_PORT, "replication").get("master_link_status", "").strip() == "up":
            return p
        time.sleep(0.2)
    store.stop_process(p)
    raise RuntimeError("the replica did not connect")


def one_run(srv):
    rep = start_replica(f"/tmp/sirocco-bench-repl-{os.getpid()}")
    lags, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            i = info(store.SERVER_ADDR, 6379, "replication")
            total = int(i.get("master_repl_offset", "0") or 0)
            m = re.search(r"offset=(\d+)", i.get("slave0", ""))
            if m:
                lags.append(max(0, total - int(m.group(1))))
            time.sleep(0.1)

    th = threading.Thread(target=sample)
    th.start()
    cpu0 = proc_cpu(srv.pid())
    r = store.redis_benchmark("set", 50, 1, N)
    cpu = proc_cpu(srv.pid()) - cpu0
    end = time.time()
    stop.set()
    th.join()
    want = info(store.SERVER_ADDR, 6379, "keyspace").get("db0", "")
    caught = None
    while time.time() - end < 30:
        if info(REPLICA_ADDR, REPLICA_PORT, "keyspace").get("db0", "") == want:
            caught = time.time() - end
            break
        time.sleep(0.02)
    store.stop_process(rep)
    elapsed = N / r["ops_per_s"]
    lags.sort()
    return {"ops_per_s": r["ops_per_s"], "ops_per_cpu_s": N / cpu if cpu else None, "secs": elapsed,
            "lag_median_bytes": lags[len(lags) // 2] if lags else None,
            "lag_max_bytes": lags[-1] if lags else None, "catch_up_s": caught}


def main():
    preflight()
    results = {}
    with store.NET:
        for rep in range(REPS):
            for kind in SERVERS:
                srv = store.Server(kind)
                srv.start()
                try:
                    r = one_run(srv)
                finally:
                    srv.stop()
                print(f"{kind:13} rep {rep}: {r['ops_per_s']:>8.0f} SET/s, {fmt(r['ops_per_cpu_s'])} per CPU-s, "
                      f"lag median {fmt(r['lag_median_bytes'])} B max {fmt(r['lag_max_bytes'])} B, "
                      f"caught up {fmt(r['catch_up_s'], '{:.2f}')} s after", flush=True)
                results.setdefault(kind, []).append(r)
    meta = run_meta(reps=REPS, requests=N, placement="primary in a cpuset of CPU 1; load and replica on CPU 0")
    lines = [f"# Replication to a Redis replica ({meta['date']})", "",
             f"redis-benchmark SET, 1 KB values, 50 clients, {N} requests, against the primary while a redis-server 7 "
             "replica follows it; primary alone on CPU 1, load and replica sharing CPU 0. Median of "
             f"{REPS} runs, servers taking turns. Lag: primary's stream offset minus the replica's acknowledged "
             "offset, sampled every 100 ms during the load. Catch-up: seconds after the load until the replica "
             "holds as many keys.", "",
             "| primary | SET/s | SET per primary CPU-s | lag median B | lag max B | catch-up s |",
             "|---|---|---|---|---|---|"]
    points = {}
    for kind, runs in results.items():
        p = {k: median_of(runs, k) for k in runs[0]}
        points[kind] = dict(p, runs=runs)
        lines.append(f"| {kind} | {fmt(p['ops_per_s'])} | {fmt(p['ops_per_cpu_s'])} | {fmt(p['lag_median_bytes'])} | "
                     f"{fmt(p['lag_max_bytes'])} | {fmt(p['catch_up_s'], '{:.2f}')} |")
    if "sirocco" in results and "redis-always" in results:
        per = sorted(a["ops_per_cpu_s"] / b["ops_per_cpu_s"] for a, b in zip(results["sirocco"], results["redis-always"])
                     if a["ops_per_cpu_s"] and b["ops_per_cpu_s"])
        if per:
            lines += ["", f"SET per primary CPU-second, sirocco / Redis always, per repetition: "
                          f"{', '.join(f'{x:.2f}×' for x in per)} (median {per[len(per) // 2]:.2f}×)."]
    save("store-repl", meta, lines, results=points)


if __name__ == "__main__":
    main()
