//! The `glibc_tuned` rival: glibc set up the way real-time users set it up, in a child process
//! so that `mallopt` and `mlockall` never reach the other rows.

use std::io::{self, Write};
use std::process::{Command, Stdio};

use super::RunResult;

/// `M_TRIM_THRESHOLD` and `M_MMAP_MAX` from glibc's `malloc.h` (libc does not export them).
const M_TRIM_THRESHOLD: libc::c_int = -1;
const M_MMAP_MAX: libc::c_int = -4;

/// Never give memory back to the system, never `mmap` a block, lock every page now and later.
/// Returns whether all three took; what failed (e.g. `mlockall` without `CAP_IPC_LOCK` or a
/// large `RLIMIT_MEMLOCK`) goes to stderr.
pub(crate) fn tune_glibc() -> bool {
    // SAFETY: mallopt only changes tuning parameters; mlockall takes no pointers.
    let (trim, mmap, lock) = unsafe {
        (
            libc::mallopt(M_TRIM_THRESHOLD, -1),
            libc::mallopt(M_MMAP_MAX, 0),
            libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE),
        )
    };
    let mut failed = Vec::new();
    if trim != 1 {
        failed.push("mallopt(M_TRIM_THRESHOLD, -1)".to_owned());
    }
    if mmap != 1 {
        failed.push("mallopt(M_MMAP_MAX, 0)".to_owned());
    }
    if lock != 0 {
        failed.push(format!("mlockall: {}", io::Error::last_os_error()));
    }
    if !failed.is_empty() {
        eprintln!("glibc_tuned: failed: {}", failed.join(", "));
    }
    failed.is_empty()
}

/// Set in the child's environment to `<workload index>,<seed>`: `alloc::run` then runs only
/// that glibc_tuned run and writes its result to stdout.
pub(crate) const CHILD_ENV: &str = "DOWNBEAT_ALLOC_GLIBC_TUNED_CHILD";

/// The child's result as bytes: six little-endian u64 words (syscalls, faults, stalls,
/// failed, tune_failed, sample count) and the sorted samples as f64 bits.
pub(crate) fn encode(r: &RunResult) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(8 * (r.sorted_ns.len() + 6));
    for v in [
        r.syscalls,
        r.faults,
        r.stalls as u64,
        r.failed as u64,
        u64::from(r.tune_failed),
        r.sorted_ns.len() as u64,
    ] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    for x in &r.sorted_ns {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    bytes
}

/// Runs workload `index` with `seed` in a child process (this binary, `alloc` suite, with
/// [`CHILD_ENV`] set) and decodes what it prints. A child process rather than `fork`: after a
/// fork every page of the parent, the pools included, is copy-on-write, and the parent's next
/// writes to them fault (seen as ~1500 page faults in Downbeat's `large_*` rows).
pub(crate) fn in_child(index: usize, seed: u64, quick: bool) -> io::Result<RunResult> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.arg("alloc");
    if quick {
        cmd.arg("--quick");
    }
    let out = cmd
        .env(CHILD_ENV, format!("{index},{seed}"))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()?;
    let bytes = out.stdout;
    if !out.status.success() || bytes.len() < 48 {
        return Err(io::Error::other(format!(
            "child exited with {} after sending {} bytes",
            out.status,
            bytes.len()
        )));
    }
    let word = |i: usize| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap());
    let n = word(5) as usize;
    if bytes.len() != 8 * (6 + n) {
        return Err(io::Error::other(format!(
            "child sent {} bytes for {n} samples",
            bytes.len()
        )));
    }
    Ok(RunResult {
        syscalls: word(0),
        faults: word(1),
        stalls: word(2) as usize,
        failed: word(3) as usize,
        tune_failed: word(4) != 0,
        sorted_ns: (0..n).map(|i| f64::from_bits(word(6 + i))).collect(),
    })
}

/// The child's side: parses [`CHILD_ENV`]'s value into (workload index, seed).
pub(crate) fn parse_child_env(v: &str) -> Option<(usize, u64)> {
    let (i, s) = v.split_once(',')?;
    Some((i.parse().ok()?, s.parse().ok()?))
}

/// Writes the child's result to stdout.
pub(crate) fn send(r: &RunResult) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(&encode(r))?;
    out.flush()
}
