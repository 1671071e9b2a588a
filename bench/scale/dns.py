#!/usr/bin/env python3
"""How DNS's cost grows with the zone (issue 44): for zones of NAMES names (default 10000,
100000,1000000; the same generated zone and query mix as bench/dns), sirocco dns, Knot DNS
(XDP mode) and NSD, each confined to the server core as in bench/dns, taking turns in REPS
rounds. Per round and server: the time from start to the first NOERROR answer for the SOA
(load, by a probe asking every 20 ms from the server's launch), the resident memory of the server's processes once loaded and settled (per name), answers/s at
RATE queries/s offered by kxdpgun for SECS seconds, and the reload time (the zone file
rewritten with the next serial, the server told — SIGHUP for sirocco and NSD, knotc-less
SIGHUP for Knot — until the SOA answers with that serial, asked every 5 ms). Medians over the rounds; the
answers/s at each size against the smallest size's (issue 44's ≥ 90 %); load and reload
against Knot's.

Writes bench/results/scale-dns.{md,json,png} (OUT_NAME to change the name)."""

import os, re, shutil, signal, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "dns"))
sys.path.insert(0, os.path.join(HERE, ".."))
import run as dnsbench  # noqa: E402  (bench/dns/run.py: zones, servers, the test network)
from lib import (sh, ns, env_list, preflight, Cpuset, kxdpgun, median_of, SECS, REPS, run_meta, save, plot,  # noqa: E402
                 finish, settled_rss_of_group, group_threads_named)

NAMES = env_list("NAMES", "10000,100000,1000000", int)
SERVERS = env_list("SERVERS", "sirocco,knot-xdp,nsd")
RATE = int(os.environ.get("RATE", "400000"))
OUT_NAME = os.environ.get("OUT_NAME", "scale-dns")
ORIGIN = dnsbench.ORIGIN


# Asks for the SOA every EVERY seconds for at most LIMIT, until it is answered (NOERROR,
# with an answer) and, if WANT is a number, with that serial; prints "ready" once its socket
# is up, then when.
PROBE = r"""
import socket, struct, sys, time
addr, origin, want, every, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
q = struct.pack("!HHHHHH", 0x5ca1, 0, 1, 0, 0, 0)
for label in origin.split("."):
    q += bytes([len(label)]) + label.encode()
q += bytes([0]) + struct.pack("!HH", 6, 1)
def serial(r):
    p = len(q)
    while p < len(r) and r[p] and r[p] & 0xc0 == 0:
        p += 1 + r[p]
    p += 2 if p < len(r) and r[p] & 0xc0 else 1
    if p + 10 > len(r):
        return None
    rdlen = struct.unpack("!H", r[p + 8:p + 10])[0]
    end = p + 10 + rdlen
    return struct.unpack("!I", r[end - 20:end - 16])[0] if rdlen >= 22 and end <= len(r) else None
def answered(r):
    ok = len(r) >= 12 and r[:2] == b"\x5c\xa1" and r[3] & 0x0f == 0 and (r[6] or r[7])
    return ok and (want == "any" or serial(r) == int(want))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(every)
print("ready", flush=True)
t = time.time()
while time.time() - t < limit:
    sent = time.time()
    s.sendto(q, (addr, 53))
    try:
        r = s.recv(4096)
    except OSError:
        continue
    if answered(r):
        print(time.time(), flush=True)
        break
    # Answered, but not yet with the serial wanted: ask again at the next tick, not at once
    # (back to back it was a flood of ~13 000 queries/s on the server's core during a reload).
    time.sleep(max(0.0, sent + every - time.time()))
"""


def probe(srv, want, every, limit):
    """The SOA probe started in the client namespace, once it is ready (see PROBE)."""
    p = subprocess.Popen(["ip", "netns", "exec", dnsbench.CLI_NS, "python3", "-c", PROBE, srv.addr, ORIGIN, str(want),
                          str(every), str(limit)], stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        p.kill()
        p.wait()
        return None
    return p


def answered_after(p, act):
    """Seconds from `act()` to the answer `p` waits for (None if none came); stops `p`
    whatever happens."""
    try:
        t = time.time()
        act()
        out = p.stdout.readline().strip()
        return float(out) - t if out else None
    finally:
        p.kill()
        p.wait()


def start_timed(srv):
    """Starts `srv`, timing it from launch to its first NOERROR answer for the SOA with a
    probe that asks every 20 ms (kdig's whole-second timeouts would floor it at ~1.5 s)."""
    p = probe(srv, "any", 0.02, 300)
    return answered_after(p, srv.start) if p else None


def bump_serial(path, serial):
    """Rewrites the zone's SOA with `serial` (the rest of the file as it is)."""
    with open(path) as f:
        text = f.read()
    text = re.sub(r"^@ SOA ns1 hostmaster \d+ ", f"@ SOA ns1 hostmaster {serial} ", text, count=1, flags=re.M)
    with open(path, "w") as f:
        f.write(text)


def reload_time(srv, zpath, serial):
    """The time from SIGHUP to the SOA answered with `serial`, by a probe asking every 5 ms
    (a new `kdig` every 50 ms was too coarse for small zones)."""
    bump_serial(zpath, serial)
    p = probe(srv, serial, 0.005, 300)
    # sirocco and NSD reload their zones on SIGHUP, Knot too (it re-reads its configuration
    # and zones); the signal goes to the whole group (the server and its wrappers).
    return answered_after(p, lambda: os.killpg(srv.proc.pid, signal.SIGHUP)) if p else None


def main():
    preflight()
    os.makedirs(dnsbench.WORK, exist_ok=True)
    cpuset = Cpuset("sirocco-bench-server", dnsbench.SRV_CPU)
    results = {}
    try:
        with dnsbench.NET:
            for n in NAMES:
                zsrc, qpath, _ = dnsbench.zone_and_queries(n)
                per = results.setdefault(str(n), {k: [] for k in SERVERS})
                serial = 1
                for rnd in range(REPS):
                    for kind in SERVERS:
                        # Each server its own copy, its serial bumped by the reload.
                        zpath = os.path.join(dnsbench.WORK, f"scale-{kind}-{n}.zone")
                        shutil.copyfile(zsrc, zpath)
                        srv = dnsbench.Server(kind, zpath, cpuset)
                        load = start_timed(srv)
                        try:
                            # sirocco frees the parsed zone on a thread of its own once it
                            # answers (at idle priority on one CPU): memory is read after it.
                            t = time.time()
                            while group_threads_named(srv.proc.pid, "sirocco-free") and time.time() - t < 120:
                                time.sleep(0.1)
                            rss = settled_rss_of_group(srv.proc.pid)
                            k = kxdpgun(dnsbench.CLI_NS, dnsbench.CLI_IF, qpath, RATE, srv.addr, srv.cpu)
                            serial += 1
                            rel = reload_time(srv, zpath, serial)
                        finally:
                            srv.stop()
                        p = {"load_s": load, "rss_bytes": rss, "rss_per_name": rss / n, "answers_ps": k["answers"] / SECS,
                             "sent_qps": k["sent_qps"], "reload_s": rel}
                        per[kind].append(p)
                        print(f"{kind:9} {n:>9} names, round {rnd}: load {load:.2f} s, {rss / 2**20:.0f} MiB "
                              f"({rss / n:.0f} B/name), {p['answers_ps']:.0f} answers/s, reload "
                              f"{'–' if rel is None else f'{rel:.1f} s'}", flush=True)
    finally:
        cpuset.remove()
    write(results)


def write(results):
    meta = run_meta(secs=SECS, reps=REPS, rate=RATE, names=NAMES, servers=SERVERS)
    med = {n: {k: {key: median_of(v, key) for key in ("load_s", "rss_bytes", "rss_per_name", "answers_ps", "reload_s")}
               for k, v in per.items()} for n, per in results.items()}
    lines = [f"# DNS as the zone grows ({meta['date']}, kernel {meta['kernel']})", "",
             f"Median of {REPS} rounds, the servers taking turns; answers/s at {RATE} queries/s offered for "
             f"{SECS:.0f} s (kxdpgun on CPU 0, each server confined to CPU 1). Memory: resident bytes of the "
             "server's processes once the zone answers and the figure holds still (two reads 0.5 s apart within 1 %).", "",
             "| names | server | load s | reload s | resident MiB | bytes per name (over the smallest zone) | answers/s | of its smallest zone's |",
             "|---|---|---|---|---|---|---|---|"]
    first = str(NAMES[0])
    for n, per in med.items():
        for kind, m in per.items():
            b = med[first][kind]
            m["marginal_per_name"] = (m["rss_bytes"] - b["rss_bytes"]) / (int(n) - int(first)) if n != first else None
            rel = "–" if m["reload_s"] is None else f"{m['reload_s']:.1f}"
            marg = "–" if m["marginal_per_name"] is None else f"{m['marginal_per_name']:.0f}"
            lines.append(f"| {n} | {kind} | {m['load_s']:.2f} | {rel} | {m['rss_bytes'] / 2**20:.0f} | "
                         f"{marg} | {m['answers_ps']:.0f} | {m['answers_ps'] / b['answers_ps'] * 100:.0f}% |")
    lines += ["", "## Against Knot (medians)", ""]
    for n, per in med.items():
        s, k = per.get("sirocco"), per.get("knot-xdp")
        if s and k:
            per_name = (f", memory per name (over the smallest zone) **{s['marginal_per_name'] / k['marginal_per_name']:.2f}×**"
                        if s.get("marginal_per_name") and k.get("marginal_per_name") else "")
            lines.append(f"- {n} names: load **{s['load_s'] / k['load_s']:.2f}×** Knot's time{per_name}, answers/s **{s['answers_ps'] / k['answers_ps']:.2f}×**"
                         + (f", reload {s['reload_s'] / k['reload_s']:.2f}× Knot's time" if s['reload_s'] and k['reload_s'] else ""))
    save(OUT_NAME, meta, lines, results=results)

    def draw(plt):
        fig, axes = plt.subplots(1, 4, figsize=(18, 4))
        for kind in SERVERS:
            xs = [int(n) for n in med]
            for ax, key, scale in zip(axes, ("answers_ps", "load_s", "rss_bytes", "reload_s"), (1e-3, 1, 2**-20, 1)):
                ys = [(med[n][kind][key] or 0) * scale for n in med]
                ax.plot(xs, ys, marker="o", label=kind)
        for ax, t in zip(axes, ("answers/s (k)", "load (s)", "resident MiB", "reload (s)")):
            ax.set_xscale("log")
            ax.set_xlabel("zone names")
            ax.set_title(t)
        finish(fig, axes, OUT_NAME)

    plot(draw)


if __name__ == "__main__":
    main()
