#!/usr/bin/env python3
"""DNS benchmark: sirocco dns vs Knot DNS in XDP mode vs NSD, in one run, each confined to
the server core (CPU 1, a cpuset: Knot pins its own workers otherwise) with the server
veth's NAPI thread, driven by kxdpgun on CPU 0 (placement of BENCHMARKING.md).

Zones of ZONES names (default 10, 10000, 1000000) are generated with a realistic mix
(addresses, IPv6, MX, CNAME, TXT under empty non-terminals, a wildcard); the queries hit
existing names with their types, CNAMEs, the wildcard, and names that do not exist
(NXDOMAIN, about a fifth). `sirocco6` is sirocco dns queried over IPv6 (2001:2::1, RFC 5180's
range), everything else as `sirocco`: the IPv6 point of issue 21. For each server, zone and offered rate (RATES, queries/s),
REPS runs of SECS seconds: answers/s from kxdpgun, the server core's busy CPU-seconds
(/proc/stat) and the server processes' own CPU-seconds per million answers, the rcode mix.
A sample of answers is checked with kdig against what the zone says before each server is
measured. The highest of RATES is the flood: the report gives each server's answers/s there
against its own best point and against Knot's under the same flood (issue 20's goals).
Writes bench/results/NAME.{json,md,png}, NAME from OUT_NAME (default dns: a run with other
ZONES, RATES or SERVERS can keep the full sweep's report).

Issue 22's points: a server kind ending in `-dnssec` serves the zone signed with NSEC3 (no
salt, no extra iterations, RFC 9276) by ldns-signzone and is asked with DO (kxdpgun's D
flag); one ending in `-tcp` is asked over TCP, a connection per query (kxdpgun -T), with
`knot-tcp` being Knot on the kernel's TCP (no XDP).

Issue 43's point: `sirocco-xdp` answers in the XDP program itself (`--xdp-answers on`); the
others kinds of sirocco answer in the engine. The server core's CPU-seconds include the
program's work (it runs in the server veth's NAPI thread, on the server core). `xdp-bounce`
is the simplest program doing the job on the same path (bench/udp-echo/bounce.c built with
-DBOUNCE_DNS: every query sent back with QR set, no lookup, no answer records): the ceiling of answering at the driver here.
The report gives per-repetition ratios (median and spread) between these."""

import json, os, platform, random, signal, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import (sh, ns, proc_cpu, median_of, env_list, preflight, Testnet, Cpuset, kxdpgun,  # noqa: E402
                 SIROCCO, BUILD, SECS, REPS, SRV_CPU, GEN_CPU, fmt, run_meta, save, plot, finish, server_kind, server_flags)

WORK = os.path.join(BUILD, "dns")
NET = Testnet("bd")
SRV_NS, CLI_NS, SRV_IF, CLI_IF = NET.srv_ns, NET.cli_ns, NET.srv_if, NET.cli_if
SERVER_ADDR = "198.18.0.1"
SERVER_ADDR6 = "2001:2::1"
RATES = env_list("RATES", "250000,400000,1000000", int)
ZONES = env_list("ZONES", "10,10000,1000000", int)
SERVERS = env_list("SERVERS", "sirocco,sirocco6,sirocco-decompress,sirocco-echo,knot-xdp,nsd")
OUT_NAME = os.environ.get("OUT_NAME", "dns")
ORIGIN = "bench.test"


def signed(zpath, qpath):
    """The zone signed with NSEC3 by ldns-signzone (fresh keys), and the queries with DO."""
    d = os.path.join(WORK, "keys")
    os.makedirs(d, exist_ok=True)
    ksk = sh("ldns-keygen", "-a", "ECDSAP256SHA256", "-k", ORIGIN, cwd=d).stdout.strip()
    zsk = sh("ldns-keygen", "-a", "ECDSAP256SHA256", ORIGIN, cwd=d).stdout.strip()
    unsigned = zpath + ".keys"
    with open(unsigned, "w") as out:
        out.write(open(zpath).read())
        for k in (ksk, zsk):
            out.write(open(os.path.join(d, k + ".key")).read())
    spath = zpath + ".signed"
    sh("ldns-signzone", "-n", "-t", "0", "-o", ORIGIN, "-f", spath, unsigned, os.path.join(d, ksk), os.path.join(d, zsk))
    dq = qpath + ".do"
    with open(qpath) as f, open(dq, "w") as out:
        for line in f:
            out.write(line.rstrip("\n") + " D\n")
    return spath, dq


def zone_and_queries(n):
    """Writes a zone of about n names and a query file; returns their paths and a sample of
    (name, type, expected rcode, expected substring of the answer)."""
    zpath = os.path.join(WORK, f"zone-{n}.zone")
    qpath = os.path.join(WORK, f"queries-{n}.txt")
    rnd = random.Random(n)
    lines = [f"$ORIGIN {ORIGIN}.", "$TTL 300", "@ SOA ns1 hostmaster 1 7200 3600 1209600 60", "@ NS ns1",
             "ns1 A 198.18.3.1", "*.wild A 198.18.3.2"]
    kinds = []
    for i in range(n):
        k = i % 10
        if k < 6:
            lines.append(f"h{i} A 198.18.{(i >> 8) & 255}.{i & 255}")
            kinds.append((f"h{i}", "A", f"198.18.{(i >> 8) & 255}.{i & 255}"))
        elif k == 6:
            lines.append(f"h{i} AAAA 2001:db8::{i >> 16:x}:{i & 0xffff:x}")
            kinds.append((f"h{i}", "AAAA", "2001:db8::"))
        elif k == 7:
            lines.append(f"h{i} MX 10 ns1")
            kinds.append((f"h{i}", "MX", "ns1"))
        elif k == 8:
            lines.append(f"h{i} CNAME ns1")
            kinds.append((f"h{i}", "A", "198.18.3.1"))
        else:
            lines.append(f"h{i}.d{i % 100} TXT \"name {i}\"")
            kinds.append((f"h{i}.d{i % 100}", "TXT", f"name {i}"))
    with open(zpath, "w") as f:
        f.write("\n".join(lines) + "\n")
    queries, sample = [], []
    for j in range(max(1000, min(n, 100000))):
        r = rnd.random()
        if r < 0.7 and kinds:
            name, t, want = kinds[rnd.randrange(len(kinds))]
            q = (f"{name}.{ORIGIN}.", t, "NOERROR", want)
        elif r < 0.8:
            q = (f"w{j}.wild.{ORIGIN}.", "A", "NOERROR", "198.18.3.2")
        else:
            q = (f"nx{j}.{ORIGIN}.", "A", "NXDOMAIN", "SOA")
        queries.append(q)
    with open(qpath, "w") as f:
        f.write("".join(f"{q[0]} {q[1]}\n" for q in queries))
    sample = [queries[rnd.randrange(len(queries))] for _ in range(20)]
    return zpath, qpath, sample


def base_kind(kind):
    name, at, variants = kind.partition("@")
    return name.removesuffix("-dnssec").removesuffix("-tcp") + at + variants


class Server:
    def __init__(self, kind, zone, cpuset):
        self.kind, self.zone, self.cpuset, self.proc = kind, zone, cpuset, None
        self.addr = SERVER_ADDR6 if kind == "sirocco6" else SERVER_ADDR
        self.dir = os.path.join(WORK, kind)
        os.makedirs(self.dir, exist_ok=True)

    def argv(self):
        # "@base": the same server from BASE_BIN (A/B runs against another build).
        kind, sirocco = server_kind(base_kind(self.kind), SIROCCO)
        if kind == "xdp-bounce":
            # The program is the server (attached in start); this only holds the slot.
            return ["sleep", "100000"]
        if kind == "sirocco-echo":
            # The same engine answering every query with the query itself: what answering
            # costs on top of the dataplane. Same idle policy as the DNS server.
            return [sirocco, "echo", "--iface", SRV_IF, "--addr", SERVER_ADDR, "--port", "53", "--queues", "1",
                    "--cpus", str(SRV_CPU), "--idle-spins", "0"] + server_flags(self.kind)
        if kind in ("sirocco", "sirocco6", "sirocco-decompress", "sirocco-xdp"):
            mode = "decompress" if kind == "sirocco-decompress" else "wire"
            # sirocco-xdp: answers in the XDP program (kxdpgun's own XDP program on the client
            # veth lets veth deliver XDP_TX frames at once); the others by the engine.
            xdp = ["--xdp-answers", "on" if kind == "sirocco-xdp" else "off"]
            return [sirocco, "dns", "--iface", SRV_IF, "--addr", self.addr, "--queues", "1", "--cpus", str(SRV_CPU),
                    "--key-mode", mode, "--zone", f"{ORIGIN}={self.zone}"] + xdp + os.environ.get("SIROCCO_ARGS", "").split() + server_flags(self.kind)
        if kind in ("knot-xdp", "knot"):
            d = self.dir
            conf = os.path.join(d, "knot.conf")
            xdp = f"xdp:\n  listen: {SRV_IF}@53\n  udp: on\n" if kind == "knot-xdp" else ""
            with open(conf, "w") as f:
                f.write(f"server:\n  listen: {SERVER_ADDR}@53\n  rundir: {d}\n  udp-workers: 1\n  tcp-workers: 1\n"
                        f"  background-workers: 1\n{xdp}log:\n  - target: stderr\n"
                        f"    any: warning\ndatabase:\n  storage: {d}\ntemplate:\n  - id: default\n    storage: {d}\n"
                        f"    journal-content: none\n    zonefile-sync: -1\nzone:\n  - domain: {ORIGIN}\n    file: {self.zone}\n")
            return ["knotd", "-c", conf]
        if kind == "nsd":
            d = self.dir
            conf = os.path.join(d, "nsd.conf")
            with open(conf, "w") as f:
                f.write(f"server:\n  ip-address: {SERVER_ADDR}@53\n  username: \"\"\n  zonesdir: \"{d}\"\n  database: \"\"\n"
                        f"  pidfile: \"{d}/nsd.pid\"\n  xfrdfile: \"{d}/xfrd.state\"\n  zonelistfile: \"{d}/zone.list\"\n"
                        f"  server-count: 1\n  rrl-ratelimit: 0\n  verbosity: 0\nremote-control:\n  control-enable: no\n"
                        f"zone:\n  name: {ORIGIN}\n  zonefile: {self.zone}\n")
            return ["nsd", "-d", "-c", conf]
        raise ValueError(self.kind)

    def start(self):
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        if self.kind == "xdp-bounce":
            obj = os.path.join(WORK, "bounce_dns.o")
            src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "udp-echo", "bounce.c")
            sh("clang", "-O2", "-target", "bpf", "-DBOUNCE_DNS", f"-I/usr/include/{platform.machine()}-linux-gnu",
               "-c", src, "-o", obj)
            ns(SRV_NS, "ip", "link", "set", "dev", SRV_IF, "xdpdrv", "obj", obj, "sec", "xdp")
            self.proc = subprocess.Popen(["sleep", "100000"], stdout=self.log, stderr=self.log, start_new_session=True)
            return
        if base_kind(self.kind).startswith("sirocco-xdp"):
            # kdig (the readiness and sample checks) gets the program's answers only with
            # an XDP program on its veth; kxdpgun brings its own (peer_xdp(False) first).
            peer_xdp(True)
        argv = ["ip", "netns", "exec", SRV_NS] + self.argv()
        # sirocco pins its engine itself (--cpus) and is started with taskset like the echo
        # benchmark's servers; the cpuset is for servers that set their own affinity.
        argv = ["taskset", "-c", str(SRV_CPU)] + argv if self.kind.startswith("sirocco") else self.cpuset.wrap(argv)
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=self.log, start_new_session=True)
        deadline = time.time() + 600
        while time.time() < deadline:
            if self.kind == "sirocco-echo":
                time.sleep(1.5)
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited: see {self.dir}/server.log")
            r = ns(CLI_NS, "kdig", f"@{self.addr}", "+time=1", "+retry=0", f"{ORIGIN}.", "SOA", check=False)
            if "status: NOERROR" in r.stdout and "ANSWER: 1" in r.stdout:
                return
            time.sleep(0.5)
        raise RuntimeError(f"{self.kind} did not answer within 600 s")

    def cpu(self):
        """CPU-seconds of the server's processes so far."""
        if self.kind.startswith("sirocco"):
            return proc_cpu(self.proc.pid) or 0
        return self.cpuset.cpu()

    def stop(self):
        if self.proc:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            self.log.close()
        # Knot leaves its XDP program on the interface.
        ns(SRV_NS, "ip", "link", "set", "dev", SRV_IF, "xdp", "off", check=False)
        peer_xdp(False)


def peer_xdp(on):
    """Attaches XDP_PASS to the client veth (or removes it): veth delivers the frames its peer
    sends back with XDP_TX promptly only to a device with an XDP program."""
    if not on:
        ns(CLI_NS, "ip", "link", "set", "dev", CLI_IF, "xdp", "off", check=False)
        return
    obj = os.path.join(WORK, "xdp_pass.o")
    if not os.path.exists(obj):
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "xdp_pass.c")
        sh("clang", "-O2", "-target", "bpf", f"-I/usr/include/{platform.machine()}-linux-gnu", "-c", src, "-o", obj)
    ns(CLI_NS, "ip", "link", "set", "dev", CLI_IF, "xdpdrv", "obj", obj, "sec", "xdp")


def check_sample(sample, addr, kind):
    """kdig each sampled query (over TCP, or with DO, as `kind` is asked); returns (right,
    total)."""
    right = 0
    how = ["+tcp"] if kind.endswith("-tcp") else ["+dnssec"] if kind.endswith("-dnssec") else []
    for name, t, rcode, want in sample:
        r = ns(CLI_NS, "kdig", f"@{addr}", "+time=1", "+retry=2", *how, name, t, check=False)
        if kind.endswith("-dnssec") and "RRSIG" not in r.stdout:
            print(f"  no RRSIG for {name} {t}: {r.stdout}", flush=True)
            continue
        if f"status: {rcode}" in r.stdout and want in r.stdout:
            right += 1
        else:
            print(f"  wrong answer for {name} {t}: {r.stdout}", flush=True)
    return right, len(sample)


def one_run(srv, qpath, rate):
    peer_xdp(False)
    k = kxdpgun(CLI_NS, CLI_IF, qpath, rate, srv.addr, srv.cpu, tcp=srv.kind.endswith("-tcp"))
    sent, answers, rcodes = k["sent"], k["answers"], k["rcodes"]
    return {
        "offered_qps": rate, "sent_qps": k["sent_qps"], "answers_ps": answers / SECS, "answered": answers / max(sent, 1),
        "core_busy_s": k["core_s"], "proc_cpu_s": k["proc_s"],
        "core_s_per_m": k["core_s"] / answers * 1e6 if answers else None,
        "proc_s_per_m": k["proc_s"] / answers * 1e6 if answers else None,
        "nxdomain_share": rcodes.get("NXDOMAIN", 0) / max(answers, 1), "rcodes": rcodes,
    }


def main():
    preflight()
    os.makedirs(WORK, exist_ok=True)
    cpuset = Cpuset("sirocco-bench-server", SRV_CPU)
    results = {}
    try:
        with NET:
            run_all(cpuset, results)
    finally:
        cpuset.remove()
    write(results)


def run_all(cpuset, results):
    """Every zone size, every server, every offered rate. Each server is started once per zone
    to time its load and check a sample of answers; then, for each rate and repetition, every
    server runs once in turn on a fresh start, so the machine's drift (tens of percent over
    minutes) falls on all of them alike."""
    for n in ZONES:
        zpath, qpath, sample = zone_and_queries(n)
        kinds = [k for k in SERVERS if not (k == "sirocco-echo" and n != ZONES[0])]  # the echo reads no zone
        spath, sqpath = signed(zpath, qpath) if any(k.endswith("-dnssec") for k in kinds) else (None, None)
        zone_of = lambda kind: spath if kind.endswith("-dnssec") else zpath  # noqa: E731
        queries_of = lambda kind: sqpath if kind.endswith("-dnssec") else qpath  # noqa: E731
        per = results.setdefault(str(n), {})
        for kind in kinds:
            srv = Server(kind, zone_of(kind), cpuset)
            t = time.time()
            srv.start()
            load_s = time.time() - t
            try:
                right, total = check_sample(sample, srv.addr, kind) if kind not in ("sirocco-echo", "xdp-bounce") else (0, 0)
            finally:
                srv.stop()
            per[kind] = {"load_s": load_s, "sample_right": right, "sample": total, "points": []}
        for rate in RATES:
            runs = {kind: [] for kind in kinds}
            for _ in range(REPS):
                for kind in kinds:
                    srv = Server(kind, zone_of(kind), cpuset)
                    srv.start()
                    try:
                        runs[kind].append(one_run(srv, queries_of(kind), rate))
                    finally:
                        srv.stop()
            for kind in kinds:
                p = {k: median_of(runs[kind], k) for k in runs[kind][0] if k not in ("rcodes",)}
                p["offered_qps"], p["runs"] = rate, runs[kind]
                per[kind]["points"].append(p)
                print(f"{kind:9} {n:>8} names, offered {rate:>8}: {p['answers_ps']:>9.0f} answers/s "
                      f"({p['answered'] * 100:.0f}% answered), core {p['core_s_per_m'] or 0:.2f} s/M, "
                      f"process {p['proc_s_per_m'] or 0:.2f} s/M", flush=True)


def best(entry):
    return max(entry["points"], key=lambda p: p["answers_ps"]) if entry else None


def write(results):
    meta = run_meta(secs=SECS, reps=REPS,
            rates=RATES, placement="servers in a cpuset on CPU 1 with the server veth's NAPI thread; kxdpgun on CPU 0",
            knot=sh("knotd", "--version", check=False).stdout.strip(), nsd=sh("nsd", "-v", check=False).stderr.strip())
    stamp = meta["date"]
    lines = [f"# Authoritative DNS ({stamp}, kernel {meta['kernel']})", "",
             f"Median of {REPS} runs of {SECS:.0f} s per point, the servers taking turns within each repetition; "
             f"best point over offered rates {RATES} per server. "
             "Each server confined to CPU 1 (with the server veth's NAPI thread), kxdpgun on CPU 0.", "",
             "| zone names | server | answers/s | answered | server core CPU-s per M answers | server processes CPU-s per M | sample right | load s |",
             "|---|---|---|---|---|---|---|---|"]
    for n, per in results.items():
        for kind, e in per.items():
            b = best(e)
            lines.append(f"| {n} | {kind} | {b['answers_ps']:.0f} | {b['answered'] * 100:.0f}% | {b['core_s_per_m']:.2f} | "
                         f"{b['proc_s_per_m']:.2f} | {e['sample_right']}/{e['sample']} | {e['load_s']:.1f} |")
    lines += ["", "## Ratios (best point of each)", ""]
    for n, per in results.items():
        s = best(per.get("sirocco"))
        v6 = best(per.get("sirocco6"))
        if s and v6:
            lines.append(f"- {n} names, sirocco over IPv6 / over IPv4: answers/s **{v6['answers_ps'] / s['answers_ps'] * 100:.0f}%**, "
                         f"answers per server-core CPU-second **{s['core_s_per_m'] / v6['core_s_per_m'] * 100:.0f}%** "
                         "(goal ≥ 95%)")
        for peer in ("knot-xdp", "nsd", "sirocco-decompress"):
            p = best(per.get(peer))
            if s and p:
                lines.append(f"- {n} names, sirocco / {peer}: answers/s **{s['answers_ps'] / p['answers_ps']:.2f}×**, "
                             f"answers per server-core CPU-second **{p['core_s_per_m'] / s['core_s_per_m']:.2f}×**")
        d = best(per.get("sirocco-dnssec"))
        if s and d:
            lines.append(f"- {n} names, sirocco signed (NSEC3, DO) / unsigned: answers/s **{d['answers_ps'] / s['answers_ps'] * 100:.0f}%**, "
                         f"answers per server-core CPU-second **{s['core_s_per_m'] / d['core_s_per_m'] * 100:.0f}%** "
                         "(goal ≥ 80%)")
        for peer in ("knot-xdp-dnssec", "nsd-dnssec"):
            p = best(per.get(peer))
            if d and p:
                lines.append(f"- {n} names, signed, sirocco / {base_kind(peer)}: answers/s **{d['answers_ps'] / p['answers_ps']:.2f}×**, "
                             f"answers per server-core CPU-second **{p['core_s_per_m'] / d['core_s_per_m']:.2f}×**")
        t = best(per.get("sirocco-tcp"))
        for peer in ("nsd-tcp", "knot-tcp"):
            p = best(per.get(peer))
            if t and p:
                lines.append(f"- {n} names, over TCP (a connection per query), sirocco / {base_kind(peer)}: answers/s "
                             f"**{t['answers_ps'] / p['answers_ps']:.2f}×**, answers per server-core CPU-second "
                             f"**{p['core_s_per_m'] / t['core_s_per_m']:.2f}×**" + (" (goal ≥ 2× NSD)" if peer == "nsd-tcp" else ""))
        e = best(results[str(ZONES[0])].get("sirocco-echo"))
        if s and e:
            lines.append(f"- {n} names, sirocco dns / sirocco echo (same engine, same load): "
                         f"**{s['answers_ps'] / e['answers_ps'] * 100:.0f}%** of the echo's replies/s")
    lines += ["", "## Per repetition (the servers in turns): median ratio and spread", ""]
    pairs = [("sirocco-xdp", "knot-xdp"), ("xdp-bounce", "knot-xdp"), ("sirocco-xdp", "xdp-bounce"),
             ("sirocco-xdp-dnssec", "knot-xdp-dnssec"), ("sirocco-dnssec", "knot-xdp-dnssec"),
             ("sirocco-xdp-dnssec", "sirocco-dnssec"), ("sirocco-xdp", "sirocco-xdp@base")]
    for n, per in results.items():
        for a, b in pairs:
            if a not in per or b not in per:
                continue
            for pa, pb in zip(per[a]["points"], per[b]["points"]):
                rs = sorted(x["answers_ps"] / y["answers_ps"] for x, y in zip(pa["runs"], pb["runs"]) if y["answers_ps"])
                cs = sorted(y["core_s_per_m"] / x["core_s_per_m"] for x, y in zip(pa["runs"], pb["runs"])
                            if x["core_s_per_m"] and y["core_s_per_m"])
                if rs:
                    lines.append(f"- {n} names at {pa['offered_qps']} offered, {a} / {b}: answers/s **{rs[len(rs) // 2]:.2f}×** "
                                 f"({rs[0]:.2f}–{rs[-1]:.2f})"
                                 + (f", per server-core CPU-second {cs[len(cs) // 2]:.2f}× ({cs[0]:.2f}–{cs[-1]:.2f})" if cs else ""))
    flood_rate = max(RATES)

    def at_flood(entry):
        return next((p for p in entry["points"] if p["offered_qps"] == flood_rate), None) if entry else None

    lines += ["", f"## Under the flood ({flood_rate} queries/s offered, the highest rate)", ""]
    for n, per in results.items():
        for kind in per:
            f, b = at_flood(per[kind]), best(per[kind])
            if f and b:
                lines.append(f"- {n} names, {kind}: {f['answers_ps']:.0f} answers/s at {f['sent_qps']:.0f} sent, "
                             f"**{f['answers_ps'] / b['answers_ps'] * 100:.0f}%** of its best point"
                             + (" (goal ≥ 95%)" if kind == "sirocco" else ""))
        s, k = at_flood(per.get("sirocco")), at_flood(per.get("knot-xdp"))
        if s and k:
            lines.append(f"- {n} names, sirocco / knot-xdp under the flood: **{s['answers_ps'] / k['answers_ps']:.2f}×** "
                         f"answers/s (goal ≥ 1.5×), **{k['core_s_per_m'] / s['core_s_per_m']:.2f}×** answers per "
                         "server-core CPU-second")
    save(OUT_NAME, meta, lines, results=results)
    def draw(plt):
        fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 4), squeeze=False)
        for ax, (n, per) in zip(axes[0], results.items()):
            for kind, e in per.items():
                ax.plot([p["sent_qps"] / 1e3 for p in e["points"]], [p["answers_ps"] / 1e3 for p in e["points"]],
                        marker="o", label=kind)
            ax.set_title(f"{n} names")
            ax.set_xlabel("offered (k queries/s, as sent)")
            ax.set_ylabel("answers (k/s)")
        finish(fig, axes[0], OUT_NAME)

    plot(draw)


if __name__ == "__main__":
    main()
