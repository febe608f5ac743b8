//! The URI table behind the URID map and unmap: fixed capacity, allocated once, and mapped
//! from any thread with atomics only, so that a plugin mapping a URI from `run()` on the
//! audio thread neither allocates nor locks.
//!
//! An open-addressing hash table of slots, each 0 (empty) or a URID; a URID `n` names entry
//! `n - 1`, which says where its URI's bytes (nul-terminated) lie in a byte arena. Inserting
//! reserves an entry and arena space with `fetch_add`, writes the bytes and the entry, then
//! publishes the URID into an empty slot with a compare-and-swap (Release); a reader that sees
//! the URID in a slot (Acquire) sees the bytes. Entries and bytes are never written after
//! they are published and never removed, so unmap's pointers stay valid for the process.
//! Two threads inserting the same new URI race for the same slot: the loser finds the
//! winner's URI there and returns its URID (the loser's reserved entry is never handed out:
//! a race wastes an entry, which the capacity allows for).
//! Every operation takes at most one pass over the slots: bounded, no waiting on anyone.
//! When the slots, entries or bytes run out, mapping returns 0 (the URID map's "could not
//! map") and counts the refusal.
//!
//! This file is also compiled into the loom model (`tests/loom_urid.rs`), with `super::sync`
//! naming loom's atomics there and std's here, so the model checks exactly this code.

use super::sync::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// What one URI occupies: its entry, its bytes and its nul.
const NUL: usize = 1;

/// A fixed-capacity URI table; see the module docs.
pub(crate) struct UridTable {
    /// 0 or a URID; length a power of two, twice the entries.
    slots: Box<[AtomicU32]>,
    /// Per entry: arena offset << 32 | length (without the nul); 0 until written.
    entries: Box<[AtomicU64]>,
    bytes: Box<[AtomicU8]>,
    next_entry: AtomicUsize,
    next_byte: AtomicUsize,
    refused: AtomicU64,
}

impl UridTable {
    /// A table for `entries` URIs of `bytes` bytes in total, every page of it written once
    /// here so that no later insert touches a fresh page (a page fault on the audio thread).
    pub(crate) fn new(entries: usize, bytes: usize) -> Self {
        let slots = (2 * entries).next_power_of_two();
        let t = Self {
            slots: (0..slots).map(|_| AtomicU32::new(0)).collect(),
            entries: (0..entries).map(|_| AtomicU64::new(0)).collect(),
            bytes: (0..bytes).map(|_| AtomicU8::new(0)).collect(),
            next_entry: AtomicUsize::new(0),
            next_byte: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        };
        // `collect` of zeroed atomics may get untouched pages from the allocator (calloc'd
        // memory is mapped lazily): write every one.
        t.slots.iter().for_each(|s| s.store(0, Ordering::Relaxed));
        t.entries.iter().for_each(|e| e.store(0, Ordering::Relaxed));
        t.bytes.iter().for_each(|b| b.store(0, Ordering::Relaxed));
        t
    }

    /// The URID of `uri`, mapping it if new; 0 when the table is full (counted in
    /// [`refused`](Self::refused)). No allocation, lock or system call.
    pub(crate) fn map(&self, uri: &[u8]) -> u32 {
        let mask = self.slots.len() - 1;
        let mut at = hash(uri) as usize & mask;
        let mut mine: Option<u32> = None;
        for _ in 0..self.slots.len() {
            let id = self.slots[at].load(Ordering::Acquire);
            if id == 0 {
                let new = match mine {
                    Some(id) => id,
                    None => match self.reserve(uri) {
                        Some(id) => *mine.insert(id),
                        None => return self.refuse(),
                    },
                };
                match self.slots[at].compare_exchange(0, new, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => return new,
                    // Someone published here first: it may be this very URI.
                    Err(theirs) if self.uri_is(theirs, uri) => return theirs,
                    Err(_) => {}
                }
            } else if self.uri_is(id, uri) {
                return id;
            }
            at = (at + 1) & mask;
        }
        self.refuse()
    }

    /// The nul-terminated URI of `urid`, or `None` for 0 and URIDs never handed out.
    #[cfg(not(loom))]
    pub(crate) fn unmap(&self, urid: u32) -> Option<*const std::ffi::c_char> {
        let (offset, _) = self.entry(urid)?;
        // The bytes are never written again once the entry is (see the module docs), and an
        // AtomicU8 has u8's layout, so they read as a C string for the rest of the process.
        Some(self.bytes[offset].as_ptr().cast_const().cast())
    }

    /// The URI of `urid`, copied out (for the loom model, whose atomics have no pointer).
    #[cfg(loom)]
    pub(crate) fn uri(&self, urid: u32) -> Option<Vec<u8>> {
        let (offset, len) = self.entry(urid)?;
        Some(
            self.bytes[offset..offset + len]
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
        )
    }

    /// URIs that could not be mapped because the table was full.
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn refuse(&self) -> u32 {
        self.refused.fetch_add(1, Ordering::Relaxed);
        0
    }

    /// Reserves an entry and arena space for `uri` and writes them: the URID that names it,
    /// not yet in any slot. `None` when either is used up.
    fn reserve(&self, uri: &[u8]) -> Option<u32> {
        // Not a URI: empty (which would also read as an unwritten entry), or with a nul
        // inside (not a C string).
        if uri.is_empty() || uri.contains(&0) || uri.len() >= u32::MAX as usize {
            return None;
        }
        let index = self.next_entry.fetch_add(1, Ordering::Relaxed);
        if index >= self.entries.len() {
            return None;
        }
        let need = uri.len() + NUL;
        let offset = self.next_byte.fetch_add(need, Ordering::Relaxed);
        if offset + need > self.bytes.len() || offset > u32::MAX as usize {
            return None;
        }
        for (dst, &b) in self.bytes[offset..].iter().zip(uri) {
            dst.store(b, Ordering::Relaxed);
        }
        self.bytes[offset + uri.len()].store(0, Ordering::Relaxed);
        // Release, with the slot's compare-and-swap after it: what reads the URID reads this.
        self.entries[index].store(
            ((offset as u64) << 32) | uri.len() as u64,
            Ordering::Release,
        );
        Some(index as u32 + 1)
    }

    /// Arena offset and length of `urid`'s URI once written.
    fn entry(&self, urid: u32) -> Option<(usize, usize)> {
        let index = (urid as usize).checked_sub(1)?;
        if index
            >= self
                .next_entry
                .load(Ordering::Acquire)
                .min(self.entries.len())
        {
            return None;
        }
        let e = self.entries[index].load(Ordering::Acquire);
        // 0 is an entry not written yet: every URI has a length.
        (e != 0).then_some(((e >> 32) as usize, (e & 0xffff_ffff) as usize))
    }

    fn uri_is(&self, urid: u32, uri: &[u8]) -> bool {
        match self.entry(urid) {
            Some((offset, len)) => {
                len == uri.len()
                    && self.bytes[offset..offset + len]
                        .iter()
                        .zip(uri)
                        .all(|(a, &b)| a.load(Ordering::Relaxed) == b)
            }
            None => false,
        }
    }
}

/// FNV-1a: short, allocation-free and good enough for URIs.
fn hash(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The URI of a URID as a `CStr` (for tests and diagnostics).
#[cfg(all(test, not(loom)))]
pub(crate) fn uri_of(table: &UridTable, urid: u32) -> Option<&std::ffi::CStr> {
    // SAFETY: unmap's pointer is a nul-terminated string that lives as long as the table.
    table
        .unmap(urid)
        .map(|p| unsafe { std::ffi::CStr::from_ptr(p) })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn urids_are_stable_distinct_and_unmap_back() {
        let t = UridTable::new(8, 256);
        let a = t.map(b"urn:a");
        let b = t.map(b"urn:b");
        assert!(a != 0 && b != 0 && a != b);
        assert_eq!(t.map(b"urn:a"), a);
        assert_eq!(uri_of(&t, a), Some(c"urn:a"));
        assert_eq!(uri_of(&t, b), Some(c"urn:b"));
        assert_eq!(uri_of(&t, 0), None);
        assert_eq!(uri_of(&t, 99), None);
    }

    #[test]
    fn a_full_table_refuses_and_counts() {
        let t = UridTable::new(2, 64);
        assert_ne!(t.map(b"urn:1"), 0);
        assert_ne!(t.map(b"urn:2"), 0);
        assert_eq!(t.map(b"urn:3"), 0);
        assert_eq!(t.refused(), 1);
        // Known URIs still map.
        assert_ne!(t.map(b"urn:1"), 0);
        // Out of bytes before entries.
        let t = UridTable::new(8, 8);
        assert_ne!(t.map(b"urn:1"), 0);
        assert_eq!(t.map(b"urn:long"), 0);
        assert_eq!(t.refused(), 1);
        // A nul inside cannot be a C string; nothing is not a URI.
        assert_eq!(t.map(b"urn:\0"), 0);
        assert_eq!(t.map(b""), 0);
    }

    #[test]
    fn threads_mapping_the_same_uris_agree() {
        let t = UridTable::new(1024, 64 * 1024);
        let per_thread: Vec<Vec<u32>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|k| {
                    let t = &t;
                    s.spawn(move || {
                        // Each thread in its own order, so that every URI is raced for.
                        let mut ids = vec![0; 500];
                        for i in 0..500 {
                            let n = if k % 2 == 0 { i } else { 499 - i };
                            ids[n] = t.map(format!("urn:downbeat:race#{n}").as_bytes());
                        }
                        ids
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for ids in &per_thread[1..] {
            assert_eq!(ids, &per_thread[0]);
        }
        let mut distinct = per_thread[0].clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 500);
        assert!(!distinct.contains(&0));
        for (n, &id) in per_thread[0].iter().enumerate() {
            let want = format!("urn:downbeat:race#{n}");
            assert_eq!(uri_of(&t, id).unwrap().to_str().unwrap(), want);
        }
        assert_eq!(t.refused(), 0);
    }
}
