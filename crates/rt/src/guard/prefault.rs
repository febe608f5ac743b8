//! Fault in, before arming, the memory a first run would otherwise fault in
//! inside the scope: the guard thread's stack and the program's code.
//!
//! A real audio thread is warm (and its application ideally `mlockall`s);
//! the guard's thread is brand new, so without this every first touch of a
//! stack page or of a code page never run before would be a page fault the
//! code under test is not to blame for. Anonymous data the code touches
//! for the first time is deliberately left alone: that fault is real.

use std::hint::black_box;

use super::PrefaultError;
#[cfg(target_os = "linux")]
use crate::OsError;

const CHUNK: usize = 16 * 1024;
const PAGE: usize = 4096;

/// Writes one byte per page to the next `bytes` of the stack below the caller.
#[inline(never)]
pub(crate) fn stack(bytes: usize) {
    let mut chunk = [0_u8; CHUNK];
    for page in chunk.chunks_mut(PAGE) {
        // SAFETY: a write within a live local array; volatile so the
        // otherwise pointless store is kept.
        unsafe { std::ptr::write_volatile(page.as_mut_ptr(), 1) };
    }
    if bytes > CHUNK {
        stack(bytes - CHUNK);
    }
    // Using the chunk after the recursive call stops the compiler from
    // turning the recursion into a loop that reuses one frame.
    black_box(&mut chunk);
}

/// Populates the page tables for the code, read-only data, data and bss of
/// every loaded executable file and of the vDSO, or says why not.
#[cfg(target_os = "linux")]
pub(crate) fn code() -> Result<(), PrefaultError> {
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| PrefaultError::Maps(OsError(e.raw_os_error().unwrap_or(libc::EIO))))?;
    let mappings: Vec<Mapping<'_>> = maps.lines().filter_map(Mapping::parse).collect();
    let executable: Vec<&str> = mappings
        .iter()
        .filter(|m| m.perms.contains('x') && !m.path.is_empty())
        .map(|m| m.path)
        .collect();
    let mut unsupported = false;
    let mut previous: Option<&Mapping<'_>> = None;
    for m in &mappings {
        let of_binary = !m.path.is_empty() && executable.contains(&m.path);
        // The anonymous mapping right after a binary's data is its bss.
        let bss = m.path.is_empty()
            && previous.is_some_and(|p| {
                p.end == m.start && p.perms.contains('w') && executable.contains(&p.path)
            });
        previous = Some(m);
        if !(of_binary || bss) || !m.perms.starts_with('r') {
            continue;
        }
        // Writing populates private copies for data, the state those pages
        // reach on their first store anyway; contents stay the same.
        let advice = if m.perms.contains('w') {
            libc::MADV_POPULATE_WRITE
        } else {
            libc::MADV_POPULATE_READ
        };
        // SAFETY: the range is a current mapping of this process and the
        // advice only faults pages in, never changes their contents.
        let failed =
            unsafe { libc::madvise(m.start as *mut libc::c_void, m.end - m.start, advice) } != 0;
        if failed
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
            && m.path != "[vdso]"
        {
            unsupported = true;
        }
    }
    if unsupported {
        return Err(PrefaultError::NoPopulate);
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn code() -> Result<(), PrefaultError> {
    Ok(())
}

/// One line of `/proc/self/maps`.
#[cfg(target_os = "linux")]
struct Mapping<'a> {
    start: usize,
    end: usize,
    perms: &'a str,
    path: &'a str,
}

#[cfg(target_os = "linux")]
impl<'a> Mapping<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        let mut fields = line.splitn(6, ' ');
        let (start, end) = fields.next()?.split_once('-')?;
        let perms = fields.next()?;
        let path = fields.nth(3).map_or("", str::trim);
        Some(Mapping {
            start: usize::from_str_radix(start, 16).ok()?,
            end: usize::from_str_radix(end, 16).ok()?,
            perms,
            path,
        })
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn parses_maps_lines() {
        let m = Mapping::parse("7f00-7f10 r-xp 00001000 08:01 1234    /usr/lib/libc.so.6").unwrap();
        assert_eq!(
            (m.start, m.end, m.perms, m.path),
            (0x7f00, 0x7f10, "r-xp", "/usr/lib/libc.so.6")
        );
        let anon = Mapping::parse("7f10-7f20 rw-p 00000000 00:00 0 ").unwrap();
        assert_eq!(anon.path, "");
    }

    #[test]
    fn populating_code_succeeds_here() {
        code().unwrap();
        stack(64 * 1024);
    }
}
