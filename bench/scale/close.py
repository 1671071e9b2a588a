#!/usr/bin/env python3
"""The server closing first, all at once (issue 44): for each size N of CONNS, N kernel clients
(bench/scale/holder.c, as bench/scale/tcp.py holds them) each ask sirocco web or nginx for a
1 KB file and idle on keep-alive; then every one of them asks again at the same moment, with
`Connection: close`. The server answers and closes first, so the N connections go through
the server's TIME-WAIT (RFC 9293 §3.6) at once. Servers in turns on the server core, REPS
rounds. Measured per round:

- **storm s**: from the asking until half, 99 % and all of the clients read the server's FIN
  (a request or FIN lost in the burst waits for a retransmission timeout: the tail);
- **answered**: clients that read the whole response and then the FIN (the others: short
  responses, resets, or nothing within 120 s);
- **closed s**: from the asking until the server holds at most 0.1 % of the connections in
  any state but TIME-WAIT (sirocco's `sirocco_tcp_connections`; the server namespace's
  sockets in use for nginx);
- **TIME-WAIT peak** and its limit: sirocco's `sirocco_tcp_time_wait` against
  `sirocco_tcp_time_wait_max`, the server namespace's `tw` sockets against its
  `net.ipv4.tcp_max_tw_buckets`; and how many were ended early at the limit (sirocco's
  `sirocco_tcp_time_wait_recycled_total`, the kernel's `TCPTimeWaitOverflow`);
- **receive drops** (sirocco): packets the kernel dropped because sirocco's RX ring was full,
  or had no frame to receive into (the storm is a burst; the clients resend what was lost).

Writes bench/results/scale-tcp-close.{md,json,png} (OUT_NAME to change the name;
REPORT_FROM=bench/results/NAME.json writes the tables and plot again from a run's results)."""

import json, os, re, shutil, subprocess, sys, tempfile, time

os.environ["MODE"] = "web"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import tcp  # noqa: E402  (bench/scale/tcp.py: the servers, the holders, the test network)
from tcp import med  # noqa: E402
from lib import ns, env_list, preflight, Cpuset, sh, run_meta, save, plot, finish, cpu_busy, REPS  # noqa: E402

CONNS = env_list("CONNS", "10000,100000,300000,1000000", int)
SERVERS = env_list("SERVERS", "sirocco,nginx")
OUT_NAME = os.environ.get("OUT_NAME", "scale-tcp-close")
STORM_LIMIT = 120
NET = tcp.NET


def scrape():
    return ns(NET.srv_ns, "curl", "-s", "-m", "5", f"http://{tcp.METRICS}/metrics", check=False).stdout


def metric(name, text=None):
    m = re.search(rf"^{name}(?:{{[^}}]*}})? (\d+)", scrape() if text is None else text, re.M)
    return int(m.group(1)) if m else None


def netstat_field(field, netns=None, table="/proc/net/netstat"):
    lines = ns(netns or NET.srv_ns, "cat", table).stdout.splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        keys, nums = head.split()[1:], vals.split()[1:]
        if field in keys:
            return int(nums[keys.index(field)])
    return 0


def time_wait(srv):
    """TIME-WAIT entries the server holds, and how many it has ended early at its limit."""
    if srv.kind == "nginx":
        tw = int(re.search(r"TCP: .* tw (\d+)", ns(NET.srv_ns, "cat", "/proc/net/sockstat").stdout).group(1))
        return tw, netstat_field("TCPTimeWaitOverflow")
    return metric("sirocco_tcp_time_wait") or 0, metric("sirocco_tcp_time_wait_recycled_total") or 0


def client_counters():
    """The clients' kernel: segments retransmitted, and of them by a timeout."""
    return {"retrans": netstat_field("RetransSegs", NET.cli_ns, "/proc/net/snmp"),
            "timeouts": netstat_field("TCPTimeouts", NET.cli_ns)}


def poll(srv):
    """TIME-WAIT entries the server holds, and connections in any other state (None if it did
    not say), from one read: the poll runs on the server's core too (a process in its
    namespace), and three reads every 0.1 s took 9 % of that core during a storm."""
    if srv.kind == "nginx":
        out = ns(NET.srv_ns, "cat", "/proc/net/sockstat").stdout
        inuse = int(re.search(r"TCP: inuse (\d+)", out).group(1))
        return int(re.search(r"TCP: .* tw (\d+)", out).group(1)), inuse - srv.inuse0
    text = scrape()
    return metric("sirocco_tcp_time_wait", text) or 0, metric("sirocco_tcp_connections", text)


# Where a burst can lose packets on sirocco's side: its socket's RX ring full, the kernel's
# drops on the way to it, and the fill ring empty (no frame to receive into).
DROPS = ("sirocco_xsk_kernel_rx_ring_full_total", "sirocco_xsk_kernel_rx_dropped_total",
         "sirocco_xsk_kernel_fill_ring_empty_total")


def drops(srv):
    """sirocco's receive-side drop counters (empty for nginx)."""
    return {} if srv.kind == "nginx" else {k: metric(k) or 0 for k in DROPS}


def tw_limit(srv):
    if srv.kind == "nginx":
        return int(ns(NET.srv_ns, "sysctl", "-n", "net.ipv4.tcp_max_tw_buckets").stdout)
    return metric("sirocco_tcp_time_wait_max")


def one_round(kind, n, cs, root):
    srv = tcp.Server(kind, cs, root, n)
    srv.start()
    procs = []
    try:
        procs, reports = tcp.hold(srv.addr, n)
        up = sum(r["up"] for r in reports)
        time.sleep(1)
        limit = tw_limit(srv)
        tw0, early0 = time_wait(srv)
        cli0 = client_counters()
        drops0 = drops(srv)
        busy0 = (cpu_busy(tcp.SRV_CPU), cpu_busy(tcp.GEN_CPU))
        for p in procs:
            p.stdin.write("c\n")
            p.stdin.flush()
        c0 = time.monotonic()
        peak, closed_s, left, busy = 0, None, None, None
        while time.monotonic() - c0 < STORM_LIMIT:
            tw, left = poll(srv)
            peak = max(peak, tw)
            if closed_s is None and left is not None and left <= n // 1000:
                closed_s = time.monotonic() - c0
            done = all(p.poll() is not None for p in procs)
            # Both cores' busy share from the asking until every client has its FIN (the
            # holders exit then): the storm itself, not the wait for the last orphans.
            if done and busy is None:
                dt = time.monotonic() - c0
                busy = {"server": (cpu_busy(tcp.SRV_CPU) - busy0[0]) / dt,
                        "client": (cpu_busy(tcp.GEN_CPU) - busy0[1]) / dt}
            if closed_s is not None and done:
                break
            time.sleep(0.25)
        early = time_wait(srv)[1] - early0
        lost = {k.removeprefix("sirocco_xsk_kernel_").removesuffix("_total"): v - drops0[k] for k, v in drops(srv).items()}
        cli = {k: v - cli0[k] for k, v in client_counters().items()}
        outs = []
        for p in procs:
            try:
                out, _ = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
            lines = [json.loads(x) for x in out.splitlines() if x.startswith("{\"asked")]
            outs += lines
        if srv.proc.poll() is not None:
            raise RuntimeError(f"{kind} exited during the storm: {srv.proc.stdout.read()[-2000:]}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        srv.stop()
        tcp.drained()
    asked = min(o["asked"] for o in outs)
    last = max(o["last_fin"] for o in outs)
    # Each holder counts its FINs per 10 ms from its own asking (they ask within moments).
    hist = {}
    for o in outs:
        for b, c in o["fins"]:
            hist[b] = hist.get(b, 0) + c
    total, pct = sum(hist.values()), {}
    for q in (0.5, 0.99):
        seen = 0
        for b in sorted(hist):
            seen += hist[b]
            if seen >= q * total:
                pct[q] = (b + 1) / 100
                break
    complete, short, reset = (sum(o[k] for o in outs) for k in ("complete", "short", "reset"))
    # A holder still waiting when the storm's time is up is stopped without its report: its
    # connections count as unanswered.
    r = {"up": up, "complete": complete, "short": short, "reset": reset, "unanswered": up - complete - short - reset,
         "storm_s": last - asked if last else None, "p50_s": pct.get(0.5), "p99_s": pct.get(0.99), "closed_s": closed_s, "left": left, "tw_before": tw0,
         "tw_peak": peak, "tw_limit": limit, "tw_ended_early": early, "client": cli, "busy": busy, "drops": lost}
    print(f"  {kind:8} N={n}: up {up}, answered {r['complete']} (short {r['short']}, reset {r['reset']}, none "
          f"{r['unanswered']}), FINs read by half in {r['p50_s']} s, 99 % {r['p99_s']} s, all {r['storm_s']:.2f} s, server closed in {closed_s}, TIME-WAIT peak {peak} of {limit} "
          f"({early} ended early); clients retransmitted {cli['retrans']} ({cli['timeouts']} timeouts); busy until the last FIN: "
          f"{busy}; receive drops {lost}", flush=True)
    return r


def main():
    preflight()
    tmp = tempfile.mkdtemp(prefix="sirocco-bench-scale-close-")
    os.chmod(tmp, 0o755)  # nginx's workers run as www-data
    tcp.HOLDER = os.path.join(tmp, "holder")
    sh("gcc", "-O2", "-o", tcp.HOLDER, os.path.join(HERE, "holder.c"))
    root = os.path.join(tmp, "root")
    os.makedirs(root)
    with open(os.path.join(root, "1k.bin"), "wb") as f:
        f.write(bytes(i % 251 for i in range(tcp.BODY)))
    cs = Cpuset("sirocco-bench-scale", tcp.SRV_CPU)
    results = {k: {n: [] for n in CONNS} for k in SERVERS}
    try:
        with NET:
            tcp.prepare_network()
            for rep in range(REPS):
                for n in CONNS:
                    for kind in (SERVERS if rep % 2 == 0 else SERVERS[::-1]):
                        if kind == "nginx" and n > tcp.NGINX_MAX:
                            continue
                        results[kind][n].append(one_round(kind, n, cs, root))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(results)


def report(results):
    meta = run_meta(reps=REPS, conns=CONNS, servers=SERVERS, nginx_max=tcp.NGINX_MAX)
    lines = [f"# The server closing first, all at once ({meta['date']}, kernel {meta['kernel']})", "",
             f"{REPS} rounds, servers in turns on the server core; medians. N idle keep-alive clients ask at once "
             "for 1 KB with `Connection: close`: the server answers, closes first and holds the TIME-WAITs.", "",
             "| N | server | answered | short / reset / none | FIN read by half / 99 % / all, s | server closed s | TIME-WAIT peak | its limit | "
             "ended early at the limit | clients' retransmissions (by timeout) | core busy until the last FIN: server / client | "
             "dropped at sirocco's RX ring full / no frame to fill |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = {}
    for n in CONNS:
        for kind in SERVERS:
            rs = results[kind][n]
            if not rs:
                continue
            for r in rs:
                r["unanswered"] = r["up"] - r["complete"] - r["short"] - r["reset"]
            s = summary.setdefault(n, {})[kind] = {k: med([r[k] for r in rs]) for k in (
                "complete", "short", "reset", "unanswered", "storm_s", "p50_s", "p99_s", "closed_s", "tw_peak", "tw_limit",
                "tw_ended_early")}
            s["client_retrans"] = med([r["client"]["retrans"] for r in rs])
            s["client_timeouts"] = med([r["client"]["timeouts"] for r in rs])
            busy = [r["busy"] for r in rs if r.get("busy")]
            s["busy"] = {k: med([b[k] for b in busy]) for k in ("server", "client")} if busy else None
            cores = f"{s['busy']['server']:.2f} / {s['busy']['client']:.2f}" if s["busy"] else "–"
            lost = [r["drops"] for r in rs if r.get("drops")]
            s["drops"] = {k: med([d[k] for d in lost]) for k in lost[0]} if lost else None
            dropped = f"{s['drops']['rx_ring_full']} / {s['drops']['fill_ring_empty']}" if s["drops"] else "–"
            closed = f"{s['closed_s']:.1f}" if s["closed_s"] is not None else "–"
            storm = (f"{s['p50_s']:.2f} / {s['p99_s']:.2f} / {s['storm_s']:.2f}" if s["storm_s"] is not None else "–")
            lines.append(f"| {n} | {kind} | {s['complete']} | {s['short']} / {s['reset']} / {s['unanswered']} | {storm} | "
                         f"{closed} | {s['tw_peak']} | {s['tw_limit']} | {s['tw_ended_early']} | "
                         f"{s['client_retrans']} ({s['client_timeouts']}) | {cores} | {dropped} |")
    save(OUT_NAME, meta, lines, results={k: {str(n): v for n, v in d.items()} for k, d in results.items()},
         summary={str(n): v for n, v in summary.items()})

    def draw(plt):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for kind in SERVERS:
            xs = [n for n in CONNS if kind in summary.get(n, {}) and summary[n][kind]["storm_s"] is not None]
            axes[0].plot(xs, [summary[n][kind]["p99_s"] for n in xs], marker="o", label=f"{kind} 99 %")
            axes[0].plot(xs, [summary[n][kind]["p50_s"] for n in xs], marker="x", ls=":", label=f"{kind} half")
            axes[1].plot(xs, [summary[n][kind]["tw_peak"] for n in xs], marker="o", label=kind)
        for a, t in zip(axes, ["seconds until the clients read the server's FIN", "TIME-WAIT entries at the peak"]):
            a.set_xscale("log")
            a.set_title(t)
            a.set_xlabel("connections closed at once")
        finish(fig, axes, OUT_NAME)
    plot(draw)


if __name__ == "__main__":
    if os.environ.get("REPORT_FROM"):
        # The tables and plot again from a run's results (REPORT_FROM=results/NAME.json).
        with open(os.environ["REPORT_FROM"]) as f:
            saved = json.load(f)["results"]
        CONNS = sorted({int(n) for d in saved.values() for n in d})
        SERVERS = list(saved)
        REPS = max(len(rs) for d in saved.values() for rs in d.values())
        report({k: {int(n): v for n, v in d.items()} for k, d in saved.items()})
    else:
        main()
