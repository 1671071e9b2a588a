#!/usr/bin/env python3
"""Streaming benchmark (Atlas, thesis ch. 4): `sirocco web --mode stream` (bodies read from
disk with O_DIRECT as each window opens, no cache) against nginx (one worker, sendfile through
the page cache), in one run, on the placement of BENCHMARKING.md (server on CPU 1 in a cpuset,
`sirocco gen http` on CPU 0).

The file set is FILES files of FILE_MB MiB, asked for in turn by CONNS connections (keep-alive,
closed loop). Two cache states: `cold` — every file's pages dropped before each run (0 % hit
while the run reads less than the set, which the report checks) — and `warm` — the set read
into the page cache first (sirocco's O_DIRECT reads go to the disk either way). Reported per
point: Gb/s, server-core CPU-seconds per GB sent (core busy time from /proc/stat: veth receive
work, and for nginx the kernel's TCP and page cache, included), the share of the set read in a
run, and sirocco's configured read-buffer bound.

PROTOS picks the protocols: `http` (load from `sirocco gen http`), `https` (wrk with OpenSSL on
the kernel's TCP; sirocco with its own TLS 1.3 record layer, nginx with OpenSSL — no kernel TLS
here) and `http-wrk` (plain HTTP from the same wrk, so that HTTPS and HTTP costs compare with
one client). Writes bench/results/stream.{json,md,png}."""

import os, re, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (cpu_busy, median_of, env_list, preflight, fresh_runs, WebServer, gen_http, wrk,  # noqa: E402
                 Testnet, Cpuset, BUILD, SECS, REPS, SRV_CPU, fmt, run_meta, save, plot, finish)

NET = Testnet("bs")
FILES = int(os.environ.get("FILES", "256"))
FILE_MB = int(os.environ.get("FILE_MB", "16"))
CONNS = env_list("CONNS", "50,200,1000", int)
CACHE = env_list("CACHE", "cold,warm")
SERVERS = env_list("SERVERS", "stream,nginx")
PROTOS = env_list("PROTOS", "http,https,http-wrk")
STREAM_MIB = int(os.environ.get("STREAM_MIB", "256"))
STREAM_BUF_KIB = int(os.environ.get("STREAM_BUF_KIB", "256"))
# On the build directory's file system (O_DIRECT needs a real one; /tmp may be tmpfs); kept
# between runs, FILES × FILE_MB MiB.
DOCROOT = os.path.join(BUILD, "stream-root")
CPUSET = None


def make_root():
    """FILES files of FILE_MB MiB (kept between runs when already there), and the list of
    their paths for the generator."""
    os.makedirs(DOCROOT, exist_ok=True)
    chunk = os.urandom(1 << 20)
    for i in range(FILES):
        p = os.path.join(DOCROOT, f"v{i:03}.bin")
        if os.path.exists(p) and os.path.getsize(p) == FILE_MB << 20:
            continue
        with open(p, "wb") as f:
            for k in range(FILE_MB):
                f.write(chunk[k % 251:] + chunk[:k % 251])
    with open(os.path.join(DOCROOT, "all.paths"), "w") as f:
        f.writelines(f"/v{i:03}.bin\n" for i in range(FILES))


def set_cache(state):
    """Drops the set's pages (cold) or reads the set into the page cache (warm)."""
    for i in range(FILES):
        fd = os.open(os.path.join(DOCROOT, f"v{i:03}.bin"), os.O_RDONLY)
        try:
            if state == "cold":
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            else:
                while os.read(fd, 1 << 22):
                    pass
        finally:
            os.close(fd)


def server(kind, proto):
    # "copy": stream mode with each payload copied into a TX frame (--stream-copy), for the
    # cost of the copy that sending from the read buffers saves.
    args = ["--mode", "stream", "--stream-memory", str(STREAM_MIB), "--stream-buffer", str(STREAM_BUF_KIB)]
    if kind.startswith("copy"):
        kind, args = "stream" + kind[len("copy"):], args + ["--stream-copy"]
    return WebServer(kind, NET, CPUSET, DOCROOT, args, tls=proto == "https")


def one_run(server, conns, cache, proto):
    set_cache(cache)
    paths = os.path.join(DOCROOT, "all.paths")
    b0 = cpu_busy(SRV_CPU)
    if proto == "http":
        g = gen_http(NET, server.addr, paths, conns, batch=256)
        g["errors"] = g["bad_responses"] + g["not_ok"] + g["broken"]
    else:
        g = wrk(NET, f"{'https' if proto == 'https' else 'http'}://{server.addr}", paths, conns)
    core = cpu_busy(SRV_CPU) - b0
    gbytes = g["gbps"] * SECS / 8
    return {"gbps": g["gbps"], "req_per_s": g["req_per_s"], "errors": g["errors"],
            "core_busy_s": core, "core_s_per_gb": core / gbytes if gbytes else None,
            "set_share": gbytes * 1e9 / (FILES * (FILE_MB << 20))}


def main():
    preflight()
    make_root()
    global CPUSET
    CPUSET = Cpuset("sirocco-bench-stream", SRV_CPU)
    results = {f"{k} {p}": [] for p in PROTOS for k in SERVERS}
    try:
        with NET:
            for proto in PROTOS:
                for kind in SERVERS:
                    for cache in CACHE:
                        for conns in CONNS:
                            if proto == "http" and conns > 50:
                                # gen http counts completed responses: 16 MiB files shared
                                # fairly by this many streams do not complete within a run.
                                continue
                            def show(rep, r, said):
                                # sirocco's read buffers at their peak (nginx: the page cache, not counted).
                                m = re.search(r"peak buffers in use \d+ of \d+ \((\d+) KiB\)", said or "")
                                r["buffer_mib"] = int(m.group(1)) / 1024 if m else None
                                print(f"{kind:7} {proto:8} {cache:4} {conns:>5} conns rep {rep}: {r['gbps']:6.2f} Gb/s "
                                      f"{r['core_s_per_gb'] or 0:6.3f} core-s/GB, {r['set_share'] * 100:5.1f} % of the set, "
                                      f"errors {r['errors']}, buffers {fmt(r['buffer_mib'], '{:.0f}')} MiB", flush=True)
                            runs = fresh_runs(lambda: server(kind, proto), lambda srv: one_run(srv, conns, cache, proto),
                                              show)
                            point = {k: median_of(runs, k) for k in runs[0]}
                            point.update({"cache": cache, "conns": conns, "runs": runs})
                            results[f"{kind} {proto}"].append(point)
    finally:
        CPUSET.remove()
    write(results)


def write(results):
    meta = run_meta(secs=SECS, reps=REPS, files=FILES, file_mb=FILE_MB, stream_mib=STREAM_MIB,
                    placement="server CPU 1 (cpuset), gen http CPU 0, threaded NAPI pinned per side")
    lines = [f"# Streaming large files over HTTP and HTTPS: sirocco web --mode stream vs nginx ({meta['date']}, kernel {meta['kernel']})", "",
             f"Median of {REPS} run(s) of {SECS:.0f} s per point. {FILES} files of {FILE_MB} MiB asked for in turn, "
             f"keep-alive. cold: the set's pages dropped before each run; warm: the set read into the page cache first. "
             f"sirocco's read buffers are bounded at {STREAM_MIB} MiB; it reads with O_DIRECT in both states. "
             "'of the set': bytes sent in a run over the set's size (below 100 % a cold run never meets a cached page).", "",
             "'read buffers': the most of sirocco's read-buffer pool in use at once in the run (nginx reads through the page cache).", "",
             "| server | cache | conns | Gb/s | server-core CPU-s per GB | of the set | errors | read buffers MiB |", "|---|---|---|---|---|---|---|---|"]
    for kind, pts in results.items():
        for p in pts:
            lines.append(f"| {kind} | {p['cache']} | {p['conns']} | {fmt(p['gbps'], '{:.2f}')} | "
                         f"{fmt(p['core_s_per_gb'], '{:.3f}')} | {fmt(p['set_share'] and p['set_share'] * 100, '{:.0f} %')} | "
                         f"{fmt(p['errors'])} | {fmt(p.get('buffer_mib'), '{:.0f}')} |")
    def ratios(title, a_key, b_key, cost_label):
        a_pts, b_pts = results.get(a_key), results.get(b_key)
        if not (a_pts and b_pts):
            return
        nonlocal_lines.extend(["", f"## {title}", "", f"| cache | conns | Gb/s | {cost_label} |", "|---|---|---|---|"])
        by_point = {(b["cache"], b["conns"]): b for b in b_pts}
        for a in a_pts:
            b = by_point.get((a["cache"], a["conns"]))
            if b is None:
                continue
            r1 = a["gbps"] / b["gbps"] if a["gbps"] and b["gbps"] else None
            r2 = b["core_s_per_gb"] / a["core_s_per_gb"] if a["core_s_per_gb"] and b["core_s_per_gb"] else None
            nonlocal_lines.append(f"| {a['cache']} | {a['conns']} | {fmt(r1, '{:.2f}×')} | {fmt(r2, '{:.2f}×')} |")

    nonlocal_lines = lines
    for proto in PROTOS:
        ratios(f"{proto}: stream / nginx", f"stream {proto}", f"nginx {proto}", "GB per server-core CPU-s")
        ratios(f"{proto}: stream (sent from the read buffers) / copy (copied into frames)", f"stream {proto}",
               f"copy {proto}", "GB per server-core CPU-s")
    # HTTPS against HTTP from the same client: the cost of TLS to each server.
    ratios("sirocco: https / http (both from wrk)", "stream https", "stream http-wrk",
           "GB per server-core CPU-s (https over http; 1/x is the cost factor)")
    ratios("nginx: https / http (both from wrk)", "nginx https", "nginx http-wrk",
           "GB per server-core CPU-s (https over http)")
    save("stream", meta, lines, results=results)

    def draw(plt):
        # One row per protocol: Gb/s and CPU per GB; colour = server, line = cache state.
        protos = [p for p in PROTOS if any(k.endswith(" " + p) for k in results)]
        fig, axes = plt.subplots(len(protos), 2, figsize=(12, 3.6 * len(protos)), squeeze=False)
        colour = {"stream": "tab:blue", "copy": "tab:green", "nginx": "tab:red"}
        for row, proto in zip(axes, protos):
            for kind, pts in results.items():
                server, _, p = kind.partition(" ")
                if p != proto:
                    continue
                for cache in CACHE:
                    sel = [q for q in pts if q["cache"] == cache]
                    xs = [q["conns"] for q in sel]
                    style = dict(color=colour.get(server.split("@")[0], "tab:gray"), marker="o",
                                 linestyle="-" if cache == "cold" else "--", label=f"{server} {cache}")
                    row[0].plot(xs, [q["gbps"] or 0 for q in sel], **style)
                    row[1].plot(xs, [q["core_s_per_gb"] or 0 for q in sel], **style)
            for a, t in zip(row, ("Gb/s", "server-core CPU-s per GB (lower is better)")):
                a.set_xscale("log")
                ticks = sorted({q["conns"] for pts in results.values() for q in pts})
                a.set_xticks(ticks, [str(t) for t in ticks])
                a.minorticks_off()
                a.set_xlabel("concurrent streams")
                a.set_title(f"{proto}: {t}")
                a.set_ylim(bottom=0)
        finish(fig, [a for row in axes for a in row], "stream")

    plot(draw)


if __name__ == "__main__":
    if sys.argv[1:] == ["--replot"]:
        # Rewrites the report and plot from the last run's JSON (no measurement).
        import json
        from lib import OUT  # noqa: E402
        with open(os.path.join(OUT, "stream.json")) as f:
            saved = json.load(f)
        PROTOS = [p for p in PROTOS if any(k.endswith(" " + p) for k in saved["results"])]
        m = saved["meta"]
        SECS, REPS, FILES, FILE_MB, STREAM_MIB = m["secs"], m["reps"], m["files"], m["file_mb"], m["stream_mib"]
        write(saved["results"])
    else:
        main()
