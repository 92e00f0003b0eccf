//! Who holds a lease, and whether that process still lives.
//!
//! An owner id names a process in a way no other process can ever share:
//! `HOST:PID:NONCE@MACHINE:START`. `MACHINE` is a digest of the machine id,
//! the boot id and the PID namespace the process runs in, so two containers
//! of one image, or one machine before and after a reboot, never count as
//! the same machine; `START` is the process's start time in clock ticks
//! since boot, which a reused PID does not repeat. A claimant on the same
//! machine can therefore tell at once that the owner of a lease is gone
//! (no such process, or another process under its PID) and take the run
//! without waiting for the lease to run out, and can tell that it is alive
//! however the clocks moved: a live, running owner's run is never taken
//! on its own machine. Owners on other machines (or ids written before
//! this scheme, without `@`), and other hosts of the claimant's own
//! process, are judged by lease expiry alone, on the database's clock.

use std::sync::OnceLock;

/// What a claimant on this machine can know about a lease's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// The owner process runs on this machine.
    Alive,
    /// It exists but is stopped (SIGSTOP, a debugger): judged by its lease,
    /// which it does not renew while stopped.
    Stopped,
    /// It ran on this machine and is gone (exited, killed, or its PID now
    /// names another process).
    Gone,
    /// It runs elsewhere, or its id does not say where: only the lease's
    /// expiry tells.
    Unknown,
}

/// This process's machine digest and start time, read once.
struct Me {
    machine: String,
    start: Option<u64>,
}

fn me() -> &'static Me {
    static ME: OnceLock<Me> = OnceLock::new();
    ME.get_or_init(|| Me {
        machine: machine_digest(),
        start: start_ticks("self"),
    })
}

/// A digest of what makes two processes' PIDs comparable: the same
/// machine, the same boot, the same PID namespace.
fn machine_digest() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let pid_ns = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut h = troupe_check::hash::Fnv64::new();
    h.str(read("/etc/machine-id").trim())
        .str(read("/proc/sys/kernel/random/boot_id").trim())
        .str(&pid_ns);
    format!("{:016x}", h.finish())
}

/// The start time of process `pid` (`self` for this one) in clock ticks
/// since boot: field 22 of `/proc/PID/stat`, read after the command name
/// (which may itself hold spaces and parentheses).
fn start_ticks(pid: &str) -> Option<u64> {
    stat(pid).map(|(_, start)| start)
}

/// The state letter and start time of process `pid`.
fn stat(pid: &str) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // After the state come fields 4 … 21; the start time is field 22.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// A fresh owner id for this process (see the module doc); `nonce` tells
/// apart the hosts one process may open.
pub fn new_owner_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let me = me();
    let start = me.start.map_or_else(String::new, |s| s.to_string());
    format!(
        "{host}:{}:{:x}@{}:{start}",
        std::process::id(),
        nanos & 0xffff_ffff_ffff,
        me.machine
    )
}

/// The host and process id an owner id names (`HOST:PID:NONCE`, with or
/// without `@MACHINE:START`; a host name may itself hold `:`).
fn host_and_pid(owner: &str) -> Option<(&str, u32)> {
    let name = owner.rsplit_once('@').map_or(owner, |(n, _)| n);
    let mut parts = name.rsplitn(3, ':');
    let _nonce = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    Some((parts.next()?, pid))
}

/// The process id an owner id names, if it names one.
pub fn pid(owner: &str) -> Option<u32> {
    host_and_pid(owner).map(|(_, pid)| pid)
}

/// The parts of an owner id that locate its process: PID, machine digest
/// and start time.
fn locate(owner: &str) -> Option<(u32, &str, u64)> {
    let (_, place) = owner.rsplit_once('@')?;
    let (machine, start) = place.split_once(':')?;
    Some((pid(owner)?, machine, start.parse().ok()?))
}

/// Whether the process that `owner` names is alive, as far as this
/// machine can tell.
pub fn liveness(owner: &str) -> Liveness {
    let Some((pid, machine, start)) = locate(owner) else {
        return Liveness::Unknown;
    };
    if machine != me().machine {
        return Liveness::Unknown;
    }
    // This very process (another host of it, one that stopped driving
    // without giving its leases back): its liveness says nothing of that
    // host, which is judged by its lease like an owner elsewhere.
    if pid == std::process::id() && me().start == Some(start) {
        return Liveness::Unknown;
    }
    match stat(&pid.to_string()) {
        None => Liveness::Gone,
        Some((_, started)) if started != start => Liveness::Gone,
        // A zombie has exited; only its parent has not looked yet.
        Some(('Z' | 'X' | 'x', _)) => Liveness::Gone,
        Some(('T' | 't', _)) => Liveness::Stopped,
        Some(_) => Liveness::Alive,
    }
}

/// `owner` for people: `process 17612 on vm`, or the id itself when it
/// does not say.
pub fn describe(owner: &str) -> String {
    match host_and_pid(owner) {
        Some((host, pid)) => format!("process {pid} on {host}"),
        None => owner.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_judged_by_its_lease_and_a_made_up_one_on_this_machine_is_gone() {
        let me = new_owner_id();
        assert_eq!(liveness(&me), Liveness::Unknown, "{me}");
        // The same PID with another start time is a reused PID: gone.
        let (name, place) = me.rsplit_once('@').unwrap();
        let (machine, start) = place.split_once(':').unwrap();
        let reused = format!("{name}@{machine}:{}", start.parse::<u64>().unwrap() + 1);
        assert_eq!(liveness(&reused), Liveness::Gone);
        // PID 0 never names a user process.
        let nobody = format!("host:0:1@{machine}:{start}");
        assert_eq!(liveness(&nobody), Liveness::Gone);
    }

    #[test]
    fn owners_elsewhere_or_of_old_stores_are_unknown() {
        let me = new_owner_id();
        let (name, place) = me.rsplit_once('@').unwrap();
        let start = place.split_once(':').unwrap().1;
        let elsewhere = format!("{name}@0123456789abcdef:{start}");
        assert_eq!(liveness(&elsewhere), Liveness::Unknown);
        assert_eq!(liveness("vm:17612:d4b8f1cb65af"), Liveness::Unknown);
        assert_eq!(liveness("worker-7"), Liveness::Unknown);
        assert_eq!(liveness("a@b"), Liveness::Unknown);
    }

    #[test]
    fn a_stopped_process_is_told_apart_and_a_reaped_one_is_gone() {
        use std::process::Command;
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let start = start_ticks(&pid.to_string()).unwrap();
        let id = format!("host:{pid}:1@{}:{start}", me().machine);
        assert_eq!(liveness(&id), Liveness::Alive);
        let signal = |sig: &str| {
            assert!(
                Command::new("kill")
                    .args([sig, &pid.to_string()])
                    .status()
                    .unwrap()
                    .success()
            );
        };
        signal("-STOP");
        // The kernel marks it stopped once the signal is delivered.
        let mut seen = liveness(&id);
        for _ in 0..200 {
            if seen == Liveness::Stopped {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            seen = liveness(&id);
        }
        assert_eq!(seen, Liveness::Stopped);
        signal("-KILL");
        child.wait().unwrap();
        assert_eq!(liveness(&id), Liveness::Gone);
    }

    #[test]
    fn owners_are_described_by_process_and_host() {
        assert_eq!(describe(&new_owner_id()).split(' ').next(), Some("process"));
        assert_eq!(
            describe("vm:17612:d4b8f1cb65af@00ff:12"),
            "process 17612 on vm"
        );
        assert_eq!(describe("vm:17612:d4b8f1cb65af"), "process 17612 on vm");
        assert_eq!(describe("worker-7"), "worker-7");
    }
}
