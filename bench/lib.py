"""Helpers shared by the benchmarks: commands in namespaces, CPU accounting from /proc, a
cpuset that holds a server (and every thread it makes) on the server core, medians."""

import contextlib, json, os, platform, re, signal, statistics, subprocess, sys, time

SRV_CPU, GEN_CPU = 1, 0
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SIROCCO = os.path.join(ROOT, "target", "release", "sirocco")
BUILD = os.path.join(ROOT, "target", "bench")
# Every point is the median of REPS runs of SECS seconds.
SECS = float(os.environ.get("SECS", "10"))
REPS = int(os.environ.get("REPS", "3"))


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kw)


def ns(n, *args, **kw):
    return sh("ip", "netns", "exec", n, *args, **kw)


def cpu_busy(cpu):
    """Busy CPU-seconds of one core so far: the time it was not in an idle state, from the
    cpuidle driver's residency counters (microseconds, exact), where there is one. /proc/stat's
    per-core times are sampled at the scheduler tick, which a tickless idle core does not take:
    a mostly idle core's short bursts go uncounted there (measured on this VM: 0 s busy over a
    run where the server process alone used more), so it is only the fallback."""
    states = f"/sys/devices/system/cpu/cpu{cpu}/cpuidle"
    try:
        idle_us = sum(int(open(os.path.join(states, s, "time")).read())
                      for s in os.listdir(states) if s.startswith("state"))
        return time.monotonic() - idle_us / 1e6
    except OSError:
        pass
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                v = [int(x) for x in line.split()[1:]]
                idle = v[3] + v[4]
                return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")
    raise RuntimeError("no cpu line")


def proc_cpu(pid):
    """utime+stime of a process in seconds (None if it is gone)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except FileNotFoundError:
        return None
    fields = s[s.rindex(")") + 2:].split()  # the name may contain spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop_process(proc, timeout=10):
    """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def env_list(name, default, conv=str):
    """A comma-separated list from the environment (empty items dropped)."""
    return [conv(x) for x in os.environ.get(name, default).split(",") if x]


def preflight():
    """Root, two CPUs (server on one, load on the other), and this tree's sirocco built."""
    if os.geteuid() != 0:
        sys.exit("bench: needs root")
    if os.cpu_count() < 2:
        sys.exit("bench: needs 2 CPUs (server on CPU 1, load on CPU 0)")
    os.makedirs(BUILD, exist_ok=True)
    sh("cargo", "build", "--release", "-q", "-p", "sirocco", cwd=ROOT)


@contextlib.contextmanager
def child_ehash(buckets):
    """Namespaces made inside get an established-socket hash of `buckets` of their own (0:
    the host's shared one). A namespace takes the sysctl's value when it is made, so it is
    set for that moment only. The host's shared table (262 144 buckets here) would chain a
    million client sockets four deep, and every segment's lookup on the clients' side would
    walk them."""
    if not buckets:
        yield
        return
    key = "/proc/sys/net/ipv4/tcp_child_ehash_entries"
    with open(key) as f:
        before = f.read().strip()
    try:
        with open(key, "w") as f:
            f.write(str(buckets))
        yield
    finally:
        with open(key, "w") as f:
            f.write(before)


class Testnet:
    """The benchmark's two namespaces joined by veth (`sirocco testnet up --bench`), as a
    context: up on entry (after clearing a stale one), down on exit, even on failure."""

    def __init__(self, name, ehash=0):
        self.name, self.ehash = name, ehash
        self.srv_ns, self.cli_ns, self.srv_if, self.cli_if = f"{name}-srv", f"{name}-cli", f"{name}-s", f"{name}-c"

    def __enter__(self):
        sh(SIROCCO, "testnet", "down", "--name", self.name, check=False)
        with child_ehash(self.ehash):
            sh(SIROCCO, "testnet", "up", "--name", self.name, "--queues", "1", "--bench")
        return self

    def __exit__(self, *_):
        sh(SIROCCO, "testnet", "down", "--name", self.name, check=False)


def veth_chain(names, pairs, cpus, macs):
    """Fresh namespaces `names` (any left by an earlier run removed first) joined by veth
    `pairs` ((end, its namespace, peer, its namespace), each end with its MAC from `macs`);
    every end up, checksum offload off (frames forwarded in user space are not summed
    later), GRO on and NAPI threaded, each end's NAPI thread on the CPU `cpus` gives it."""
    for n in names:
        sh("ip", "netns", "del", n, check=False)
    for n in names:
        sh("ip", "netns", "add", n)
        ns(n, "ip", "link", "set", "lo", "up")
    for (a, an, b, bn) in pairs:
        sh("ip", "link", "add", a, "netns", an, "address", macs[a], "type", "veth", "peer", "name", b,
           "netns", bn, "address", macs[b])
    ends = [(an, a) for (a, an, _, _) in pairs] + [(bn, b) for (_, _, b, bn) in pairs]
    for n, i in ends:
        ns(n, "ethtool", "-K", i, "tx", "off", "gro", "on")
        ns(n, "ip", "link", "set", i, "up")
        ns(n, "sh", "-c", f"echo 1 > /sys/class/net/{i}/threaded")
    time.sleep(0.3)
    for _, i in ends:
        sh("sh", "-c", f"for p in $(pgrep -f 'napi/{i}-'); do taskset -pc {cpus[i]} $p >/dev/null; done")


def fresh_runs(make_server, run, show):
    """REPS runs of one point, each on a freshly started server: start, run(server), stop.
    show(rep, result, what stop() returned) reports each run. Returns the results."""
    return turn_runs([None], lambda _: make_server(), run, lambda _, rep, r, said: show(rep, r, said))[None]


def turn_runs(kinds, make_server, run, show):
    """REPS runs of one point for each server kind, the servers taking turns within each
    repetition (this machine's speed drifts by tens of percent over minutes: one server's runs
    all in a row would meet it at another time than the others'), each run on a freshly
    started make_server(kind). show(kind, rep, result, what stop() returned) reports each
    run. Returns {kind: [results]}."""
    runs = {kind: [] for kind in kinds}
    for rep in range(REPS):
        for kind in kinds:
            srv = make_server(kind)
            srv.start()
            try:
                r = run(srv)
            finally:
                said = srv.stop()
            runs[kind].append(r)
            show(kind, rep, r, said)
    return runs


# The test certificate and key (public test material) both servers use for HTTPS.
CERTS = os.path.join(ROOT, "crates", "tls", "tests", "certs")


def nginx_argv(listen, root, work="/tmp/sirocco-bench-nginx", tls=False, http_extra=""):
    """nginx as the web benchmarks run it: one worker, sendfile, no access log, keep-alive
    for 10 000 requests (sirocco's --max-requests default), a deep backlog; with `tls`, HTTPS
    on port 443 too (TLS 1.3, OpenSSL in user space: this kernel has no kernel TLS, so
    sendfile does not apply there); `http_extra`: more directives for its http block. Writes
    its configuration under `work` and returns the command line."""
    https = (f" listen {listen}:443 ssl backlog=4096; ssl_protocols TLSv1.3;"
             f" ssl_certificate {CERTS}/server.pem; ssl_certificate_key {CERTS}/server.key;") if tls else ""
    os.makedirs(work, exist_ok=True)
    conf = (f"worker_processes 1;\ndaemon off;\npid {work}/nginx.pid;\nerror_log {work}/error.log;\n"
            "events { worker_connections 8192; }\n"
            "http {\n include /etc/nginx/mime.types;\n default_type application/octet-stream;\n"
            " access_log off;\n sendfile on;\n tcp_nopush on;\n server_tokens off;\n"
            f" keepalive_requests 10000;\n{http_extra}"
            f" client_body_temp_path {work};\n proxy_temp_path {work};\n fastcgi_temp_path {work};\n"
            f" uwsgi_temp_path {work};\n scgi_temp_path {work};\n"
            f" server {{ listen {listen}:80 backlog=4096;{https} root {root}; }}\n}}\n")
    with open(f"{work}/nginx.conf", "w") as f:
        f.write(conf)
    return ["nginx", "-c", f"{work}/nginx.conf"]


# Where the web benchmarks' servers listen: nginx on the kernel's address, sirocco on its own.
KERNEL_ADDR, OWN_ADDR = "198.18.0.1", "198.18.0.10"


class WebServer:
    """One server of the web benchmarks, in `cpuset` on the test network `net`: nginx (kind
    "nginx", see nginx_argv) or `sirocco web` with `args` (a kind's "@" variants: see server_kind)."""

    def __init__(self, kind, net, cpuset, root, args, tls=False):
        self.proc, self.net, self.cs, self.root, self.args, self.tls = None, net, cpuset, root, args, tls
        self.kind, self.bin = server_kind(kind, SIROCCO)
        self.args = args + server_flags(kind)
        self.addr = KERNEL_ADDR if self.kind == "nginx" else OWN_ADDR

    def start(self):
        if self.kind == "nginx":
            argv = nginx_argv(KERNEL_ADDR, self.root, tls=self.tls)
        else:
            argv = [self.bin, "web", "--iface", self.net.srv_if, "--addr", OWN_ADDR, "--queues", "1",
                    "--cpus", str(SRV_CPU), "--root", self.root] + self.args
            if self.tls:
                argv += ["--tls-cert", f"{CERTS}/server.pem", "--tls-key", f"{CERTS}/server.key"]
        self.proc = subprocess.Popen(self.cs.wrap(["ip", "netns", "exec", self.net.srv_ns] + argv),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.kind} did not start: {self.proc.stderr.read()}")

    def stop(self):
        stop_process(self.proc)
        return self.proc.stdout.read() if self.proc.stdout else ""


_client_seq = 0


def gen_http(net, dst, paths, conns, close=False, batch=None, rate=0):
    """One `sirocco gen http` run of SECS seconds on GEN_CPU, from a fresh client address
    each time (no run meets the TIME-WAIT connections the last one left at the server).
    `paths` is one path or a file of paths (.paths); `rate` requests/s in all (open loop),
    0 for a closed loop. Returns its JSON report."""
    global _client_seq
    _client_seq += 1
    addr = f"198.18.0.{20 + _client_seq % 200}"
    j = f"/tmp/sirocco-bench-gen-{os.getpid()}.json"
    argv = [SIROCCO, "gen", "http", "--iface", net.cli_if, "--addr", addr, "--dst", dst, "--queues", "1",
            "--cpus", str(GEN_CPU), "--conns", str(conns), "--duration", str(SECS), "--json", j]
    argv += ["--paths-file", paths] if paths.endswith(".paths") else ["--path", paths]
    if close:
        argv.append("--close")
    if batch:
        argv += ["--batch", str(batch)]
    if rate:
        argv += ["--rate", str(rate)]
    r = ns(net.cli_ns, *argv, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"gen http failed: {r.stdout}{r.stderr}")
    with open(j) as f:
        g = json.load(f)
    os.unlink(j)
    return g


def wrk(net, url, paths, conns):
    """One wrk run of SECS seconds on GEN_CPU (the kernel's TCP in the client namespace, and
    OpenSSL for https URLs), one thread, `conns` keep-alive connections asking for the paths
    in the file `paths` in turn. Returns Gb/s (response bytes), requests/s and errors."""
    lua = f"/tmp/sirocco-bench-wrk-{os.getpid()}.lua"
    with open(lua, "w") as f:
        f.write(f"""local paths = {{}}
for l in io.lines("{paths}") do paths[#paths + 1] = l end
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end
done = function(s, lat, req)
  local e = s.errors
  io.write(string.format("RESULT %d %d %d %d\\n", s.bytes, s.requests, s.duration,
    e.connect + e.read + e.write + e.status))
end
""")
    secs = max(1, int(SECS))
    r = ns(net.cli_ns, "taskset", "-c", str(GEN_CPU), "wrk", "-t1", f"-c{conns}", f"-d{secs}s", "--timeout", "60s",
           "-s", lua, url, check=False)
    os.unlink(lua)
    line = next((l for l in r.stdout.splitlines() if l.startswith("RESULT ")), None)
    if r.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed: {r.stdout}{r.stderr}")
    nbytes, reqs, dur_us, errors = (int(x) for x in line.split()[1:])
    dur = dur_us / 1e6
    return {"gbps": nbytes * 8 / dur / 1e9, "req_per_s": reqs / dur, "errors": errors}


def kxdpgun(cli_ns, cli_if, qpath, rate, dst, srv_cpu_time, tcp=False):
    """Runs kxdpgun for SECS seconds at `rate` queries/s from `qpath` (each over a TCP
    connection of its own with `tcp`), pinned to GEN_CPU; returns the queries sent, the
    answers, the queries/s it reached, the rcode counts, and the busy CPU-seconds of the
    server core and of `srv_cpu_time()` over the run."""
    for attempt in range(3):
        b0, p0 = cpu_busy(SRV_CPU), srv_cpu_time()
        r = ns(cli_ns, "taskset", "-c", str(GEN_CPU), "kxdpgun", "-t", str(int(SECS)), "-Q", str(rate), "-F",
               str(GEN_CPU), *(["-T"] if tcp else []), "-i", qpath, "-I", cli_if, dst, check=False)
        b1, p1 = cpu_busy(SRV_CPU), srv_cpu_time()
        out = r.stdout + r.stderr
        # The last run's socket may not be released yet (seen after a flood): wait, try again.
        if "resource is busy" not in out:
            break
        time.sleep(2)
    m = re.search(r"total (?:queries|SYNs):\s+(\d+) \((\d+) pps\)", out)
    a = re.search(r"total replies:\s+(\d+) \((\d+) pps\)", out)
    if not (m and a):
        raise RuntimeError(f"kxdpgun: {out}")
    rcodes = {k: int(v) for k, v in re.findall(r"responded (\w+):\s+(\d+)", out)}
    return {"sent": int(m.group(1)), "sent_qps": int(m.group(2)), "answers": int(a.group(1)), "rcodes": rcodes,
            "core_s": b1 - b0, "proc_s": p1 - p0}


def median_of(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


class Cpuset:
    """A cpuset cgroup pinned to one CPU. Servers that set their own thread affinity (Knot
    pins its workers) cannot leave it, so every server gets the same single core."""

    def __init__(self, name, cpu):
        v1 = "/sys/fs/cgroup/cpuset"
        if os.path.isdir(v1) and os.path.exists(os.path.join(v1, "cpuset.cpus")):
            self.path = os.path.join(v1, name)
            os.makedirs(self.path, exist_ok=True)
            with open(os.path.join(self.path, "cpuset.cpus"), "w") as f:
                f.write(str(cpu))
            with open(os.path.join(self.path, "cpuset.mems"), "w") as f:
                f.write("0")
        else:
            root = "/sys/fs/cgroup"
            with open(os.path.join(root, "cgroup.subtree_control"), "w") as f:
                f.write("+cpuset")
            self.path = os.path.join(root, name)
            os.makedirs(self.path, exist_ok=True)
            with open(os.path.join(self.path, "cpuset.cpus"), "w") as f:
                f.write(str(cpu))

    def wrap(self, argv):
        """argv run inside the cpuset (the shell joins it, then execs)."""
        return ["sh", "-c", f'echo $$ > {self.path}/cgroup.procs && exec "$@"', "cpuset"] + list(argv)

    def pids(self):
        with open(os.path.join(self.path, "cgroup.procs")) as f:
            return [int(p) for p in f.read().split()]

    def cpu(self):
        """CPU-seconds of every process in the set."""
        return sum(proc_cpu(p) or 0 for p in self.pids())

    def remove(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass


# BENCH_OUT sends a run's files elsewhere (an A/B check), leaving the published results alone.
OUT = os.environ.get("BENCH_OUT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


BUSY_POLL = {"bp-on": "on", "bp-off": "off", "bp-auto": "auto"}


def server_kind(kind, default_bin):
    """Variants of a sirocco server, as suffixes after "@" joined by "+": "base" runs the
    sirocco binary BASE_BIN names, built from another commit, with the same arguments (A/B
    runs; load generators stay this build's); "bp-on", "bp-off", "bp-auto" add --busy-poll
    (see server_flags); "spins-N" adds --idle-spins N. SERVERS=sirocco@bp-off,sirocco@bp-on
    compares them in one run.
    Returns (the kind without the suffixes, the binary)."""
    name, _, suffixes = kind.partition("@")
    binary = default_bin
    for s in filter(None, suffixes.split("+")):
        if s == "base" and os.environ.get("BASE_BIN"):
            binary = os.environ["BASE_BIN"]
        elif s not in BUSY_POLL and not re.fullmatch(r"spins-\d+", s):
            sys.exit(f"bench: server '{kind}': '@{s}' is not base (with BASE_BIN=path/to/sirocco), "
                     "bp-on/off/auto or spins-N")
    return name, binary


def server_flags(kind):
    """The extra sirocco options a kind's suffixes ask for (see server_kind)."""
    _, _, suffixes = kind.partition("@")
    flags = []
    for s in suffixes.split("+"):
        if s in BUSY_POLL:
            flags += ["--busy-poll", BUSY_POLL[s]]
        elif s.startswith("spins-"):
            flags += ["--idle-spins", s.removeprefix("spins-")]
    return flags


def fmt(v, f="{:.0f}"):
    """A number for a table, or a dash when there is none."""
    return f.format(v) if v is not None else "–"


def run_meta(**extra):
    """What every results file records about the run: date, kernel, CPUs, and the run's own."""
    return {"date": time.strftime("%Y-%m-%d"), "kernel": platform.release(), "cpus": os.cpu_count(), **extra}


def save(name, meta, lines, **data):
    """Writes results/NAME.json ({"meta": .., **data}) and results/NAME.md (the lines), and
    prints the lines."""
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, f"{name}.json"), "w") as f:
        json.dump({"meta": meta, **data}, f, indent=1)
    with open(os.path.join(OUT, f"{name}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def finish(fig, axes, name, dpi=110, grid="both", legend_size=None):
    """Grid and legend on each of `axes`, then the figure saved as OUT/NAME.png."""
    for a in axes:
        a.grid(alpha=0.3, axis=grid)
        a.legend(fontsize=legend_size)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, f"{name}.png"), dpi=dpi)


def plot(draw):
    """Calls draw(plt) with matplotlib's pyplot on a file backend; draw saves its figures
    under OUT. Without matplotlib, says so and draws nothing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench: matplotlib missing, no plot (apt-get install python3-matplotlib)")
        return
    draw(plt)


def size_curves(name, xlabel, results, panels):
    """OUT/NAME.png: one panel per (title, key, scale) of `panels` against the state's size
    on a log axis, a line per server of `results` ({kind: {size: [runs]}}) through the median
    of each size's runs[key] × scale (sizes without runs left out)."""
    def draw(plt):
        fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.2))
        for kind, by_size in results.items():
            xs = [n for n in sorted(by_size) if median_of(by_size[n], panels[0][1]) is not None]
            for ax, (_, key, scale) in zip(axes, panels):
                ax.plot(xs, [median_of(by_size[n], key) * scale for n in xs], marker="o", label=kind)
        for ax, (title, _, _) in zip(axes, panels):
            ax.set_xscale("log")
            ax.set_xlabel(xlabel)
            ax.set_title(title)
            ax.set_ylim(bottom=0)
        finish(fig, axes, name)
    plot(draw)


def group_pids(pgid):
    """The processes of process group `pgid` (the server and its children)."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[2]) == pgid:
                pids.append(p)
        except (OSError, ValueError, IndexError):
            continue
    return pids


def group_threads_named(pgid, name):
    """Threads named `name` in the processes of process group `pgid`."""
    n = 0
    for p in group_pids(pgid):
        try:
            n += sum(open(f"/proc/{p}/task/{t}/comm").read().strip() == name for t in os.listdir(f"/proc/{p}/task"))
        except OSError:
            continue
    return n


def settled_rss_of_group(pgid, limit=10.0):
    """[`rss_of_group`] once it holds still (two reads half a second apart within 1 %, at most
    `limit` seconds): a server that gives memory back after it starts answering (sirocco
    frees a parsed zone meanwhile) is measured at what it keeps."""
    last, t = rss_of_group(pgid), time.time()
    while time.time() - t < limit:
        time.sleep(0.5)
        now = rss_of_group(pgid)
        if abs(now - last) <= last / 100:
            return now
        last = now
    return last


def rss_of_group(pgid):
    """Resident bytes of every process in process group `pgid` (the server and its children)."""
    total = 0
    for p in group_pids(pgid):
        try:
            m = re.search(r"VmRSS:\s+(\d+) kB", open(f"/proc/{p}/status").read())
            total += int(m.group(1)) * 1024 if m else 0
        except OSError:
            continue
    return total
