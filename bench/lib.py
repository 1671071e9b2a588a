"""Helpers shared by the benchmarks: commands in namespaces, CPU accounting from /proc, a
cpuset that holds a server (and every thread it makes) on the server core, medians."""

import json, os, platform, signal, statistics, subprocess, sys, time

SRV_CPU, GEN_CPU = 1, 0


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kw)


def ns(n, *args, **kw):
    return sh("ip", "netns", "exec", n, *args, **kw)


def cpu_busy(cpu):
    """Busy CPU-seconds of one core so far (user+nice+system+irq+softirq+steal)."""
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


def server_kind(kind, default_bin):
    """A/B runs: a server kind with the suffix "@base" (SERVERS=sirocco,sirocco@base) runs the
    sirocco binary BASE_BIN names, built from another commit, with the same arguments; load
    generators stay this build's. Returns (the kind without the suffix, the binary)."""
    name, _, which = kind.partition("@")
    if which == "":
        return name, default_bin
    if which != "base" or not os.environ.get("BASE_BIN"):
        sys.exit(f"bench: server '{kind}': only '@base' is known, and it needs BASE_BIN=path/to/sirocco")
    return name, os.environ["BASE_BIN"]


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
