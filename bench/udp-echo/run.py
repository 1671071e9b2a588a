#!/usr/bin/env python3
"""UDP echo benchmark: sirocco echo vs a kernel recvmmsg/sendmmsg echo vs the simplest AF_XDP
echo in C (xsk_echo.c: the floor of this path) vs an in-kernel XDP_TX bounce, in one run, on the placement of BENCHMARKING.md (server side on CPU 1, generator on
CPU 0, each veth end's NAPI thread on its own side's CPU), driven by `sirocco gen udp`. `xsk_echo_sleep`
is the C echo sleeping in poll() when idle, as sirocco's engines do: the floor at ordinary load.
`sirocco6` is sirocco's echo over IPv6 (2001:2::1, RFC 5180's range; the generator from
2001:2::20, an address of its own), the rest as `sirocco`: the IPv6 point of issue 21.

For each server and offered load, REPS runs of SECS seconds; reports the median of replies/s,
server-core busy CPU-seconds per million replies (from /proc/stat), the server process's own
CPU-seconds (from /proc/PID/stat), and p50/p99 round-trip latency. Writes JSON, a markdown
table and a plot to bench/results/."""

import json, os, platform, re, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (sh, ns, cpu_busy, proc_cpu, median_of, stop_process, server_kind, server_flags, env_list, preflight, turn_runs,  # noqa: E402
                 Testnet, SIROCCO, BUILD, SECS, REPS, SRV_CPU, GEN_CPU, fmt, run_meta, save, plot, finish)

HERE = os.path.dirname(os.path.abspath(__file__))
NET = Testnet("bx")
SRV_NS, CLI_NS, SRV_IF, CLI_IF = NET.srv_ns, NET.cli_ns, NET.srv_if, NET.cli_if
SERVER_ADDR, CLIENT_ADDR = "198.18.0.1", "198.18.0.2"
SERVER_ADDR6, CLIENT_ADDR6 = "2001:2::1", "2001:2::20"
RATES = env_list("RATES", "100000,200000,400000,600000,800000,0", int)
SIZE = int(os.environ.get("SIZE", "64"))
SERVERS = env_list("SERVERS", "sirocco,sirocco6,kernel,xsk_echo,xdp_tx")


class Server:
    def __init__(self, kind):
        self.proc = None
        self.kind, self.bin = server_kind(kind, SIROCCO)
        self.flags = server_flags(kind)
        v6 = self.kind == "sirocco6"
        self.addr, self.client = (SERVER_ADDR6, CLIENT_ADDR6) if v6 else (SERVER_ADDR, CLIENT_ADDR)

    def start(self):
        if self.kind in ("sirocco", "sirocco6"):
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", SRV_NS, "taskset", "-c", str(SRV_CPU), self.bin, "echo", "--iface", SRV_IF,
                 "--addr", self.addr, "--queues", "1", "--cpus", str(SRV_CPU)] + self.flags,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        elif self.kind == "kernel":
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", SRV_NS, "taskset", "-c", str(SRV_CPU), os.path.join(BUILD, "kecho"),
                 SERVER_ADDR, "7"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        elif self.kind == "xdp_tx":
            ns(SRV_NS, "ip", "link", "set", "dev", SRV_IF, "xdpdrv", "obj", os.path.join(BUILD, "bounce.o"), "sec", "xdp")
        elif self.kind in ("xsk_echo", "xsk_echo_sleep"):
            ns(SRV_NS, "ip", "link", "set", "dev", SRV_IF, "xdpdrv", "obj", os.path.join(BUILD, "xsk_echo_xdp.o"), "sec", "xdp")
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", SRV_NS, "taskset", "-c", str(SRV_CPU), os.path.join(BUILD, "xsk_echo"), SRV_IF]
                + (["sleep"] if self.kind == "xsk_echo_sleep" else []),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        if self.proc and self.proc.poll() is not None:
            raise RuntimeError(f"{self.kind} did not start: {self.proc.stderr.read()}")

    def pid(self):
        return self.proc.pid if self.proc else None

    def stop(self):
        """Stops the server; returns the replies it says it sent (None for the bounce)."""
        sent = None
        if self.proc:
            stop_process(self.proc)
            out, err = self.proc.communicate()
            # sirocco's exit report, kecho's and xsk_echo's last line.
            m = (re.search(r"udp delivered \d+ replies (\d+)", out) or re.search(r"echoed (\d+)", out + err))
            sent = int(m.group(1)) if m else None
        if self.kind in ("xdp_tx", "xsk_echo", "xsk_echo_sleep"):
            ns(SRV_NS, "ip", "link", "set", "dev", SRV_IF, "xdpdrv", "off", check=False)
        return sent


def one_run(server, rate):
    report = f"/tmp/sirocco-bench-{os.getpid()}.json"
    b0, p0, t0 = cpu_busy(SRV_CPU), proc_cpu(server.pid()), time.time()
    r = ns(CLI_NS, "taskset", "-c", str(GEN_CPU), SIROCCO, "gen", "udp", "--iface", CLI_IF, "--addr", server.client,
           "--dst", server.addr, "--rate", str(rate), "--size", str(SIZE), "--flows", "16", "--duration", str(SECS),
           "--drain", "0.3", "--cpus", str(GEN_CPU), "--json", report, check=False)
    b1, p1, t1 = cpu_busy(SRV_CPU), proc_cpu(server.pid()), time.time()
    if r.returncode != 0:
        raise RuntimeError(f"gen failed: {r.stdout}{r.stderr}")
    with open(report) as f:
        g = json.load(f)
    os.unlink(report)
    replies = g["received"]
    # The generator's run includes start-up and drain; CPU is measured over the whole of it,
    # so per-reply costs are slightly pessimistic for every server alike.
    return {
        "offered_pps": rate, "tx_pps": g["tx_pps"], "replies_pps": g["rx_pps"], "loss": g["loss"],
        "core_busy_s": b1 - b0, "proc_cpu_s": (p1 - p0) if p0 is not None else None, "wall_s": t1 - t0,
        "core_us_per_reply": (b1 - b0) / replies * 1e6 if replies else None,
        "proc_us_per_reply": ((p1 - p0) / replies * 1e6) if (p0 is not None and replies) else None,
        "p50_us": g["rtt_ns"]["p50"] / 1000, "p99_us": g["rtt_ns"]["p99"] / 1000,
    }


def build():
    preflight()
    sh("gcc", "-O2", "-Wall", "-o", os.path.join(BUILD, "kecho"), os.path.join(HERE, "kecho.c"))
    arch = platform.machine().replace("aarch64", "aarch64")
    sh("gcc", "-O2", "-Wall", "-o", os.path.join(BUILD, "xsk_echo"), os.path.join(HERE, "xsk_echo.c"))
    for name in ("bounce", "xsk_echo_xdp"):
        sh("clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{arch}-linux-gnu", "-c", os.path.join(HERE, f"{name}.c"),
           "-o", os.path.join(BUILD, f"{name}.o"))


def main():
    build()
    results = {kind: [] for kind in SERVERS}
    with NET:
        for rate in RATES:
            def show(kind, rep, r, sent):
                # What the server sent, counted by itself: under the flood the generator's
                # core may not take in every reply (its own sending starves its receive).
                r["server_sent_pps"] = sent / SECS if sent is not None else None
                print(f"{kind:8} offered {rate or 'max':>7} rep {rep}: {r['replies_pps']:>10.0f} replies/s, "
                      f"core {r['core_us_per_reply'] or 0:.2f} us/reply, p50 {r['p50_us']:.0f} us p99 {r['p99_us']:.0f} us, "
                      f"server sent {r['server_sent_pps'] or 0:.0f}/s", flush=True)
            runs = turn_runs(SERVERS, Server, lambda srv: one_run(srv, rate), show)
            for kind in SERVERS:
                point = {k: median_of(runs[kind], k) for k in runs[kind][0] if k != "offered_pps"}
                point["offered_pps"] = rate
                point["runs"] = runs[kind]
                results[kind].append(point)
    write(results)


def write(results):
    meta = run_meta(secs=SECS, reps=REPS,
            payload_bytes=SIZE, placement="server CPU 1, generator CPU 0, threaded NAPI pinned per side")
    stamp = meta["date"]

    def sat(kind):
        pts = results.get(kind) or []
        return max(pts, key=lambda p: p["replies_pps"] or 0) if pts else None

    lines = [f"# UDP echo, {SIZE} B payload ({stamp}, kernel {meta['kernel']})", "",
             f"Median of {REPS} runs of {SECS:.0f} s per point, the servers taking turns within each repetition. "
             "Server side on CPU 1, `sirocco gen udp` on CPU 0.", "",
             "Replies/s are the replies the generator received; server sent/s what the server counted itself.", "",
             "| server | offered | replies/s | server sent/s | loss | server core µs/reply | server process µs/reply | p50 µs | p99 µs |",
             "|---|---|---|---|---|---|---|---|---|"]
    for kind, pts in results.items():
        for p in pts:
            proc = f"{p['proc_us_per_reply']:.2f}" if p.get("proc_us_per_reply") else "–"
            core = f"{p['core_us_per_reply']:.2f}" if p.get("core_us_per_reply") else "–"
            sent = f"{p['server_sent_pps']:.0f}" if p.get("server_sent_pps") else "–"
            lines.append(f"| {kind} | {p['offered_pps'] or 'max'} | {p['replies_pps']:.0f} | {sent} | {p['loss'] * 100:.2f}% | {core} | {proc} | {p['p50_us']:.0f} | {p['p99_us']:.0f} |")
    s, k, x, m = sat("sirocco"), sat("kernel"), sat("xdp_tx"), sat("xsk_echo")
    s6 = sat("sirocco6")
    if s and s6:
        lines += ["", "## IPv6 against IPv4 (best replies/s point of each)", ""]
        lines.append(f"- sirocco over IPv6 / over IPv4 replies/s: **{s6['replies_pps'] / s['replies_pps'] * 100:.0f}%** "
                     f"({s6['replies_pps']:.0f} vs {s['replies_pps']:.0f})")
        if s.get("core_us_per_reply") and s6.get("core_us_per_reply"):
            lines.append(f"- replies per server-core CPU-second: **{s['core_us_per_reply'] / s6['core_us_per_reply'] * 100:.0f}%** "
                         "of IPv4's (goal ≥ 95%)")
    if s and k:
        lines += ["", "## Ratios at saturation (best replies/s point of each)", ""]
        lines.append(f"- sirocco / kernel replies/s: **{s['replies_pps'] / k['replies_pps']:.2f}×** "
                     f"({s['replies_pps']:.0f} vs {k['replies_pps']:.0f})")
        if s.get("core_us_per_reply") and k.get("core_us_per_reply"):
            lines.append(f"- sirocco / kernel replies per server-core CPU-second: **{k['core_us_per_reply'] / s['core_us_per_reply']:.2f}×** "
                         f"({1e6 / s['core_us_per_reply']:.0f} vs {1e6 / k['core_us_per_reply']:.0f})")
        if x:
            lines.append(f"- sirocco / XDP_TX bounce replies/s: **{s['replies_pps'] / x['replies_pps'] * 100:.0f}%** "
                         f"({x['replies_pps']:.0f} replies/s for the bounce)")
        if m:
            lines.append(f"- sirocco / minimal AF_XDP echo in C replies/s: **{s['replies_pps'] / m['replies_pps']:.2f}×** "
                         f"({m['replies_pps']:.0f} replies/s for xsk_echo.c)")

    def at(kind, rate):
        return next((p for p in results.get(kind) or [] if p["offered_pps"] == rate), None)
    fs, fk, fm = at("sirocco", 0), at("kernel", 0), at("xsk_echo", 0)
    if fs:
        lines += ["", "## Under the flood (the generator as fast as it goes)", ""]
        lines.append(f"- sirocco: {fs['replies_pps']:.0f} replies/s at {fs['tx_pps']:.0f} offered")
        if fm:
            lines.append(f"- sirocco / minimal AF_XDP echo: **{fs['replies_pps'] / fm['replies_pps']:.2f}×** "
                         f"(goal ≥ 0.95×; {fm['replies_pps']:.0f} for xsk_echo.c)")
        if fk:
            lines.append(f"- sirocco / kernel echo: **{fs['replies_pps'] / fk['replies_pps']:.2f}×** "
                         f"(goal ≥ 2×; {fk['replies_pps']:.0f} for the kernel)")
        if fm and fs.get("server_sent_pps") and fm.get("server_sent_pps"):
            lines.append(f"- counted by the servers themselves: sirocco sent {fs['server_sent_pps']:.0f}/s, xsk_echo.c "
                         f"{fm['server_sent_pps']:.0f}/s: **{fs['server_sent_pps'] / fm['server_sent_pps']:.2f}×**")
        # The flood's generator runs flat out on its core, which also takes in the replies:
        # the highest paced rate shows the servers with a generator that keeps up.
        top = max((r for r in RATES if r), default=None)
        ps, pm, pk = at("sirocco", top), at("xsk_echo", top), at("kernel", top)
        if top and ps and pm:
            lines.append(f"- at {top} offered (paced, above every server's capacity): sirocco {ps['replies_pps']:.0f}, "
                         f"xsk_echo.c {pm['replies_pps']:.0f}: **{ps['replies_pps'] / pm['replies_pps']:.2f}×**"
                         + (f"; the kernel {pk['replies_pps']:.0f}: **{ps['replies_pps'] / pk['replies_pps']:.2f}×**" if pk else ""))
    save("udp-echo", meta, lines, results=results)
    def draw(plt):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
        for kind, pts in results.items():
            xs = [p["tx_pps"] / 1e3 for p in pts]
            a1.plot(xs, [p["replies_pps"] / 1e3 for p in pts], marker="o", label=kind)
            a2.plot(xs, [p["p99_us"] for p in pts], marker="o", label=kind)
        a1.set_xlabel("offered (k datagrams/s, achieved by the generator)")
        a1.set_ylabel("replies (k/s)")
        a1.set_title(f"UDP echo, {SIZE} B, one server core")
        a2.set_xlabel("offered (k datagrams/s)")
        a2.set_ylabel("p99 round trip (µs)")
        a2.set_yscale("log")
        finish(fig, (a1, a2), "udp-echo")

    plot(draw)


if __name__ == "__main__":
    main()
