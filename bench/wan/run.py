"""Downloads over emulated wide-area paths: `sirocco web` against nginx, each serving one
file to FLOWS parallel curl downloads (the kernel's TCP, CUBIC, on the client), through a
WAN emulator built from `sirocco pipeline` modules between the client's and the server's
namespaces (this kernel has no netem):

    server -> Queue(size = QUEUE_BDP x BDP, rate = BOTTLENECK_MBPS)   the bottleneck link
           -> Delay(RTT/2) -> Loss(LOSS)                             the path
    client -> Delay(RTT/2) -> Loss(LOSS)                             the ACKs' way back

The bottleneck matters: without it the emulator's own receive ring is the narrowest point,
overflows in bursts (6.5 % of the frames of a kernel sender at 1 Gb/s, measured), and the
comparison is of how hard each sender pushes into an overloaded middlebox rather than of
congestion control on a path. BOTTLENECK_MBPS=0 removes it (as before issue 38).

The congestion control is chosen per server kind: "sirocco" and "nginx" run CUBIC (RFC 9438),
"sirocco-bbr" (`--tcp-cc bbr`) and "nginx-bbr" run BBR (the kernel's in the server's namespace);
each is compared with its like; "sirocco-paced" is CUBIC with `--tcp-pacing`, against "nginx". Mind the machine's default:
on this kind of machine it is BBR (`sysctl net.ipv4.tcp_congestion_control`), which every new
namespace inherits — a comparison with "the kernel" that does not set it compares CUBIC with
BBR, and BBR by design does not slow down for random loss.

Client and emulator on CPU 0, the server on CPU 1. Each point: a round-trip time, a loss rate
(both directions), a mode (static: sirocco's pre-packetised segments; stream: Atlas's disk
streaming, `--mode stream`) and a protocol (HTTP or HTTPS; nginx has sendfile, and TLS 1.3 in
OpenSSL for HTTPS). Repetitions interleave the servers; reported: Gb/s of all flows together
per server (median of REPS) and the median of the per-repetition ratios sirocco/nginx with
their spread. SHARED=1 adds a shared-bottleneck point per RTT: one sirocco and one nginx
download at once through the same bottleneck, each one's share of what both got.

Environment: REPS (3), RTTS (ms: 10,50,100,200), LOSSES (fractions: 0,0.001,0.01,0.02), MODES
(static,stream), PROTOS (http,https), FLOWS (4), FILE_MB (64), BOTTLENECK_MBPS (500),
QUEUE_BDP (1), SERVERS (sirocco,nginx,sirocco-bbr,nginx-bbr), SHARED (1), SECS (20: a download still running
then is stopped and counted by what it got, so that a lossy long path does not take an hour),
OUT_NAME (wan)."""

import os, re, statistics, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (REPS, SRV_CPU, GEN_CPU, SIROCCO, BUILD, sh, ns, stop_process, veth_chain, env_list, preflight,  # noqa: E402
                 run_meta, save, finish, plot, fmt, WebServer, Cpuset, KERNEL_ADDR, OWN_ADDR)

C, W, S = "wnc", "wnw", "wns"
CI, WC, WS, SI = "wnc0", "wnwc", "wnws", "wns0"
MAC = {CI: "02:00:00:00:0c:01", WC: "02:00:00:00:0c:fe", WS: "02:00:00:00:0d:fe", SI: "02:00:00:00:0d:01"}
CLIENT_ADDR = "198.18.0.2"
RTTS = env_list("RTTS", "10,50,100,200", int)
LOSSES = env_list("LOSSES", "0,0.001,0.01,0.02", float)
MODES = env_list("MODES", "static,stream")
PROTOS = env_list("PROTOS", "http,https")
FLOWS = int(os.environ.get("FLOWS", "4"))
FILE_MB = int(os.environ.get("FILE_MB", "64"))
BOTTLENECK_MBPS = float(os.environ.get("BOTTLENECK_MBPS", "500"))
QUEUE_BDP = float(os.environ.get("QUEUE_BDP", "1"))
SERVERS = env_list("SERVERS", "sirocco,nginx,sirocco-bbr,nginx-bbr")
# Each sirocco kind against the nginx kind with the same congestion control.
PAIRS = (("sirocco", "nginx", "ratio"), ("sirocco-bbr", "nginx-bbr", "ratio_bbr"), ("sirocco-paced", "nginx", "ratio_paced"))
SHARED = os.environ.get("SHARED", "1") == "1"
OUT_NAME = os.environ.get("OUT_NAME", "wan")
SECS = float(os.environ.get("SECS", "20"))
DOCROOT = os.path.join(BUILD, "wan-root")
FRAME = 1514


class Net:
    """client C — [WC pipeline WS] — S server; the server side's NAPI on CPU 1."""
    srv_ns, srv_if = S, SI

    def __enter__(self):
        # A namespace may only pick an algorithm the host allows (this machine allows reno and
        # bbr): CUBIC is allowed for the run, and the host's list put back after it.
        self.allowed = sh("sysctl", "-n", "net.ipv4.tcp_allowed_congestion_control").stdout.strip()
        if "cubic" not in self.allowed.split():
            sh("sysctl", "-q", "-w", f"net.ipv4.tcp_allowed_congestion_control={self.allowed} cubic")
        veth_chain((C, W, S), ((CI, C, WC, W), (SI, S, WS, W)),
                   {CI: GEN_CPU, WC: GEN_CPU, WS: GEN_CPU, SI: SRV_CPU}, MAC)
        ns(C, "ip", "addr", "add", f"{CLIENT_ADDR}/24", "dev", CI)
        ns(S, "ip", "addr", "add", f"{KERNEL_ADDR}/24", "dev", SI)
        for a in (KERNEL_ADDR, OWN_ADDR):
            ns(C, "ip", "neigh", "replace", a, "lladdr", MAC[SI], "dev", CI, "nud", "permanent")
        ns(S, "ip", "neigh", "replace", CLIENT_ADDR, "lladdr", MAC[CI], "dev", SI, "nud", "permanent")
        # Long fat pipes: let the client's window grow as far as the path needs.
        ns(C, "sysctl", "-q", "-w", "net.ipv4.tcp_rmem=4096 131072 67108864")
        ns(S, "sysctl", "-q", "-w", "net.ipv4.tcp_wmem=4096 131072 67108864")
        # Each run starts from the defaults: no ssthresh remembered from the last one.
        ns(S, "sysctl", "-q", "-w", "net.ipv4.tcp_no_metrics_save=1")
        return self

    def down(self):
        for n in (C, W, S):
            sh("ip", "netns", "del", n, check=False)
        sh("sysctl", "-q", "-w", f"net.ipv4.tcp_allowed_congestion_control={self.allowed}", check=False)

    def __exit__(self, *_):
        self.down()


def wan_script(rtt_ms, loss):
    """The emulator for one point: the bottleneck queue on the data's way (server to client)
    unless BOTTLENECK_MBPS is 0, then RTT/2 and the loss each way."""
    half = rtt_ms / 2
    if BOTTLENECK_MBPS > 0:
        bdp = BOTTLENECK_MBPS * 1e6 * rtt_ms / 1e3 / 8
        size = max(64, int(QUEUE_BDP * bdp / FRAME))
        bottleneck = f"Queue(size={size}, rate={int(BOTTLENECK_MBPS * 1e6)}) -> "
    else:
        bottleneck = ""
    return (f'a :: PortInc(port="{WC}")\n'
            f'b :: PortInc(port="{WS}")\n'
            f'a -> Delay(delay_ms={half}) -> Loss(rate={loss}, seed=1) -> PortOut(port="{WS}")\n'
            f'b -> {bottleneck}Delay(delay_ms={half}) -> Loss(rate={loss}, seed=2) -> PortOut(port="{WC}")\n')


def wan(rtt_ms, loss):
    path = f"/tmp/sirocco-bench-wan-{os.getpid()}.pipeline"
    with open(path, "w") as f:
        f.write(wan_script(rtt_ms, loss))
    log = open(path + ".log", "w")
    p = subprocess.Popen(["ip", "netns", "exec", W, SIROCCO, "pipeline", "--script", path, "--cpus", str(GEN_CPU)],
                         stdout=subprocess.DEVNULL, stderr=log)
    t = time.time()
    while " running: " not in open(path + ".log").read():
        if p.poll() is not None or time.time() - t > 30:
            raise RuntimeError(f"the WAN pipeline did not start: {open(path + '.log').read()}")
        time.sleep(0.1)
    return p


def measured_rtt():
    out = ns(C, "ping", "-c", "5", "-i", "0.2", "-W", "3", KERNEL_ADDR, check=False).stdout
    m = re.search(r"= ([0-9.]+)/([0-9.]+)/", out)
    return float(m.group(2)) if m else None


def url(addr, proto):
    return f"https://{addr}:443/big.bin" if proto == "https" else f"http://{addr}/big.bin"


def curl(addr, proto):
    return subprocess.Popen(["ip", "netns", "exec", C, "taskset", "-c", str(GEN_CPU), "curl", "-s", "-k", "-o", "/dev/null",
                             "--max-time", str(SECS), "-w", "%{size_download} %{time_total}", url(addr, proto)],
                            stdout=subprocess.PIPE, text=True)


def finished(p):
    """(bytes, seconds) of a download: whole, or cut at SECS (curl's exit 28) with what it got."""
    out = p.communicate()[0].split()
    size, secs = (int(out[0]), float(out[1])) if len(out) == 2 else (0, 0.0)
    if p.returncode not in (0, 28) or size == 0 or (p.returncode == 0 and size != FILE_MB << 20):
        raise RuntimeError(f"download failed (curl exit {p.returncode}): {size} bytes")
    return size, secs


def download(addr, proto):
    """FLOWS parallel downloads of the file; Gb/s of them together (bytes over the wall time
    until the last one finished)."""
    t0 = time.time()
    procs = [curl(addr, proto) for _ in range(FLOWS)]
    total = sum(finished(p)[0] for p in procs)
    return total * 8 / (time.time() - t0) / 1e9


def server(kind, net, cs, mode, proto):
    """A server of `kind`; for nginx kinds, the server namespace's congestion control is set
    first (the kernel's sockets take it when they are made)."""
    if kind.startswith("nginx"):
        ns(S, "sysctl", "-q", "-w", f"net.ipv4.tcp_congestion_control={'bbr' if kind == 'nginx-bbr' else 'cubic'}")
        kind = "nginx"
    args = ["--mode", "stream"] if mode == "stream" and kind != "nginx" else []
    if kind.startswith("sirocco-bbr"):
        kind, args = "sirocco" + kind[len("sirocco-bbr"):], args + ["--tcp-cc", "bbr"]
    elif kind.startswith("sirocco-paced"):
        kind, args = "sirocco" + kind[len("sirocco-paced"):], args + ["--tcp-pacing"]
    return WebServer(kind, net, cs, DOCROOT, args, tls=proto == "https")


def resets_out(said):
    m = re.search(r"resets out (\d+)", said or "")
    return int(m.group(1)) if m else 0


def grid_point(net, cs, rtt, loss, mode, proto, seen):
    point = {"rtt_ms": rtt, "loss": loss, "mode": mode, "proto": proto, "ping_rtt_ms": seen}
    runs = {k: [] for k in SERVERS}
    resets = 0
    for rep in range(REPS):
        for kind in SERVERS:
            srv = server(kind, net, cs, mode, proto)
            srv.start()
            try:
                runs[kind].append(download(srv.addr, proto))
            finally:
                said = srv.stop()
            resets += resets_out(said) if not kind.startswith("nginx") else 0
            print(f"  {mode} {proto} rtt {rtt} loss {loss * 100:.1f}% rep {rep}: {kind} {runs[kind][-1]:.3f} Gb/s", flush=True)
    for kind in SERVERS:
        point[kind] = statistics.median(runs[kind])
        point[kind + "_runs"] = runs[kind]
    for ours, peer, key in PAIRS:
        if ours in runs and peer in runs:
            ratios = [s / n for s, n in zip(runs[ours], runs[peer])]
            point[key] = statistics.median(ratios)
            point[key + "_min"], point[key + "_max"] = min(ratios), max(ratios)
    point["sirocco_resets_out"] = resets
    return point


def shared_point(net, cs, rtt, loss, seen):
    """One sirocco download and one nginx download at once through the bottleneck: each one's
    share of the two together, per repetition."""
    shares = []
    for rep in range(REPS):
        srv_s, srv_n = server("sirocco", net, cs, "static", "http"), server("nginx", net, cs, "static", "http")
        srv_s.start()
        srv_n.start()
        try:
            ps, pn = curl(OWN_ADDR, "http"), curl(KERNEL_ADDR, "http")
            (bs, ts), (bn, tn) = finished(ps), finished(pn)
        finally:
            srv_s.stop()
            srv_n.stop()
        # Both ran at once until the first finished; the share is of the rates while both ran.
        rs, rn = bs / ts, bn / tn
        shares.append(rs / (rs + rn))
        print(f"  shared rtt {rtt} loss {loss * 100:.1f}% rep {rep}: sirocco {rs * 8 / 1e9:.3f} Gb/s, "
              f"nginx {rn * 8 / 1e9:.3f} Gb/s, sirocco's share {shares[-1]:.2f}", flush=True)
    return {"rtt_ms": rtt, "loss": loss, "ping_rtt_ms": seen, "sirocco_share": statistics.median(shares),
            "shares": shares}


def main():
    preflight()
    os.makedirs(DOCROOT, exist_ok=True)
    big = os.path.join(DOCROOT, "big.bin")
    if not os.path.exists(big) or os.path.getsize(big) != FILE_MB << 20:
        with open(big, "wb") as f:
            f.write(os.urandom(FILE_MB << 20))
    cs = Cpuset("sirocco-bench-wan", SRV_CPU)
    grid, shared = [], []
    try:
        with Net() as net:
            for rtt in RTTS:
                for loss in LOSSES:
                    pl = wan(rtt, loss)
                    try:
                        seen = measured_rtt()
                        print(f"rtt {rtt} ms (ping {fmt(seen, '{:.1f}')}), loss {loss * 100:.1f}% each way", flush=True)
                        for mode in MODES:
                            for proto in PROTOS:
                                p = grid_point(net, cs, rtt, loss, mode, proto, seen)
                                grid.append(p)
                                print(f"= {mode} {proto} rtt {rtt} loss {loss * 100:.1f}%: " + ", ".join(
                                    f"{k} {p[k]:.3f} Gb/s" for k in SERVERS) + "".join(
                                    f", {o}/{n} {p[r]:.2f} [{p[r + '_min']:.2f}-{p[r + '_max']:.2f}]"
                                    for o, n, r in PAIRS if r in p), flush=True)
                        if SHARED and BOTTLENECK_MBPS > 0 and loss == LOSSES[0]:
                            shared.append(shared_point(net, cs, rtt, loss, seen))
                    finally:
                        stop_process(pl)
    finally:
        cs.remove()
    write(grid, shared)


def write(grid, shared):
    neck = (f"a {BOTTLENECK_MBPS:.0f} Mb/s bottleneck with a drop-tail queue of {QUEUE_BDP:g} BDP"
            if BOTTLENECK_MBPS > 0 else "no bottleneck (the emulator's own capacity)")
    meta = run_meta(reps=REPS, flows=FLOWS, file_mb=FILE_MB, bottleneck_mbps=BOTTLENECK_MBPS, queue_bdp=QUEUE_BDP,
                    placement="client and WAN pipeline on CPU 0, server on CPU 1; client TCP: the kernel's CUBIC")
    lines = [f"# Downloads over emulated WAN paths ({meta['date']}, kernel {meta['kernel']})", "",
             f"{FLOWS} parallel curl downloads of a {FILE_MB} MiB file through `sirocco pipeline` ({neck}, then the "
             f"delay and random loss each way; see bench/wan/run.py). Gb/s: the median of {REPS} runs; sirocco/nginx: the "
             "median of the per-repetition ratios [min-max] (the servers take turns within each repetition).", "",
             "| mode | proto | RTT (ms) | ping (ms) | loss each way | sirocco (CUBIC) | nginx (CUBIC) | ratio | "
             "sirocco (BBR) | nginx (BBR) | ratio | sirocco (CUBIC, paced) | ratio | sirocco resets out |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def ratio(p, r):
        return f"**{p[r]:.2f}×** [{p[r + '_min']:.2f}–{p[r + '_max']:.2f}]" if r in p else "–"
    for p in grid:
        g = lambda k: fmt(p.get(k), '{:.3f}')  # noqa: E731
        lines.append(f"| {p['mode']} | {p['proto']} | {p['rtt_ms']} | {fmt(p['ping_rtt_ms'], '{:.1f}')} | {p['loss'] * 100:.1f}% | "
                     f"{g('sirocco')} | {g('nginx')} | {ratio(p, 'ratio')} | {g('sirocco-bbr')} | {g('nginx-bbr')} | "
                     f"{ratio(p, 'ratio_bbr')} | {g('sirocco-paced')} | {ratio(p, 'ratio_paced')} | "
                     f"{p['sirocco_resets_out']} |")
    if shared:
        lines += ["", "Shared bottleneck: one sirocco and one nginx download at once (HTTP, static); sirocco's share of "
                  "the two rates (median of the repetitions; a fair share is 0.5).", "",
                  "| RTT (ms) | loss each way | sirocco's share | per repetition |", "|---|---|---|---|"]
        for s in shared:
            lines.append(f"| {s['rtt_ms']} | {s['loss'] * 100:.1f}% | {s['sirocco_share']:.2f} | "
                         f"{', '.join('%.2f' % x for x in s['shares'])} |")
    save(OUT_NAME, meta, lines, results=grid, shared=shared)

    def draw(plt):
        fig, ax = plt.subplots(figsize=(max(8, len(grid) * 0.45), 4))
        xs = range(len(grid))
        ax.bar([x - 0.2 for x in xs], [p.get("ratio") or 0 for p in grid], width=0.4, label="CUBIC: sirocco / nginx")
        ax.bar([x + 0.2 for x in xs], [p.get("ratio_bbr") or 0 for p in grid], width=0.4, label="BBR: sirocco / nginx")
        ax.axhline(0.9, color="tab:red", linestyle="--", linewidth=1, label="goal 0.9×")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"{p['mode'][:2]} {p['proto'][:5]}\n{p['rtt_ms']} ms {p['loss'] * 100:g}%" for p in grid],
                           fontsize=6, rotation=90)
        ax.set_ylabel("sirocco / nginx, same algorithm")
        ax.legend()
        finish(fig, [ax], OUT_NAME, grid="y")
    plot(draw)


if __name__ == "__main__":
    main()
