"""Streaming over emulated wide-area paths: `sirocco web` against nginx, each serving one
file to FLOWS parallel curl downloads (the kernel's TCP, CUBIC, on the client), through the
WAN emulator of scripts/pipeline/wan.pipeline — `sirocco pipeline` with Delay and Loss
modules between the client's and the server's namespaces (this kernel has no netem).

Client and pipeline on CPU 0, the server on CPU 1. Each point: a round-trip time and a loss
rate (both directions); reported: Gb/s of all flows together, the median of REPS runs, and
the ratio sirocco/nginx. The RTT the client sees is checked with ping through the same
pipeline before each point."""

import os, re, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (REPS, SRV_CPU, GEN_CPU, SIROCCO, BUILD, ROOT, sh, ns, stop_process, veth_chain, env_list, preflight,  # noqa: E402
                 run_meta, save, finish, plot, fmt, WebServer, Cpuset, KERNEL_ADDR, OWN_ADDR)

C, W, S = "wnc", "wnw", "wns"
CI, WC, WS, SI = "wnc0", "wnwc", "wnws", "wns0"
MAC = {CI: "02:00:00:00:0c:01", WC: "02:00:00:00:0c:fe", WS: "02:00:00:00:0d:fe", SI: "02:00:00:00:0d:01"}
CLIENT_ADDR = "198.18.0.2"
RTTS = env_list("RTTS", "10,50,100", int)
LOSSES = env_list("LOSSES", "0,0.001", float)
FLOWS = int(os.environ.get("FLOWS", "4"))
FILE_MB = int(os.environ.get("FILE_MB", "64"))
SERVERS = env_list("SERVERS", "sirocco,nginx")
DOCROOT = os.path.join(BUILD, "wan-root")
WAN_SCRIPT = os.path.join(ROOT, "scripts", "pipeline", "wan.pipeline")


class Net:
    """client C — [WC pipeline WS] — S server; the server side's NAPI on CPU 1."""
    srv_ns, srv_if = S, SI

    def __enter__(self):
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
        return self

    def down(self):
        for n in (C, W, S):
            sh("ip", "netns", "del", n, check=False)

    def __exit__(self, *_):
        self.down()


def wan(rtt_ms, loss):
    """The shipped WAN script with this point's interfaces, one band of RTT/2 each way, and
    the loss rate."""
    with open(WAN_SCRIPT) as f:
        text = f.read()
    text = text.replace('"wan0"', f'"{WC}"').replace('"wan1"', f'"{WS}"')
    text = re.sub(r"bands=\[[^\]]*\]", f"bands=[{rtt_ms / 2}]", text)
    text = re.sub(r"rate=[0-9.]+", f"rate={loss}", text)
    path = f"/tmp/sirocco-bench-wan-{os.getpid()}.pipeline"
    with open(path, "w") as f:
        f.write(text)
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


def download(addr):
    """FLOWS parallel downloads of the file; returns Gb/s of them together."""
    procs = [subprocess.Popen(["ip", "netns", "exec", C, "taskset", "-c", str(GEN_CPU), "curl", "-s", "-o", "/dev/null",
                               "--max-time", "300", "-w", "%{size_download} %{time_total}", f"http://{addr}/big.bin"],
                              stdout=subprocess.PIPE, text=True) for _ in range(FLOWS)]
    t0 = time.time()
    sizes = []
    for p in procs:
        out = p.communicate()[0].split()
        sizes.append(int(out[0]) if out else 0)
    wall = time.time() - t0
    if any(s != FILE_MB << 20 for s in sizes):
        raise RuntimeError(f"incomplete downloads: {sizes}")
    return sum(sizes) * 8 / wall / 1e9


def main():
    preflight()
    os.makedirs(DOCROOT, exist_ok=True)
    big = os.path.join(DOCROOT, "big.bin")
    if not os.path.exists(big) or os.path.getsize(big) != FILE_MB << 20:
        with open(big, "wb") as f:
            f.write(os.urandom(FILE_MB << 20))
    cs = Cpuset("sirocco-bench-wan", SRV_CPU)
    results = []
    try:
        with Net() as net:
            for rtt in RTTS:
                for loss in LOSSES:
                    pl = wan(rtt, loss)
                    try:
                        seen = measured_rtt()
                        point = {"rtt_ms": rtt, "loss": loss, "ping_rtt_ms": seen}
                        for kind in SERVERS:
                            srv = WebServer(kind, net, cs, DOCROOT, [])
                            srv.start()
                            try:
                                runs = [download(srv.addr) for _ in range(REPS)]
                            finally:
                                srv.stop()
                            point[kind] = sorted(runs)[len(runs) // 2]
                            point[kind + "_runs"] = runs
                            print(f"rtt {rtt} ms (ping {fmt(seen, '{:.1f}')}) loss {loss * 100:.2f}%: {kind} "
                                  f"{point[kind]:.2f} Gb/s {['%.2f' % r for r in runs]}", flush=True)
                    finally:
                        stop_process(pl)
                    results.append(point)
    finally:
        cs.remove()
    write(results)


def write(results):
    meta = run_meta(reps=REPS, flows=FLOWS, file_mb=FILE_MB,
                    placement="client and WAN pipeline on CPU 0, server on CPU 1; client TCP: the kernel's CUBIC")
    lines = [f"# Streaming over emulated WAN paths ({meta['date']}, kernel {meta['kernel']})", "",
             f"{FLOWS} parallel curl downloads of a {FILE_MB} MiB file, median of {REPS} runs, through "
             "`sirocco pipeline` running scripts/pipeline/wan.pipeline (Delay and Loss, both directions).", "",
             "| RTT (ms) | ping RTT (ms) | loss each way | sirocco Gb/s | nginx Gb/s | sirocco / nginx |", "|---|---|---|---|---|---|"]
    for p in results:
        s, n = p.get("sirocco"), p.get("nginx")
        r = s / n if s and n else None
        lines.append(f"| {p['rtt_ms']} | {fmt(p['ping_rtt_ms'], '{:.1f}')} | {p['loss'] * 100:.2f}% | {fmt(s, '{:.2f}')} | "
                     f"{fmt(n, '{:.2f}')} | {fmt(r, '{:.2f}')}× |")
    save("wan", meta, lines, results=results)

    def draw(plt):
        fig, ax = plt.subplots(figsize=(8, 4))
        labels = [f"{p['rtt_ms']} ms\n{p['loss'] * 100:.1f}%" for p in results]
        xs = range(len(results))
        for i, kind in enumerate(SERVERS):
            ax.bar([x + i * 0.4 for x in xs], [p.get(kind) or 0 for p in results], width=0.4, label=kind)
        ax.set_xticks([x + 0.2 for x in xs])
        ax.set_xticklabels(labels)
        ax.set_ylabel("Gb/s, all flows")
        finish(fig, [ax], "wan", grid="y")
    plot(draw)


if __name__ == "__main__":
    main()
