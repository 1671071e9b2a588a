"""Forwarding between two veth pairs, one core: `sirocco pipeline` as an L2 switch and as an
IPv4 router (2 routes, and 1 M routes) against the Linux bridge, the kernel's IP forwarding
and the in-driver XDP_REDIRECT limit of the path; then the scheduler's rate limits and shares
against their configuration.

Three namespaces: the generator (an AF_XDP sender, CPU 0) sends 60-byte frames into the
middle namespace, where the forwarder runs on CPU 1 with both its interfaces' NAPI threads;
the sink namespace drops every frame in XDP (CPU 0) and counts them. Forwarded packets/s are
counted at the sink; per core-second, by the busy time of CPU 1."""

import json, os, random, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (SECS, REPS, SRV_CPU, GEN_CPU, SIROCCO, BUILD, ROOT, sh, ns, cpu_busy, veth_chain, proc_cpu, stop_process,
                 env_list, preflight, median_of, run_meta, save, finish, plot, fmt)

HERE = os.path.dirname(os.path.abspath(__file__))
G, M, S = "plg", "plm", "pls"
G1, M1, M2, S2 = "plg1", "plm1", "plm2", "pls2"
MAC = {G1: "02:00:00:00:01:01", M1: "02:00:00:00:01:fe", M2: "02:00:00:00:02:fe", S2: "02:00:00:00:02:01"}
SERVERS = env_list("SERVERS", "sirocco-l2,xsk-fwd,bridge,sirocco-router,sirocco-router-1m,ip-forward,xdp-redirect")
# Forwarders that take frames addressed to the sink (the others route: frames go to M1's MAC).
L2 = ("sirocco-l2", "bridge", "xdp-redirect", "xsk-fwd")
LIMITS = env_list("LIMITS", "20000,100000,200000", int)
XSK = os.path.join(BUILD, "xsk_send")
XDP = os.path.join(BUILD, "pipeline_xdp.o")
ROUTES_1M = os.path.join(BUILD, "routes-1m.txt")


class Net:
    """generator G1 — M1 [forwarder] M2 — S2 sink, each side's NAPI on its side's CPU."""

    def __enter__(self):
        veth_chain((G, M, S), ((G1, G, M1, M), (S2, S, M2, M)),
                   {G1: GEN_CPU, M1: SRV_CPU, M2: SRV_CPU, S2: GEN_CPU}, MAC)
        ns(G, "ip", "addr", "add", "198.18.1.1/24", "dev", G1)
        ns(S, "ip", "addr", "add", "198.18.2.1/24", "dev", S2)
        ns(S, "ip", "link", "set", "dev", S2, "xdpdrv", "obj", XDP, "sec", "xdp")
        return self

    def down(self):
        for n in (G, M, S):
            sh("ip", "netns", "del", n, check=False)

    def __exit__(self, *_):
        self.down()


def sink_count():
    """Frames the sink's XDP program has seen."""
    out = ns(S, "ethtool", "-S", S2).stdout
    return sum(int(l.split(":")[1]) for l in out.splitlines() if "xdp_packets" in l)


def scripts():
    switch = (f'a :: PortInc(port="{M1}")\nb :: PortInc(port="{M2}")\nsw :: L2Forward(gates=2)\n'
              f'a -> 0:sw\nb -> 1:sw\nsw:0 -> PortOut(port="{M1}")\nsw:1 -> PortOut(port="{M2}")\n')
    def router(routes):
        return (f'in1 :: PortInc(port="{M1}")\nin2 :: PortInc(port="{M2}")\n'
                f'out1 :: PortOut(port="{M1}")\nout2 :: PortOut(port="{M2}")\n'
                f'rt :: IPLookup({routes})\n'
                'in1 -> ttl1 :: UpdateTTL() -> rt\nin2 -> ttl2 :: UpdateTTL() -> rt\n'
                'ttl1:1 -> ICMPTimeExceeded(addr="198.18.1.254") -> out1\n'
                'ttl2:1 -> ICMPTimeExceeded(addr="198.18.2.254") -> out2\n'
                f'rt:0 -> MACRewrite(src="{MAC[M1]}", dst="{MAC[G1]}") -> out1\n'
                f'rt:1 -> MACRewrite(src="{MAC[M2]}", dst="{MAC[S2]}") -> out2\n')
    return {"sirocco-l2": switch,
            "sirocco-router": router('routes=["198.18.1.0/24 0", "198.18.2.0/24 1"]'),
            "sirocco-router-1m": router(f'file="{ROUTES_1M}"')}


def make_routes():
    """A million routes outside 198.18.0.0/15, shaped like a full BGP table (about 60 % /24s,
    the rest /8 to /23, one in 200 longer than /24), and the two that matter."""
    if os.path.exists(ROUTES_1M):
        return
    rnd = random.Random(18)
    with open(ROUTES_1M + ".tmp", "w") as f:
        f.write("198.18.1.0/24 0\n198.18.2.0/24 1\n")
        n = 0
        while n < 1_000_000:
            a = rnd.randrange(1, 224) << 24 | rnd.randrange(0, 1 << 24)
            if a >> 17 == 0xc612 >> 1:
                continue
            ln = 24 if rnd.random() < 0.6 else rnd.choice([8, 12, 16, 18, 19, 20, 21, 22, 22, 23, 23, 23])
            if rnd.random() < 0.005:
                ln = rnd.choice([25, 26, 27, 28, 29, 30, 32])
            mask = (0xffffffff << (32 - ln)) & 0xffffffff
            a &= mask
            f.write(f"{a >> 24}.{a >> 16 & 255}.{a >> 8 & 255}.{a & 255}/{ln} {rnd.randrange(2)}\n")
            n += 1
    os.rename(ROUTES_1M + ".tmp", ROUTES_1M)


class Forwarder:
    def __init__(self, kind):
        self.kind, self.proc, self.script = kind, None, None

    def start(self):
        k = self.kind
        routed = k not in L2
        # Hosts: G1 reaches 198.18.2.1 through 198.18.1.254 (M1's MAC) when routed; S2
        # answers nothing (its XDP program drops everything).
        ns(G, "ip", "neigh", "replace", "198.18.2.1", "lladdr", MAC[M1] if routed else MAC[S2], "dev", G1, "nud", "permanent")
        if k.startswith("sirocco"):
            self.script = f"/tmp/sirocco-bench-pipeline-{k}.txt"
            with open(self.script, "w") as f:
                f.write(scripts()[k])
            self.proc = start_pipeline(self.script)
            if k == "sirocco-l2":
                self.prime()
        elif k == "bridge":
            ns(M, "ip", "link", "add", "plbr", "type", "bridge")
            for i in (M1, M2):
                ns(M, "ip", "link", "set", i, "master", "plbr")
            ns(M, "ip", "link", "set", "plbr", "up")
            time.sleep(0.5)
            self.prime()
        elif k == "ip-forward":
            ns(M, "ip", "addr", "add", "198.18.1.254/24", "dev", M1)
            ns(M, "ip", "addr", "add", "198.18.2.254/24", "dev", M2)
            ns(M, "ip", "neigh", "replace", "198.18.2.1", "lladdr", MAC[S2], "dev", M2, "nud", "permanent")
            ns(M, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
        elif k == "xdp-redirect":
            idx = int(ns(M, "cat", f"/sys/class/net/{M2}/ifindex").stdout)
            obj = os.path.join(BUILD, f"pipeline_redirect_{idx}.o")
            arch = os.uname().machine
            sh("clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{arch}-linux-gnu", f"-DOUT_IFINDEX={idx}",
               "-c", os.path.join(HERE, "xdp.c"), "-o", obj)
            ns(M, "ip", "link", "set", "dev", M1, "xdpdrv", "obj", obj, "sec", "xdp")
        elif k == "xsk-fwd":
            ns(M, "ip", "link", "set", "dev", M1, "xdpdrv", "obj", os.path.join(BUILD, "xsk_fwd_xdp.o"), "sec", "xdp")
            self.proc = subprocess.Popen(["ip", "netns", "exec", M, "taskset", "-c", str(SRV_CPU),
                                          os.path.join(BUILD, "xsk_fwd"), M1, M2, str(SECS + 30)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)
            if self.proc.poll() is not None:
                raise RuntimeError(f"xsk_fwd did not start: {self.proc.stderr.read()}")
        else:
            raise SystemExit(f"bench: no forwarder '{k}'")

    def prime(self):
        """The switch learns where the sink lives from one frame it sends (the sink answers
        nothing, so without it every frame would be flooded)."""
        ns(S, "ip", "link", "set", "dev", S2, "xdpdrv", "off")
        # An ARP request nobody answers: enough for the switch to see the sink's MAC.
        ns(S, "ping", "-c", "1", "-W", "1", "198.18.2.254", check=False)
        ns(S, "ip", "link", "set", "dev", S2, "xdpdrv", "obj", XDP, "sec", "xdp")

    def pid(self):
        return self.proc.pid if self.proc else None

    def stop(self):
        k, said = self.kind, ""
        if self.proc:
            stop_process(self.proc)
        if k == "bridge":
            for i in (M1, M2):
                ns(M, "ip", "link", "set", i, "nomaster", check=False)
            ns(M, "ip", "link", "del", "plbr", check=False)
        elif k == "ip-forward":
            ns(M, "sysctl", "-q", "-w", "net.ipv4.ip_forward=0")
            ns(M, "ip", "addr", "flush", "dev", M1)
            ns(M, "ip", "addr", "flush", "dev", M2)
        elif k in ("xdp-redirect", "xsk-fwd"):
            ns(M, "ip", "link", "set", "dev", M1, "xdpdrv", "off", check=False)
        return said


def one_run(fwd):
    routed = fwd.kind not in L2
    dst_mac = MAC[M1] if routed else MAC[S2]
    c0, b0, p0 = sink_count(), cpu_busy(SRV_CPU), proc_cpu(fwd.pid())
    t0 = time.time()
    g = ns(G, "taskset", "-c", str(GEN_CPU), XSK, G1, MAC[G1], "198.18.1.1", dst_mac, "198.18.2.1", str(SECS),
           env={**os.environ, "XSK_PAYLOAD": "18"})
    time.sleep(0.3)
    t1 = time.time()
    c1, b1, p1 = sink_count(), cpu_busy(SRV_CPU), proc_cpu(fwd.pid())
    # "sent N frames in S s: R frames/s"
    words = g.stdout.split()
    sent = float(words[1]) / SECS if len(words) > 1 else 0.0
    fwd_pkts = c1 - c0
    return {"offered_pps": sent, "forwarded_pps": fwd_pkts / SECS, "core_busy_s": b1 - b0, "wall_s": t1 - t0,
            "pps_per_core_s": fwd_pkts / (b1 - b0) if b1 > b0 else None,
            "proc_cpu_s": (p1 - p0) if p0 is not None and p1 is not None else None}


def start_pipeline(script):
    """`sirocco pipeline` in the middle namespace on CPU 1, once it says it runs (a million
    routes take a few seconds to load)."""
    log = f"/tmp/sirocco-bench-pipeline-{os.getpid()}.log"
    f = open(log, "w")
    p = subprocess.Popen(["ip", "netns", "exec", M, SIROCCO, "pipeline", "--script", script, "--cpus", str(SRV_CPU)],
                         stdout=subprocess.DEVNULL, stderr=f, text=True)
    t = time.time()
    while time.time() - t < 120:
        text = open(log).read()
        if p.poll() is not None:
            raise RuntimeError(f"sirocco pipeline did not start: {text}")
        if " running: " in text:
            time.sleep(0.5)
            return p
        time.sleep(0.1)
    stop_process(p)
    raise RuntimeError("sirocco pipeline did not start within 120 s")


def sched_runs():
    """Rate limits: a Source limited to L packets/s by a traffic class, into the sink; shares:
    two Sources under weighted fair 1:3, one into each interface, saturating the core."""
    out = []
    ns(G, "ip", "link", "set", "dev", G1, "xdpdrv", "obj", XDP, "sec", "xdp")
    def count_g1():
        o = ns(G, "ethtool", "-S", G1).stdout
        return sum(int(l.split(":")[1]) for l in o.splitlines() if "xdp_packets" in l)
    cases = [(f"rate {l}", f'src :: Source(size=60) -> PortOut(port="{M2}")\n'
              f'tc lim(policy=rate_limit, resource=packet, limit={l}, tasks=[src])\n', l) for l in LIMITS]
    cases.append(("bits 100M", f'src :: Source(size=1000) -> PortOut(port="{M2}")\n'
                  f'tc lim(policy=rate_limit, resource=bit, limit=100M, tasks=[src])\n', 100_000_000 / 8000))
    # Weighted fair 1:3 within a 200 k packets/s limit (below what either egress carries, so
    # what the sinks count is what the scheduler chose).
    cases.append(("share 1:3 of 200k", f'a :: Source(size=60) -> PortOut(port="{M1}")\nb :: Source(size=60) -> PortOut(port="{M2}")\n'
                  'tc lim(policy=rate_limit, resource=packet, limit=200k)\n'
                  'tc wf(policy=weighted_fair, resource=packet, parent=lim)\n'
                  'tc one(policy=round_robin, parent=wf, share=1, tasks=[a])\n'
                  'tc three(policy=round_robin, parent=wf, share=3, tasks=[b])\n', 3.0))
    for name, text, want in cases:
        path = "/tmp/sirocco-bench-pipeline-sched.txt"
        with open(path, "w") as f:
            f.write(text)
        runs = []
        for rep in range(REPS):
            p = start_pipeline(path)
            a0, s0 = count_g1(), sink_count()
            time.sleep(SECS)
            a1, s1 = count_g1(), sink_count()
            stop_process(p)
            if name.startswith("share"):
                got = (s1 - s0) / max(1, a1 - a0)
            else:
                got = (s1 - s0) / SECS
            runs.append(got)
            print(f"sched {name} rep {rep}: {got:.4g} (configured {want:.4g})", flush=True)
        med = sorted(runs)[len(runs) // 2]
        out.append({"case": name, "configured": want, "measured": med, "error": med / want - 1, "runs": runs})
    ns(G, "ip", "link", "set", "dev", G1, "xdpdrv", "off")
    return out


def build():
    preflight()
    sh("gcc", "-O2", "-Wall", "-o", XSK, os.path.join(ROOT, "bench", "stream", "xsk_send.c"))
    sh("gcc", "-O2", "-Wall", "-o", os.path.join(BUILD, "xsk_fwd"), os.path.join(HERE, "xsk_fwd.c"))
    arch = os.uname().machine
    sh("clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{arch}-linux-gnu", "-c", os.path.join(HERE, "xdp.c"),
       "-o", XDP)
    sh("clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{arch}-linux-gnu", "-c", os.path.join(HERE, "xsk_fwd_xdp.c"),
       "-o", os.path.join(BUILD, "xsk_fwd_xdp.o"))
    make_routes()


def main():
    build()
    results = {}
    with Net():
        for kind in SERVERS:
            runs = []
            for rep in range(REPS):
                fwd = Forwarder(kind)
                fwd.start()
                try:
                    runs.append(one_run(fwd))
                finally:
                    fwd.stop()
                r = runs[-1]
                print(f"{kind:18} rep {rep}: offered {r['offered_pps']:>9.0f} forwarded {r['forwarded_pps']:>9.0f} pps, "
                      f"CPU {SRV_CPU} busy {r['core_busy_s']:.1f} s, {fmt(r['pps_per_core_s'])} pkts per core-s", flush=True)
            point = {k: median_of(runs, k) for k in runs[0]}
            point["runs"] = runs
            results[kind] = point
        sched = sched_runs()
    write(results, sched)


def write(results, sched):
    meta = run_meta(secs=SECS, reps=REPS, frame_bytes=60,
                    placement="forwarder and its NAPI threads on CPU 1; generator and sink on CPU 0")
    lines = [f"# Pipeline: forwarding between two veth pairs on one core ({meta['date']}, kernel {meta['kernel']})", "",
             f"Median of {REPS} runs of {SECS:.0f} s. 60-byte frames from an AF_XDP sender on CPU 0; the forwarder and both "
             "its interfaces' NAPI threads on CPU 1; the sink drops in XDP on CPU 0 and counts.", "",
             "| forwarder | offered pps | forwarded pps | CPU 1 busy (s) | forwarded per CPU-1 second | sirocco process CPU (s) |",
             "|---|---|---|---|---|---|"]
    for k, p in results.items():
        lines.append(f"| {k} | {fmt(p['offered_pps'])} | {fmt(p['forwarded_pps'])} | {fmt(p['core_busy_s'], '{:.1f}')} | "
                     f"{fmt(p['pps_per_core_s'])} | {fmt(p['proc_cpu_s'], '{:.1f}')} |")
    def ratio(a, b, key):
        pa, pb = results.get(a), results.get(b)
        if pa and pb and pa.get(key) and pb.get(key):
            return pa[key] / pb[key]
        return None
    lines += ["", "## Ratios", ""]
    for a, b, what in (("sirocco-l2", "bridge", "L2 switch / Linux bridge"),
                       ("sirocco-router", "ip-forward", "router / ip_forward"),
                       ("sirocco-router-1m", "ip-forward", "router with 1 M routes / ip_forward (2 routes)"),
                       ("sirocco-l2", "xdp-redirect", "L2 switch / XDP_REDIRECT"),
                       ("sirocco-l2", "xsk-fwd", "L2 switch / the minimal AF_XDP forwarder in C"),
                       ("sirocco-router", "xdp-redirect", "router / XDP_REDIRECT")):
        r1, r2 = ratio(a, b, "pps_per_core_s"), ratio(a, b, "forwarded_pps")
        if r1 or r2:
            lines.append(f"- {what}: **{fmt(r1, '{:.2f}')}×** per CPU-1 second, {fmt(r2, '{:.2f}')}× forwarded pps")
    lines += ["", "## Scheduler accuracy", "", "| case | configured | measured | error |", "|---|---|---|---|"]
    for s in sched:
        lines.append(f"| {s['case']} | {s['configured']:.4g} | {s['measured']:.4g} | {s['error'] * 100:+.2f}% |")
    save("pipeline", meta, lines, results=results, sched=sched)

    def draw(plt):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
        ks = list(results)
        a1.bar(ks, [results[k]["forwarded_pps"] or 0 for k in ks], label="forwarded pps")
        a1.set_ylabel("packets/s")
        a1.tick_params(axis="x", rotation=30)
        a2.bar(ks, [results[k]["pps_per_core_s"] or 0 for k in ks], color="tab:orange", label="per CPU-1 second")
        a2.set_ylabel("packets per busy core-second")
        a2.tick_params(axis="x", rotation=30)
        finish(fig, [a1, a2], "pipeline", grid="y")
    plot(draw)


if __name__ == "__main__":
    main()
