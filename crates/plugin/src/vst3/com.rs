//! The host's side of VST3's COM interfaces: the objects a plugin is handed.
//!
//! * [`HostApplication`]: `IHostApplication`, the context of `initialize`.
//! * [`ComponentHandler`]: `IComponentHandler`, which the controller calls when a parameter
//!   moves on its side and to ask for a restart (`restartComponent`, noted in atomics).
//! * [`MemoryStream`]: `IBStream` over bytes in memory, for states. Main thread.
//! * [`ParamChanges`] and its [`ParamQueue`]s: `IParameterChanges`, one block's parameter
//!   changes with their sample offsets, in lists allocated when the node is built: the
//!   node's to the plugin, and the plugin's own (its meters) back.
//! * [`EventList`]: `IEventList`, one block's notes, likewise.
//!
//! The two per-block lists are filled by the node and read by the plugin inside `process`,
//! on the audio thread, one after the other: their cells are never touched by two threads
//! at once, and filling them neither allocates nor frees.

use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use vst3::Steinberg::Vst::{
    Event, IComponentHandler, IComponentHandlerTrait, IEventList, IEventListTrait,
    IHostApplication, IHostApplicationTrait, IParamValueQueue, IParamValueQueueTrait,
    IParameterChanges, IParameterChangesTrait, ParamID, ParamValue, String128, TChar,
};
use vst3::Steinberg::{
    int32, int64, kInvalidArgument, kNotImplemented, kResultFalse, kResultOk, tresult, IBStream,
    IBStreamTrait, IBStream_::IStreamSeekMode_, TUID,
};
use vst3::{Class, ComPtr, ComWrapper};

/// `IHostApplication`: the host's name; it makes no objects for the plugin.
pub(crate) struct HostApplication;

impl Class for HostApplication {
    type Interfaces = (IHostApplication,);
}

impl IHostApplicationTrait for HostApplication {
    unsafe fn getName(&self, name: *mut String128) -> tresult {
        if name.is_null() {
            return kInvalidArgument;
        }
        // SAFETY: the plugin hands a String128 to fill; checked for null above.
        let name = unsafe { &mut *name };
        let mut n = 0;
        for (dst, src) in name.iter_mut().zip("Downbeat".encode_utf16()) {
            *dst = src as TChar;
            n += 1;
        }
        name[n] = 0;
        kResultOk
    }

    unsafe fn createInstance(
        &self,
        _cid: *mut TUID,
        _iid: *mut TUID,
        _obj: *mut *mut c_void,
    ) -> tresult {
        kNotImplemented
    }
}

/// `IComponentHandler`: edits from the controller side are acknowledged (Downbeat shows no
/// editor, and the node's parameters reach the processor directly); restart requests are
/// kept as their flags.
#[derive(Default)]
pub(crate) struct ComponentHandler {
    /// Every `restartComponent` flag asked for since the last look (shared with the
    /// node's restarter, `super::restart`).
    pub(crate) restart_flags: Arc<AtomicI32>,
}

impl Class for ComponentHandler {
    type Interfaces = (IComponentHandler,);
}

impl IComponentHandlerTrait for ComponentHandler {
    unsafe fn beginEdit(&self, _id: ParamID) -> tresult {
        kResultOk
    }

    unsafe fn performEdit(&self, _id: ParamID, _value: ParamValue) -> tresult {
        kResultOk
    }

    unsafe fn endEdit(&self, _id: ParamID) -> tresult {
        kResultOk
    }

    unsafe fn restartComponent(&self, flags: int32) -> tresult {
        self.restart_flags.fetch_or(flags, Ordering::AcqRel);
        kResultOk
    }
}

/// `IBStream` over bytes in memory: what a plugin writes its state into and reads it from.
#[derive(Default)]
pub(crate) struct MemoryStream {
    data: RefCell<Vec<u8>>,
    at: Cell<usize>,
}

impl Class for MemoryStream {
    type Interfaces = (IBStream,);
}

impl MemoryStream {
    /// A stream to read `bytes` from, from the start.
    pub(crate) fn reading(bytes: Vec<u8>) -> ComWrapper<Self> {
        ComWrapper::new(Self {
            data: RefCell::new(bytes),
            at: Cell::new(0),
        })
    }

    /// The bytes written.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        self.data.borrow().clone()
    }
}

impl IBStreamTrait for MemoryStream {
    unsafe fn read(&self, buffer: *mut c_void, bytes: int32, read: *mut int32) -> tresult {
        let data = self.data.borrow();
        let at = self.at.get().min(data.len());
        let n = (bytes.max(0) as usize).min(data.len() - at);
        if n > 0 {
            if buffer.is_null() {
                return kInvalidArgument;
            }
            // SAFETY: the plugin's buffer holds `bytes` bytes, `n` of which are written.
            unsafe { std::ptr::copy_nonoverlapping(data[at..].as_ptr(), buffer.cast(), n) };
        }
        self.at.set(at + n);
        if !read.is_null() {
            // SAFETY: a non-null out-pointer from the plugin.
            unsafe { *read = n as int32 };
        }
        kResultOk
    }

    unsafe fn write(&self, buffer: *mut c_void, bytes: int32, written: *mut int32) -> tresult {
        let n = bytes.max(0) as usize;
        if n > 0 && buffer.is_null() {
            return kInvalidArgument;
        }
        let mut data = self.data.borrow_mut();
        let at = self.at.get();
        if data.len() < at + n {
            data.resize(at + n, 0);
        }
        if n > 0 {
            // SAFETY: the plugin's buffer holds `bytes` bytes.
            let src = unsafe { std::slice::from_raw_parts(buffer.cast::<u8>(), n) };
            data[at..at + n].copy_from_slice(src);
        }
        self.at.set(at + n);
        if !written.is_null() {
            // SAFETY: a non-null out-pointer from the plugin.
            unsafe { *written = n as int32 };
        }
        kResultOk
    }

    unsafe fn seek(&self, pos: int64, mode: int32, result: *mut int64) -> tresult {
        let len = self.data.borrow().len() as i64;
        let base = match mode as u32 {
            IStreamSeekMode_::kIBSeekSet => 0,
            IStreamSeekMode_::kIBSeekCur => self.at.get() as i64,
            IStreamSeekMode_::kIBSeekEnd => len,
            _ => return kInvalidArgument,
        };
        let Some(to) = base.checked_add(pos).filter(|&p| p >= 0) else {
            return kResultFalse;
        };
        self.at.set(to as usize);
        if !result.is_null() {
            // SAFETY: a non-null out-pointer from the plugin.
            unsafe { *result = to };
        }
        kResultOk
    }

    unsafe fn tell(&self, pos: *mut int64) -> tresult {
        if pos.is_null() {
            return kInvalidArgument;
        }
        // SAFETY: checked for null above.
        unsafe { *pos = self.at.get() as int64 };
        kResultOk
    }
}

/// Points one parameter's queue holds in a block: more are dropped (and counted by the
/// node). A parameter moving at control rate gets one point every few frames.
pub(crate) const POINTS_PER_QUEUE: usize = 128;

/// One parameter's changes in a block: `IParamValueQueue`.
pub(crate) struct ParamQueue {
    id: Cell<ParamID>,
    points: UnsafeCell<Vec<(int32, f64)>>,
}

impl Class for ParamQueue {
    type Interfaces = (IParamValueQueue,);
}

impl ParamQueue {
    fn new() -> Self {
        Self {
            id: Cell::new(0),
            points: UnsafeCell::new(Vec::with_capacity(POINTS_PER_QUEUE)),
        }
    }

    fn points(&self) -> &Vec<(int32, f64)> {
        // SAFETY: see the module docs: one thread at a time, and no `&mut` lives across a
        // call into the plugin.
        unsafe { &*self.points.get() }
    }
}

impl IParamValueQueueTrait for ParamQueue {
    unsafe fn getParameterId(&self) -> ParamID {
        self.id.get()
    }

    unsafe fn getPointCount(&self) -> int32 {
        self.points().len() as int32
    }

    unsafe fn getPoint(&self, index: int32, offset: *mut int32, value: *mut f64) -> tresult {
        let Some(&(o, v)) = usize::try_from(index)
            .ok()
            .and_then(|i| self.points().get(i))
        else {
            return kInvalidArgument;
        };
        if offset.is_null() || value.is_null() {
            return kInvalidArgument;
        }
        // SAFETY: non-null out-pointers from the plugin.
        unsafe {
            *offset = o;
            *value = v;
        }
        kResultOk
    }

    unsafe fn addPoint(&self, offset: int32, value: f64, index: *mut int32) -> tresult {
        // SAFETY: see the module docs: the plugin writes the output lists inside `process`,
        // while the node does not touch them.
        let points = unsafe { &mut *self.points.get() };
        if points.len() == points.capacity() {
            return kResultFalse;
        }
        // Points come in time order; a second at the same offset replaces the first.
        match points.last_mut() {
            Some(last) if last.0 == offset => last.1 = value,
            _ => points.push((offset, value)),
        }
        if !index.is_null() {
            // SAFETY: a non-null out-pointer from the plugin.
            unsafe { *index = points.len() as int32 - 1 };
        }
        kResultOk
    }
}

/// One block's parameter changes: `IParameterChanges`, a queue per parameter that changes.
pub(crate) struct ParamChanges {
    queues: Vec<ComWrapper<ParamQueue>>,
    /// The queues as the plugin sees them (each holds a reference).
    raw: Vec<ComPtr<IParamValueQueue>>,
    /// Per parameter of the node, its queue in this block (`usize::MAX`: none).
    slot_of: UnsafeCell<Vec<usize>>,
    /// Queues in use this block; their parameters, in `params`.
    used: Cell<usize>,
    params: UnsafeCell<Vec<usize>>,
}

impl Class for ParamChanges {
    type Interfaces = (IParameterChanges,);
}

impl ParamChanges {
    /// Lists for `count` parameters, allocated and written here.
    pub(crate) fn new(count: usize) -> Self {
        let queues: Vec<_> = (0..count)
            .map(|_| ComWrapper::new(ParamQueue::new()))
            .collect();
        let raw = queues
            .iter()
            .map(|q| {
                q.to_com_ptr::<IParamValueQueue>()
                    .expect("ParamQueue implements IParamValueQueue")
            })
            .collect();
        for q in &queues {
            // SAFETY: not shared with the plugin yet. Written once so that its pages are
            // touched here, not on the audio thread.
            let points = unsafe { &mut *q.points.get() };
            points.resize(POINTS_PER_QUEUE, (0, 0.0));
            points.clear();
        }
        Self {
            queues,
            raw,
            slot_of: UnsafeCell::new(vec![usize::MAX; count]),
            used: Cell::new(0),
            params: UnsafeCell::new(Vec::with_capacity(count)),
        }
    }

    /// Empties the lists for the next block. Audio thread, between `process` calls.
    pub(crate) fn clear(&self) {
        // SAFETY: see the module docs; the plugin is not inside `process`.
        let (slot_of, params) = unsafe { (&mut *self.slot_of.get(), &mut *self.params.get()) };
        for &p in params.iter() {
            slot_of[p] = usize::MAX;
        }
        params.clear();
        for q in &self.queues[..self.used.get()] {
            // SAFETY: as above.
            unsafe { (*q.points.get()).clear() };
        }
        self.used.set(0);
    }

    /// Adds a point for parameter `index` (plugin id `id`) at `offset`; false when its queue
    /// is full (the point is dropped). Points of one parameter must come in time order.
    pub(crate) fn push(&self, index: usize, id: ParamID, offset: i32, normalized: f64) -> bool {
        // SAFETY: see the module docs; the plugin is not inside `process`.
        let (slot_of, params) = unsafe { (&mut *self.slot_of.get(), &mut *self.params.get()) };
        let Some(slot) = slot_of.get_mut(index) else {
            return false;
        };
        if *slot == usize::MAX {
            *slot = self.used.get();
            self.used.set(*slot + 1);
            params.push(index);
            self.queues[*slot].id.set(id);
        }
        // SAFETY: as above.
        let points = unsafe { &mut *self.queues[*slot].points.get() };
        if points.len() == points.capacity() {
            return false;
        }
        points.push((offset, normalized));
        true
    }
}

impl ParamChanges {
    /// Calls `f` with each parameter's id and last point, for the lists the plugin filled
    /// (its output changes). Audio thread, after `process`.
    pub(crate) fn each_last(&self, mut f: impl FnMut(ParamID, f64)) {
        for q in &self.queues[..self.used.get()] {
            if let Some(&(_, value)) = q.points().last() {
                f(q.id.get(), value);
            }
        }
    }
}

impl IParameterChangesTrait for ParamChanges {
    unsafe fn getParameterCount(&self) -> int32 {
        self.used.get() as int32
    }

    unsafe fn getParameterData(&self, index: int32) -> *mut IParamValueQueue {
        match usize::try_from(index) {
            Ok(i) if i < self.used.get() => self.raw[i].as_ptr(),
            _ => std::ptr::null_mut(),
        }
    }

    unsafe fn addParameterData(
        &self,
        id: *const ParamID,
        index: *mut int32,
    ) -> *mut IParamValueQueue {
        if id.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: a non-null pointer from the plugin.
        let id = unsafe { *id };
        let used = self.used.get();
        let slot = match (0..used).find(|&k| self.queues[k].id.get() == id) {
            Some(k) => k,
            None if used < self.queues.len() => {
                self.queues[used].id.set(id);
                self.used.set(used + 1);
                used
            }
            None => return std::ptr::null_mut(),
        };
        if !index.is_null() {
            // SAFETY: a non-null out-pointer from the plugin.
            unsafe { *index = slot as int32 };
        }
        self.raw[slot].as_ptr()
    }
}

/// One block's events (notes): `IEventList`.
pub(crate) struct EventList {
    events: UnsafeCell<Vec<Event>>,
}

impl Class for EventList {
    type Interfaces = (IEventList,);
}

impl EventList {
    /// A list with room for `capacity` events, allocated and written here.
    pub(crate) fn new(capacity: usize) -> Self {
        // SAFETY: `Event` is plain data (numbers and a union of plain structs), for which
        // all zeroes is a valid value.
        let blank: Event = unsafe { std::mem::zeroed() };
        let mut events = vec![blank; capacity];
        events.clear();
        Self {
            events: UnsafeCell::new(events),
        }
    }

    /// Empties the list. Audio thread, between `process` calls.
    pub(crate) fn clear(&self) {
        // SAFETY: see the module docs.
        unsafe { (*self.events.get()).clear() };
    }

    /// Adds `event`; false when the list is full.
    pub(crate) fn push(&self, event: Event) -> bool {
        // SAFETY: see the module docs.
        let events = unsafe { &mut *self.events.get() };
        if events.len() == events.capacity() {
            return false;
        }
        events.push(event);
        true
    }

    fn events(&self) -> &Vec<Event> {
        // SAFETY: see the module docs.
        unsafe { &*self.events.get() }
    }
}

impl IEventListTrait for EventList {
    unsafe fn getEventCount(&self) -> int32 {
        self.events().len() as int32
    }

    unsafe fn getEvent(&self, index: int32, event: *mut Event) -> tresult {
        let Some(e) = usize::try_from(index)
            .ok()
            .and_then(|i| self.events().get(i))
        else {
            return kInvalidArgument;
        };
        if event.is_null() {
            return kInvalidArgument;
        }
        // SAFETY: a non-null out-pointer from the plugin.
        unsafe { *event = *e };
        kResultOk
    }

    unsafe fn addEvent(&self, _event: *mut Event) -> tresult {
        kResultFalse
    }
}
