//! Subnormal numbers flushed to zero on an audio thread, and the mode restored after.
//!
//! A feedback loop (a filter, a reverb, a delay line) fed silence decays towards zero
//! through the subnormal numbers, on which x86 processors take a slow path of a hundred
//! cycles or more per operation: a quiet tail can cost more than loud audio. Setting the
//! processor's *flush to zero* (results) and *denormals are zero* (inputs) modes makes them
//! exact zeros instead. [`FlushDenormals`] sets both for the current thread and puts the
//! previous mode back when it is dropped, so code that runs on a borrowed thread (a device
//! callback belongs to the driver) leaves it as it found it.
//!
//! | target | register | bits |
//! |---|---|---|
//! | x86-64 | MXCSR (SSE) | FTZ (15) and DAZ (6) |
//! | AArch64 | FPCR | FZ (24), which covers inputs and results |
//! | anything else (wasm32 included) | none | nothing to set |
//!
//! **Same bits on every target.** WebAssembly has no such mode: its float operations keep
//! subnormals. So that a Web build renders what a native build renders, the built-in nodes
//! never rely on this mode for their output: every node with feedback flushes its own state
//! to exactly zero in code well above the subnormal range (`biquad`, `karplus`,
//! `spectral_compressor`; the synth's voices stop at the end of their release). Where no
//! subnormal number appears, the mode changes nothing, and the mode here is the safety net
//! for the rest (plugins, other crates' nodes).
//!
//! ```
//! use downbeat_rt::denormals::{is_flushing, FlushDenormals};
//!
//! let before = is_flushing();
//! {
//!     let _flush = FlushDenormals::new();
//!     # #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
//!     assert!(is_flushing());
//! }
//! assert_eq!(is_flushing(), before);
//! ```

/// Sets flush-to-zero and denormals-are-zero on the current thread until dropped, then
/// restores the mode it found. Creating and dropping one is two register moves each: no
/// system call, no allocation, fine on the audio thread.
///
/// It is neither `Send` nor `Sync`: the mode belongs to the thread that set it.
#[derive(Debug)]
#[must_use = "the mode is restored when this is dropped"]
pub struct FlushDenormals {
    saved: arch::Word,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl FlushDenormals {
    /// Flushes subnormals to zero on this thread from now until the value is dropped.
    #[inline]
    pub fn new() -> Self {
        let saved = arch::read();
        arch::write(saved | arch::FLUSH);
        Self {
            saved,
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Default for FlushDenormals {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for FlushDenormals {
    #[inline]
    fn drop(&mut self) {
        arch::write(self.saved);
    }
}

/// True when the current thread flushes subnormals to zero (every bit
/// [`FlushDenormals`] sets is set). Always false where there is no such mode.
// Where there is none (wasm32), FLUSH is 0 and the mask is constant: that is the point.
#[allow(clippy::bad_bit_mask)]
pub fn is_flushing() -> bool {
    arch::FLUSH != 0 && arch::read() & arch::FLUSH == arch::FLUSH
}

#[cfg(target_arch = "x86_64")]
mod arch {
    pub(super) type Word = u32;
    /// FTZ (bit 15) and DAZ (bit 6) of MXCSR.
    pub(super) const FLUSH: Word = 1 << 15 | 1 << 6;

    #[inline]
    pub(super) fn read() -> Word {
        let mut csr: Word = 0;
        // SAFETY: `stmxcsr` stores the 32-bit MXCSR into the 4 bytes `csr` owns; SSE is
        // part of x86-64's baseline, and the instruction touches nothing else.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags));
        }
        csr
    }

    #[inline]
    pub(super) fn write(csr: Word) {
        // SAFETY: `ldmxcsr` loads MXCSR from 4 readable bytes. Every value written is one
        // read from MXCSR with only FTZ and DAZ possibly added, both defined on every
        // x86-64 processor (DAZ is in MXCSR_MASK on all of them), so it cannot fault. It
        // changes only how floating-point results round and flush, which is its purpose.
        unsafe {
            std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, readonly, preserves_flags));
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    pub(super) type Word = u64;
    /// FZ (bit 24) of FPCR.
    pub(super) const FLUSH: Word = 1 << 24;

    #[inline]
    pub(super) fn read() -> Word {
        let fpcr: Word;
        // SAFETY: reading FPCR is allowed at EL0 and has no side effect.
        unsafe {
            std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack, preserves_flags));
        }
        fpcr
    }

    #[inline]
    pub(super) fn write(fpcr: Word) {
        // SAFETY: writing FPCR is allowed at EL0; the value is one read from FPCR with at
        // most FZ added, and it changes only floating-point flushing.
        unsafe {
            std::arch::asm!("msr fpcr, {}", in(reg) fpcr, options(nomem, nostack, preserves_flags));
        }
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod arch {
    pub(super) type Word = u32;
    /// No mode to set on this target (wasm32 among them).
    pub(super) const FLUSH: Word = 0;

    #[inline]
    pub(super) fn read() -> Word {
        0
    }

    #[inline]
    pub(super) fn write(_: Word) {}
}
