//! The features Downbeat hands to LV2 plugins: URID map and unmap, options (block lengths
//! and sample rate), the promise of bounded block lengths, and the worker
//! ([`worker`](super::worker), added per instance).

use std::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

use lv2_raw::core::LV2Feature;
use lv2_raw::urid::{LV2UridMap, LV2UridMapHandle};

use super::urid_table::UridTable;

/// `urid:map`.
pub const URID_MAP: &CStr = c"http://lv2plug.in/ns/ext/urid#map";
/// `urid:unmap`.
pub const URID_UNMAP: &CStr = c"http://lv2plug.in/ns/ext/urid#unmap";
/// `opts:options`.
pub const OPTIONS: &CStr = c"http://lv2plug.in/ns/ext/options#options";
/// `bufsz:boundedBlockLength`: every block is between the min and max block length options.
pub const BOUNDED_BLOCK_LENGTH: &CStr = c"http://lv2plug.in/ns/ext/buf-size#boundedBlockLength";

/// Feature URIs a plugin may require and still be loaded: the ones passed to it, and
/// promises that need no data (`hardRTCapable` describes the plugin, `inPlaceBroken` asks
/// for distinct input and output buffers, which the graph always gives, `isLive` asks to be
/// run in real time, which is what Downbeat does).
pub const SUPPORTED: &[&str] = &[
    "http://lv2plug.in/ns/ext/urid#map",
    "http://lv2plug.in/ns/ext/urid#unmap",
    "http://lv2plug.in/ns/ext/options#options",
    "http://lv2plug.in/ns/ext/buf-size#boundedBlockLength",
    "http://lv2plug.in/ns/ext/worker#schedule",
    "http://lv2plug.in/ns/lv2core#hardRTCapable",
    "http://lv2plug.in/ns/lv2core#inPlaceBroken",
    "http://lv2plug.in/ns/lv2core#isLive",
];

/// URIs the process-wide table holds at most: far more than the host and a project's
/// plugins map (a few dozen each); past it, mapping returns 0 and is counted.
const URIDS: usize = 4096;
/// Bytes of those URIs, nuls included.
const URI_BYTES: usize = 256 * 1024;

/// The process-wide URI table: URIDs are never forgotten, since a plugin may keep the ones it
/// mapped for as long as it lives, and unmap hands out pointers into the table. Created (and
/// its pages touched) by the first [`HostFeatures::new`] or [`urid`], off the audio thread;
/// a plugin mapping a URI from `run()` then only reads and writes atomics in it.
fn table() -> &'static UridTable {
    static TABLE: OnceLock<UridTable> = OnceLock::new();
    TABLE.get_or_init(|| UridTable::new(URIDS, URI_BYTES))
}

/// The URID of `uri` (mapping it if new). URIDs start at 1; 0 means the table is full
/// (see [`refused`]). No allocation, lock or system call once the table exists.
///
/// ```
/// use downbeat_plugin::lv2::features::urid;
/// let midi = urid(c"http://lv2plug.in/ns/ext/midi#MidiEvent");
/// assert_ne!(midi, 0);
/// assert_eq!(urid(c"http://lv2plug.in/ns/ext/midi#MidiEvent"), midi);
/// ```
pub fn urid(uri: &CStr) -> u32 {
    table().map(uri.to_bytes())
}

/// How many URIs could not be mapped since the process started because the table was full
/// (the map returned 0 for them, which a plugin must handle).
///
/// ```
/// assert_eq!(downbeat_plugin::lv2::features::refused(), 0);
/// ```
pub fn refused() -> u64 {
    table().refused()
}

extern "C" fn map(_handle: LV2UridMapHandle, uri: *const c_char) -> u32 {
    if uri.is_null() {
        return 0;
    }
    // SAFETY: the URID map contract: `uri` is a nul-terminated string valid for this call.
    urid(unsafe { CStr::from_ptr(uri) })
}

/// A URID map (`urid:map`) for lilv's state functions, which map URIs while saving and
/// restoring; the same process-wide table the plugins see.
pub(crate) fn urid_map() -> LV2UridMap {
    LV2UridMap {
        handle: std::ptr::null_mut(),
        map,
    }
}

/// A URID unmap for lilv's state functions.
pub(crate) fn urid_unmap() -> lv2_sys::LV2_URID_Unmap {
    lv2_sys::LV2_URID_Unmap {
        handle: std::ptr::null_mut(),
        unmap: Some(unmap),
    }
}

extern "C" fn unmap(_handle: *mut c_void, urid: u32) -> *const c_char {
    table().unmap(urid).unwrap_or(std::ptr::null())
}

/// `LV2_URID_Unmap` (lv2_raw has no binding for it).
#[repr(C)]
struct UridUnmap {
    handle: *mut c_void,
    unmap: extern "C" fn(*mut c_void, u32) -> *const c_char,
}

/// `LV2_Options_Option`.
#[repr(C)]
struct OptionsOption {
    context: u32,
    subject: u32,
    key: u32,
    size: u32,
    type_: u32,
    value: *const c_void,
}

/// The option values the `OptionsOption`s point at.
struct OptionValues {
    min_block: i32,
    max_block: i32,
    nominal_block: i32,
    sample_rate: f32,
}

/// Everything the features point at, for one plugin instance. It must outlive the
/// instance (the node drops the instance first), and is never written after creation.
pub struct HostFeatures {
    _map: Box<LV2UridMap>,
    _unmap: Box<UridUnmap>,
    _values: Box<OptionValues>,
    _options: Box<[OptionsOption]>,
    features: Vec<LV2Feature>,
}

// SAFETY: the raw pointers in `HostFeatures` point into boxes it owns, which are never
// written after `new` returns; moving the struct to another thread moves only the box
// pointers, and the plugin reads the data from whichever thread runs it.
unsafe impl Send for HostFeatures {}

impl HostFeatures {
    /// The features for a plugin run at `sample_rate` in blocks of 1 to `max_block`
    /// frames (the schedule cuts blocks at event frames, so any length down to 1 occurs).
    pub fn new(sample_rate: u32, max_block: usize) -> Box<HostFeatures> {
        let mut map = Box::new(LV2UridMap {
            handle: std::ptr::null_mut(),
            map,
        });
        let mut unmap = Box::new(UridUnmap {
            handle: std::ptr::null_mut(),
            unmap,
        });
        let values = Box::new(OptionValues {
            min_block: 1,
            max_block: max_block.min(i32::MAX as usize) as i32,
            nominal_block: max_block.min(i32::MAX as usize) as i32,
            // An atom:Float, as the LV2 parameters extension defines sampleRate.
            sample_rate: sample_rate as f32,
        });
        let int = urid(c"http://lv2plug.in/ns/ext/atom#Int");
        let float = urid(c"http://lv2plug.in/ns/ext/atom#Float");
        let option = |key: &CStr, type_: u32, value: *const c_void| OptionsOption {
            context: 0, // LV2_OPTIONS_INSTANCE
            subject: 0,
            key: urid(key),
            size: 4,
            type_,
            value,
        };
        let options: Box<[OptionsOption]> = Box::new([
            option(
                c"http://lv2plug.in/ns/ext/buf-size#minBlockLength",
                int,
                std::ptr::from_ref(&values.min_block).cast(),
            ),
            option(
                c"http://lv2plug.in/ns/ext/buf-size#maxBlockLength",
                int,
                std::ptr::from_ref(&values.max_block).cast(),
            ),
            option(
                c"http://lv2plug.in/ns/ext/buf-size#nominalBlockLength",
                int,
                std::ptr::from_ref(&values.nominal_block).cast(),
            ),
            option(
                c"http://lv2plug.in/ns/ext/parameters#sampleRate",
                float,
                std::ptr::from_ref(&values.sample_rate).cast(),
            ),
            // The list ends with an all-zero entry.
            OptionsOption {
                context: 0,
                subject: 0,
                key: 0,
                size: 0,
                type_: 0,
                value: std::ptr::null(),
            },
        ]);
        let features = vec![
            LV2Feature {
                uri: URID_MAP.as_ptr(),
                data: std::ptr::from_mut(&mut *map).cast(),
            },
            LV2Feature {
                uri: URID_UNMAP.as_ptr(),
                data: std::ptr::from_mut(&mut *unmap).cast(),
            },
            LV2Feature {
                uri: OPTIONS.as_ptr(),
                data: options.as_ptr().cast_mut().cast(),
            },
            LV2Feature {
                uri: BOUNDED_BLOCK_LENGTH.as_ptr(),
                data: std::ptr::null_mut(),
            },
        ];
        Box::new(HostFeatures {
            _map: map,
            _unmap: unmap,
            _values: values,
            _options: options,
            features,
        })
    }

    /// Adds a feature (the instance's worker). Its data must outlive the instance.
    pub fn push(&mut self, feature: LV2Feature) {
        self.features.push(feature);
    }

    /// The features, for `lilv_plugin_instantiate`.
    pub fn features(&self) -> &[LV2Feature] {
        &self.features
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urids_are_stable_and_unmap_back() {
        let a = urid(c"urn:downbeat:test#a");
        let b = urid(c"urn:downbeat:test#b");
        assert_ne!(a, b);
        assert_ne!(a, 0);
        assert_eq!(urid(c"urn:downbeat:test#a"), a);
        let back = unmap(std::ptr::null_mut(), b);
        // SAFETY: unmap returned a pointer into the table, which lives for the process.
        assert_eq!(unsafe { CStr::from_ptr(back) }, c"urn:downbeat:test#b");
        assert!(unmap(std::ptr::null_mut(), 0).is_null());
        assert_eq!(
            map(std::ptr::null_mut(), c"urn:downbeat:test#a".as_ptr()),
            a
        );
    }
}
