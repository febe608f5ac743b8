//! Rings over caller-provided memory: header validation and protocol-breaking peers.

use downbeat_ring::layout::{self, RingLayout};
use downbeat_ring::{Consumer, ElementKind, LayoutError, Producer};

/// Memory aligned like a `SharedArrayBuffer` view from wasm would be.
fn memory(layout: &RingLayout) -> Vec<u64> {
    let mut mem = vec![0u64; layout.bytes().div_ceil(8)];
    // SAFETY: `mem` is ours and large enough.
    unsafe { layout.init(mem.as_mut_ptr().cast(), mem.len() * 8) }.unwrap();
    mem
}

fn word(mem: &mut [u64], offset: usize) -> &mut u32 {
    // SAFETY: in bounds and 4-aligned for every offset used here.
    unsafe { &mut *mem.as_mut_ptr().cast::<u8>().add(offset).cast::<u32>() }
}

fn attach<T: downbeat_ring::Element>(mem: &mut [u64]) -> Result<Producer<T>, LayoutError> {
    // SAFETY: `mem` outlives the producer in every caller.
    unsafe { Producer::<T>::from_raw(mem.as_mut_ptr().cast(), mem.len() * 8) }
}

#[test]
fn header_is_little_endian_and_documented() {
    let layout = RingLayout::records::<f32>(10, 2).unwrap();
    let mut mem = memory(&layout);
    let bytes: Vec<u8> = mem.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(&bytes[0..4], b"DBRG");
    let at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    assert_eq!(at(layout::header::VERSION), 1);
    assert_eq!(at(layout::header::ELEMENT_SIZE), 4);
    assert_eq!(at(layout::header::ELEMENT_KIND), ElementKind::F32 as u32);
    assert_eq!(at(layout::header::CAPACITY), 20);
    assert_eq!(at(layout::header::RECORD_LEN), 2);
    assert!(bytes[24..layout::DATA_OFFSET].iter().all(|&b| b == 0));
    assert_eq!(layout.bytes(), 384 + 80);
    *word(&mut mem, 0) = 0;
}

#[test]
fn every_mismatch_is_an_error() {
    let layout = RingLayout::new::<f32>(8).unwrap();
    let fresh = memory(&layout);

    let mut mem = fresh.clone();
    *word(&mut mem, layout::header::MAGIC) = 0x1234;
    assert_eq!(
        attach::<f32>(&mut mem).unwrap_err(),
        LayoutError::BadMagic { found: 0x1234 }
    );

    let mut mem = fresh.clone();
    *word(&mut mem, layout::header::VERSION) = 2;
    assert_eq!(
        attach::<f32>(&mut mem).unwrap_err(),
        LayoutError::UnsupportedVersion { found: 2 }
    );

    let mut mem = fresh.clone();
    assert!(matches!(
        attach::<u32>(&mut mem).unwrap_err(),
        LayoutError::ElementMismatch { found_kind: 9, .. }
    ));
    assert!(matches!(
        attach::<f64>(&mut mem).unwrap_err(),
        LayoutError::ElementMismatch { found_size: 4, .. }
    ));

    // A kind whose size disagrees with the size field, or an unknown kind.
    let mut mem = fresh.clone();
    *word(&mut mem, layout::header::ELEMENT_SIZE) = 8;
    assert!(matches!(
        attach::<f32>(&mut mem),
        Err(LayoutError::ElementMismatch { .. })
    ));
    let mut mem = fresh.clone();
    *word(&mut mem, layout::header::ELEMENT_KIND) = 77;
    assert!(matches!(
        attach::<f32>(&mut mem),
        Err(LayoutError::ElementMismatch { .. })
    ));

    let mut mem = fresh.clone();
    *word(&mut mem, layout::header::CAPACITY) = 1 << 31;
    assert_eq!(
        attach::<f32>(&mut mem).unwrap_err(),
        LayoutError::BadCapacity { capacity: 1 << 31 }
    );

    // A capacity larger than the memory: must not read past the end.
    let mut mem = fresh.clone();
    *word(&mut mem, layout::header::CAPACITY) = 1000;
    assert!(matches!(
        attach::<f32>(&mut mem),
        Err(LayoutError::TooSmall { needed: 4384, .. })
    ));

    let mut mem = fresh.clone();
    *word(&mut mem, layout::header::RECORD_LEN) = 3;
    assert!(matches!(
        attach::<f32>(&mut mem),
        Err(LayoutError::BadCapacity { .. })
    ));
    *word(&mut mem, layout::header::RECORD_LEN) = 0;
    assert!(matches!(
        attach::<f32>(&mut mem),
        Err(LayoutError::BadCapacity { .. })
    ));
    *word(&mut mem, layout::header::RECORD_LEN) = 2;
    assert_eq!(
        attach::<f32>(&mut mem).unwrap_err(),
        LayoutError::RecordMismatch {
            expected: 1,
            found: 2
        }
    );

    for (write, read) in [(16, 0), (0, 16), (9, 0), (13, 4)] {
        let mut mem = fresh.clone();
        *word(&mut mem, layout::WRITE_INDEX_OFFSET) = write;
        *word(&mut mem, layout::READ_INDEX_OFFSET) = read;
        assert_eq!(
            attach::<f32>(&mut mem).unwrap_err(),
            LayoutError::CorruptIndex { write, read },
            "write {write} read {read}"
        );
    }
    // Full (8 apart) and wrapped indices are fine.
    let mut mem = fresh.clone();
    *word(&mut mem, layout::WRITE_INDEX_OFFSET) = 3;
    *word(&mut mem, layout::READ_INDEX_OFFSET) = 11;
    assert!(attach::<f32>(&mut mem).unwrap().is_full());
}

#[test]
fn bad_pointers_are_errors() {
    let layout = RingLayout::new::<u8>(8).unwrap();
    let mut mem = memory(&layout);
    let ptr = mem.as_mut_ptr().cast::<u8>();
    // SAFETY: none of these dereference anything beyond `mem`.
    unsafe {
        assert_eq!(
            Producer::<u8>::from_raw(std::ptr::null_mut(), 1000).unwrap_err(),
            LayoutError::Null
        );
        assert!(matches!(
            Producer::<u8>::from_raw(ptr.add(4), 100),
            Err(LayoutError::Misaligned { required: 8, .. })
        ));
        assert_eq!(
            Consumer::<u8>::from_raw(ptr, 100).unwrap_err(),
            LayoutError::TooSmall {
                needed: 384,
                got: 100
            }
        );
        assert_eq!(
            layout.init(ptr, 391).unwrap_err(),
            LayoutError::TooSmall {
                needed: 392,
                got: 391
            }
        );
    }
    // Errors explain themselves.
    let text = LayoutError::BadMagic { found: 0 }.to_string();
    assert!(text.contains("magic"), "{text}");
}

#[test]
fn ends_over_shared_memory_talk_and_resume() {
    let layout = RingLayout::new::<i16>(5).unwrap();
    let mut mem = memory(&layout);
    let (ptr, len) = (mem.as_mut_ptr().cast::<u8>(), mem.len() * 8);
    // SAFETY: `mem` outlives every end; at most one of each kind is attached at a time.
    unsafe {
        let mut tx = Producer::<i16>::from_raw(ptr, len).unwrap();
        let mut rx = Consumer::<i16>::from_raw(ptr, len).unwrap();
        assert_eq!(tx.push_slice(&[1, 2, 3, 4]), 4);
        assert_eq!(rx.pop(), Some(1));
        // A new producer picks up where the old one stopped, as a reloaded page would.
        drop(tx);
        let mut tx = Producer::<i16>::from_raw(ptr, len).unwrap();
        assert_eq!(tx.push_slice(&[5, 6, 7]), 2);
        let mut out = [0; 5];
        assert_eq!(rx.pop_slice(&mut out), 5);
        assert_eq!(out, [2, 3, 4, 5, 6]);
    }
    // Indices are positions modulo 2 * capacity, stored little-endian.
    assert_eq!(*word(&mut mem, layout::WRITE_INDEX_OFFSET), 6);
    assert_eq!(*word(&mut mem, layout::READ_INDEX_OFFSET), 6);
}

#[test]
fn a_peer_scribbling_on_the_indices_cannot_push_us_out_of_bounds() {
    let layout = RingLayout::new::<u64>(4).unwrap();
    let mut mem = memory(&layout);
    let (ptr, len) = (mem.as_mut_ptr().cast::<u8>(), mem.len() * 8);
    let index = |offset| {
        // SAFETY: both index words are inside `mem`, 4-aligned, and only accessed atomically.
        unsafe { &*ptr.add(offset).cast::<std::sync::atomic::AtomicU32>() }
    };
    let (read, write) = (
        index(layout::READ_INDEX_OFFSET),
        index(layout::WRITE_INDEX_OFFSET),
    );
    // SAFETY: `mem` outlives both ends.
    let (mut tx, mut rx) = unsafe {
        (
            Producer::<u64>::from_raw(ptr, len).unwrap(),
            Consumer::<u64>::from_raw(ptr, len).unwrap(),
        )
    };
    tx.push_slice(&[1, 2, 3, 4]);
    // A buggy peer writes garbage: the ends refuse to move instead of leaving the storage.
    read.store(u32::MAX, std::sync::atomic::Ordering::SeqCst);
    assert!(tx.push(5).is_err());
    assert_eq!(tx.available_write(), 0);
    write.store(1 << 30, std::sync::atomic::Ordering::SeqCst);
    let mut out = [0; 8];
    // The consumer still has its cached count of 4 ready elements from before; after those it
    // sees garbage and reports nothing.
    let _ = rx.pop_slice(&mut out);
    assert_eq!(rx.available_read(), 0);
    assert_eq!(rx.pop(), None);
}

/// Both ends over caller-provided memory never call themselves abandoned: the peer may be
/// another program or JavaScript, which holds nothing we could count.
#[test]
fn rings_in_shared_memory_are_never_abandoned() {
    let layout = RingLayout::new::<u32>(4).unwrap();
    let mut mem = memory(&layout);
    let tx = attach::<u32>(&mut mem).unwrap();
    assert!(!tx.is_abandoned());
}
