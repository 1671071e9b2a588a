#!/usr/bin/env python3
"""How streaming's cost grows with the files served (issue 44): `sirocco web --mode stream`
(Atlas: bodies read from disk with O_DIRECT as each connection's window opens) against nginx
1.22 with sendfile (and, as SERVERS=sirocco,nginx,nginx-ofc, nginx keeping its open files
with `open_file_cache`), each confined to the server core, taking turns in REPS rounds. For each
size N of FILES (default 100, 1 000, 10 000, 100 000) a tree of N files of FILE_KB KiB (hard
links into one pool, made once and kept under target/bench), and per round and server:

- the set's pages dropped from the page cache (a cold disk);
- **start**: from the server's launch to its first `200` for a file of the set (a probe every
  20 ms) — sirocco lists the tree and opens nothing until asked; nginx opens per request;
- **resident memory once started**, and its growth over the 100-file tree per file;
- **1 000 concurrent streams** (wrk, keep-alive, the tree's paths in a shuffled order) for
  SECS seconds: Gb/s, requests/s, errors, and the resident memory in the middle of the run
  over the idle server's, per stream (sirocco's read buffers come from `--stream-memory`, 256
  MiB here, held in the UMEM from the start; nginx's sockets are the kernel's, not counted).

A sirocco kind may carry lib.server_kind's suffixes: SERVERS=sirocco@base,sirocco,nginx with
BASE_BIN=path/to/sirocco compares another build in the same run (each against the peers).

DISK_MBPS=N throttles the server's reads from the files' disk to N MB/s (a cgroup v1 blkio
limit on the server's processes): a slow or busy disk, as a cold one below a VM can be.

FILE_KB other than 128 makes a pool and trees of its own. STREAM_MEMORY (MiB, default 256)
and STREAM_ARGS (e.g. "--stream-buffer 1024") change sirocco's read buffers.

Writes bench/results/scale-stream.{md,json,png} (OUT_NAME to change the name)."""

import os, random, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from lib import (sh, ns, env_list, server_kind, server_flags, preflight, Cpuset, Testnet, stop_process, SECS, REPS, SIROCCO, BUILD,  # noqa: E402
                 SRV_CPU, run_meta, save, size_curves, wrk, nginx_argv, rss_of_group, KERNEL_ADDR, OWN_ADDR)

FILES = env_list("FILES", "100,1000,10000,100000", int)
FILE_KB = int(os.environ.get("FILE_KB", "128"))
CONNS = int(os.environ.get("CONNS", "1000"))
SERVERS = env_list("SERVERS", "sirocco,nginx")
OUT_NAME = os.environ.get("OUT_NAME", "scale-stream")
# sirocco's read buffers (MiB), and more options for it, e.g. "--stream-buffer 1024".
STREAM_MEMORY = int(os.environ.get("STREAM_MEMORY", "256"))
STREAM_ARGS = os.environ.get("STREAM_ARGS", "").split()
DISK_MBPS = float(os.environ.get("DISK_MBPS", "0"))
NET = Testnet("bv")
# Files of another size than the first runs' 128 KiB get a pool and trees of their own.
SIZED = "" if FILE_KB == 128 else f"-{FILE_KB}k"
POOL = os.path.join(BUILD, "scale-stream", f"pool{SIZED}")


def make_trees():
    """The pool of max(FILES) files, and for each N a tree of hard links to its first N files
    (in folders of 1 000, as a CDN's origin would lay them out)."""
    most = max(FILES)
    os.makedirs(POOL, exist_ok=True)
    chunk = os.urandom(1 << 20)
    size = FILE_KB << 10
    for i in range(most):
        p = os.path.join(POOL, f"{i}.bin")
        if os.path.exists(p) and os.path.getsize(p) == size:
            continue
        with open(p, "wb") as f:
            f.write((chunk[i % 997:] + chunk[:i % 997])[:size] if size <= len(chunk) else os.urandom(size))
    trees = {}
    for n in FILES:
        root = os.path.join(BUILD, "scale-stream", f"tree-{n}{SIZED}")
        paths = [f"/d{i // 1000}/{i}.bin" for i in range(n)]
        if not os.path.exists(os.path.join(root, "done")):
            for i in range(n):
                p = os.path.join(root, paths[i][1:])
                os.makedirs(os.path.dirname(p), exist_ok=True)
                if not os.path.exists(p):
                    os.link(os.path.join(POOL, f"{i}.bin"), p)
            open(os.path.join(root, "done"), "w").close()
        order = paths[:]
        random.Random(n).shuffle(order)
        plist = os.path.join(BUILD, "scale-stream", f"tree-{n}{SIZED}.paths")
        with open(plist, "w") as f:
            f.writelines(p + "\n" for p in order)
        trees[n] = (root, plist, paths[n // 2])
    return trees


class DiskLimit:
    """A blkio cgroup (v1) limiting reads from the device holding `path` to `mbps` MB/s for
    the processes started through wrap(); none when mbps is 0."""

    def __init__(self, path, mbps):
        self.path = None
        if not mbps:
            return
        if not os.path.isdir("/sys/fs/cgroup/blkio"):
            sys.exit("bench: DISK_MBPS needs the cgroup v1 blkio controller at /sys/fs/cgroup/blkio")
        dev = os.stat(path).st_dev
        self.path = "/sys/fs/cgroup/blkio/sirocco-bench-disk"
        os.makedirs(self.path, exist_ok=True)
        with open(os.path.join(self.path, "blkio.throttle.read_bps_device"), "w") as f:
            f.write(f"{os.major(dev)}:{os.minor(dev)} {int(mbps * 1e6)}")

    def wrap(self, argv):
        if not self.path:
            return argv
        return ["sh", "-c", f'echo $$ > {self.path}/cgroup.procs && exec "$@"', "blkio"] + list(argv)

    def remove(self):
        if self.path:
            try:
                os.rmdir(self.path)
            except OSError:
                pass


DISK = None


def drop(n):
    for i in range(n):
        fd = os.open(os.path.join(POOL, f"{i}.bin"), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class Server:
    def __init__(self, kind, cs, root):
        self.kind, self.cs, self.root = kind, cs, root
        self.addr = KERNEL_ADDR if kind.startswith("nginx") else OWN_ADDR
        self.proc = None

    def start(self, probe):
        if self.kind == "nginx":
            argv = nginx_argv(KERNEL_ADDR, self.root, work="/tmp/sirocco-bench-scale-stream-nginx")
        elif self.kind == "nginx-ofc":
            # nginx keeping its open files and their metadata between requests, as a CDN's
            # would: descriptors for every file of the largest tree, checked once an hour.
            argv = nginx_argv(KERNEL_ADDR, self.root, work="/tmp/sirocco-bench-scale-stream-nginx",
                              http_extra=(f" open_file_cache max={max(FILES)} inactive=3600s;\n"
                                          " open_file_cache_valid 3600s;\n open_file_cache_min_uses 1;\n"))
        else:
            _, binary = server_kind(self.kind, SIROCCO)
            argv = [binary, "web", "--iface", NET.srv_if, "--addr", OWN_ADDR, "--queues", "1", "--cpus",
                    str(SRV_CPU), "--root", self.root, "--mode", "stream", "--stream-memory", str(STREAM_MEMORY)]
            argv += STREAM_ARGS + server_flags(self.kind)
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.cs.wrap(DISK.wrap(["ip", "netns", "exec", NET.srv_ns] + argv)),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        while time.monotonic() - t0 < 300:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} did not start: {self.proc.stderr.read()}")
            # A short connect timeout: sirocco's own address answers nothing (not even ARP)
            # until its XDP filter is attached, and a longer one would round the start up.
            r = ns(NET.cli_ns, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--connect-timeout", "0.1",
                   "--max-time", "2", f"http://{self.addr}{probe}", check=False)
            if r.stdout.strip() == "200":
                return time.monotonic() - t0
            time.sleep(0.02)
        raise RuntimeError(f"{self.kind} did not answer within 300 s")

    def rss(self):
        return rss_of_group(self.proc.pid)

    def stop(self):
        stop_process(self.proc)
        subprocess.run(["pkill", "-f", "sirocco-bench-scale-stream-nginx"], check=False)


def one_round(kind, n, cs, tree):
    root, plist, probe = tree
    drop(n)
    srv = Server(kind, cs, root)
    try:
        start_s = srv.start(probe)
        time.sleep(0.5)
        idle = srv.rss()
        mid = {}

        def sample():
            time.sleep(SECS / 2)
            mid["rss"] = srv.rss()
        t = threading.Thread(target=sample)
        t.start()
        w = wrk(NET, f"http://{srv.addr}", plist, CONNS)
        t.join()
    finally:
        srv.stop()
    r = {"start_s": start_s, "rss_idle": idle, "rss_busy": mid.get("rss"), "gbps": w["gbps"],
         "req_per_s": w["req_per_s"], "errors": w["errors"],
         "per_stream": (mid["rss"] - idle) / CONNS if mid.get("rss") else None}
    print(f"  {kind:8} N={n}: start {start_s:.2f} s, rss {idle / 2**20:.0f} -> {(mid.get('rss') or 0) / 2**20:.0f} MiB, "
          f"{w['gbps']:.2f} Gb/s {w['req_per_s']:.0f} req/s, {w['errors']} errors", flush=True)
    return r


def med(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else None


def main():
    preflight()
    trees = make_trees()
    global DISK
    DISK = DiskLimit(POOL, DISK_MBPS)
    cs = Cpuset("sirocco-bench-scale", SRV_CPU)
    results = {k: {n: [] for n in FILES} for k in SERVERS}
    try:
        with NET:
            for rep in range(REPS):
                for n in FILES:
                    for kind in (SERVERS if rep % 2 == 0 else SERVERS[::-1]):
                        results[kind][n].append(one_round(kind, n, cs, trees[n]))
    finally:
        cs.remove()
        DISK.remove()
    report(results)


def report(results):
    meta = run_meta(secs=SECS, reps=REPS, files=FILES, file_kb=FILE_KB, conns=CONNS, servers=SERVERS, disk_mbps=DISK_MBPS)
    lines = [f"# Streaming as the files grow ({meta['date']}, kernel {meta['kernel']})", "",
             f"Files of {FILE_KB} KiB, cold; {CONNS} keep-alive streams (wrk) over the tree in a shuffled order, "
             f"{SECS:.0f} s; servers in turns on the server core; medians of {REPS} rounds"
             + (f"; the server's disk reads limited to {DISK_MBPS:g} MB/s" if DISK_MBPS else "") + ".", "",
             "| files | server | start s | resident MiB idle | bytes per file over the 100-file tree | "
             "Gb/s | requests/s | errors | KiB per stream (busy over idle) |",
             "|---|---|---|---|---|---|---|---|---|"]
    summary = {}
    for kind in SERVERS:
        base = med([r["rss_idle"] for r in results[kind][min(FILES)]])
        for n in FILES:
            rs = results[kind][n]
            s = {k: med([r[k] for r in rs]) for k in rs[0]}
            s["per_file"] = (s["rss_idle"] - base) / n if n != min(FILES) else None
            summary.setdefault(str(n), {})[kind] = s
            per_file = f"{s['per_file']:.0f}" if s["per_file"] is not None else "–"
            per_stream = f"{s['per_stream'] / 1024:.1f}" if s["per_stream"] is not None else "–"
            lines.append(f"| {n:,} | {kind} | {s['start_s']:.2f} | {s['rss_idle'] / 2**20:.0f} | {per_file} | "
                         f"{s['gbps']:.2f} | {s['req_per_s']:,.0f} | {s['errors']} | {per_stream} |")
    ours = [k for k in SERVERS if k.startswith("sirocco")]
    for mine, peer in ((m, p) for m in ours for p in ("nginx", "nginx-ofc")):
        if peer not in SERVERS:
            continue
        lines += ["", f"## {mine} / {peer}, Gb/s per round then median (spread)", ""]
        for n in FILES:
            ratios = [a["gbps"] / b["gbps"] for a, b in zip(results[mine][n], results[peer][n]) if b["gbps"]]
            spread = f"{min(ratios):.2f}–{max(ratios):.2f}" if len(ratios) > 1 else "one round"
            lines.append(f"- {n:,} files: {med(ratios):.2f}× ({spread})")
    save(OUT_NAME, meta, lines, results={k: {str(n): v for n, v in d.items()} for k, d in results.items()},
         summary=summary)
    size_curves(OUT_NAME, "files", results, [(f"Gb/s, {CONNS} cold streams", "gbps", 1), ("start, s", "start_s", 1),
                                             ("resident MiB, idle", "rss_idle", 2**-20)])


if __name__ == "__main__":
    main()
