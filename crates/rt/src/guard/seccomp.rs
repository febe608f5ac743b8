//! System-call tracking: a seccomp filter on the guard thread traps every
//! system call, the SIGSYS handler records it and re-issues it from a stub
//! the filter lets through, so the guarded code sees the same results.
//!
//! Only Linux on x86_64 is implemented; elsewhere [`install`] explains why
//! tracking is unavailable and the guard carries on without it.

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) use imp::{install, untracked_syscall};

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
pub(crate) fn install() -> Result<(), super::Untracked> {
    Err(super::Untracked::Unsupported {
        tracker: super::Tracker::Syscalls,
        os: std::env::consts::OS,
        arch: std::env::consts::ARCH,
    })
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod imp {
    use std::ffi::{c_int, c_void};
    use std::mem::MaybeUninit;
    use std::ptr;
    use std::sync::OnceLock;

    use super::super::state;
    use super::super::syscalls::nr;
    use super::super::{Tracker, Untracked};
    use crate::OsError;

    /// Seccomp could not be set up: `call` failed with the thread's last error.
    fn unavailable(call: &'static str) -> Untracked {
        Untracked::Failed {
            tracker: Tracker::Syscalls,
            call,
            source: OsError::last(),
        }
    }

    /// Our traps carry this in `si_errno` (the filter's 16 data bits), which
    /// tells our SIGSYS apart from another filter's or a `kill -SYS`.
    const TRAP_DATA: u32 = 0x0db7;
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    /// `si_code` of a seccomp SIGSYS.
    const SYS_SECCOMP: c_int = 1;
    const SIGSYS_BIT: u64 = 1 << (libc::SIGSYS - 1);

    // The one place allowed to make system calls on a filtered thread. The
    // filter matches the address right after `syscall` exactly, which is
    // also where a restarted call re-enters, so a restart stays allowed.
    std::arch::global_asm!(
        ".pushsection .text.downbeat_rt_guard_syscall,\"ax\",@progbits",
        ".globl downbeat_rt_guard_syscall",
        ".hidden downbeat_rt_guard_syscall",
        ".type downbeat_rt_guard_syscall,@function",
        "downbeat_rt_guard_syscall:",
        "mov rax, rdi",
        "mov rdi, rsi",
        "mov rsi, rdx",
        "mov rdx, rcx",
        "mov r10, r8",
        "mov r8, r9",
        "mov r9, qword ptr [rsp + 8]",
        "syscall",
        ".globl downbeat_rt_guard_syscall_return",
        ".hidden downbeat_rt_guard_syscall_return",
        "downbeat_rt_guard_syscall_return:",
        "ret",
        ".size downbeat_rt_guard_syscall, . - downbeat_rt_guard_syscall",
        ".popsection",
    );

    extern "C" {
        fn downbeat_rt_guard_syscall(
            nr: i64,
            a0: u64,
            a1: u64,
            a2: u64,
            a3: u64,
            a4: u64,
            a5: u64,
        ) -> i64;
        static downbeat_rt_guard_syscall_return: u8;
    }

    /// Makes system call `number` from the allowed stub: never trapped, never
    /// recorded. Returns the raw kernel result (`-errno` on failure).
    ///
    /// # Safety
    ///
    /// As for the system call itself: pointer arguments must be valid for
    /// what the call does with them.
    pub(crate) unsafe fn untracked_syscall(number: i64, args: [u64; 6]) -> i64 {
        let [a0, a1, a2, a3, a4, a5] = args;
        // SAFETY: the stub is a plain System V function around `syscall`;
        // the caller vouches for the arguments.
        unsafe { downbeat_rt_guard_syscall(number, a0, a1, a2, a3, a4, a5) }
    }

    fn stmt(code: u32, k: u32) -> libc::sock_filter {
        libc::sock_filter {
            code: code as u16,
            jt: 0,
            jf: 0,
            k,
        }
    }

    fn jeq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
        libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt,
            jf,
            k,
        }
    }

    /// Allows the stub, `rt_sigreturn` and process creation, traps the rest.
    ///
    /// The clone family passes untrapped because re-issuing it from the
    /// handler would start the child on the handler's frame; a thread spawn
    /// still shows up through its `mmap`/`mprotect` and allocations. Calls of
    /// other architectures (`int 0x80`) pass too: their numbers differ and
    /// the stub cannot re-issue them.
    fn program() -> Vec<libc::sock_filter> {
        let ip = ptr::addr_of!(downbeat_rt_guard_syscall_return) as u64;
        let ld = |offset| stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, offset);
        let ret = |k| stmt(libc::BPF_RET | libc::BPF_K, k);
        // Offsets into `struct seccomp_data`, little-endian halves of the
        // 64-bit instruction pointer.
        let (nr_at, arch_at, ip_low_at, ip_high_at) = (0, 4, 8, 12);
        const ALLOW: u8 = 13;
        let to_allow = |at: u8| ALLOW - at - 1;
        let filter = vec![
            ld(arch_at),
            jeq(AUDIT_ARCH_X86_64, 0, to_allow(1)),
            ld(nr_at),
            jeq(nr::RT_SIGRETURN as u32, to_allow(3), 0),
            jeq(nr::CLONE as u32, to_allow(4), 0),
            jeq(nr::CLONE3 as u32, to_allow(5), 0),
            jeq(nr::FORK as u32, to_allow(6), 0),
            jeq(nr::VFORK as u32, to_allow(7), 0),
            ld(ip_high_at),
            jeq((ip >> 32) as u32, 0, 2),
            ld(ip_low_at),
            jeq(ip as u32, to_allow(11), 0),
            ret(libc::SECCOMP_RET_TRAP | TRAP_DATA),
            ret(libc::SECCOMP_RET_ALLOW),
        ];
        debug_assert_eq!(filter.len(), usize::from(ALLOW) + 1);
        filter
    }

    /// The SIGSYS disposition before ours, for signals that are not our traps.
    static PREVIOUS: OnceLock<Result<libc::sigaction, Untracked>> = OnceLock::new();

    fn install_handler() -> Result<(), Untracked> {
        let previous = PREVIOUS.get_or_init(|| {
            // SAFETY: an all-zero `sigaction` is a valid starting value.
            let mut action: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
            action.sa_sigaction = on_sigsys as *const () as usize;
            // SA_NODEFER keeps SIGSYS deliverable inside the handler: the
            // kernel kills the process if a trap meets a blocked SIGSYS,
            // and a signal nested in the handler may make system calls.
            action.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER | libc::SA_RESTART;
            let mut old = MaybeUninit::<libc::sigaction>::zeroed();
            // SAFETY: both pointers are valid; `on_sigsys` has the
            // SA_SIGINFO signature.
            if unsafe { libc::sigaction(libc::SIGSYS, &action, old.as_mut_ptr()) } != 0 {
                return Err(unavailable("sigaction(SIGSYS)"));
            }
            // SAFETY: written by the successful `sigaction` above.
            Ok(unsafe { old.assume_init() })
        });
        previous.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    /// Puts the calling thread, and only it, under the trapping filter. It
    /// cannot be removed again: call this on a thread that is about to end.
    pub(crate) fn install() -> Result<(), Untracked> {
        install_handler()?;
        // SAFETY: plain integer arguments; affects only this thread.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(unavailable("prctl(PR_SET_NO_NEW_PRIVS)"));
        }
        let filter = program();
        let prog = libc::sock_fprog {
            len: filter.len() as u16,
            filter: filter.as_ptr().cast_mut(),
        };
        // SAFETY: `prog` points at a well-formed program that outlives the
        // call (the kernel copies it). No TSYNC flag: this thread only.
        let done = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &prog as *const libc::sock_fprog,
            )
        };
        if done != 0 {
            return Err(unavailable("seccomp(SECCOMP_SET_MODE_FILTER)"));
        }
        Ok(())
    }

    extern "C" fn on_sigsys(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
        // SAFETY: the kernel hands an SA_SIGINFO handler a valid siginfo.
        let (code, data) = unsafe { ((*info).si_code, (*info).si_errno) };
        if code != SYS_SECCOMP || data != TRAP_DATA as c_int {
            forward(signal, info, context);
            return;
        }
        let context = context.cast::<libc::ucontext_t>();
        // SAFETY: for SA_SIGINFO handlers the third argument is the
        // interrupted thread's `ucontext_t`, which we alone touch here.
        let regs = unsafe { &mut (*context).uc_mcontext.gregs };
        // The kernel rolls RAX back to the number before delivering the trap.
        let number = regs[libc::REG_RAX as usize];
        let args = [
            libc::REG_RDI,
            libc::REG_RSI,
            libc::REG_RDX,
            libc::REG_R10,
            libc::REG_R8,
            libc::REG_R9,
        ]
        .map(|r| regs[r as usize] as u64);
        let detail = if number == nr::FUTEX {
            args[1] as u32
        } else {
            0
        };
        state::record_syscall(number, detail);
        let result = match number {
            nr::RT_SIGPROCMASK => sigprocmask(args, context),
            nr::SIGALTSTACK => sigaltstack(args, context),
            // The filter survives exec and the new program has no handler:
            // its first system call would kill it. Refuse instead.
            nr::EXECVE | nr::EXECVEAT => -i64::from(libc::EPERM),
            // SAFETY: the guarded code made exactly this call; making it for
            // it has the same effect.
            _ => unsafe { untracked_syscall(number, args) },
        };
        // SAFETY: as above; RAX carries the result back to the caller.
        unsafe { (*context).uc_mcontext.gregs[libc::REG_RAX as usize] = result };
    }

    /// `rt_sigreturn` restores the mask saved in the signal frame, which
    /// would undo a mask change made from the handler; the new mask goes into
    /// the frame instead. SIGSYS itself is never left blocked, or the next
    /// trap would kill the process (glibc blocks all signals around
    /// `clone` and while a thread exits).
    fn sigprocmask(args: [u64; 6], context: *mut libc::ucontext_t) -> i64 {
        // SAFETY: the guarded code's own call, made for it; the kernel checks
        // its pointers.
        let result = unsafe { untracked_syscall(nr::RT_SIGPROCMASK, args) };
        if result == 0 {
            let mut mask = 0_u64;
            // SAFETY: queries the mask into a local 8-byte kernel sigset.
            unsafe {
                untracked_syscall(
                    nr::RT_SIGPROCMASK,
                    [0, 0, ptr::addr_of_mut!(mask) as u64, 8, 0, 0],
                )
            };
            // SAFETY: `uc_sigmask` starts with the kernel's 8-byte mask.
            unsafe {
                ptr::addr_of_mut!((*context).uc_sigmask)
                    .cast::<u64>()
                    .write(mask & !SIGSYS_BIT)
            };
        }
        result
    }

    /// Like [`sigprocmask`]: `rt_sigreturn` also restores the alternate
    /// signal stack from the frame.
    fn sigaltstack(args: [u64; 6], context: *mut libc::ucontext_t) -> i64 {
        // SAFETY: the guarded code's own call, made for it.
        let result = unsafe { untracked_syscall(nr::SIGALTSTACK, args) };
        if result == 0 && args[0] != 0 {
            let mut now = MaybeUninit::<libc::stack_t>::zeroed();
            // SAFETY: queries into a local `stack_t`, then stores it where
            // `rt_sigreturn` will read it back.
            unsafe {
                untracked_syscall(nr::SIGALTSTACK, [0, now.as_mut_ptr() as u64, 0, 0, 0, 0]);
                (*context).uc_stack = now.assume_init();
            }
        }
        result
    }

    /// Hands a SIGSYS that is not one of our traps to whoever had SIGSYS
    /// before us, or applies the default action (terminate) if nobody did.
    fn forward(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
        let previous = match PREVIOUS.get() {
            Some(Ok(previous)) => *previous,
            _ => return,
        };
        match previous.sa_sigaction {
            libc::SIG_IGN => {}
            libc::SIG_DFL => {
                // SAFETY: restores the default disposition and re-raises on
                // this thread, which then dies as it would have without us.
                unsafe {
                    libc::signal(libc::SIGSYS, libc::SIG_DFL);
                    libc::raise(libc::SIGSYS);
                }
            }
            handler if previous.sa_flags & libc::SA_SIGINFO != 0 => {
                // SAFETY: an SA_SIGINFO disposition holds a function of this
                // type; it receives the kernel's own arguments.
                let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                    unsafe { std::mem::transmute(handler) };
                handler(signal, info, context);
            }
            handler => {
                // SAFETY: a plain disposition holds a `fn(int)`.
                let handler: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
                handler(signal);
            }
        }
    }
}
