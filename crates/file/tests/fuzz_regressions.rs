//! Inputs the fuzz target `audio_file` (`fuzz/`) found, kept with their fixes: each once
//! made the decoder panic, hang or ask for gigabytes. The inputs are in `fuzz_regressions/`.
//!
//! A request for gigabytes does not fail here, where the system hands out address space it
//! does not have, but aborts the process where it refuses: this binary's allocator records
//! the largest request, and the tests hold it under [`MOST`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use downbeat_file::{check, decode_all, memory, FileError};

/// The system's allocator, recording the largest block asked of it.
struct Largest;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to `System` unchanged; the counter only reads sizes.
unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: as the caller promised for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: as the caller promised for `layout`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with `layout`, as the caller promised.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: as the caller promised for `ptr`, `layout` and `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Largest = Largest;

/// Far more than any of these small files needs, far less than a damaged length asks.
const MOST: usize = 64 << 20;

/// The input `name`, handed over as a file of that name.
fn hand_over(name: &str) -> &Path {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let bytes = std::fs::read(dir.join(name)).unwrap();
    memory::add_file(name, bytes);
    Path::new(name)
}

/// FLACs whose Vorbis comment (a metadata block) states a comment of gigabytes: symphonia
/// allocated it before comparing it with the block. In the first the block is whole, in
/// the second the file ends inside it. Refused as damage at the byte of the length,
/// allocating nothing of the kind.
#[test]
fn a_flac_comment_longer_than_its_block_is_corrupt_and_allocates_nothing_large() {
    for name in [
        "audio_file-flac-comment-length.flac",
        "audio_file-flac-comment-cut-block.flac",
    ] {
        let path = hand_over(name);
        let checked = check(path);
        assert!(decode_all(path, 48_000).is_err(), "{name}");
        let largest = LARGEST.load(Ordering::Relaxed);
        assert!(
            largest < MOST,
            "{name}: asked the allocator for {largest} bytes"
        );
        let err = checked.unwrap_err();
        assert!(
            matches!(err, FileError::Corrupt { at_frame: None, .. }),
            "{name}: {err:?}"
        );
        let text = err.to_string();
        assert!(text.contains("comment length at byte"), "{text}");
        assert!(text.contains(name), "{text}");
    }
}

/// An MP3 whose Info header says a billion frames: `decode_all` reserved room for all of
/// them (9.6 GB) before decoding any. The header sizes the first reservation only up to a
/// bound now; what the file really holds decodes.
#[test]
fn decode_all_does_not_reserve_what_a_header_claims() {
    let path = hand_over("audio_file-mp3-info-frames.mp3");
    let decoded = decode_all(path, 48_000);
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(largest < MOST, "asked the allocator for {largest} bytes");
    let audio = decoded.unwrap();
    assert!(audio.frames() < 48_000, "{} frames", audio.frames());
}

/// Open: MP3s whose Info header counts fewer frames than their LAME tag's encoder delay
/// and padding (the second, found at the stop of 2026-11-29, an ffmpeg-made "Lavf" tag).
/// symphonia 0.5's MP3 reader subtracts them unchecked when gapless playback is on
/// (`symphonia-bundle-mp3` 0.5.5, `demuxer.rs:128`): a panic in builds with overflow checks
/// (debug builds, the fuzz targets), a frame count near 2^64 in release builds. The header
/// is read without the trim first and such a file is refused as corrupt, naming both
/// lengths.
#[test]
fn an_mp3_whose_padding_exceeds_its_frames_is_corrupt_not_a_panic() {
    for name in [
        "audio_file-mp3-gapless-underflow.mp3",
        "audio_file-mp3-gapless-underflow-lavf.mp3",
    ] {
        let path = hand_over(name);
        let err = check(path).unwrap_err();
        assert!(
            matches!(err, FileError::Corrupt { at_frame: None, .. }),
            "{name}: {err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains("fewer than the encoder delay and padding"),
            "{name}: {text}"
        );
        assert!(decode_all(path, 48_000).is_err(), "{name}");
    }
}

/// Open: a WAV whose extensible header counts 2,063 channels and whose channel mask names
/// 2. symphonia 0.5's WAV reader fills the mask up with a shift it does not check
/// (`symphonia-format-riff` 0.5.5, `common.rs:55`): a panic in builds with overflow checks.
/// The `fmt ` chunk is read first and such a header refused as corrupt, saying both counts.
#[test]
fn a_wav_channel_mask_without_room_for_its_channels_is_corrupt_not_a_panic() {
    assert_header_corrupt("audio_file-wav-channel-mask.wav", "counts 2063 channels");
}

/// Checks that the input `name` is refused as a corrupt header, saying `says`, by the
/// check and by the decoder alike.
fn assert_header_corrupt(name: &str, says: &str) {
    let path = hand_over(name);
    let err = check(path).unwrap_err();
    assert!(
        matches!(err, FileError::Corrupt { at_frame: None, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains(says), "{text}");
    assert!(decode_all(path, 48_000).is_err());
}

/// A WAV whose extensible header states a sample rate of 0 Hz (and 0 channels), found at
/// the stop of 2026-11-29 after 1,293 s of `audio_file`: symphonia 0.5's WAV reader made
/// its time base from the rate with `TimeBase::new(1, 0)`, which panics. The `fmt ` chunk
/// is read first and the header refused as corrupt, naming the rate.
#[test]
fn a_wav_at_zero_hz_is_corrupt_not_a_panic() {
    assert_header_corrupt("audio_file-wav-rate-zero.wav", "sample rate of 0 Hz");
}

/// An MP3 whose ID3v2 tag (35 bytes) holds a `TSSE` frame that states 4,294,967,295 bytes
/// (found at the stop of 2026-11-29 after 37 minutes): symphonia 0.5's ID3v2 reader
/// allocated the frame's stated size before reading it, asking for 4 GB. The tag's frames
/// are walked first and such a frame refused as corrupt, saying both lengths.
#[test]
fn an_id3_frame_longer_than_its_tag_is_corrupt_and_allocates_nothing_large() {
    let name = "audio_file-mp3-id3-frame-length.mp3";
    let path = hand_over(name);
    let checked = check(path);
    assert!(decode_all(path, 48_000).is_err(), "{name}");
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(largest < MOST, "asked the allocator for {largest} bytes");
    let err = checked.unwrap_err();
    assert!(
        matches!(err, FileError::Corrupt { at_frame: None, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("ID3v2 frame `TSSE`") && text.contains("4294967295 bytes"),
        "{text}"
    );
}
