//! The interface's interrupt deferral knobs (`napi_defer_hard_irqs`, `gro_flush_timeout` in
//! `/sys/class/net/IF/`), which preferred busy polling needs: while the engine polls, the
//! kernel keeps the queue's interrupts off (re-armed by a timer of `gro_flush_timeout` as a
//! safety net, `napi_defer_hard_irqs` times) instead of waking its NAPI for every batch.
//!
//! sirocco sets them only where they have the kernel's defaults (0 and 0): a value someone
//! else set is theirs and stays. What was there is written to a state file under
//! [`STATE_DIR`] before anything changes, and put back when the [`Tuned`] guard drops; a
//! sirocco killed with SIGKILL leaves the file, and the next start on that interface puts the
//! values back first ([`recover`]).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where the values found before tuning are kept while sirocco runs.
pub const STATE_DIR: &str = "/run/sirocco/napi";

/// The two knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knobs {
    /// Times the NAPI completes without re-enabling interrupts.
    pub defer_hard_irqs: u32,
    /// Nanoseconds of the timer that polls while interrupts are deferred.
    pub gro_flush_timeout_ns: u64,
}

impl Knobs {
    /// The kernel's defaults: no deferral.
    pub const DEFAULT: Knobs = Knobs { defer_hard_irqs: 0, gro_flush_timeout_ns: 0 };
}

/// Where the kernel shows interfaces.
const SYS_NET: &str = "/sys/class/net";

fn knob(sys: &Path, iface: &str, name: &str) -> PathBuf {
    sys.join(iface).join(name)
}

/// The interface's knobs now.
pub fn read(iface: &str) -> io::Result<Knobs> {
    read_in(Path::new(SYS_NET), iface)
}

fn read_in(sys: &Path, iface: &str) -> io::Result<Knobs> {
    let get = |name: &str| -> io::Result<u64> {
        let text = fs::read_to_string(knob(sys, iface, name))?;
        text.trim().parse().map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("{name}: {text:?}")))
    };
    Ok(Knobs { defer_hard_irqs: get("napi_defer_hard_irqs")? as u32, gro_flush_timeout_ns: get("gro_flush_timeout")? })
}

fn write_in(sys: &Path, iface: &str, k: Knobs) -> io::Result<()> {
    fs::write(knob(sys, iface, "gro_flush_timeout"), k.gro_flush_timeout_ns.to_string())?;
    fs::write(knob(sys, iface, "napi_defer_hard_irqs"), k.defer_hard_irqs.to_string())
}

fn state_file(dir: &Path, iface: &str) -> PathBuf {
    dir.join(iface)
}

/// A state file: the pid that tuned, then the values it found.
fn parse_state(text: &str) -> Option<(u32, Knobs)> {
    let mut w = text.split_whitespace().map(str::parse::<u64>);
    let (pid, defer, timeout) = (w.next()?.ok()?, w.next()?.ok()?, w.next()?.ok()?);
    Some((pid as u32, Knobs { defer_hard_irqs: defer as u32, gro_flush_timeout_ns: timeout }))
}

fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// True if this kernel busy-polls AF_XDP sockets in copy mode: before Linux 6.13 a socket
/// learnt its NAPI from the packets it received; since then (commit "xsk: Bring back busy
/// polling support") it is given one at bind time only in zero-copy mode, and a copy-mode
/// socket's busy polls do nothing.
pub fn copy_mode_busy_polls() -> bool {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    kernel_before(&release, (6, 13))
}

fn kernel_before(release: &str, (major, minor): (u32, u32)) -> bool {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
    match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => (a, b) < (major, minor),
        _ => false,
    }
}

/// What became of the tuning.
#[derive(Debug)]
pub enum Outcome {
    /// The knobs are sirocco's until the guard drops.
    Tuned(Tuned),
    /// Someone set them (to these values): left as they are.
    Kept(Knobs),
    /// They cannot be read or written here (no such files, no permission): why.
    Unavailable(String),
}

/// The knobs as sirocco set them; the values found before go back on drop.
#[derive(Debug)]
pub struct Tuned {
    sys: PathBuf,
    iface: String,
    before: Knobs,
    state: PathBuf,
}

impl Drop for Tuned {
    fn drop(&mut self) {
        let _ = write_in(&self.sys, &self.iface, self.before);
        let _ = fs::remove_file(&self.state);
    }
}

/// Puts back what a sirocco that died without cleaning up (SIGKILL) found on `iface`; says
/// what it did, if anything.
pub fn recover(iface: &str) -> Option<String> {
    recover_in(Path::new(SYS_NET), Path::new(STATE_DIR), iface)
}

fn recover_in(sys: &Path, dir: &Path, iface: &str) -> Option<String> {
    let path = state_file(dir, iface);
    let (pid, before) = parse_state(&fs::read_to_string(&path).ok()?)?;
    if alive(pid) && pid != std::process::id() {
        return None;
    }
    let done = write_in(sys, iface, before);
    let _ = fs::remove_file(&path);
    Some(match done {
        Ok(()) => format!(
            "{iface}: put back napi_defer_hard_irqs {} and gro_flush_timeout {} left by a sirocco that did not stop cleanly",
            before.defer_hard_irqs, before.gro_flush_timeout_ns
        ),
        Err(e) => format!("{iface}: could not put back the NAPI values a stopped sirocco left: {e}"),
    })
}

/// Sets `want` on `iface` if its knobs have the kernel's defaults.
pub fn tune(iface: &str, want: Knobs) -> Outcome {
    tune_in(Path::new(SYS_NET), Path::new(STATE_DIR), iface, want)
}

fn tune_in(sys: &Path, dir: &Path, iface: &str, want: Knobs) -> Outcome {
    let before = match read_in(sys, iface) {
        Ok(k) => k,
        Err(e) => return Outcome::Unavailable(e.to_string()),
    };
    if before != Knobs::DEFAULT {
        return Outcome::Kept(before);
    }
    let state = state_file(dir, iface);
    let saved = fs::create_dir_all(dir).and_then(|()| {
        let text = format!("{} {} {}\n", std::process::id(), before.defer_hard_irqs, before.gro_flush_timeout_ns);
        fs::write(&state, text)
    });
    if let Err(e) = saved {
        return Outcome::Unavailable(format!("{}: {e}", state.display()));
    }
    let guard = Tuned { sys: sys.to_path_buf(), iface: iface.to_string(), before, state };
    match write_in(sys, iface, want) {
        Ok(()) => Outcome::Tuned(guard),
        Err(e) => Outcome::Unavailable(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_compare_by_major_and_minor() {
        assert!(kernel_before("6.12.9-amd64", (6, 13)));
        assert!(!kernel_before("6.13.0", (6, 13)));
        assert!(!kernel_before("6.18.44-fc-v769\n", (6, 13)));
        assert!(kernel_before("5.15.0-91-generic", (6, 13)));
        assert!(!kernel_before("garbage", (6, 13)));
    }

    #[test]
    fn a_state_file_names_the_tuner_and_what_it_found() {
        assert_eq!(parse_state("42 0 0\n"), Some((42, Knobs { defer_hard_irqs: 0, gro_flush_timeout_ns: 0 })));
        assert_eq!(parse_state("42 2"), None);
        assert_eq!(parse_state("x 0 0"), None);
    }

    /// A directory standing for /sys/class/net with one interface's two knobs, and one for
    /// the state files.
    fn fake(name: &str, defer: u32, timeout: u64) -> (PathBuf, PathBuf) {
        let root = std::env::temp_dir().join(format!("sirocco-napi-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let (sys, state) = (root.join("sys"), root.join("state"));
        fs::create_dir_all(sys.join("eth9")).unwrap();
        write_in(&sys, "eth9", Knobs { defer_hard_irqs: defer, gro_flush_timeout_ns: timeout }).unwrap();
        (sys, state)
    }

    const WANT: Knobs = Knobs { defer_hard_irqs: 2, gro_flush_timeout_ns: 200_000 };

    #[test]
    fn defaults_are_tuned_and_put_back_when_the_guard_drops() {
        let (sys, state) = fake("drop", 0, 0);
        let Outcome::Tuned(guard) = tune_in(&sys, &state, "eth9", WANT) else { panic!("tuned") };
        assert_eq!(read_in(&sys, "eth9").unwrap(), WANT);
        assert!(state.join("eth9").exists(), "what was there is written down first");
        drop(guard);
        assert_eq!(read_in(&sys, "eth9").unwrap(), Knobs::DEFAULT);
        assert!(!state.join("eth9").exists());
    }

    #[test]
    fn values_someone_set_are_kept() {
        let (sys, state) = fake("kept", 5, 1000);
        let out = tune_in(&sys, &state, "eth9", WANT);
        assert!(matches!(out, Outcome::Kept(Knobs { defer_hard_irqs: 5, gro_flush_timeout_ns: 1000 })), "{out:?}");
        assert_eq!(read_in(&sys, "eth9").unwrap().defer_hard_irqs, 5);
    }

    #[test]
    fn what_a_killed_sirocco_left_is_put_back_at_the_next_start() {
        let (sys, state) = fake("killed", 0, 0);
        let Outcome::Tuned(guard) = tune_in(&sys, &state, "eth9", WANT) else { panic!("tuned") };
        std::mem::forget(guard); // SIGKILL: no drop
                                 // The state file names a process that is gone.
        fs::write(state.join("eth9"), "4194304 0 0\n").unwrap();
        let said = recover_in(&sys, &state, "eth9").expect("something was put back");
        assert!(said.contains("put back"), "{said}");
        assert_eq!(read_in(&sys, "eth9").unwrap(), Knobs::DEFAULT);
        assert!(matches!(tune_in(&sys, &state, "eth9", WANT), Outcome::Tuned(_)), "tunable again");
    }

    #[test]
    fn a_living_tuner_is_left_alone() {
        let (sys, state) = fake("alive", 0, 0);
        let Outcome::Tuned(guard) = tune_in(&sys, &state, "eth9", WANT) else { panic!("tuned") };
        fs::write(state.join("eth9"), "1 0 0\n").unwrap(); // pid 1 lives
        assert_eq!(recover_in(&sys, &state, "eth9"), None);
        assert_eq!(read_in(&sys, "eth9").unwrap(), WANT);
        drop(guard);
    }

    #[test]
    fn an_interface_without_the_knobs_is_unavailable_and_nothing_is_left_behind() {
        let (sys, state) = fake("missing", 0, 0);
        let out = tune_in(&sys, &state, "no-such-interface-x", WANT);
        assert!(matches!(out, Outcome::Unavailable(_)), "{out:?}");
        assert!(!state_file(&state, "no-such-interface-x").exists());
        assert_eq!(recover_in(&sys, &state, "no-such-interface-x"), None);
    }
}
