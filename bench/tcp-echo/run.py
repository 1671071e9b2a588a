#!/usr/bin/env python3
"""TCP echo benchmark (the IX / MegaPipe echo experiment): sirocco `echo --proto tcp` vs an
epoll echo server on the kernel's stack, in one run, on the placement of BENCHMARKING.md
(server side on CPU 1, clients on CPU 0, each veth end's NAPI thread on its own side's CPU),
driven by a closed-loop epoll client (echo_client.c).

Each point is (message size, concurrent connections, round trips per connection; 0 = the
connection lives for the whole run). For each server and point, REPS runs of SECS seconds;
reports the median of messages/s, connections/s, p50/p99 round trip, and the server's cost:
its process CPU-seconds (from /proc/PID/stat) and the server core's busy CPU-seconds (from
/proc/stat, which also holds the kernel's receive work for either server). Writes JSON, a
markdown table and a plot to bench/results/."""

import json, os, platform, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (sh, ns, cpu_busy, proc_cpu, median_of, stop_process, server_kind, server_flags, env_list, preflight, turn_runs,  # noqa: E402
                 Testnet, SIROCCO, BUILD, SECS, REPS, SRV_CPU, GEN_CPU, fmt, run_meta, save, plot, finish)

HERE = os.path.dirname(os.path.abspath(__file__))
NET = Testnet("bt")
SRV_NS, CLI_NS, SRV_IF, CLI_IF = NET.srv_ns, NET.cli_ns, NET.srv_if, NET.cli_if
SERVER_ADDR = "198.18.0.1"
DEFAULT_POINTS = "64:1:0,64:100:0,64:1000:0,1024:100:0,8192:100:0,64:10000:0,64:50:16,64:50:1"
# size:conns:rounds[:rate] — with a rate (messages/s in all) the client paces its connections
# to it (ordinary load); without, each connection sends again as soon as its echo is back.
POINTS = env_list("POINTS", DEFAULT_POINTS, lambda p: (tuple(int(x) for x in p.split(":")) + (0,))[:4])
SERVERS = env_list("SERVERS", "sirocco,epoll")
SIROCCO_ARGS = os.environ.get("SIROCCO_ARGS", "").split()


class Server:
    def __init__(self, kind):
        self.proc = None
        self.kind, self.bin = server_kind(kind, SIROCCO)
        self.flags = server_flags(kind)

    def start(self):
        if self.kind == "sirocco":
            argv = [self.bin, "echo", "--proto", "tcp", "--iface", SRV_IF, "--addr", SERVER_ADDR, "--queues", "1",
                    "--cpus", str(SRV_CPU)] + SIROCCO_ARGS + self.flags
        else:
            argv = [os.path.join(BUILD, "epoll_echo"), SERVER_ADDR, "7"]
        self.proc = subprocess.Popen(["ip", "netns", "exec", SRV_NS, "taskset", "-c", str(SRV_CPU)] + argv,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.kind} did not start: {self.proc.stderr.read()}")

    def pid(self):
        # `ip netns exec` execs the command, so the child's pid is the server's.
        return self.proc.pid

    def stop(self):
        stop_process(self.proc)


def one_run(server, size, conns, rounds, rate):
    b0, p0 = cpu_busy(SRV_CPU), proc_cpu(server.pid())
    argv = [os.path.join(BUILD, "echo_client"), SERVER_ADDR, "7", str(conns), str(size), str(rounds or 10**12), str(SECS)]
    r = ns(CLI_NS, "taskset", "-c", str(GEN_CPU), *argv, *([str(rate)] if rate else []), check=False)
    b1, p1 = cpu_busy(SRV_CPU), proc_cpu(server.pid())
    if r.returncode != 0:
        raise RuntimeError(f"client failed: {r.stdout}{r.stderr}")
    c = json.loads(r.stdout)
    if c["corrupt"]:
        raise RuntimeError(f"{server.kind}: {c['corrupt']} corrupt echoes")
    proc = (p1 - p0) if p0 is not None and p1 is not None else None
    core = b1 - b0
    return {
        "msgs_per_s": c["msgs_per_s"], "conns_per_s": c["conns_per_s"], "p50_us": c["p50_us"], "p99_us": c["p99_us"],
        "failed": c["failed"], "proc_cpu_s": proc, "core_busy_s": core,
        "msgs_per_proc_cpu_s": c["messages"] / proc if proc else None,
        "msgs_per_core_cpu_s": c["messages"] / core if core else None,
        "conns_per_proc_cpu_s": c["conns_done"] / proc if proc and rounds else None,
        "conns_per_core_cpu_s": c["conns_done"] / core if core and rounds else None,
    }


def build():
    preflight()
    for prog in ("epoll_echo", "echo_client"):
        sh("gcc", "-O2", "-Wall", "-o", os.path.join(BUILD, prog), os.path.join(HERE, f"{prog}.c"))


def main():
    build()
    with NET:
        # Many short connections from one client address: let the client reuse TIME-WAIT ports.
        ns(CLI_NS, "sysctl", "-qw", "net.ipv4.tcp_tw_reuse=1", "net.ipv4.ip_local_port_range=1024 65000")
        results = {kind: [] for kind in SERVERS}
        for (size, conns, rounds, rate) in POINTS:
            def show(kind, rep, r, _):
                print(f"{kind:7} {size:>5} B {conns:>5} conns {rounds or 'inf':>4} rt {offered(rate):>6} rep {rep}: "
                      f"{r['msgs_per_s']:>9.0f} msgs/s {r['conns_per_s']:>7.0f} conns/s "
                      f"p50 {r['p50_us']:.0f} p99 {r['p99_us']:.0f} us, "
                      f"{r['msgs_per_core_cpu_s'] or 0:.0f} msgs per core CPU-s", flush=True)
            runs = turn_runs(SERVERS, Server, lambda srv: one_run(srv, size, conns, rounds, rate), show)
            for kind in SERVERS:
                point = {k: median_of(runs[kind], k) for k in runs[kind][0]}
                point.update({"size": size, "conns": conns, "rounds": rounds, "rate": rate, "runs": runs[kind]})
                results[kind].append(point)
    write(results)


def offered(rate):
    return f"{rate}/s" if rate else "closed"


def write(results):
    meta = run_meta(secs=SECS, reps=REPS,
            placement="server CPU 1, client CPU 0, threaded NAPI pinned per side")
    stamp = meta["date"]
    lines = [f"# TCP echo ({stamp}, kernel {meta['kernel']})", "",
             f"Median of {REPS} runs of {SECS:.0f} s per point, the servers taking turns within each repetition. Server on CPU 1, `echo_client` on CPU 0. "
             "Round trips 'inf': the connections last the whole run. CPU: the server process's own "
             "CPU-seconds and the server core's busy CPU-seconds (which also hold the kernel's receive work).", "",
             "| server | size | conns | round trips | offered | msgs/s | conns/s | p50 µs | p99 µs | msgs per process CPU-s | msgs per core CPU-s | conns per core CPU-s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for kind, pts in results.items():
        for p in pts:
            lines.append(f"| {kind} | {p['size']} | {p['conns']} | {p['rounds'] or 'inf'} | {offered(p.get('rate'))} | {fmt(p['msgs_per_s'])} | "
                         f"{fmt(p['conns_per_s'])} | {fmt(p['p50_us'])} | {fmt(p['p99_us'])} | "
                         f"{fmt(p['msgs_per_proc_cpu_s'])} | {fmt(p['msgs_per_core_cpu_s'])} | {fmt(p['conns_per_core_cpu_s'])} |")
    s_pts, e_pts = results.get("sirocco", []), results.get("epoll", [])
    if s_pts and e_pts:
        lines += ["", "## sirocco / epoll", "",
                  "| size | conns | round trips | offered | msgs/s | msgs per core CPU-s | msgs per process CPU-s | conns per core CPU-s | p99 (sirocco vs epoll, µs) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for s, e in zip(s_pts, e_pts):
            def ratio(k):
                return f"{s[k] / e[k]:.2f}×" if s.get(k) and e.get(k) else "–"
            lines.append(f"| {s['size']} | {s['conns']} | {s['rounds'] or 'inf'} | {offered(s.get('rate'))} | {ratio('msgs_per_s')} | "
                         f"{ratio('msgs_per_core_cpu_s')} | {ratio('msgs_per_proc_cpu_s')} | {ratio('conns_per_core_cpu_s')} | "
                         f"{fmt(s['p99_us'])} vs {fmt(e['p99_us'])} |")
    save("tcp-echo", meta, lines, results=results)
    def draw(plt):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
        labels = [f"{p['size']}B/{p['conns']}c/{p['rounds'] or 'inf'}/{offered(p.get('rate'))}" for p in (s_pts or e_pts)]
        xs = range(len(labels))
        w = 0.4
        for i, (kind, pts) in enumerate(results.items()):
            a1.bar([x + i * w for x in xs], [(p["msgs_per_core_cpu_s"] or 0) / 1e3 for p in pts], w, label=kind)
            a2.bar([x + i * w for x in xs], [p["p99_us"] or 0 for p in pts], w, label=kind)
        for a, t in ((a1, "messages per server-core CPU-second (k)"), (a2, "p99 round trip (µs)")):
            a.set_xticks([x + w / 2 for x in xs])
            a.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
            a.set_title(t)
        a2.set_yscale("log")
        finish(fig, (a1, a2), "tcp-echo", grid="y")

    plot(draw)


if __name__ == "__main__":
    main()
