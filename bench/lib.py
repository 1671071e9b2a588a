"""Helpers shared by the benchmarks: commands in namespaces, CPU accounting from /proc, a
cpuset that holds a server (and every thread it makes) on the server core, medians."""

import os, signal, statistics, subprocess

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
