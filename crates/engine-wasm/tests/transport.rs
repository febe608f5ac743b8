//! Musical time through the ABI natively: events timed by a beat ([`BEAT`], [`NEXT_BEAT`],
//! [`NEXT_BAR`]) and the transport ops (7 play to 12 tempo) through `db_event`, against a
//! native engine's `Controller` doing the same (`When::Beat`, `Controller::transport`):
//! the same output bit for bit, clicks on the frames the tempo map gives, the transport
//! readers equal to the native transport's position, and refusals with their codes and
//! messages. Each test thread has its own module state, so the tests run in parallel.

use downbeat::control::{Controller, When};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_engine_wasm::*;
use downbeat_graph::time::{TempoMap, TransportCommand};
use downbeat_graph::NoteEvent;

mod support;
use support::{event, load, param, table};

const NOW: u32 = u32::MAX;
const PLAY: u32 = 7;
const STOP: u32 = 8;
const LOCATE: u32 = 9;
const LOOP: u32 = 10;
const UNLOOP: u32 = 11;
const TEMPO: u32 = 12;

/// A metronome and a synth, a tempo ramp from beat 4 and a loop over four bars.
const SONG: &str = "sample_rate = 48000\nblock_size = 128\n\
    edges = [\"click -> mix\", \"keys -> mix\", \"mix -> out\"]\n\
    [tempo]\nbpm = 100\nchanges = [{ beat = 4, bpm = 140, ramp = 8 }]\n\
    [transport]\nloop = [0, 16]\n\
    [nodes.click]\ntype = \"metronome\"\ngain = 0.5\n\
    [nodes.keys]\ntype = \"synth\"\nrelease = 0.01\n\
    [nodes.mix]\ntype = \"mix\"\n[nodes.out]\ntype = \"output\"\n";

/// A metronome alone, mono, with the same tempo ramp and no loop.
const CLICKS: &str = "sample_rate = 48000\nblock_size = 128\n\
    edges = [\"click -> out\"]\n\
    [tempo]\nbpm = 100\nchanges = [{ beat = 4, bpm = 140, ramp = 8 }]\n\
    [nodes.click]\ntype = \"metronome\"\nchannels = 1\ngain = 0.5\n\
    [nodes.out]\ntype = \"output\"\nchannels = 1\n";

/// `frames` frames through the exports, interleaved, in blocks of the project's size.
fn render(frames: usize) -> Vec<f32> {
    let block = db_block_size() as usize;
    let ch = db_channels() as usize;
    let mut out = Vec::with_capacity(frames * ch);
    let mut left = frames;
    while left > 0 {
        let n = left.min(block);
        assert_eq!(db_render(n as u32), n as i32, "{}", last_error());
        let planes: Vec<&[f32]> = (0..ch)
            // SAFETY: each channel of the last render holds `n` samples.
            .map(|c| unsafe { std::slice::from_raw_parts(db_output_ptr(c as u32), n) })
            .collect();
        for i in 0..n {
            out.extend(planes.iter().map(|p| p[i]));
        }
        left -= n;
    }
    out
}

/// `db_event` timed by beat `beat`.
fn on_beat(op: u32, id: u32, beat: f64, value: f32, extra: f32, channel: u32) -> i32 {
    let bits = beat.to_bits();
    db_event(
        op | BEAT,
        id,
        bits as u32,
        (bits >> 32) as u32,
        value,
        extra,
        channel,
    )
}

/// A native engine running `text` (as `Project::build` builds it), its controller, and the
/// empty block that publishes the instruments, as the session makes them at load.
fn native_engine(text: &str) -> (Engine, Controller) {
    let project = Project::parse(text, "song.toml").unwrap();
    let mut engine = Engine::new(project.build().unwrap());
    let control = engine.controller(64);
    engine.process(&mut []);
    (engine, control)
}

/// `frames` frames of `engine`, interleaved, in blocks of `block`.
fn native_render(engine: &mut Engine, frames: usize, block: usize) -> Vec<f32> {
    let ch = engine.channels();
    let mut out = vec![0.0f32; frames * ch];
    for piece in out.chunks_mut(block * ch) {
        engine.process(piece);
    }
    out
}

/// The tempo map `text` declares.
fn map(text: &str) -> TempoMap {
    Project::parse(text, "song.toml").unwrap().tempo.unwrap()
}

/// Frames where a click starts on channel `c` of `channels`: a sample that is not zero after
/// at least 1,000 zeros (clicks end after 150 ms, and beats here are further apart).
fn onsets(audio: &[f32], channels: usize, c: usize) -> Vec<u64> {
    let mut zeros = usize::MAX;
    let mut found = Vec::new();
    for (i, &x) in audio.iter().skip(c).step_by(channels).enumerate() {
        if x == 0.0 {
            zeros = zeros.saturating_add(1);
        } else {
            if zeros >= 1000 {
                found.push(i as u64);
            }
            zeros = 0;
        }
    }
    found
}

/// The first frame at which two interleaved renders differ in their bits.
fn first_difference(a: &[f32], b: &[f32]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x.to_bits() != y.to_bits())
}

/// Notes and a parameter on beats (a beat, the next beat, the next bar), and every
/// transport op (a loop on the next bar line, a live tempo ramp on a beat, stop, locate,
/// unloop and play on frames, a tempo step on a beat after them) through `db_event`: the
/// render equals the native engine's doing the same through its `Controller`, bit for bit,
/// and the transport readers equal the native transport's position after every block.
#[test]
fn beat_events_and_transport_ops_equal_the_native_controllers() {
    const S: u64 = 400_000;
    const FRAMES: usize = 860_000;
    assert_eq!(load(SONG, "song.toml"), 0, "{}", last_error());
    let gain = param(&table(), "click", "gain");
    let keys = 0;
    let ok = |rc: i32| assert_eq!(rc, 0, "{}", last_error());
    ok(on_beat(4, ALL, 2.5, 72.0, 0.75, 0));
    ok(on_beat(5, ALL, 2.75, 72.0, 0.0, 0));
    ok(db_event(
        4 | BEAT,
        keys,
        NEXT_BEAT,
        NEXT_BEAT,
        64.0,
        0.625,
        1,
    ));
    ok(db_event(5 | BEAT, keys, NEXT_BAR, NOW, 64.0, 0.0, 1));
    ok(on_beat(2, gain, 9.5, 0.2, 0.0, 0));
    ok(on_beat(3, gain, 12.0, 0.5, 0.05, 0));
    ok(db_event(LOOP | BEAT, 0, NEXT_BAR, NOW, 4.0, 8.0, 0));
    ok(on_beat(TEMPO, 0, 6.0, 120.0, 2.0, 0));
    ok(event(STOP, 0, S, 0.0, 0.0, 0));
    ok(event(LOCATE, 0, S + 10_000, 1.0, 0.0, 0));
    ok(event(UNLOOP, 0, S + 10_000, 0.0, 0.0, 0));
    ok(event(PLAY, 0, S + 30_000, 0.0, 0.0, 0));
    ok(on_beat(TEMPO, 0, 14.0, 90.0, 0.0, 0));
    // Ids and channels are ignored by the transport ops.
    ok(on_beat(PLAY, 12345, 15.0, 0.0, 0.0, 99));

    let (mut engine, mut c) = native_engine(SONG);
    let k = c.resolve_instrument("keys").unwrap();
    let g = c.resolve("click", "gain").unwrap();
    c.note_on(When::Beat(2.5), 0, 72.0, 0.75).unwrap();
    c.note_off(When::Beat(2.75), 0, 72.0).unwrap();
    let on = NoteEvent::On {
        channel: 1,
        note: 64.0,
        velocity: 0.625,
    };
    c.send_note_to(When::NextBeat, k, on).unwrap();
    let off = NoteEvent::Off {
        channel: 1,
        note: 64.0,
    };
    c.send_note_to(When::NextBar, k, off).unwrap();
    c.step(When::Beat(9.5), "click", "gain", 0.2).unwrap();
    let ramp = downbeat_graph::Ramp {
        shape: downbeat_graph::Shape::Linear,
        from: None,
        to: 0.5,
        frames: 2400,
    };
    c.send(When::Beat(12.0), g, downbeat_graph::Change::Ramp(ramp))
        .unwrap();
    let t = |c: &mut Controller, when, command| c.transport(when, command).unwrap();
    t(&mut c, When::NextBar, TransportCommand::Loop(4.0, 8.0));
    let tempo = |bpm, ramp| TransportCommand::Tempo { bpm, ramp };
    t(&mut c, When::Beat(6.0), tempo(120.0, 2.0));
    t(&mut c, When::Frame(S), TransportCommand::Stop);
    t(
        &mut c,
        When::Frame(S + 10_000),
        TransportCommand::LocateBeat(1.0),
    );
    t(&mut c, When::Frame(S + 10_000), TransportCommand::Unloop);
    t(&mut c, When::Frame(S + 30_000), TransportCommand::Play);
    t(&mut c, When::Beat(14.0), tempo(90.0, 0.0));
    t(&mut c, When::Beat(15.0), TransportCommand::Play);

    // Block by block: the same audio, and the readers say where the native song is.
    let mut wasm = Vec::with_capacity(FRAMES * 2);
    let mut native = Vec::with_capacity(FRAMES * 2);
    let (mut stopped, mut looped, mut faster) = (0, 0, 0);
    let mut last_beat = 0.0;
    for _ in 0..FRAMES / 128 {
        wasm.extend(render(128));
        native.extend(native_render(&mut engine, 128, 128));
        let p = engine.schedule().transport().position();
        assert_eq!(db_transport_playing(), u32::from(p.playing));
        assert_eq!(db_transport_beat().to_bits(), p.beat.to_bits());
        assert_eq!(db_transport_bar(), p.bar as f64);
        assert_eq!(db_transport_bar_beat(), p.bar_beat);
        assert_eq!(db_transport_bpm().to_bits(), p.bpm.to_bits());
        stopped += usize::from(!p.playing);
        looped += usize::from(p.beat < last_beat && p.playing);
        faster += usize::from(p.bpm == 120.0);
        last_beat = p.beat;
    }
    assert_eq!(
        first_difference(&wasm, &native),
        None,
        "the render differs from the native controller's"
    );
    // The blocks that end after the stop (on a block line) and before play (inside one).
    assert_eq!(stopped, 30_000 / 128, "stopped from frame S to S + 30,000");
    assert!(looped >= 2, "the loop over beats 4 to 8 wrapped: {looped}");
    assert!(faster > 0, "the live tempo change reached 120 bpm");
    assert_eq!(db_transport_bpm(), 90.0, "the tempo step on beat 14");
    assert!(db_transport_beat() > 14.0);
    assert_eq!(db_dropped(), 0.0);

    // And the events did something: the same render without them differs from frame 0
    // on (the note on the next beat, the loop on the next bar).
    assert_eq!(load(SONG, "song.toml"), 0);
    let plain = render(FRAMES);
    let first = first_difference(&wasm, &plain).expect("the events change the render") / 2;
    assert_eq!(first as u64, map(SONG).frame_of(1.0), "the note on beat 1");
}

/// A locate on the next bar line, a loop on a beat, a stop, a locate and a play on frames:
/// every click on the frame the tempo map gives, counted from where the song was set going:
/// beats 0 to 3, then (sent back to beat 2 on the bar line at beat 4) beats 2 to 7, then the
/// loop's passes over beats 4 to 8 (set on beat 5) until the stop, silence, then beat 1 on
/// the frame play lands on and the map's beats after it.
#[test]
fn clicks_land_on_the_maps_frames_through_a_locate_a_loop_a_stop_and_play() {
    const S: u64 = 700_000;
    const P: u64 = S + 30_000;
    const FRAMES: usize = 1_000_000;
    assert_eq!(load(CLICKS, "song.toml"), 0, "{}", last_error());
    let ok = |rc: i32| assert_eq!(rc, 0, "{}", last_error());
    ok(db_event(LOCATE | BEAT, NOW, NEXT_BAR, NOW, 2.0, 0.0, NOW));
    ok(on_beat(LOOP, 0, 5.0, 4.0, 8.0, 0));
    ok(event(STOP, 0, S, 0.0, 0.0, 0));
    ok(event(LOCATE, 0, S + 10_000, 1.0, 0.0, 0));
    ok(event(UNLOOP, 0, S + 10_000, 0.0, 0.0, 0));
    ok(event(PLAY, 0, P, 0.0, 0.0, 0));
    let audio = render(FRAMES);

    let m = map(CLICKS);
    let f = |b: u32| m.frame_of(f64::from(b));
    let mut want: Vec<u64> = (0..4).map(f).collect();
    let back = f(4); // the engine's frame where the song goes back to beat 2
    want.extend((2..8).map(|b| back + f(b) - f(2)));
    let pass = f(8) - f(4);
    let mut start = back + f(8) - f(2);
    while start < S {
        want.extend((4..8).map(|b| start + f(b) - f(4)).filter(|&x| x < S));
        start += pass;
    }
    let passes = (want.len() - 10) / 4;
    want.extend(
        (1..)
            .map(|b| P + f(b) - f(1))
            .take_while(|&x| x < FRAMES as u64),
    );
    let got = onsets(&audio, 1, 0);
    assert_eq!(got, want, "click frames");
    assert!(
        passes >= 2,
        "the loop played before the stop: {passes} passes"
    );
    assert!(
        audio[S as usize + 7200..P as usize]
            .iter()
            .all(|&x| x == 0.0),
        "silent while stopped"
    );
    assert_eq!(
        audio[back as usize], 0.3,
        "beat 2 the moment the song is sent back"
    );
    assert_eq!(
        audio[P as usize], 0.3,
        "beat 1 the moment it plays, not an accent"
    );

    // The native engine through its Controller gives the same samples.
    let (mut engine, mut c) = native_engine(CLICKS);
    let mut t = |when, command| c.transport(when, command).unwrap();
    t(When::NextBar, TransportCommand::LocateBeat(2.0));
    t(When::Beat(5.0), TransportCommand::Loop(4.0, 8.0));
    t(When::Frame(S), TransportCommand::Stop);
    t(When::Frame(S + 10_000), TransportCommand::LocateBeat(1.0));
    t(When::Frame(S + 10_000), TransportCommand::Unloop);
    t(When::Frame(P), TransportCommand::Play);
    let native = native_render(&mut engine, FRAMES, 128);
    assert_eq!(first_difference(&audio, &native), None);
}

/// A live tempo change on a beat moves the beats after it as a map built with the change
/// gives them; a note on a beat lands on that beat's frame.
#[test]
fn a_live_tempo_change_and_a_note_on_a_beat_land_where_the_native_map_says() {
    assert_eq!(load(SONG, "song.toml"), 0);
    assert_eq!(on_beat(TEMPO, 0, 2.0, 150.0, 0.0, 0), 0);
    let m = TempoMap::new(
        100.0,
        Default::default(),
        &[downbeat_graph::time::TempoPoint {
            beat: 2.0,
            bpm: 150.0,
            ramp: 0.0,
        }],
        &[],
        48_000,
    )
    .unwrap();
    let frames = m.frame_of(7.5) as usize;
    let audio = render(frames);
    let want: Vec<u64> = (0..8).map(|b| m.frame_of(f64::from(b))).collect();
    assert_eq!(onsets(&audio, 2, 0), want);
    assert_eq!(db_transport_bpm(), 150.0);

    // A note on beat 5.5 (after the change): the render parts from the one without it on
    // that beat's frame under the changed map.
    let with_note = |note: bool| {
        assert_eq!(load(SONG, "song.toml"), 0);
        assert_eq!(on_beat(TEMPO, 0, 2.0, 150.0, 0.0, 0), 0);
        if note {
            assert_eq!(on_beat(4, ALL, 5.5, 60.0, 1.0, 0), 0);
        }
        render(frames)
    };
    let (a, b) = (with_note(true), with_note(false));
    let first = first_difference(&a, &b).unwrap() / 2;
    let on = m.frame_of(5.5) as usize;
    assert_eq!(first, on, "the note starts on the frame of beat 5.5");
}

/// Refusals say why, with the codes of the other ops' refusals, and change nothing.
#[test]
fn bad_transport_ops_and_beats_say_why_with_their_codes() {
    assert_eq!(db_event(PLAY, 0, NOW, NOW, 0.0, 0.0, 0), -1);
    assert_eq!(load(SONG, "song.toml"), 0);
    let gain = param(&table(), "click", "gain");
    // Each call's code, and its message as the module keeps it (read right after it).
    let refused = |rc: i32, code: i32, message: &str| {
        assert_eq!((rc, last_error().as_str()), (code, message));
    };
    refused(
        event(LOOP, 0, 0, 4.0, 2.0, 0),
        -4,
        "transport: a loop from beat 4 to beat 2 must end at least one frame after it starts",
    );
    refused(
        event(LOOP, 0, 0, 4.0, 4.0, 0),
        -4,
        "transport: a loop from beat 4 to beat 4 must end at least one frame after it starts",
    );
    refused(
        event(TEMPO, 0, 0, 0.0, 0.0, 0),
        -4,
        "transport: a tempo of 0 bpm over 0 beats: the tempo must be above 0 and at most 999, \
         the ramp 0 or more beats",
    );
    refused(
        event(TEMPO, 0, 0, 1000.0, 0.0, 0),
        -4,
        "transport: a tempo of 1000 bpm over 0 beats: the tempo must be above 0 and at most \
         999, the ramp 0 or more beats",
    );
    refused(
        event(TEMPO, 0, 0, 120.0, -1.0, 0),
        -4,
        "transport: a tempo of 120 bpm over -1 beats: the tempo must be above 0 and at most \
         999, the ramp 0 or more beats",
    );
    refused(
        event(LOCATE, 0, 0, -1.0, 0.0, 0),
        -4,
        "transport: beat -1 must be a number of beats from 0 up",
    );
    refused(
        on_beat(STOP, 0, -2.0, 0.0, 0.0, 0),
        -4,
        "beat -2 must be a number of beats from 0 up",
    );
    refused(
        on_beat(2, gain, f64::INFINITY, 0.0, 0.0, 0),
        -4,
        "beat inf must be a number of beats from 0 up",
    );
    refused(
        // A NaN other than the two that name the next beat and bar.
        db_event(4 | BEAT, ALL, 0, NOW, 60.0, 0.75, 0),
        -4,
        "beat NaN must be a number of beats from 0 up",
    );
    refused(
        db_event(13, 0, NOW, NOW, 0.0, 0.0, 0),
        -2,
        "no event op 13: give 1 to 12, plus 65536 to time it by a beat",
    );
    refused(
        db_event(PLAY | 0x2_0000, 0, NOW, NOW, 0.0, 0.0, 0),
        -2,
        "no event op 131079: give 1 to 12, plus 65536 to time it by a beat",
    );
    // Nothing reached the engine: the render is the plain one.
    let refused = render(48_000);
    assert_eq!(load(SONG, "song.toml"), 0);
    assert_eq!(first_difference(&refused, &render(48_000)), None);
    assert_eq!(db_event_room() as usize, EVENT_CAPACITY);
}

/// The readers before any render and without a project.
#[test]
fn the_transport_readers_at_load_and_without_a_project() {
    db_unload();
    assert_eq!(
        (
            db_transport_playing(),
            db_transport_beat(),
            db_transport_bar(),
            db_transport_bpm()
        ),
        (0, 0.0, 0.0, 0.0)
    );
    assert_eq!(load(SONG, "song.toml"), 0);
    assert_eq!(db_transport_playing(), 1);
    assert_eq!(db_transport_beat(), 0.0);
    assert_eq!(db_transport_bpm(), 100.0);
    assert_eq!(event(STOP, 0, 0, 0.0, 0.0, 0), 0);
    render(256);
    assert_eq!(db_transport_playing(), 0);
    assert_eq!(db_transport_beat(), 0.0);
    assert_eq!(on_beat(LOCATE, 0, 0.0, 9.0, 0.0, 0), 0, "{}", last_error());
    render(128);
    assert_eq!(db_transport_playing(), 0);
    assert_eq!(db_transport_beat(), 0.0, "stopped: beat 0 never comes");
    assert_eq!(event(LOCATE, 0, 0, 9.0, 0.0, 0), 0);
    assert_eq!(event(PLAY, 0, 0, 0.0, 0.0, 0), 0);
    render(128);
    assert_eq!(db_transport_playing(), 1);
    assert_eq!(db_transport_bar(), 2.0);
    assert_eq!(db_transport_bar_beat(), 8.0);
    assert!(db_transport_beat() > 9.0 && db_transport_beat() < 9.1);
}
