#!/usr/bin/env python3
"""Idle cost: every server started on the benchmark placement (server on CPU 1) with nothing
to do, its process CPU and the server core's busy time measured over SECS seconds after it
settled; the goal is within 1 % of a core. An idle server must sleep, not spin: the engines
wait in poll() at the first empty receive, and timers wake them only when one is due."""

import os, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (cpu_busy, stop_process, env_list, preflight, Testnet, SIROCCO, SRV_CPU,  # noqa: E402
                 run_meta, save)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NET = Testnet("bi")
ADDR = "198.18.0.10"
SECS = float(os.environ.get("IDLE_SECS", "10"))
SERVERS = env_list("SERVERS", "none,echo-udp,echo-tcp,dns,web,kv,store")


def run_time(pid):
    """CPU-seconds all of a process's threads ran, from the scheduler's own nanosecond
    accounting (`/proc/PID/task/*/schedstat`), not the tick-sampled /proc/PID/stat."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total / 1e9


def argv(kind, tmp):
    base = ["--iface", NET.srv_if, "--addr", ADDR, "--queues", "1", "--cpus", str(SRV_CPU)]
    return {
        "echo-udp": ["echo"] + base,
        "echo-tcp": ["echo", "--proto", "tcp"] + base,
        "dns": ["dns"] + base + ["--zone", os.path.join(ROOT, "tests/data/example.zone")],
        "web": ["web"] + base,
        "kv": ["kv"] + base + ["--memory", "64"],
        "store": ["store"] + base + ["--dir", tmp, "--segment-mb", "8"],
    }[kind]


def one(kind):
    if kind == "none":
        # The core with no server at all: what the kernel and the host run there anyway.
        b0 = cpu_busy(SRV_CPU)
        time.sleep(SECS)
        return {"proc_pct": 0.0, "core_pct": (cpu_busy(SRV_CPU) - b0) / SECS * 100}
    tmp = tempfile.mkdtemp(prefix="sirocco-bench-idle-")
    proc = subprocess.Popen(["ip", "netns", "exec", NET.srv_ns, "taskset", "-c", str(SRV_CPU), SIROCCO]
                            + argv(kind, tmp), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(3)
        if proc.poll() is not None:
            raise RuntimeError(f"{kind} did not start: {proc.stdout.read()}")
        b0, p0 = cpu_busy(SRV_CPU), run_time(proc.pid)
        time.sleep(SECS)
        b1, p1 = cpu_busy(SRV_CPU), run_time(proc.pid)
    finally:
        stop_process(proc)
        shutil.rmtree(tmp, ignore_errors=True)
    return {"proc_pct": (p1 - p0) / SECS * 100, "core_pct": (b1 - b0) / SECS * 100}


def main():
    preflight()
    results = {}
    with NET:
        for kind in SERVERS:
            r = results[kind] = one(kind)
            print(f"{kind:9} idle: process {r['proc_pct']:.3f} % of a core, server core busy {r['core_pct']:.3f} %",
                  flush=True)
    meta = run_meta(secs=SECS, placement="server CPU 1, nothing on CPU 0")
    lines = [f"# Idle cost ({meta['date']}, kernel {meta['kernel']})", "",
             f"Each server started with nothing to do, measured over {SECS:.0f} s after 3 s to settle. "
             "Goal: within 1 % of a core. Process CPU from the scheduler's per-thread run time; 'server core busy' "
             "holds whatever else the core ran meanwhile ('none': the core with no server).", "",
             "| server | process CPU, % of a core | server core busy, % |", "|---|---|---|"]
    for kind, r in results.items():
        lines.append(f"| {kind} | {r['proc_pct']:.3f} | {r['core_pct']:.3f} |")
    save("idle", meta, lines, results=results)


if __name__ == "__main__":
    main()
