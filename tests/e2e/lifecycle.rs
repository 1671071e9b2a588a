//! Start, stop, kill: the XDP filter never outlives sirocco.

use crate::common::*;
use std::time::Duration;

#[test]
fn sigterm_detaches_the_filter() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    assert!(net.server_has_xdp());
    assert!(one_echo(&net.cli_ns, SERVER_OWN));
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(!net.server_has_xdp(), "XDP program left on the interface after SIGTERM");
}

#[test]
fn kill_9_leaves_nothing_and_restart_is_clean() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    assert!(one_echo(&net.cli_ns, SERVER_OWN));
    s.kill9();
    // The filter is attached through a BPF link owned by the process: the kernel removes it.
    let t = std::time::Instant::now();
    while net.server_has_xdp() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!net.server_has_xdp(), "XDP program left on the interface after kill -9");
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    assert!(one_echo(&net.cli_ns, SERVER_OWN), "serves again after restart");
    let c = stop_and_count(s);
    assert!(total(&c, "udp_replies") >= 1);
    assert!(!net.server_has_xdp());
}

#[test]
fn a_stale_netlink_filter_is_replaced() {
    // A program of sirocco's name attached the old way (netlink, which does not detach on
    // exit), as a crashed older sirocco or a hand-load would leave it.
    let net = TestNet::new(1);
    let stale = std::env::temp_dir().join(format!("sirocco-stale-{}.o", std::process::id()));
    std::fs::write(&stale, io::filter::object()).unwrap();
    let out = net.exec(
        &net.srv_ns,
        &["ip", "link", "set", "dev", &net.srv_if, "xdpdrv", "obj", stale.to_str().unwrap(), "sec", "xdp"],
    );
    let _ = std::fs::remove_file(&stale);
    assert!(out.status.success(), "loading the stale program: {}", String::from_utf8_lossy(&out.stderr));
    assert!(net.server_has_xdp());
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    assert!(one_echo(&net.cli_ns, SERVER_OWN));
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(!net.server_has_xdp(), "neither the stale nor the new program may remain");
}

#[test]
fn another_programs_filter_is_left_alone_and_named_in_one_line() {
    let net = TestNet::new(1);
    net.xdp_pass_on(&net.srv_ns, &net.srv_if);
    let o = net.exec(
        &net.srv_ns,
        &[env!("CARGO_BIN_EXE_sirocco"), "echo", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--duration", "2"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("an XDP program of another program is attached"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(net.server_has_xdp(), "the other program's filter stays");
}

fn cpu_seconds(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = s[s.rfind(')').unwrap() + 2..].split_whitespace().collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / hz
}

#[test]
fn an_idle_sirocco_sleeps() {
    let net = TestNet::new(2);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--queues", "2", "--stats"]);
    assert!(one_echo(&net.cli_ns, SERVER_OWN));
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_seconds(s.pid());
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_seconds(s.pid()) - before;
    // Two engines doing nothing for 3 s: a busy-polling engine would use 3 s each.
    assert!(used < 0.3, "idle sirocco used {used:.2} CPU-seconds in 3 s");
    let (st, log) = s.stop();
    assert!(st.success());
    assert!(log.contains("q0: rx") && log.contains("q1: rx"), "--stats prints per-engine rates:\n{log}");
}

/// Restores vm.nr_hugepages on drop.
struct Hugepages(String);
impl Drop for Hugepages {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/vm/nr_hugepages", &self.0);
    }
}

#[test]
fn umem_goes_on_hugepages_when_reserved() {
    let net = TestNet::new(1);
    let before = std::fs::read_to_string("/proc/sys/vm/nr_hugepages").unwrap().trim().to_string();
    let _restore = Hugepages(before.clone());
    // 128 MB: room for this engine's 16 MB UMEM even if tests running beside it take some.
    let want = before.parse::<u64>().unwrap() + 64;
    std::fs::write("/proc/sys/vm/nr_hugepages", want.to_string()).unwrap();
    let got: u64 = std::fs::read_to_string("/proc/sys/vm/nr_hugepages").unwrap().trim().parse().unwrap();
    assert!(got >= want, "the kernel could not reserve hugepages ({got} < {want})");
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    assert!(s.log().contains("UMEM on hugepages"), "{}", s.log());
    assert!(one_echo(&net.cli_ns, SERVER_OWN));
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
}

#[test]
fn umem_goes_on_transparent_hugepages_where_none_are_reserved() {
    let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let log = s.log();
    if thp.contains("[never]") || thp.is_empty() {
        assert!(log.contains("UMEM on ordinary pages"), "THP is off here: {log}");
    } else {
        // Reserved hugepages, when a test beside this one has them, come first.
        assert!(
            log.contains("UMEM on transparent hugepages") || log.contains("UMEM on hugepages"),
            "THP is {}: {log}",
            thp.trim()
        );
    }
    assert!(one_echo(&net.cli_ns, SERVER_OWN));
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
}

/// The interface's deferral knobs, as the kernel shows them.
fn napi_knobs(net: &TestNet) -> (String, String) {
    let read = |k: &str| {
        let out = net.exec(&net.srv_ns, &["cat", &format!("/sys/class/net/{}/{k}", net.srv_if)]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    (read("napi_defer_hard_irqs"), read("gro_flush_timeout"))
}

#[test]
fn busy_polling_is_in_force_only_where_the_kernel_busy_polls_and_says_why() {
    let net = TestNet::new(1);
    let before = napi_knobs(&net);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut v = release.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
    let copy_mode_busy_polls = (v.next().unwrap(), v.next().unwrap()) < (6, 13);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    assert!(one_echo(&net.cli_ns, SERVER_OWN));
    let log = s.log();
    if copy_mode_busy_polls {
        assert!(log.contains("busy polling on (napi_defer_hard_irqs 2"), "{log}");
        assert_eq!(napi_knobs(&net), ("2".into(), "200000".into()), "the knobs are set while it runs");
    } else {
        // veth has no zero-copy AF_XDP: the socket is in copy mode, which Linux 6.13+ does
        // not busy-poll. auto says so in the start line and leaves the knobs alone.
        assert!(log.contains("busy polling off: AF_XDP copy mode"), "{log}");
        assert_eq!(napi_knobs(&net), before, "knobs untouched where busy polling cannot work");
    }
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert_eq!(napi_knobs(&net), before, "whatever was set is put back at exit");
    if !copy_mode_busy_polls {
        // Asked for outright where it cannot work: one clear line, a failure, nothing left.
        let out = net.exec(
            &net.srv_ns,
            &[sirocco(), "echo", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--busy-poll", "on", "--duration", "2"],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains("--busy-poll on: AF_XDP copy mode"), "{err}");
        assert_eq!(err.lines().filter(|l| l.contains("error")).count(), 1, "{err}");
        assert!(!net.server_has_xdp(), "no XDP program left behind");
    }
    // A bad value on the command line, and in a config file (named with its line).
    let out = net.exec(&net.srv_ns, &[sirocco(), "echo", "--iface", &net.srv_if, "--busy-poll", "sometimes"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("sometimes"), "{err}");
    let dir = std::env::temp_dir().join(format!("sirocco-busy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (good, bad) = (dir.join("good.toml"), dir.join("bad.toml"));
    let body = format!("iface = \"{}\"\naddr = \"{SERVER_OWN}\"\n", net.srv_if);
    std::fs::write(&good, format!("{body}busy_poll = \"off\"\n")).unwrap();
    std::fs::write(&bad, format!("{body}busy_poll = \"never\"\n")).unwrap();
    let check =
        |f: &std::path::Path| net.exec(&net.srv_ns, &[sirocco(), "echo", "--config", f.to_str().unwrap(), "--check"]);
    let ok = check(&good);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let no = check(&bad);
    let err = String::from_utf8_lossy(&no.stderr);
    assert!(!no.status.success() && err.contains("bad.toml:3") && err.contains("never"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn napi_instances_are_read_from_the_kernels_netdev_family_as_sysfs_shows_them() {
    // The server side's veth with threaded NAPI and knobs of the test's choosing: the netlink
    // listing, made from a thread inside that namespace, must give that instance, its thread
    // and the knobs sysfs shows, and say whether this kernel has IRQ suspension.
    let net = TestNet::new(1);
    let set = |knob: &str, v: &str| {
        let cmd = format!("echo {v} > /sys/class/net/{}/{knob}", net.srv_if);
        assert!(net.exec(&net.srv_ns, &["sh", "-c", &cmd]).status.success(), "{cmd}");
    };
    // veth runs a NAPI instance once GRO is on (or an XDP program is attached).
    let gro = net.exec(&net.srv_ns, &["ethtool", "-K", &net.srv_if, "gro", "on"]);
    assert!(gro.status.success(), "{}", String::from_utf8_lossy(&gro.stderr));
    set("threaded", "1");
    set("napi_defer_hard_irqs", "3");
    set("gro_flush_timeout", "123456");
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut v = release.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
    let since_6_13 = (v.next().unwrap(), v.next().unwrap()) >= (6, 13);
    let (ns, srv_if, cli_if) = (format!("/run/netns/{}", net.srv_ns), net.srv_if.clone(), net.cli_if.clone());
    let (napis, others) = std::thread::spawn(move || {
        io::iface::enter_netns(&ns).unwrap();
        let index = io::iface::index_of(&srv_if).unwrap();
        let napis = io::netdev::napis(index).unwrap();
        assert!(napis.iter().all(|n| n.ifindex == index), "{napis:?}");
        // The peer lives in the other namespace: nothing of it is listed here.
        assert!(io::iface::index_of(&cli_if).is_none());
        let others = io::netdev::napis(index + 1000).unwrap();
        (napis, others)
    })
    .join()
    .unwrap();
    assert_eq!(napis.len(), 1, "one queue, one NAPI instance: {napis:?}");
    assert!(others.is_empty(), "an interface that is not there has none: {others:?}");
    let n = &napis[0];
    assert!(n.id > 0 && n.irq.is_none(), "veth's NAPI has no device interrupt: {n:?}");
    let pid = n.pid.expect("threaded NAPI has a thread");
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    assert!(comm.starts_with(&format!("napi/{}-", net.srv_if)), "{comm}");
    if since_6_13 {
        // Per-instance settings (6.13+), which the sysfs knobs set on every instance.
        assert_eq!((n.defer_hard_irqs, n.gro_flush_timeout_ns), (Some(3), Some(123456)), "{n:?}");
    }
    assert_eq!(io::netdev::irq_suspension(&napis), since_6_13, "{n:?}");
}
