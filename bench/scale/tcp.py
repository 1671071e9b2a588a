#!/usr/bin/env python3
"""How TCP's cost grows with the connections held (issue 44): sirocco web against nginx, each
confined to the server core, taking turns in REPS rounds. For each size N of CONNS (default
1000,10000,100000,1000000): N kernel clients (bench/scale/holder.c, several processes: this
machine caps a process at 20 000 files) on 40 source addresses connect at once, each asks for
a 1 KB file once and then idles on its keep-alive connection. Measured per round and server:

- **time to accept the set**: from the first connect to the last response;
- **memory per connection**: the server's resident memory (all its processes) plus, for
  nginx, the kernel's memory for its sockets, over the same server holding none and started
  with its smallest limits (so tables preallocated for N count). The kernel's part is the rise
  of the kernel's live slab objects plus the sockets' buffer pages (`/proc/net/sockstat`) in the nginx round less the
  same rise in sirocco's round at the same N: there only the clients' sockets are the kernel's;
- **requests/s of the active 1 %**: wrk, A = max(10, N/100) keep-alive connections asking for
  the 1 KB file for SECS seconds, once with no idle connection (before the holders connect)
  and once among the N idle ones; their ratio is issue 44's "≥ 90 % of the rate with no idle";
- **closing all at once**: the holders close every connection, and the time until the server
  holds at most 0.1 % of them (sirocco's `sirocco_tcp_connections` gauge; the server
  namespace's sockets in use for nginx), and how many it still holds then or after 90 s (a
  connection whose peer's FIN and RST were both lost waits for the idle timeout).

nginx runs max(1, N/15000) worker processes (reuseport; the same file cap) with 19 500
connections each, all on the server core; its baseline has as many workers with 1 024.

MODE=echo: the same for TCP echo — sirocco `echo --proto tcp` against the epoll echo server of
bench/tcp-echo (built -DLEAN: no buffer per connection while nothing is pending; one process
per 15 000 connections with SO_REUSEPORT, as nginx), the idle connections sending nothing
and the active 1 % running `echo_client` (64-byte round trips on connections that last the
run).

Both namespaces get an established-socket hash of their own, sized for the largest N (the
host's shared one would chain a million client sockets four deep). PERF_DIR=dir: both cores
sampled by perf in each active run, and a table of each core's running time per request.

Writes bench/results/scale-tcp.{md,json,png} (scale-tcp-echo.* with MODE=echo; OUT_NAME to
change the name; REPORT_FROM=bench/results/NAME.json writes the tables and plot again from a
run's results)."""

import json, os, re, shutil, signal, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from lib import (sh, ns, env_list, preflight, Cpuset, Testnet, stop_process, SECS, REPS, SIROCCO,  # noqa: E402
                 SRV_CPU, GEN_CPU, run_meta, save, plot, finish, wrk, server_kind, rss_of_group, cpu_busy)

MODE = os.environ.get("MODE", "web")
PEER = {"web": "nginx", "echo": "epoll"}[MODE]
CONNS = env_list("CONNS", "1000,10000,100000,1000000", int)
SERVERS = env_list("SERVERS", f"sirocco,{PEER}")
# nginx above this many connections is left out: on this machine (a process holds at most
# 20 000 files, so nginx runs one worker per 15 000) it took 269 s to hold 910 224 of a
# million, and the kernel was still closing the rest minutes later (2026-11-27).
NGINX_MAX = int(os.environ.get("NGINX_MAX", "300000"))  # the peer (nginx or epoll echo) in either mode
# A directory: perf records both cores during each active run into it (see perf_table).
PERF_DIR = os.environ.get("PERF_DIR")
OUT_NAME = os.environ.get("OUT_NAME", "scale-tcp" if MODE == "web" else "scale-tcp-echo")
PORT = 80 if MODE == "web" else 7
ECHO_SIZE = 64
# Each namespace its own socket hash, two buckets per connection of the largest size (see
# Testnet): both servers' rounds are measured on it (nginx's sockets are in it too).
NET = Testnet("bt", ehash=min(2**24, 1 << (2 * max(CONNS) - 1).bit_length()))
KERNEL_ADDR, OWN_ADDR = "198.18.0.1", "198.18.0.10"
SOURCES = [f"198.18.0.{i}" for i in range(100, 140)]
PER_HOLDER = 18_000
METRICS = "127.0.0.1:9109"
BODY = 1024


def sockstat_pages(netns):
    out = ns(netns, "cat", "/proc/net/sockstat").stdout
    m = re.search(r"TCP: .* mem (\d+)", out)
    return int(m.group(1)) if m else 0


def kernel_bytes():
    """The kernel's live slab objects (every cache's active objects times their size: the
    slabs' own total would count objects freed by an earlier round and kept cached) plus the
    TCP buffer pages of both namespaces."""
    live = 0
    with open("/proc/slabinfo") as f:
        for line in f.readlines()[2:]:
            x = line.split()
            live += int(x[1]) * int(x[3])
    return live + 4096 * (sockstat_pages(NET.srv_ns) + sockstat_pages(NET.cli_ns))


def tcp_inuse(netns):
    out = ns(netns, "cat", "/proc/net/sockstat").stdout
    return int(re.search(r"TCP: inuse (\d+)", out).group(1))


class Server:
    def __init__(self, kind, cs, root, n, small=False):
        self.kind, self.cs, self.root, self.n, self.small = kind, cs, root, n, small
        self.inuse0 = 0
        # "sirocco@base": the binary BASE_BIN names (an A/B run), see lib.server_kind.
        self.bin = server_kind(kind, SIROCCO)[1]
        self.addr = KERNEL_ADDR if kind == PEER else OWN_ADDR
        self.proc = None

    def start(self):
        if self.kind == "nginx":
            workers = max(1, -(-self.n // 15_000))
            per = 1024 if self.small else 19_500
            work = "/tmp/sirocco-bench-scale-nginx"
            os.makedirs(work, exist_ok=True)
            conf = (f"worker_processes {workers};\ndaemon off;\npid {work}/nginx.pid;\nerror_log {work}/error.log;\n"
                    f"worker_rlimit_nofile 20000;\nevents {{ worker_connections {per}; }}\n"
                    "http {\n default_type application/octet-stream;\n access_log off;\n sendfile on;\n"
                    " keepalive_requests 1000000;\n keepalive_timeout 3600s;\n client_header_timeout 3600s;\n"
                    f" client_body_temp_path {work};\n proxy_temp_path {work};\n fastcgi_temp_path {work};\n"
                    f" uwsgi_temp_path {work};\n scgi_temp_path {work};\n"
                    f" server {{ listen {KERNEL_ADDR}:80 reuseport backlog=65535; root {self.root}; }}\n}}\n")
            with open(f"{work}/nginx.conf", "w") as f:
                f.write(conf)
            argv = ["nginx", "-c", f"{work}/nginx.conf"]
        elif self.kind == "epoll":
            workers = max(1, -(-self.n // 15_000))
            argv = ["sh", "-c", f"for i in $(seq {workers}); do {EPOLL_ECHO} {KERNEL_ADDR} {PORT} reuseport & done; wait"]
        elif MODE == "echo":
            argv = [self.bin, "echo", "--proto", "tcp", "--iface", NET.srv_if, "--addr", OWN_ADDR, "--port", str(PORT),
                    "--queues", "1", "--cpus", str(SRV_CPU), "--tcp-mode", "echo",
                    "--max-conns", str(1024 if self.small else self.n + self.n // 50 + 1024), "--metrics", METRICS]
        else:
            argv = [self.bin, "web", "--iface", NET.srv_if, "--addr", OWN_ADDR, "--queues", "1", "--cpus", str(SRV_CPU),
                    "--root", self.root, "--max-conns", str(1024 if self.small else self.n + self.n // 50 + 1024),
                    "--header-timeout", "3600", "--idle-timeout", "3600", "--max-requests", "1000000",
                    "--metrics", METRICS]
        self.proc = subprocess.Popen(self.cs.wrap(["ip", "netns", "exec", NET.srv_ns] + argv), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        time.sleep(2.5)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.kind} did not start: {self.proc.stdout.read()}")
        self.inuse0 = tcp_inuse(NET.srv_ns)

    def rss(self):
        return rss_of_group(self.proc.pid)

    def open_conns(self):
        if self.kind == PEER:
            return tcp_inuse(NET.srv_ns) - self.inuse0
        text = ns(NET.srv_ns, "curl", "-s", f"http://{METRICS}/metrics").stdout
        m = re.search(r"^sirocco_tcp_connections\{[^}]*\} (\d+)", text, re.M)
        return int(m.group(1)) if m else -1

    def stop(self):
        if self.kind == "epoll":
            # The workers are the shell's children, in its process group.
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        stop_process(self.proc)
        subprocess.run(["pkill", "-f", "sirocco-bench-scale-nginx"], check=False)


def hold(addr, n, limit=300):
    """Holder processes for n connections; returns them once all reported (or the limit)."""
    procs, left, i = [], n, 0
    while left > 0:
        k = min(PER_HOLDER, left)
        # Each holder its own slice of the source addresses' order, so the connects interleave.
        ask = ["/1k.bin", str(BODY)] if MODE == "web" else []
        p = subprocess.Popen(["ip", "netns", "exec", NET.cli_ns, "taskset", "-c", str(GEN_CPU), HOLDER, addr, str(PORT),
                              str(k), SOURCES[0], str(len(SOURCES)), "2048", str(limit)] + ask,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(p)
        left -= k
        i += 1
    reports = []
    for p in procs:
        line = p.stdout.readline()
        if not line:
            raise RuntimeError(f"holder failed: {p.stderr.read()}")
        reports.append(json.loads(line))
    return procs, reports


def release(procs):
    for p in procs:
        try:
            p.stdin.write("x\n")
            p.stdin.flush()
        except BrokenPipeError:
            pass
    for p in procs:
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()


def active(srv, n, paths):
    """The active 1 %'s rate, with the busy share of the server core and of the client core
    (wrk and the clients' kernel) over the run."""
    prof = None
    if PERF_DIR:
        # Where each core's time goes (cpu-clock samples: this VM has no hardware counters),
        # one file per server, size, phase and core, to compare alone against among idle.
        phase = "among" if srv.open_conns() > max(10, n // 100) else "alone"
        prof = [subprocess.Popen(["perf", "record", "-q", "-C", str(cpu), "-F", "4999", "-o",
                                  os.path.join(PERF_DIR, f"{srv.kind}-{n}-{phase}-{side}.data")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for cpu, side in ((SRV_CPU, "server"), (GEN_CPU, "client"))]
    b0, t0 = (cpu_busy(SRV_CPU), cpu_busy(GEN_CPU)), time.monotonic()
    rate = active_rate(srv, n, paths)
    dt = time.monotonic() - t0
    busy = ((cpu_busy(SRV_CPU) - b0[0]) / dt, (cpu_busy(GEN_CPU) - b0[1]) / dt)
    if not prof:
        return rate, busy[0], busy[1], None
    sampled = {}
    for p, side in zip(prof, ("server", "client")):
        p.send_signal(signal.SIGINT)
        p.wait(timeout=60)
        sampled[side] = perf_seen(os.path.join(PERF_DIR, f"{srv.kind}-{n}-{phase}-{side}.data"))
    return rate, busy[0], busy[1], sampled


def perf_seen(path):
    """From a core's cpu-clock samples: the seconds it ran code (any task but the idle one)
    and the span of the samples. (An idle core is not always sampled here, so the samples'
    total is not the span; the running time is what a busy core's samples add up to: a spin
    loop here, 5.00 s of 5.00 s.)"""
    rep = subprocess.run(["perf", "report", "-i", path, "--stdio", "--sort", "comm"], capture_output=True, text=True).stdout
    seen = int(re.search(r"Event count \(approx\.\): (\d+)", rep).group(1)) / 1e9
    m = re.search(r"([\d.]+)%\s+swapper", rep)
    idle = float(m.group(1)) / 100 if m else 0.0
    times = subprocess.run(["perf", "script", "-i", path, "-F", "time"], capture_output=True, text=True).stdout.split()
    span = float(times[-1].rstrip(":")) - float(times[0].rstrip(":")) if len(times) > 1 else 0.0
    return {"ran_s": seen * (1 - idle), "span_s": span}


def active_rate(srv, n, paths):
    a = max(10, n // 100)
    if MODE == "echo":
        r = ns(NET.cli_ns, "taskset", "-c", str(GEN_CPU), ECHO_CLIENT, srv.addr, str(PORT), str(a), str(ECHO_SIZE),
               str(10**12), str(SECS), check=False)
        if r.returncode != 0:
            raise RuntimeError(f"echo_client: {r.stdout}{r.stderr}")
        c = json.loads(r.stdout)
        if c["corrupt"]:
            raise RuntimeError(f"{srv.kind}: {c['corrupt']} corrupt echoes")
        return c["msgs_per_s"]
    r = wrk(NET, f"http://{srv.addr}/", paths, a)
    if r["errors"]:
        raise RuntimeError(f"wrk: {r['errors']} errors against {srv.kind}")
    return r["req_per_s"]


def drained(limit=180):
    """Waits (bounded) until neither namespace has a TCP socket a process holds and at most
    a thousand orphans are still closing, so one round's closing does not run into the next's
    (a few orphans whose FIN went unanswered take the kernel minutes to give up)."""
    t = time.time()
    while time.time() - t < limit:
        held, orphans = 0, 0
        for netns in (NET.srv_ns, NET.cli_ns):
            out = ns(netns, "cat", "/proc/net/sockstat").stdout
            m = re.search(r"TCP: inuse (\d+) orphan (\d+)", out)
            held += int(m.group(1)) - int(m.group(2))
            orphans += int(m.group(2))
        if held <= 0 and orphans <= 1000:
            return
        time.sleep(0.5)


def prepare_network():
    """The clients' source addresses and ports, and the server's accept queues, for N."""
    for a in SOURCES:
        ns(NET.cli_ns, "ip", "addr", "add", f"{a}/24", "dev", NET.cli_if)
    ns(NET.cli_ns, "sysctl", "-qw", "net.ipv4.ip_local_port_range=1024 65535")
    ns(NET.srv_ns, "sysctl", "-qw", "net.core.somaxconn=65535", "net.ipv4.tcp_max_syn_backlog=65535")


def one_round(kind, n, cs, root, paths, baseline):
    srv = Server(kind, cs, root, n)
    k0 = kernel_bytes()
    srv.start()
    try:
        rss0 = srv.rss()
        alone, srv_busy0, cli_busy0, perf0 = active(srv, n, paths)
        procs, reports = hold(srv.addr, n)
        up = sum(r["up"] for r in reports)
        accept_s = max(r["secs"] for r in reports)
        time.sleep(1)
        rss1, k1 = srv.rss(), kernel_bytes()
        among, srv_busy1, cli_busy1, perf1 = active(srv, n, paths)
        held_after = srv.open_conns()
        c0 = time.time()
        release(procs)
        # Until all but 0.1 % are gone: a peer whose last FIN or RST was lost (the client
        # kernel gives up on orphans in such a storm) leaves its connection to the idle timeout.
        close_s, left = None, None
        while time.time() - c0 < 90:
            left = srv.open_conns()
            if left <= n // 1000:
                close_s = time.time() - c0
                break
            time.sleep(0.1)
    finally:
        srv.stop()
        drained()
    r = {"up": up, "accept_s": accept_s, "rss_delta": rss1 - baseline[(kind, n)], "rss_start": rss0, "kernel_delta": k1 - k0,
         "alone_rps": alone, "among_rps": among, "held_after": held_after, "close_s": close_s,
         "busy": {"server_alone": srv_busy0, "client_alone": cli_busy0, "server_among": srv_busy1, "client_among": cli_busy1},
         "left_after_close": left}
    if perf0 and perf1:
        r["perf"] = {"alone": perf0, "among": perf1}
    print(f"  {kind:8} N={n}: up {up} in {accept_s:.2f} s, left after close {left}, rss +{(rss1 - baseline[(kind, n)]) / 2**20:.0f} MiB, "
          f"kernel +{(k1 - k0) / 2**20:.0f} MiB, active {alone:.0f} -> {among:.0f} req/s (server core busy "
          f"{srv_busy0:.2f} -> {srv_busy1:.2f}, client core {cli_busy0:.2f} -> {cli_busy1:.2f}), closed in {close_s}",
          flush=True)
    return r


def main():
    preflight()
    global HOLDER, EPOLL_ECHO, ECHO_CLIENT
    tmp = tempfile.mkdtemp(prefix="sirocco-bench-scale-tcp-")
    os.chmod(tmp, 0o755)  # nginx's workers run as www-data
    HOLDER = os.path.join(tmp, "holder")
    sh("gcc", "-O2", "-o", HOLDER, os.path.join(HERE, "holder.c"))
    EPOLL_ECHO, ECHO_CLIENT = os.path.join(tmp, "epoll_echo"), os.path.join(tmp, "echo_client")
    echo_src = os.path.join(HERE, "..", "tcp-echo")
    sh("gcc", "-O2", "-DLEAN", "-o", EPOLL_ECHO, os.path.join(echo_src, "epoll_echo.c"))
    sh("gcc", "-O2", "-o", ECHO_CLIENT, os.path.join(echo_src, "echo_client.c"))
    root = os.path.join(tmp, "root")
    os.makedirs(root)
    with open(os.path.join(root, "1k.bin"), "wb") as f:
        f.write(bytes(i % 251 for i in range(BODY)))
    paths = os.path.join(tmp, "paths")
    with open(paths, "w") as f:
        f.write("/1k.bin\n")
    cs = Cpuset("sirocco-bench-scale", SRV_CPU)
    results = {k: {n: [] for n in CONNS} for k in SERVERS}
    try:
        with NET:
            prepare_network()
            # Each server's memory with its smallest limits and no connection.
            # Each server's memory with its smallest limits and no connection (nginx with as
            # many workers as it runs for N: their number is the file cap's, not nginx's).
            baseline = {}
            for kind in SERVERS:
                for n in CONNS:
                    if kind == PEER and n > NGINX_MAX:
                        continue
                    srv = Server(kind, cs, root, n, small=True)
                    srv.start()
                    baseline[(kind, n)] = srv.rss()
                    srv.stop()
                    print(f"{kind} for {n}, holding nothing: {baseline[(kind, n)] / 2**20:.0f} MiB", flush=True)
            for rep in range(REPS):
                for n in CONNS:
                    for kind in (SERVERS if rep % 2 == 0 else SERVERS[::-1]):
                        if kind == PEER and n > NGINX_MAX:
                            continue
                        results[kind][n].append(one_round(kind, n, cs, root, paths, baseline))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(results, baseline)


def med(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else None


def perf_table(results):
    """With PERF_DIR: each core's sampled running time per request alone and among the idle
    (is the cost per request growing?) and the share of the run its running samples cover."""
    rows = []
    for n in CONNS:
        for kind in SERVERS:
            rs = [r for r in results[kind][n] if "perf" in r]
            if not rs:
                continue
            cells = []
            for side in ("server", "client"):
                per = [med([r["perf"][ph][side]["ran_s"] / (r[f"{ph}_rps"] * r["perf"][ph][side]["span_s"]) * 1e6 for r in rs])
                       for ph in ("alone", "among")]
                busy = [med([r["perf"][ph][side]["ran_s"] / r["perf"][ph][side]["span_s"] for r in rs]) for ph in ("alone", "among")]
                cells += [f"{per[0]:.1f} / {per[1]:.1f} ({per[1] / per[0]:.2f}×)", f"{busy[0]:.0%} / {busy[1]:.0%}"]
            rows.append(f"| {n} | {kind} | {len(rs)} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return ["", "## Where the time went (perf, cpu-clock samples; medians)", "",
            "Each core's running time per request, sampled, alone / among the idle (the cost of a request as the "
            "connections grow), and the share of the run its running samples cover (the rest: idle, or time this VM's "
            "guest did not see: an epoll server the cpuidle counters call fully busy was seen 63 % of a run among a "
            "million sockets).", "",
            "| N | server | rounds | server core µs/req | server core ran | client core µs/req | client core ran |",
            "|---|---|---|---|---|---|---|"] + rows


def report(results, baseline):
    meta = run_meta(secs=SECS, reps=REPS, conns=CONNS, servers=SERVERS, nginx_max=NGINX_MAX,
                    baseline={f"{k} {n}": v for (k, n), v in baseline.items()})
    lines = [f"# TCP as the connections grow ({meta['date']}, kernel {meta['kernel']})", "",
             f"{REPS} rounds, servers in turns on the server core; medians. " + (
                 "Idle connections asked for a 1 KB file once and hold keep-alive; the active 1 % ask for it in a loop (wrk)."
                 if MODE == "web" else
                 f"TCP echo against an epoll echo server on the kernel (one process per 15 000 connections). Idle connections "
                 f"send nothing; the active 1 % make {ECHO_SIZE}-byte round trips in a loop (echo_client; rates are messages/s)."), "",
             "| N | server | up | accept s | server bytes/conn | kernel bytes/conn | total bytes/conn | active req/s alone | among idle | ratio | "
             "server core µs/req alone / among | client core busy among | close s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = {}
    for n in CONNS:
        client_kernel = med([r["kernel_delta"] for r in results.get("sirocco", {}).get(n, [])])
        for kind in SERVERS:
            rs = results[kind][n]
            if not rs:
                continue
            server = med([r["rss_delta"] / n for r in rs])
            kern = (med([r["kernel_delta"] for r in rs]) - client_kernel) / n if kind == PEER and client_kernel is not None else 0
            ratio = med([r["among_rps"] / r["alone_rps"] for r in rs])
            s = summary.setdefault(n, {})[kind] = {
                "server_per_conn": server, "kernel_per_conn": kern, "total_per_conn": server + kern,
                "alone_rps": med([r["alone_rps"] for r in rs]), "among_rps": med([r["among_rps"] for r in rs]),
                "ratio": ratio, "accept_s": med([r["accept_s"] for r in rs]), "close_s": med([r["close_s"] for r in rs]),
                "up": med([r["up"] for r in rs])}
            # The server core's busy time per request (µs) alone and among the idle, and how
            # busy the client core was among them (1.0: the clients are the limit).
            busy = [r["busy"] for r in rs if "busy" in r]
            for key, phase, rate in (("us_alone", "server_alone", "alone_rps"), ("us_among", "server_among", "among_rps")):
                s[key] = med([b[phase] / r[rate] * 1e6 for b, r in zip(busy, rs)]) if busy else None
            s["client_busy_among"] = med([b["client_among"] for b in busy]) if busy else None
            close = f"{s['close_s']:.1f}" if s["close_s"] is not None else "–"
            us = (f"{s['us_alone']:.1f} / {s['us_among']:.1f}" if s["us_alone"] is not None else "–")
            cli = f"{s['client_busy_among']:.2f}" if s["client_busy_among"] is not None else "–"
            lines.append(f"| {n} | {kind} | {s['up']} | {s['accept_s']:.2f} | {server:.0f} | {kern:.0f} | "
                         f"{server + kern:.0f} | {s['alone_rps']:.0f} | {s['among_rps']:.0f} | {ratio:.2f} | {us} | {cli} | {close} |")
    lines += perf_table(results)
    if "sirocco" in SERVERS and PEER in SERVERS:
        lines += ["", f"## sirocco against {PEER} and the kernel (medians)", ""]
        for n, s in summary.items():
            if "sirocco" in s and PEER in s:
                lines.append(f"- {n} connections: memory per connection **{s['sirocco']['total_per_conn'] / s[PEER]['total_per_conn']:.2f}×** "
                             f"{PEER} + kernel ({s['sirocco']['total_per_conn']:.0f} vs {s[PEER]['total_per_conn']:.0f} bytes); "
                             f"active 1 % keep **{s['sirocco']['ratio']:.0%}** of their rate alone ({PEER} {s[PEER]['ratio']:.0%}); "
                             f"accepted in {s['sirocco']['accept_s']:.2f} s vs {s[PEER]['accept_s']:.2f} s")
    save(OUT_NAME, meta, lines, results={k: {str(n): v for n, v in d.items()} for k, d in results.items()},
         summary={str(n): v for n, v in summary.items()})

    def draw(plt):
        fig, axes = plt.subplots(1, 3, figsize=(15, 4))
        for kind in SERVERS:
            xs = [n for n in CONNS if kind in summary.get(n, {})]
            axes[0].plot(xs, [summary[n][kind]["total_per_conn"] for n in xs], marker="o", label=kind)
            axes[1].plot(xs, [summary[n][kind]["among_rps"] for n in xs], marker="o", label=f"{kind} among idle")
            axes[1].plot(xs, [summary[n][kind]["alone_rps"] for n in xs], marker="x", ls=":", label=f"{kind} alone")
            axes[2].plot(xs, [summary[n][kind]["accept_s"] for n in xs], marker="o", label=kind)
        for a, t in zip(axes, ["bytes per idle connection (server + its kernel)", "requests/s of the active 1 %",
                               "seconds to accept the set"]):
            a.set_xscale("log")
            a.set_title(t)
            a.set_xlabel("connections held")
        finish(fig, axes, OUT_NAME)
    plot(draw)


if __name__ == "__main__":
    if os.environ.get("REPORT_FROM"):
        # The tables and plot again from a run's results (REPORT_FROM=results/NAME.json).
        with open(os.environ["REPORT_FROM"]) as f:
            saved = json.load(f)
        CONNS = sorted({int(n) for d in saved["results"].values() for n in d})
        SERVERS, REPS = list(saved["results"]), saved["meta"]["reps"]
        report({k: {int(n): v for n, v in d.items()} for k, d in saved["results"].items()},
               {(k.rsplit(" ", 1)[0], int(k.rsplit(" ", 1)[1])): v for k, v in saved["meta"]["baseline"].items()})
    else:
        main()
