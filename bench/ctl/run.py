#!/usr/bin/env python3
"""sirocco ctl benchmark: what the control plane's data path costs. The UDP echo and the DNS
server, standalone (attached to the interface) and behind `sirocco ctl` (a granted virtual
NIC: the daemon's ingress redirect, a veth pair, the transmit filter and token bucket), in one
run, with the placement of BENCHMARKING.md (server side on CPU 1 — server, daemon and both
veth pairs' NAPI work —, load on CPU 0). Also the rate limiter's accuracy: an echo granted
LIMIT_PPS packets/s, then LIMIT_BPS bits/s, under a flood.

Load: `sirocco gen udp` for the echo (RATES, 0 = as fast as the generator goes: the flood),
kxdpgun for DNS (DNS_RATES). Each point is the median of REPS runs of SECS seconds on a
freshly started server (and daemon); standalone and behind-the-daemon runs alternate. BPF
statistics are on during the run, for the daemon's programs' own cost per packet. Writes
bench/results/ctl.{json,md,png}."""

import json, os, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (sh, ns, cpu_busy, proc_cpu, median_of, stop_process, env_list, preflight, kxdpgun,  # noqa: E402
                 Testnet, SIROCCO, BUILD, SECS, REPS, SRV_CPU, GEN_CPU, run_meta, save, plot, finish)

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NET = Testnet("bc")
SRV_NS, CLI_NS, SRV_IF, CLI_IF = NET.srv_ns, NET.cli_ns, NET.srv_if, NET.cli_if
SERVER_ADDR, CLIENT_ADDR = "198.18.0.1", "198.18.0.2"
RATES = env_list("RATES", "200000,400000,0", int)
DNS_RATES = env_list("DNS_RATES", "200000,2000000", int)
LIMIT_PPS = int(os.environ.get("LIMIT_PPS", "100000"))
LIMIT_BPS = int(os.environ.get("LIMIT_BPS", "50000000"))
SIZE = 64
# A 64-byte echo reply on the wire: Ethernet 14 + IPv4 20 + UDP 8 + payload.
REPLY_BITS = (14 + 20 + 8 + SIZE) * 8
WORK = os.path.join(BUILD, "ctl")
SOCK = os.path.join(WORK, "ctl.sock")
POLICY = """
[[allow]]
uid = 0
addrs = ["198.18.0.1"]
ports = ["udp/7", "udp/53", "tcp/53"]
"""
ZONE = os.path.join(ROOT, "tests", "data", "example.zone")
QUERIES = [("www.example.com", "A"), ("example.com", "MX"), ("mail.example.com", "A"), ("nope.example.com", "A")]


class Server:
    """kind: echo | dns; behind: None (standalone) or the grant's extra options."""

    def __init__(self, kind, behind):
        self.kind, self.behind = kind, behind
        self.daemon = self.proc = None

    def start(self):
        pin = ["ip", "netns", "exec", SRV_NS, "taskset", "-c", str(SRV_CPU)]
        if self.behind is not None:
            self.daemon = subprocess.Popen(pin + [SIROCCO, "ctl", "--iface", SRV_IF, "--socket", SOCK, "--config",
                                                  os.path.join(WORK, "policy.toml"), "--quiet"],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for _ in range(100):
                if os.path.exists(SOCK) or self.daemon.poll() is not None:
                    break
                time.sleep(0.05)
        where = ["--ctl", SOCK] + self.behind if self.behind is not None else ["--iface", SRV_IF]
        app = ["echo"] if self.kind == "echo" else ["dns", "--zone", ZONE]
        self.proc = subprocess.Popen(pin + [SIROCCO] + app + where + ["--addr", SERVER_ADDR, "--queues", "1",
                                                                      "--cpus", str(SRV_CPU)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        for p, what in ((self.daemon, "daemon"), (self.proc, self.kind)):
            if p and p.poll() is not None:
                raise RuntimeError(f"{what} did not start: {p.stderr.read()}")

    def cpu(self):
        return sum(proc_cpu(p.pid) or 0 for p in (self.proc, self.daemon) if p)

    def stop(self):
        stop_process(self.proc)
        if self.daemon:
            stop_process(self.daemon)


def echo_run(srv, rate):
    report = os.path.join(WORK, "gen.json")
    b0, p0 = cpu_busy(SRV_CPU), srv.cpu()
    r = ns(CLI_NS, "taskset", "-c", str(GEN_CPU), SIROCCO, "gen", "udp", "--iface", CLI_IF, "--addr", CLIENT_ADDR,
           "--dst", SERVER_ADDR, "--rate", str(rate), "--size", str(SIZE), "--flows", "16", "--duration", str(SECS),
           "--drain", "0.3", "--cpus", str(GEN_CPU), "--json", report, check=False)
    b1, p1 = cpu_busy(SRV_CPU), srv.cpu()
    if r.returncode != 0:
        raise RuntimeError(f"gen failed: {r.stdout}{r.stderr}")
    with open(report) as f:
        g = json.load(f)
    replies = g["received"]
    return {"offered": rate, "sent_ps": g["tx_pps"], "replies_ps": g["rx_pps"],
            "core_us_per_reply": (b1 - b0) / replies * 1e6 if replies else None,
            "proc_us_per_reply": (p1 - p0) / replies * 1e6 if replies else None,
            "p50_us": g["rtt_ns"]["p50"] / 1000, "p99_us": g["rtt_ns"]["p99"] / 1000}


def dns_run(srv, rate):
    k = kxdpgun(CLI_NS, CLI_IF, os.path.join(WORK, "queries.txt"), rate, SERVER_ADDR, srv.cpu)
    answers = k["answers"]
    return {"offered": rate, "sent_ps": k["sent_qps"], "replies_ps": answers / SECS,
            "core_us_per_reply": k["core_s"] / answers * 1e6 if answers else None,
            "proc_us_per_reply": k["proc_s"] / answers * 1e6 if answers else None}


def point(rate, runs):
    p = {k: median_of(runs, k) for k in runs[0] if k not in ("offered", "programs")}
    p["offered"], p["runs"] = rate, runs
    return p


def one(name, kind, behind, rate, run, rep):
    """One run on a freshly started server (and daemon)."""
    srv = Server(kind, behind)
    srv.start()
    try:
        r = run(srv, rate)
        if behind is not None:
            r["programs"] = programs()
    finally:
        srv.stop()
    print(f"{name:18} offered {rate or 'flood':>8} rep {rep}: {r['replies_ps']:>9.0f} replies/s, "
          f"core {r['core_us_per_reply'] or 0:.2f} us/reply", flush=True)
    return r


def programs():
    """The daemon's programs' runs and run time (BPF statistics are on during the bench)."""
    out = sh(SIROCCO, "ctl", "status", "--json", "--socket", SOCK, check=False).stdout
    try:
        return {p["name"]: p for p in json.loads(out)["programs"]}
    except (ValueError, KeyError):
        return {}


def pair(app, rates, run):
    """Standalone and behind the daemon, alternating run by run, so that both see the same
    machine (this one's throughput drifts by tens of percent over minutes)."""
    alone, behind = [], []
    for rate in rates:
        a, b = [], []
        for rep in range(REPS):
            a.append(one(f"{app} standalone", app, None, rate, run, rep))
            b.append(one(f"{app} ctl", app, [], rate, run, rep))
        alone.append(point(rate, a))
        behind.append(point(rate, b))
    return alone, behind


def limited(extra, run):
    return [point(0, [one(f"echo ctl {extra[0][6:]}", "echo", extra, 0, run, rep) for rep in range(REPS)])]


def main():
    preflight()
    os.makedirs(WORK, exist_ok=True)
    with open(os.path.join(WORK, "policy.toml"), "w") as f:
        f.write(POLICY)
    with open(os.path.join(WORK, "queries.txt"), "w") as f:
        f.write("".join(f"{n} {t}\n" for n, t in QUERIES))
    res = {}
    stats_were = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    sh("sysctl", "-qw", "kernel.bpf_stats_enabled=1")
    try:
        with NET:
            # The daemon's redirects reach the client end through its NAPI (GRO on: --bench).
            res["echo standalone"], res["echo ctl"] = pair("echo", RATES, echo_run)
            res["echo ctl pps-limited"] = limited(["--ctl-pps", str(LIMIT_PPS)], echo_run)
            res["echo ctl bps-limited"] = limited(["--ctl-bps", str(LIMIT_BPS)], echo_run)
            # kxdpgun last: it can leave its XDP program on the client end for a while.
            res["dns standalone"], res["dns ctl"] = pair("dns", DNS_RATES, dns_run)
    finally:
        sh("sysctl", "-qw", f"kernel.bpf_stats_enabled={stats_were}")
    write(res)


def write(res):
    meta = run_meta(secs=SECS, reps=REPS, payload_bytes=SIZE, limit_pps=LIMIT_PPS, limit_bps=LIMIT_BPS,
                    placement="server, daemon and all server-side NAPI on CPU 1; load on CPU 0")
    lines = [f"# sirocco ctl: standalone vs behind the daemon ({meta['date']}, kernel {meta['kernel']})", "",
             f"Median of {REPS} runs of {SECS:.0f} s per point; the server, the daemon and every server-side "
             "veth's NAPI work on CPU 1, the load (`sirocco gen udp` for the echo, kxdpgun for DNS) on CPU 0. "
             "Offered 0 = the flood (as fast as the generator goes).", "",
             "| server | offered/s | replies/s | server core µs/reply | server processes µs/reply |", "|---|---|---|---|---|"]
    for name, pts in res.items():
        for p in pts:
            core = f"{p['core_us_per_reply']:.2f}" if p.get("core_us_per_reply") else "–"
            proc = f"{p['proc_us_per_reply']:.2f}" if p.get("proc_us_per_reply") else "–"
            lines.append(f"| {name} | {p['offered'] or 'flood'} | {p['replies_ps']:.0f} | {core} | {proc} |")
    lines += ["", "## Behind the daemon, as a share of standalone (goal ≥ 90 %)", ""]
    for app in ("echo", "dns"):
        alone, behind = res[f"{app} standalone"], res[f"{app} ctl"]
        for a, b in zip(alone, behind):
            cost = ""
            if a.get("core_us_per_reply") and b.get("core_us_per_reply"):
                cost = f"; server core {b['core_us_per_reply'] - a['core_us_per_reply']:+.2f} µs/reply"
            lines.append(f"- {app}, offered {a['offered'] or 'flood'}: **{b['replies_ps'] / a['replies_ps'] * 100:.0f} %** "
                         f"({b['replies_ps']:.0f} vs {a['replies_ps']:.0f} replies/s{cost})")
        best_a = max(p["replies_ps"] for p in alone)
        best_b = max(p["replies_ps"] for p in behind)
        lines.append(f"- {app}, best point of each: **{best_b / best_a * 100:.0f} %** ({best_b:.0f} vs {best_a:.0f})")
    lines += ["", "## What the daemon's programs cost per packet (kernel BPF statistics, all ctl runs)", ""]
    for prog, what in (("ctl_ingress", "every frame on the interface"), ("ctl_egress", "every frame a server sends")):
        runs = sum(r.get("programs", {}).get(prog, {}).get("runs", 0) for pts in res.values() for p in pts for r in p["runs"])
        ns_ = sum(r.get("programs", {}).get(prog, {}).get("run_ns", 0) for pts in res.values() for p in pts for r in p["runs"])
        if runs:
            lines.append(f"- {prog} ({what}): **{ns_ / runs:.0f} ns** per run over {runs} runs")
    pps = res["echo ctl pps-limited"][0]["replies_ps"]
    bps = res["echo ctl bps-limited"][0]["replies_ps"] * REPLY_BITS
    lines += ["", "## Rate limiter under a flood", "",
              f"- granted {LIMIT_PPS} packets/s: **{pps:.0f}** replies/s left ({pps / LIMIT_PPS * 100:.1f} % of the grant)",
              f"- granted {LIMIT_BPS / 1e6:.0f} Mbit/s: **{bps / 1e6:.2f}** Mbit/s of {REPLY_BITS // 8}-byte replies "
              f"left ({bps / LIMIT_BPS * 100:.1f} % of the grant)"]
    save("ctl", meta, lines, results=res)

    def draw(plt):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
        for ax, app in ((a1, "echo"), (a2, "dns")):
            for name in (f"{app} standalone", f"{app} ctl"):
                pts = res[name]
                xs = [p["sent_ps"] / 1e3 for p in pts]
                ax.plot(xs, [p["replies_ps"] / 1e3 for p in pts], marker="o", label=name)
            ax.set_xlabel("offered (k/s, as sent)")
            ax.set_ylabel("replies (k/s)")
            ax.set_title(f"{app}: standalone vs behind sirocco ctl")
        finish(fig, (a1, a2), "ctl")

    plot(draw)


if __name__ == "__main__":
    main()
