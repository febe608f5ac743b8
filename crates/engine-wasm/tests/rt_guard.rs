//! The per-block path under the guard: events of every op, renders, meters and values
//! neither allocate, free, lock nor make a system call (natively; in the browser the exports
//! run them inside the worklet's `process()`). The guard runs its closure on a thread of its
//! own, where the exports' per-thread state is empty, so this drives the [`Session`] they
//! wrap.

use downbeat_engine_wasm::*;
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

const PROJECT: &str = "block_size = 64\nedges = [\"a -> g -> out\", \"k -> g\"]\n\
    [nodes.a]\ntype = \"sine\"\n[nodes.k]\ntype = \"synth\"\n\
    [nodes.g]\ntype = \"gain\"\n[nodes.out]\ntype = \"output\"\n";

#[test]
fn events_and_renders_are_real_time_safe() {
    let mut s = Session::load(PROJECT, "g.toml").unwrap();
    let gain = s.param_id("g", "gain").unwrap();
    let freq = s.param_id("a", "freq").unwrap();
    let synth = s.instrument_id("k").unwrap();
    assert_eq!(s.render(64), Ok(64));
    let mut results = Vec::with_capacity(40 * 7);
    let mut sum = 0.0f32;
    let report = guard::check(|| {
        for block in 0..40u64 {
            let at = 64 + block * 64;
            let f = 200.0 + block as f32;
            results.push(s.event(Op::Set, freq, Some(at + 3), f, 0.0, 0));
            results.push(s.event(Op::Step, gain, Some(at + 10), 0.5, 0.0, 0));
            results.push(s.event(Op::Ramp, gain, Some(at + 20), 1.0, 0.001, 0));
            results.push(s.event(Op::NoteOn, ALL, Some(at + 5), 60.0, 0.75, 1));
            results.push(s.event(Op::NoteOn, synth, Some(at + 6), 64.0, 0.625, 2));
            results.push(s.event(Op::NoteOff, ALL, Some(at + 40), 60.0, 0.0, 1));
            results.push(s.event(Op::AllNotesOff, ALL, None, 0.0, 0.0, ALL));
            sum += s.render(64).map_or(f32::NAN, |n| n as f32);
            sum += s.peak(0) + s.rms(1) + s.value(gain).unwrap_or(f32::NAN) + s.output(0)[63];
        }
    });
    report.assert_clean();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert!(sum.is_finite() && sum > 40.0 * 64.0, "{sum}");
    assert_eq!(s.dropped(), 0);
    assert_eq!(s.position(), 41 * 64);
}

/// The last error's message, as JavaScript reads it: borrowed from the module, so reading
/// it allocates nothing.
fn error_message() -> &'static [u8] {
    // SAFETY: the message is `db_error_len` bytes at `db_error_ptr` until the next failure;
    // each caller reads it before the next call into the module.
    unsafe { std::slice::from_raw_parts(db_error_ptr(), db_error_len() as usize) }
}

/// The exports themselves, as the worklet's `process()` calls them every block: the events
/// the control ring carries (every op, at a frame and "now"), a render, the output, the
/// meters and values; then every refusal those calls can give, with its code and message
/// read back as JavaScript reads them. The project is loaded off the guard's thread and
/// installed on it, because the exports keep their state per thread.
///
/// Not here: a value outside a parameter's range and a bad ramp duration. The native
/// `Controller`'s check refuses them with a `ControlError` that owns the node's name
/// (`ParamTable::check` and `ramp_frames` in `downbeat-graph`), so those refusals allocate;
/// `@downbeat/engine`'s `Controller` refuses both on the main thread, so no record the
/// worklet pops carries them.
#[test]
fn the_exports_per_block_calls_and_their_refusals_are_real_time_safe() {
    const NOW: u32 = u32::MAX;
    let session = Session::load(PROJECT, "g.toml").unwrap();
    let gain = session.param_id("g", "gain").unwrap();
    let freq = session.param_id("a", "freq").unwrap();
    let synth = session.instrument_id("k").unwrap();
    let block = session.block_size() as u32;
    // Each refusal: what it returned, and whether its message was the expected one.
    let mut refusals = [(0i32, false); 12];
    let mut peaks = 0.0f32;
    let (session, report) = guard::check_with(&guard::Options::new(), || {
        assert!(install(Some(session)).is_none());
        for b in 0..40u32 {
            let at = block * (b + 1);
            let rc = db_event(1, freq, at + 3, 0, 200.0 + b as f32, 0.0, 0)
                | db_event(2, gain, at + 10, 0, 0.5, 0.0, 0)
                | db_event(3, gain, at + 20, 0, 1.0, 0.001, 0)
                | db_event(4, ALL, at + 5, 0, 60.0, 0.75, 1)
                | db_event(4, synth, NOW, NOW, 64.0, 0.625, 2)
                | db_event(5, ALL, at + 40, 0, 60.0, 0.0, 1)
                | db_event(6, ALL, at + 60, 0, 0.0, 0.0, ALL);
            assert_eq!(rc, 0);
            assert_eq!(db_render(block), block as i32);
            // SAFETY: channel 1 of the last render holds `block` samples.
            let right = unsafe { std::slice::from_raw_parts(db_output_ptr(1), block as usize) };
            peaks += right[block as usize - 1].abs() + db_peak(0) + db_rms(1) + db_value(gain);
            assert!(db_position() > 0.0 && db_event_room() > 0 && db_dropped() == 0.0);
        }
        let mut refused = |i: usize, rc: i32, expected: &[u8]| {
            refusals[i] = (rc, error_message().starts_with(expected));
        };
        refused(
            0,
            db_event(13, gain, NOW, NOW, 1.0, 0.0, 0),
            b"no event op 13: give 1 to 12",
        );
        refused(
            1,
            db_event(2, 999, NOW, NOW, 1.0, 0.0, 0),
            b"no parameter has id 999:",
        );
        refused(
            2,
            db_event(4, 5, NOW, NOW, 60.0, 0.75, 0),
            b"no instrument has id 5:",
        );
        refused(
            3,
            db_event(4, ALL, NOW, NOW, 128.0, 0.75, 0),
            b"note 128 is outside",
        );
        refused(
            4,
            db_event(4, ALL, NOW, NOW, 60.0, 200.0, 0),
            b"velocity 200 is outside",
        );
        refused(
            5,
            db_event(5, synth, NOW, NOW, 60.0, 0.0, 16),
            b"channel 16 is outside",
        );
        refused(6, db_render(0), b"render 0 frames: give 1 to 64");
        refused(7, db_render(block + 1), b"render 65 frames: give 1 to 64");
        let value = if db_value(999).is_nan() { -3 } else { 0 };
        refused(8, value, b"no parameter has id 999:");
        assert!(db_output_ptr(2).is_null() && db_peak(2) == 0.0 && db_rms(2) == 0.0);
        // The list full: as many events as it has room for are taken, the next is dropped.
        for _ in 0..db_event_room() {
            assert_eq!(db_event(2, gain, NOW, NOW, 0.5, 0.0, 0), 0);
        }
        refused(
            9,
            db_event(2, gain, NOW, NOW, 0.5, 0.0, 0),
            b"the engine's event list is full",
        );
        refused(
            10,
            db_event(4, ALL, NOW, NOW, 60.0, 1.0, 0),
            b"the engine's event list is full",
        );
        // A render makes room again, and a success leaves the last message as it was.
        refused(11, db_render(block), b"the engine's event list is full");
        assert_eq!(db_event(2, gain, NOW, NOW, 0.5, 0.0, 0), 0);
        install(None)
    });
    report.assert_clean();
    let expected = [-2, -3, -3, -4, -4, -4, -2, -2, -3, -5, -5, block as i32];
    for (i, (&(rc, said), want)) in refusals.iter().zip(expected).enumerate() {
        assert_eq!(rc, want, "refusal {i}");
        assert!(said, "refusal {i}: the message was not the expected one");
    }
    let session = session.expect("the session was installed");
    assert_eq!(session.dropped(), 2);
    assert_eq!(session.position(), 41 * u64::from(block));
    assert!(peaks.is_finite() && peaks > 40.0, "{peaks}");
}

/// The edits the guard tests make, in turn: a sine on a side branch into the gain, its edge
/// moved (through a gain of its own), then removed.
fn edit(k: u32) -> String {
    let x = k / 3;
    match k % 3 {
        0 => format!(
            r#"{{"add": {{"x{x}": {{"type": "sine", "freq": 220}}}}, "connect": ["x{x} -> g"]}}"#
        ),
        1 => format!(
            r#"{{"add": {{"q{x}": {{"type": "gain", "gain": 0.5}}}}, "disconnect": ["x{x} -> g"],
                "connect": ["x{x} -> q{x} -> g @ -6 dB"]}}"#
        ),
        _ => format!(r#"{{"remove": ["x{x}", "q{x}"]}}"#),
    }
}

/// The render that takes a live edit over: the swap, the take-over of every kept node (its
/// box, buffers, parameter states), the move of the queued events and of the timeline, the
/// old schedule's retirement; no allocation, free, lock or system call. Each edit is made
/// between two guarded renders, off the guard (it builds nodes and compiles, as the worklet
/// does between blocks), and the old schedule is freed there afterwards, never in the render.
#[test]
fn the_render_that_takes_an_edit_over_is_real_time_safe() {
    let mut s = Session::load(PROJECT, "g.toml").unwrap();
    let gain = s.param_id("g", "gain").unwrap();
    let synth = s.instrument_id("k").unwrap();
    assert_eq!(s.render(64), Ok(64));
    for k in 0..12u32 {
        s.edit(&edit(k)).unwrap();
        let at = s.position();
        // Events queued before the edit, for kept nodes, move into the new schedule.
        s.event(Op::Ramp, gain, Some(at + 200), 0.8, 0.01, 0)
            .unwrap();
        s.event(Op::NoteOn, synth, Some(at + 7), 60.0 + k as f32, 0.625, 0)
            .unwrap();
        let ((back, rendered, peak), report) =
            guard::check_with(&guard::Options::new(), move || {
                let rendered = s.render(64);
                let peak = s.peak(0) + s.value(gain).unwrap_or(f32::NAN);
                (s, rendered, peak)
            });
        s = back;
        report.assert_clean();
        assert_eq!(rendered, Ok(64));
        assert!(peak.is_finite() && peak > 0.0, "{peak}");
        assert_eq!(
            s.edits_applied(),
            u64::from(k) + 1,
            "edit {k} taken over in its render"
        );
        assert_eq!(
            s.reclaim(),
            1,
            "edit {k}: the old schedule is freed here, off the render"
        );
    }
}

/// The same through the exports, as the worklet calls them: the session is installed on the
/// guard's thread with an edit committed, and `db_render` takes it over there.
#[test]
fn db_render_taking_an_edit_over_is_real_time_safe() {
    let mut session = Session::load(PROJECT, "g.toml").unwrap();
    let block = session.block_size() as u32;
    assert_eq!(session.render(64), Ok(64));
    for k in 0..6u32 {
        session.edit(&edit(k)).unwrap();
        let (back, report) = guard::check_with(&guard::Options::new(), move || {
            assert!(install(Some(session)).is_none());
            let rc = db_render(block);
            let peak = db_peak(0);
            (install(None), rc, peak)
        });
        report.assert_clean();
        let (installed, rc, peak) = back;
        session = installed.expect("the session was installed");
        assert_eq!(rc, block as i32);
        assert!(peak > 0.0);
        assert_eq!(session.edits_applied(), u64::from(k) + 1);
        assert_eq!(session.reclaim(), 1);
    }
}

/// A song for the musical-time guard tests: fast beats (a beat every 6,000 frames, then a
/// ramp), a loop, a metronome, a synth and a gain.
const SONG: &str = "block_size = 64\nedges = [\"m -> g -> out\", \"k -> g\"]\n\
    [nodes.m]\ntype = \"metronome\"\n[nodes.k]\ntype = \"synth\"\n\
    [nodes.g]\ntype = \"gain\"\n[nodes.out]\ntype = \"output\"\n\
    [tempo]\nbpm = 480\nchanges = [{ beat = 8, bpm = 600, ramp = 8 }]\n\
    [transport]\nloop = [0, 32]\n";

/// Events timed by beats (a beat, the next beat, the next bar) and every transport command
/// (a loop, a tempo ramp, a stop, a play, a locate, an unloop), sent between guarded renders
/// that carry them out, with the song's position read after every render: no allocation,
/// free, lock or system call, and every one taken.
#[test]
fn beat_events_and_transport_commands_are_real_time_safe() {
    let mut s = Session::load(SONG, "song.toml").unwrap();
    let gain = s.param_id("g", "gain").unwrap();
    let synth = s.instrument_id("k").unwrap();
    assert_eq!(s.render(64), Ok(64));
    // Refusals counted, the first kept: a vector of every result would fault its pages in.
    let (mut taken, mut refused) = (0u32, None);
    let mut check = |r: Result<(), Error>| match r {
        Ok(()) => taken += 1,
        Err(e) => refused = refused.take().or(Some(e)),
    };
    let (mut beats, mut stopped, mut sum) = (0.0f64, 0u32, 0.0f32);
    let report = guard::check(|| {
        for block in 0..2000u64 {
            let p = s.transport_position();
            let next = p.beat.floor() + 0.25;
            check(s.event_when(Op::NoteOn, ALL, When::Beat(next + 0.25), 60.0, 0.625, 0));
            check(s.event_when(Op::NoteOff, synth, When::Beat(next + 0.5), 60.0, 0.0, 0));
            if block % 8 == 0 {
                check(s.event_when(Op::Step, gain, When::NextBeat, 0.8, 0.0, 0));
                check(s.event_when(Op::Ramp, gain, When::NextBar, 1.0, 0.01, 0));
            }
            let at = s.position();
            let command = match block % 300 {
                0 => Some((Op::Loop, When::NextBar, 4.0, 12.0)),
                50 => Some((Op::Tempo, When::Beat(p.beat + 1.0), 300.0, 2.0)),
                100 => Some((Op::Stop, When::Frame(at + 10), 0.0, 0.0)),
                110 => Some((Op::Locate, When::Now, 2.5, 0.0)),
                120 => Some((Op::Play, When::Frame(at + 30), 0.0, 0.0)),
                200 => Some((Op::Unloop, When::NextBeat, 0.0, 0.0)),
                250 => Some((Op::Tempo, When::Now, 480.0, 0.0)),
                _ => None,
            };
            if let Some((op, when, value, extra)) = command {
                check(s.event_when(op, 0, when, value, extra, 0));
            }
            sum += s.render(64).map_or(f32::NAN, |n| n as f32) + s.peak(0);
            let p = s.transport_position();
            beats += p.beat + p.bpm + p.bar as f64;
            stopped += u32::from(!p.playing);
        }
    });
    report.assert_clean();
    assert_eq!(refused, None);
    assert!(taken > 2000 * 2, "{taken}");
    assert!(sum.is_finite() && sum > 2000.0 * 64.0, "{sum}");
    assert!(beats.is_finite() && beats > 0.0);
    assert!(stopped > 0, "the stops took effect");
    assert_eq!(s.dropped(), 0);
}

/// The same through the exports, as the worklet's `process()` calls them: records timed by
/// a beat's bits, `NEXT_BEAT` and `NEXT_BAR`, the transport ops, the readers after every
/// render, then the refusals of musical time, with their codes and messages.
#[test]
fn the_exports_transport_and_beat_events_and_their_refusals_are_real_time_safe() {
    const NOW: u32 = u32::MAX;
    let session = Session::load(SONG, "song.toml").unwrap();
    let gain = session.param_id("g", "gain").unwrap();
    let synth = session.instrument_id("k").unwrap();
    let block = session.block_size() as u32;
    let mut refusals = [(0i32, false); 6];
    let mut read = 0.0f64;
    let (session, report) = guard::check_with(&guard::Options::new(), || {
        assert!(install(Some(session)).is_none());
        for b in 0..1000u32 {
            let beat = (db_transport_beat().floor() + 0.5).to_bits();
            let (lo, hi) = (beat as u32, (beat >> 32) as u32);
            let mut rc = db_event(4 | BEAT, ALL, lo, hi, 64.0, 0.75, 0)
                | db_event(5 | BEAT, synth, lo, hi + 1, 64.0, 0.0, 0);
            if b % 16 == 0 {
                rc |= db_event(2 | BEAT, gain, NEXT_BEAT, NEXT_BEAT, 0.7, 0.0, 0)
                    | db_event(3 | BEAT, gain, NEXT_BAR, NOW, 1.0, 0.01, 0);
            }
            let at = block * (b + 1);
            rc |= match b % 200 {
                0 => db_event(10 | BEAT, 0, NEXT_BAR, NOW, 2.0, 6.0, 0),
                20 => db_event(12 | BEAT, 0, lo, hi, 360.0, 1.0, 0),
                40 => db_event(8, 0, at + 10, 0, 0.0, 0.0, 0),
                50 => db_event(9, 0, NOW, NOW, 1.0, 0.0, 0),
                60 => db_event(7, 0, at + 5, 0, 0.0, 0.0, 0),
                100 => db_event(11 | BEAT, 0, NEXT_BEAT, NEXT_BEAT, 0.0, 0.0, 0),
                150 => db_event(12, 0, NOW, NOW, 480.0, 0.0, 0),
                _ => 0,
            };
            assert_eq!(rc, 0);
            assert_eq!(db_render(block), block as i32);
            read += db_transport_beat()
                + db_transport_bar()
                + db_transport_bar_beat()
                + db_transport_bpm()
                + f64::from(db_transport_playing());
            assert!(db_dropped() == 0.0);
        }
        let mut refused = |i: usize, rc: i32, expected: &[u8]| {
            refusals[i] = (rc, error_message().starts_with(expected));
        };
        refused(
            0,
            db_event(10, 0, NOW, NOW, 8.0, 4.0, 0),
            b"transport: a loop from beat 8 to beat 4 must end",
        );
        refused(
            1,
            db_event(12, 0, NOW, NOW, 0.0, 0.0, 0),
            b"transport: a tempo of 0 bpm over 0 beats",
        );
        let minus = (-1.0f64).to_bits();
        refused(
            2,
            db_event(7 | BEAT, 0, minus as u32, (minus >> 32) as u32, 0.0, 0.0, 0),
            b"beat -1 must be a number of beats from 0 up",
        );
        refused(
            3,
            db_event(4 | BEAT, ALL, 0, NOW, 60.0, 0.75, 0),
            b"beat NaN must be",
        );
        refused(
            4,
            db_event(9, 0, NOW, NOW, -3.0, 0.0, 0),
            b"transport: beat -3 must be",
        );
        refused(
            5,
            db_event(7 | 0x4_0000, 0, NOW, NOW, 0.0, 0.0, 0),
            b"no event op 262151: give 1 to 12",
        );
        install(None)
    });
    report.assert_clean();
    for (i, &(rc, said)) in refusals.iter().enumerate() {
        let want = if i == 5 { -2 } else { -4 };
        assert_eq!(rc, want, "refusal {i}");
        assert!(said, "refusal {i}: the message was not the expected one");
    }
    let session = session.expect("the session was installed");
    assert_eq!(session.dropped(), 0);
    assert!(read.is_finite() && read > 0.0);
}
