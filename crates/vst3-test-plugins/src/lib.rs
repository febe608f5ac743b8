//! Small VST3 plugins for Downbeat's VST3 host tests, all in one module (a `.vst3` bundle's
//! library; the tests build it and put it at `Contents/x86_64-linux/downbeat-test.so`).
//! Each is a single component: its component is its own controller.
//!
//! * [`PROBE`] ("Downbeat VST3 probe"): stereo in, stereo out, and an event input, so an
//!   instrument to the host. The output is the input times `gain` (one parameter, 0 to 2,
//!   default 1, normalized as `gain / 2`, each point applied from its sample offset), plus,
//!   at the frame of each note on, `velocity + pitch / 1000` on both channels: a test reads
//!   where and which notes arrived. A second parameter, `latency` (0 to 1024 frames, in
//!   steps of one), asks for a restart when it changes (`restartComponent(kLatencyChanged)`,
//!   from `process`, which the host's handler allows) and becomes the latency the plugin
//!   reports at its next activation.
//! * [`CRASH_CREATE`], [`CRASH_ACTIVATE`], [`CRASH_PROCESS`], [`CRASH_DEACTIVATE`]: the
//!   probe, except that it ends the process with `SIGSEGV` in `initialize`,
//!   `setActive(true)`, its fourth `process` or `setActive(false)`, as a plugin with a bad
//!   pointer would. They have the `gain` parameter only.
//!
//! Everything `process` uses is allocated when the plugin is created.

#![allow(non_snake_case)]

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::slice;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use vst3::Steinberg::Vst::{
    BusDirections_, BusInfo, BusInfo_::BusFlags_, BusTypes_, Event, Event_::EventTypes_,
    IAudioProcessor, IAudioProcessorTrait, IComponent, IComponentHandler, IComponentHandlerTrait,
    IComponentTrait, IEditController, IEditControllerTrait, IEventList, IEventListTrait,
    IParamValueQueue, IParamValueQueueTrait, IParameterChanges, IParameterChangesTrait, IoMode,
    MediaTypes_, ParameterInfo, ParameterInfo_::ParameterFlags_, ProcessData, ProcessSetup,
    RestartFlags_, RoutingInfo, SpeakerArr, SpeakerArrangement, String128, SymbolicSampleSizes_,
    TChar,
};
use vst3::Steinberg::{
    int32, kInvalidArgument, kNotImplemented, kResultFalse, kResultOk, tresult, FIDString,
    FUnknown, IBStream, IPlugView, IPluginBase, IPluginBaseTrait, IPluginFactory,
    IPluginFactoryTrait, PClassInfo, PClassInfo_::ClassCardinality_, PFactoryInfo, TBool, TUID,
};
use vst3::{uid, Class, ComRef, ComWrapper};

/// The probe's class name.
pub const PROBE: &str = "Downbeat VST3 probe";
/// The class that crashes in `initialize` (the host's create phase).
pub const CRASH_CREATE: &str = "Downbeat VST3 crash create";
/// The class that crashes in `setActive(true)`.
pub const CRASH_ACTIVATE: &str = "Downbeat VST3 crash activate";
/// The class that crashes in its fourth `process`.
pub const CRASH_PROCESS: &str = "Downbeat VST3 crash process";
/// The class that crashes in `setActive(false)`.
pub const CRASH_DEACTIVATE: &str = "Downbeat VST3 crash deactivate";

/// Where a class crashes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Crash {
    Never,
    Create,
    Activate,
    Process,
    Deactivate,
}

/// Every class: name, id, and where it crashes.
const CLASSES: [(&str, TUID, Crash); 5] = [
    (
        PROBE,
        uid(0x44424e31, 0x50524f42, 0x45000000, 0x00000001),
        Crash::Never,
    ),
    (
        CRASH_CREATE,
        uid(0x44424e31, 0x43525348, 0x00000000, 0x00000002),
        Crash::Create,
    ),
    (
        CRASH_ACTIVATE,
        uid(0x44424e31, 0x43525348, 0x00000000, 0x00000003),
        Crash::Activate,
    ),
    (
        CRASH_PROCESS,
        uid(0x44424e31, 0x43525348, 0x00000000, 0x00000004),
        Crash::Process,
    ),
    (
        CRASH_DEACTIVATE,
        uid(0x44424e31, 0x43525348, 0x00000000, 0x00000005),
        Crash::Deactivate,
    ),
];

const SIGSEGV: c_int = 11;

extern "C" {
    fn signal(signum: c_int, handler: usize) -> usize;
    fn raise(sig: c_int) -> c_int;
}

/// Ends the process with `SIGSEGV`, raised rather than caused (a bad access would be
/// undefined behaviour in Rust).
fn crash() -> ! {
    // SAFETY: async-signal-safe libc calls with valid arguments; with the default action
    // back (0 is `SIG_DFL`), the raised signal terminates the process.
    unsafe {
        signal(SIGSEGV, 0);
        raise(SIGSEGV);
    }
    std::process::abort()
}

fn copy_cstring(src: &str, dst: &mut [c_char]) {
    let n = src.len().min(dst.len() - 1);
    for (d, s) in dst.iter_mut().zip(&src.as_bytes()[..n]) {
        *d = *s as c_char;
    }
    dst[n] = 0;
}

fn copy_wstring(src: &str, dst: &mut [TChar]) {
    let mut n = 0;
    let room = dst.len() - 1;
    for (d, s) in dst.iter_mut().zip(src.encode_utf16()).take(room) {
        *d = s as TChar;
        n += 1;
    }
    dst[n] = 0;
}

/// The gain parameter's id.
const GAIN: u32 = 0;
/// The latency parameter's id, and its range in frames.
const LATENCY: u32 = 1;
const LATENCY_MAX: f64 = 1024.0;

/// One plugin: component, processor and controller in one object.
struct Plugin {
    crash: Crash,
    /// The gain's normalized value, as `f64` bits.
    gain: AtomicU64,
    blocks: AtomicU32,
    /// The gain in effect from each frame of the block being processed (written in
    /// `process`, allocated here).
    ramp: Cell<Vec<f32>>,
    /// The latency asked for, in frames, and the one reported (taken at activation).
    asked_latency: AtomicU32,
    latency: AtomicU32,
    /// The host's handler, as `setComponentHandler` gave it (the host keeps it alive).
    handler: Cell<*mut IComponentHandler>,
}

impl Class for Plugin {
    type Interfaces = (IComponent, IAudioProcessor, IEditController);
}

impl Plugin {
    fn gain(&self) -> f64 {
        f64::from_bits(self.gain.load(Ordering::Relaxed))
    }
}

impl IPluginBaseTrait for Plugin {
    unsafe fn initialize(&self, _context: *mut FUnknown) -> tresult {
        if self.crash == Crash::Create {
            crash();
        }
        kResultOk
    }

    unsafe fn terminate(&self) -> tresult {
        kResultOk
    }
}

impl IComponentTrait for Plugin {
    unsafe fn getControllerClassId(&self, _class_id: *mut TUID) -> tresult {
        kNotImplemented
    }

    unsafe fn setIoMode(&self, _mode: IoMode) -> tresult {
        kResultOk
    }

    unsafe fn getBusCount(&self, media: i32, dir: i32) -> i32 {
        match (media as u32, dir as u32) {
            (MediaTypes_::kAudio, _) => 1,
            (MediaTypes_::kEvent, BusDirections_::kInput) => 1,
            _ => 0,
        }
    }

    unsafe fn getBusInfo(&self, media: i32, dir: i32, index: i32, bus: *mut BusInfo) -> tresult {
        // SAFETY: a plain query of this object.
        if index != 0 || bus.is_null() || unsafe { self.getBusCount(media, dir) } == 0 {
            return kInvalidArgument;
        }
        // SAFETY: the host's structure, checked for null.
        let bus = unsafe { &mut *bus };
        bus.mediaType = media;
        bus.direction = dir;
        bus.channelCount = if media as u32 == MediaTypes_::kAudio {
            2
        } else {
            1
        };
        let name = match (media as u32, dir as u32) {
            (MediaTypes_::kEvent, _) => "Notes",
            (_, BusDirections_::kInput) => "Input",
            _ => "Output",
        };
        copy_wstring(name, &mut bus.name);
        bus.busType = BusTypes_::kMain as i32;
        bus.flags = BusFlags_::kDefaultActive;
        kResultOk
    }

    unsafe fn getRoutingInfo(&self, _in: *mut RoutingInfo, _out: *mut RoutingInfo) -> tresult {
        kNotImplemented
    }

    unsafe fn activateBus(&self, _m: i32, _d: i32, _i: i32, _state: TBool) -> tresult {
        kResultOk
    }

    unsafe fn setActive(&self, state: TBool) -> tresult {
        match (state != 0, self.crash) {
            (true, Crash::Activate) | (false, Crash::Deactivate) => crash(),
            (true, _) => {
                let asked = self.asked_latency.load(Ordering::Relaxed);
                self.latency.store(asked, Ordering::Relaxed);
                kResultOk
            }
            _ => kResultOk,
        }
    }

    unsafe fn setState(&self, _state: *mut IBStream) -> tresult {
        kResultOk
    }

    unsafe fn getState(&self, _state: *mut IBStream) -> tresult {
        kResultOk
    }
}

impl IAudioProcessorTrait for Plugin {
    unsafe fn setBusArrangements(
        &self,
        _inputs: *mut SpeakerArrangement,
        _num_ins: i32,
        _outputs: *mut SpeakerArrangement,
        _num_outs: i32,
    ) -> tresult {
        kResultFalse
    }

    unsafe fn getBusArrangement(
        &self,
        _dir: i32,
        index: i32,
        arr: *mut SpeakerArrangement,
    ) -> tresult {
        if index != 0 || arr.is_null() {
            return kInvalidArgument;
        }
        // SAFETY: checked for null.
        unsafe { *arr = SpeakerArr::kStereo };
        kResultOk
    }

    unsafe fn canProcessSampleSize(&self, size: i32) -> tresult {
        if size as u32 == SymbolicSampleSizes_::kSample32 {
            kResultOk
        } else {
            kNotImplemented
        }
    }

    unsafe fn getLatencySamples(&self) -> u32 {
        self.latency.load(Ordering::Relaxed)
    }

    unsafe fn setupProcessing(&self, setup: *mut ProcessSetup) -> tresult {
        if setup.is_null() {
            return kInvalidArgument;
        }
        // SAFETY: checked for null; the buffer is made here, off the audio thread.
        let frames = unsafe { (*setup).maxSamplesPerBlock }.max(1) as usize;
        self.ramp.set(vec![0.0; frames]);
        kResultOk
    }

    unsafe fn setProcessing(&self, _state: TBool) -> tresult {
        kResultOk
    }

    unsafe fn process(&self, data: *mut ProcessData) -> tresult {
        if data.is_null() {
            return kInvalidArgument;
        }
        if self.blocks.fetch_add(1, Ordering::Relaxed) == 3 && self.crash == Crash::Process {
            crash();
        }
        // SAFETY: the host's structure and the buffers it points at, for `numSamples`
        // frames, as the SDK defines them; the lists are the host's COM objects.
        unsafe {
            let data = &*data;
            let frames = data.numSamples.max(0) as usize;
            let mut ramp = self.ramp.take();
            if ramp.len() < frames {
                self.ramp.set(ramp);
                return kResultFalse;
            }
            // The gain from each frame: the value in effect, then each point from its offset.
            let mut gain = self.gain();
            let mut next = 0;
            if let Some(changes) = ComRef::<IParameterChanges>::from_raw(data.inputParameterChanges)
            {
                for q in 0..changes.getParameterCount() {
                    let Some(queue) =
                        ComRef::<IParamValueQueue>::from_raw(changes.getParameterData(q))
                    else {
                        continue;
                    };
                    if queue.getParameterId() == LATENCY {
                        let (mut offset, mut value) = (0, 0.0);
                        let last = queue.getPointCount() - 1;
                        if queue.getPoint(last, &mut offset, &mut value) == kResultOk {
                            let frames = (value * LATENCY_MAX).round() as u32;
                            let before = self.asked_latency.swap(frames, Ordering::Relaxed);
                            let handler = ComRef::from_raw(self.handler.get());
                            if let (true, Some(h)) = (before != frames, handler) {
                                h.restartComponent(RestartFlags_::kLatencyChanged);
                            }
                        }
                        continue;
                    }
                    if queue.getParameterId() != GAIN {
                        continue;
                    }
                    for p in 0..queue.getPointCount() {
                        let (mut offset, mut value) = (0, 0.0);
                        if queue.getPoint(p, &mut offset, &mut value) != kResultOk {
                            continue;
                        }
                        let to = (offset.max(0) as usize).min(frames);
                        ramp[next..to].fill((gain * 2.0) as f32);
                        next = next.max(to);
                        gain = value;
                    }
                }
            }
            ramp[next..frames].fill((gain * 2.0) as f32);
            self.gain.store(gain.to_bits(), Ordering::Relaxed);
            if data.numInputs < 1 || data.numOutputs < 1 {
                self.ramp.set(ramp);
                return kResultOk;
            }
            let ins = &*data.inputs;
            let outs = &*data.outputs;
            let in_ch =
                slice::from_raw_parts(ins.__field0.channelBuffers32, ins.numChannels as usize);
            let out_ch =
                slice::from_raw_parts(outs.__field0.channelBuffers32, outs.numChannels as usize);
            for (i, o) in in_ch.iter().zip(out_ch) {
                let (i, o) = (
                    slice::from_raw_parts(*i, frames),
                    slice::from_raw_parts_mut(*o, frames),
                );
                for ((o, i), g) in o.iter_mut().zip(i).zip(&ramp) {
                    *o = i * g;
                }
            }
            if let Some(events) = ComRef::<IEventList>::from_raw(data.inputEvents) {
                for k in 0..events.getEventCount() {
                    let mut e: Event = std::mem::zeroed();
                    if events.getEvent(k, &mut e) != kResultOk
                        || u32::from(e.r#type) != EventTypes_::kNoteOnEvent
                    {
                        continue;
                    }
                    let at = e.sampleOffset.max(0) as usize;
                    let on = e.__field0.noteOn;
                    for o in out_ch {
                        if at < frames {
                            *o.add(at) += on.velocity + f32::from(on.pitch) / 1000.0;
                        }
                    }
                }
            }
            self.ramp.set(ramp);
        }
        kResultOk
    }

    unsafe fn getTailSamples(&self) -> u32 {
        0
    }
}

impl IEditControllerTrait for Plugin {
    unsafe fn setComponentState(&self, _state: *mut IBStream) -> tresult {
        kResultOk
    }

    unsafe fn setState(&self, _state: *mut IBStream) -> tresult {
        kResultOk
    }

    unsafe fn getState(&self, _state: *mut IBStream) -> tresult {
        kResultOk
    }

    unsafe fn getParameterCount(&self) -> int32 {
        // The crashing ones have no `latency`: an audit moving it would restart them, and a
        // crash in the restart's `setActive(false)` is not the teardown's.
        if self.crash == Crash::Never {
            2
        } else {
            1
        }
    }

    unsafe fn getParameterInfo(&self, index: int32, info: *mut ParameterInfo) -> tresult {
        // SAFETY: a plain query of this object.
        if !(0..unsafe { self.getParameterCount() }).contains(&index) || info.is_null() {
            return kInvalidArgument;
        }
        // SAFETY: checked for null.
        let info = unsafe { &mut *info };
        let (id, title, units, steps, default) = if index == 0 {
            (GAIN, "Gain", "", 0, 0.5)
        } else {
            (LATENCY, "Latency", "frames", LATENCY_MAX as i32, 0.0)
        };
        info.id = id;
        copy_wstring(title, &mut info.title);
        copy_wstring(title, &mut info.shortTitle);
        copy_wstring(units, &mut info.units);
        info.stepCount = steps;
        info.defaultNormalizedValue = default;
        info.unitId = 0;
        info.flags = ParameterFlags_::kCanAutomate;
        kResultOk
    }

    unsafe fn getParamStringByValue(&self, _id: u32, _v: f64, _s: *mut String128) -> tresult {
        kNotImplemented
    }

    unsafe fn getParamValueByString(&self, _id: u32, _s: *mut TChar, _v: *mut f64) -> tresult {
        kNotImplemented
    }

    unsafe fn normalizedParamToPlain(&self, id: u32, v: f64) -> f64 {
        if id == LATENCY {
            (v * LATENCY_MAX).round()
        } else {
            v * 2.0
        }
    }

    unsafe fn plainParamToNormalized(&self, id: u32, v: f64) -> f64 {
        if id == LATENCY {
            v / LATENCY_MAX
        } else {
            v / 2.0
        }
    }

    unsafe fn getParamNormalized(&self, id: u32) -> f64 {
        if id == LATENCY {
            f64::from(self.asked_latency.load(Ordering::Relaxed)) / LATENCY_MAX
        } else {
            self.gain()
        }
    }

    unsafe fn setParamNormalized(&self, id: u32, v: f64) -> tresult {
        if id == GAIN {
            self.gain.store(v.to_bits(), Ordering::Relaxed);
        }
        kResultOk
    }

    unsafe fn setComponentHandler(&self, handler: *mut IComponentHandler) -> tresult {
        self.handler.set(handler);
        kResultOk
    }

    unsafe fn createView(&self, _name: FIDString) -> *mut IPlugView {
        std::ptr::null_mut()
    }
}

/// The module's factory.
struct Factory;

impl Class for Factory {
    type Interfaces = (IPluginFactory,);
}

impl IPluginFactoryTrait for Factory {
    unsafe fn getFactoryInfo(&self, info: *mut PFactoryInfo) -> tresult {
        if info.is_null() {
            return kInvalidArgument;
        }
        // SAFETY: checked for null.
        let info = unsafe { &mut *info };
        copy_cstring("Downbeat tests", &mut info.vendor);
        copy_cstring("", &mut info.url);
        copy_cstring("", &mut info.email);
        info.flags = 0;
        kResultOk
    }

    unsafe fn countClasses(&self) -> int32 {
        CLASSES.len() as int32
    }

    unsafe fn getClassInfo(&self, index: int32, info: *mut PClassInfo) -> tresult {
        let Some((name, cid, _)) = usize::try_from(index).ok().and_then(|i| CLASSES.get(i)) else {
            return kInvalidArgument;
        };
        if info.is_null() {
            return kInvalidArgument;
        }
        // SAFETY: checked for null.
        let info = unsafe { &mut *info };
        info.cid = *cid;
        info.cardinality = ClassCardinality_::kManyInstances as int32;
        copy_cstring("Audio Module Class", &mut info.category);
        copy_cstring(name, &mut info.name);
        kResultOk
    }

    unsafe fn createInstance(
        &self,
        cid: FIDString,
        iid: FIDString,
        obj: *mut *mut c_void,
    ) -> tresult {
        if cid.is_null() || iid.is_null() || obj.is_null() {
            return kInvalidArgument;
        }
        // SAFETY: the host passes a 16-byte class id.
        let cid = unsafe { *(cid as *const TUID) };
        let Some(&(_, _, crash)) = CLASSES.iter().find(|c| c.1 == cid) else {
            return kInvalidArgument;
        };
        let plugin = ComWrapper::new(Plugin {
            crash,
            gain: AtomicU64::new(0.5f64.to_bits()),
            blocks: AtomicU32::new(0),
            ramp: Cell::new(Vec::new()),
            asked_latency: AtomicU32::new(0),
            latency: AtomicU32::new(0),
            handler: Cell::new(std::ptr::null_mut()),
        });
        let Some(unknown) = plugin.to_com_ptr::<IPluginBase>() else {
            return kInvalidArgument;
        };
        let ptr = unknown.as_ptr().cast::<FUnknown>();
        // SAFETY: a live object's vtable; `queryInterface` adds the reference the host owns.
        unsafe { ((*(*ptr).vtbl).queryInterface)(ptr, iid as *mut TUID, obj) }
    }
}

/// The module's entry on Linux.
#[no_mangle]
pub extern "system" fn ModuleEntry(_library: *mut c_void) -> bool {
    true
}

/// The module's exit on Linux.
#[no_mangle]
pub extern "system" fn ModuleExit() -> bool {
    true
}

/// The factory, for the host.
#[no_mangle]
pub extern "system" fn GetPluginFactory() -> *mut IPluginFactory {
    match ComWrapper::new(Factory).to_com_ptr::<IPluginFactory>() {
        Some(f) => f.into_raw(),
        None => std::ptr::null_mut(),
    }
}
