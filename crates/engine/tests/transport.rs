//! Musical time through the engine: a metronome's clicks found in the audio on the frames
//! the tempo map gives, through tempo ramps, signature changes and a loop, whatever the
//! size of the process calls; events on beats; transport commands on exact frames; and
//! bad `[tempo]` tables refused with a located message.

use downbeat::control::When;
use downbeat::nodes::{Sine, SineSettings};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::time::{TempoMap, TempoPoint, TransportCommand};

mod midi_corpus;
mod support;

/// A metronome alone at `gain` 0.5 under `tables` (a `[tempo]`, a `[transport]`).
fn metronome(tables: &str) -> Project {
    let text = format!(
        "block_size = 4096\nedges = [\"m -> out\"]\n[nodes.m]\ntype = \"metronome\"\nchannels = 1\n\
         [nodes.out]\ntype = \"output\"\nchannels = 1\n{tables}"
    );
    Project::parse(&text, "metronome.toml").unwrap()
}

/// `frames` frames of `engine`'s first channel, in process calls of `call` frames.
fn render(engine: &mut Engine, frames: usize, call: usize) -> Vec<f32> {
    let ch = engine.channels();
    let mut out = Vec::with_capacity(frames);
    let mut block = vec![0.0f32; call * ch];
    while out.len() < frames {
        let n = call.min(frames - out.len());
        engine.process(&mut block[..n * ch]);
        out.extend(block[..n * ch].iter().step_by(ch));
    }
    out
}

/// The frames where a click starts: a sample that is not zero after at least 1,000 zeros
/// (clicks end after 150 ms, 7,200 frames, and beats here are further apart), or at the
/// start of `audio`.
fn onsets(audio: &[f32]) -> Vec<(usize, f32)> {
    onsets_after(audio, usize::MAX)
}

/// As [`onsets`], for audio that continues a render which ended with `zeros` zeros.
fn onsets_after(audio: &[f32], zeros: usize) -> Vec<(usize, f32)> {
    let mut zeros = zeros;
    let mut found = Vec::new();
    for (i, &x) in audio.iter().enumerate() {
        if x == 0.0 {
            zeros = zeros.saturating_add(1);
        } else {
            if zeros >= 1000 {
                found.push((i, x));
            }
            zeros = 0;
        }
    }
    found
}

/// Every beat line of `map` (signature beats from each bar line) whose frame falls in
/// `from..to` of the song, with whether it is a bar line: worked out from the map's bars
/// alone, not from the transport.
fn beat_frames(map: &TempoMap, from: u64, to: u64) -> Vec<(u64, bool)> {
    let mut out = Vec::new();
    let mut bar = map.bar_at(map.beat_at_frame(from)).0 - 1;
    loop {
        let start = map.beat_of_bar(bar);
        let sig = map.signature_at(start);
        for k in 0..sig.numerator {
            let beat = start + f64::from(k) * sig.beat_length();
            let f = map.frame_of(beat);
            if f >= to {
                return out;
            }
            if f >= from && beat >= 0.0 {
                out.push((f, k == 0));
            }
        }
        bar += 1;
    }
}

const RAMPS: &str = r#"
[tempo]
bpm = 100
signature = "4/4"
changes = [
    { beat = 4, bpm = 150, ramp = 6 },
    { beat = 12, signature = "3/4" },
    { beat = 15, bpm = 70, ramp = 5.5 },
    { beat = 21, signature = "6/8" },
    { beat = 24, bpm = 130 },
]
"#;

/// Clicks through ramps, steps and signature changes, rendered in process calls of 1, 7,
/// 64, 256 and 4096 frames: every click on its beat's frame, accented on bar lines, each
/// starting at its peak and gone within 150 ms, and the five renders identical.
#[test]
fn clicks_land_on_the_frames_of_their_beats_whatever_the_block() {
    let p = metronome(RAMPS);
    let map = p.tempo.clone().expect("the project has a tempo map");
    let frames = map.frame_of(30.0) as usize;
    let want = beat_frames(&map, 0, frames as u64);
    assert_eq!(
        want.len(),
        12 + 9 + 18,
        "three bars of 4/4, three of 3/4, three of 6/8"
    );
    let mut first: Option<Vec<f32>> = None;
    for call in [4096, 1, 7, 64, 256] {
        let mut engine = Engine::new(p.build().unwrap());
        let audio = render(&mut engine, frames, call);
        let got = onsets(&audio);
        let at: Vec<u64> = got.iter().map(|&(f, _)| f as u64).collect();
        let expected: Vec<u64> = want.iter().map(|&(f, _)| f).collect();
        assert_eq!(at, expected, "click frames in calls of {call}");
        for (&(f, peak), &(_, bar)) in got.iter().zip(&want) {
            let level = if bar { 0.5 } else { 0.3 };
            assert!(
                (peak - level).abs() < 1e-6,
                "click at {f}: first sample {peak}, the click's peak {level}"
            );
            let tail = &audio[f + 7200..(f + 7300).min(audio.len())];
            assert!(
                tail.iter().all(|&x| x == 0.0),
                "click at {f} still sounds 150 ms on"
            );
            let after_150ms = audio[f..f + 7200].iter().rev().take(100);
            assert!(after_150ms.into_iter().all(|&x| x.abs() < 1e-3 * 0.5));
        }
        match &first {
            None => first = Some(audio),
            Some(a) => support::assert_bit_identical(a, &audio, &format!("calls of {call}")),
        }
    }
}

/// A loop over beats 2 to 10 (through the ramp) played 1,000 times: every click of every
/// pass on the frame the map gives, no drift.
#[test]
fn a_thousand_loop_wraps_do_not_drift() {
    let p = metronome(&format!("{RAMPS}\n[transport]\nloop = [2, 10]\n"));
    let map = p.tempo.clone().unwrap();
    let (start, end) = (map.frame_of(2.0), map.frame_of(10.0));
    let pass = (end - start) as usize;
    let mut engine = Engine::new(p.build().unwrap());
    let frames = start as usize + 1000 * pass;
    let audio = render(&mut engine, frames, 999);
    let got: Vec<u64> = onsets(&audio).iter().map(|&(f, _)| f as u64).collect();
    let mut want: Vec<u64> = beat_frames(&map, 0, start).iter().map(|b| b.0).collect();
    let one: Vec<u64> = beat_frames(&map, start, end).iter().map(|b| b.0).collect();
    assert_eq!(one.len(), 8);
    for k in 0..1000u64 {
        want.extend(one.iter().map(|f| f + k * (end - start)));
    }
    if let Some(i) = got.iter().zip(&want).position(|(a, b)| a != b) {
        panic!("click {i}: at {} instead of {}", got[i], want[i]);
    }
    assert_eq!(got.len(), want.len());
    let t = engine.schedule().transport();
    assert_eq!(t.song_frame(), start, "back at the loop's start");
}

/// A gain stepped to 0 on beat 9.5 (inside the ramp) turns a constant off on exactly the
/// frame of that beat, for every size of process call; an event for a beat already passed
/// applies at once and is counted late.
#[test]
fn an_event_on_a_beat_lands_on_its_frame() {
    let text = format!("{}{RAMPS}", support::constant_through_gain(256));
    let p = Project::parse(&text, "gain.toml").unwrap();
    let map = p.tempo.clone().unwrap();
    let at = map.frame_of(9.5) as usize;
    for call in [1, 7, 64, 256, 1000] {
        let mut engine = Engine::new(p.build().unwrap());
        let mut control = engine.controller(16);
        control
            .step(When::Beat(9.5), "g", "gain", 0.0)
            .expect("a step on a beat");
        let audio = render(&mut engine, at + 100, call);
        assert!(audio[..at].iter().all(|&x| x == 1.0), "calls of {call}");
        assert!(audio[at..].iter().all(|&x| x == 0.0), "calls of {call}");
        let late_before = engine.schedule().event_stats().late;
        control.step(When::Beat(1.0), "g", "gain", 1.0).unwrap();
        let after = render(&mut engine, 10, 10);
        assert_eq!(
            after,
            vec![1.0; 10],
            "a beat already passed applies at once"
        );
        assert_eq!(engine.schedule().event_stats().late, late_before + 1);
    }
}

/// Stop on the next bar, locate, play on a beat: each on its exact frame, the metronome
/// silent while stopped, the song's position standing still.
#[test]
fn transport_commands_take_effect_on_their_frames() {
    let p = metronome("[tempo]\nbpm = 120\n");
    let mut engine = Engine::new(p.build().unwrap());
    let mut control = engine.controller(16);
    // 120 bpm: a beat every 24,000 frames.
    render(&mut engine, 30_000, 4096);
    control
        .transport(When::NextBar, TransportCommand::Stop)
        .unwrap();
    let audio = render(&mut engine, 200_000, 333);
    let clicks: Vec<usize> = onsets_after(&audio, 0)
        .iter()
        .map(|o| o.0 + 30_000)
        .collect();
    assert_eq!(
        clicks,
        vec![48_000, 72_000],
        "beats 2 and 3; stopped on beat 4"
    );
    let t = engine.schedule().transport();
    assert!(!t.is_playing());
    assert_eq!((t.song_frame(), t.position().beat), (96_000, 4.0));
    // Stopped: frames go on, the song does not; locate to beat 6, play from frame 250,000.
    control
        .transport(When::Now, TransportCommand::LocateBeat(6.0))
        .unwrap();
    control
        .transport(When::Frame(250_000), TransportCommand::Play)
        .unwrap();
    let audio = render(&mut engine, 100_000, 4096);
    let clicks: Vec<usize> = onsets_after(&audio, 0)
        .iter()
        .map(|o| o.0 + 230_000)
        .collect();
    assert_eq!(
        clicks,
        vec![250_000, 274_000, 298_000, 322_000],
        "beat 6 the moment it plays, then every 24,000 frames"
    );
}

/// Bad `[tempo]` and `[transport]` tables: refused with the value, located.
#[test]
fn bad_tempo_tables_are_refused_where_they_are_wrong() {
    let cases = [
        ("[tempo]\nbpm = 0\n", "bpm", 2),
        ("[tempo]\nbpm = -5\n", "-5", 2),
        ("[tempo]\nsignature = \"0/4\"\n", "0/4", 2),
        ("[tempo]\nsignature = \"7/5\"\n", "7/5", 2),
        (
            "[tempo]\nchanges = [\n  { beat = 8, bpm = 90, ramp = -2 },\n]\n",
            "ramp",
            3,
        ),
        (
            "[tempo]\nchanges = [\n  { beat = 8, bpm = 90, ramp = 8 },\n  { beat = 10, bpm = 100 },\n]\n",
            "ramp",
            4,
        ),
        (
            "[tempo]\nchanges = [\n  { beat = 5, signature = \"3/4\" },\n]\n",
            "bar",
            3,
        ),
        ("[transport]\nloop = [8, 4]\n", "loop", 2),
        ("[transport]\nloop = [0, 1e300]\n", "past the end", 2),
        ("[transport]\nloop = [0, 4, 8]\n", "3 numbers", 2),
        ("[tempo]\nchanges = [\n  { beat = 5 },\n]\n", "neither", 3),
    ];
    for (tables, says, line) in cases {
        let text = format!(
            "edges = [\"m -> out\"]\n[nodes.m]\ntype = \"metronome\"\n[nodes.out]\ntype = \"output\"\n{tables}"
        );
        let err = Project::parse(&text, "bad.toml").expect_err(tables);
        assert!(
            err.message.contains(says),
            "{tables}: the message says `{says}`: {err}"
        );
        assert_eq!(err.line, line + 5, "{tables}: located: {err}");
    }
}

/// A live edit keeps the song where it is: the new schedule takes over the transport's
/// state (playing, position, loop).
#[test]
fn a_live_edit_keeps_the_song_going() {
    let p = metronome("[tempo]\nbpm = 120\n[transport]\nloop = [0, 8]\n");
    let (editor, schedule) = p.editor().unwrap();
    let mut engine = Engine::new(schedule);
    let mut live = engine.live_editor(editor);
    render(&mut engine, 100_000, 512);
    let before = engine.schedule().transport().song_frame();
    live.add(
        "s",
        Sine::new(
            1,
            48000,
            &SineSettings {
                freq: 440.0,
                amp: 0.1,
                ..SineSettings::default()
            },
        ),
    )
    .unwrap();
    live.connect("s", "out").unwrap();
    live.commit().unwrap();
    render(&mut engine, 512, 512);
    let t = engine.schedule().transport();
    assert_eq!(t.song_frame(), before + 512);
    assert_eq!(t.looping(), Some((0.0, 8.0)));
    assert!(t.is_playing());
}

/// A synth played by a MIDI file in a project with a `[tempo]` and a loop: the file's
/// ticks are beats of the project's map (its own tempo is ignored), and every pass of the
/// loop plays its notes again, each starting on its beat's frame.
#[test]
fn a_midi_file_plays_in_the_songs_time_and_loops() {
    use downbeat::midi::{play, MidiFile};
    use midi_corpus::{smf, Track};
    // 96 ticks per quarter, its own tempo 60 bpm (ignored); notes on beats 0.5 and 2.
    let track = Track::default()
        .tempo(0, 1_000_000)
        .event(48, &[0x90, 60, 100])
        .event(48, &[0x80, 60, 0])
        .event(96, &[0x90, 64, 100])
        .event(48, &[0x80, 64, 0])
        .end(0);
    let file = MidiFile::parse(&smf(0, 96, &[track])).unwrap();
    let text = "block_size = 256\nedges = [\"k -> out\"]\n[nodes.k]\ntype = \"synth\"\n\
                release = 0.01\n[nodes.out]\ntype = \"output\"\n\
                [tempo]\nbpm = 150\nchanges = [{ beat = 1, bpm = 100, ramp = 2 }]\n\
                [transport]\nloop = [0, 4]\n";
    let p = Project::parse(text, "song.toml").unwrap();
    let map = p.tempo.clone().unwrap();
    let mut schedule = p.build().unwrap();
    let table = schedule.param_table();
    let placed = play::place(&file, &mut schedule, &p.cc_mappings(&table).unwrap(), true).unwrap();
    assert!(placed.in_beats);
    assert_eq!(placed.tempo_ignored, 1, "its 60 bpm");
    let mut engine = Engine::new(schedule);
    let pass = map.frame_of(4.0) as usize;
    let audio = render(&mut engine, 3 * pass, 100);
    for k in 0..3 {
        for beat in [0.5, 2.0] {
            let at = k * pass + map.frame_of(beat) as usize;
            assert!(
                audio[at - 200..at].iter().all(|&x| x == 0.0),
                "pass {k}: silence before beat {beat}"
            );
            assert_ne!(
                audio[at + 1],
                0.0,
                "pass {k}: the note of beat {beat} at {at}"
            );
        }
    }
}

/// Without a `[tempo]`, a MIDI file's own tempo becomes the song's: a node sees it.
#[test]
fn a_midi_files_tempo_becomes_the_songs() {
    use downbeat::midi::{play, MidiFile};
    use midi_corpus::{smf, Track};
    let track = Track::default()
        .tempo(0, 400_000)
        .event(96, &[0x90, 60, 100])
        .tempo(96, 750_000)
        .end(96);
    let file = MidiFile::parse(&smf(0, 96, &[track])).unwrap();
    let text =
        "edges = [\"k -> out\"]\n[nodes.k]\ntype = \"synth\"\n[nodes.out]\ntype = \"output\"\n";
    let p = Project::parse(text, "plain.toml").unwrap();
    let mut schedule = p.build().unwrap();
    let table = schedule.param_table();
    let placed = play::place(&file, &mut schedule, &p.cc_mappings(&table).unwrap(), false).unwrap();
    assert!(placed.tempo_taken && !placed.in_beats);
    let map = schedule.transport().map();
    assert_eq!(map.bpm_at(0.0), 150.0);
    assert_eq!(map.bpm_at(2.0), 80.0);
    assert_eq!(map.frame_of(2.0), 2 * 19_200, "two beats at 150 bpm");
}

/// A live tempo change on a beat, a step then a ramp: every click after it on the frame a
/// map built with the same changes from the start gives; a live edit keeps the changed
/// tempo.
#[test]
fn a_live_tempo_change_moves_the_beats_after_it() {
    let p = metronome("[tempo]\nbpm = 120\n");
    let (editor, schedule) = p.editor().unwrap();
    let mut engine = Engine::new(schedule);
    let mut live = engine.live_editor(editor);
    let mut control = engine.controller(16);
    let tempo = |bpm, ramp| TransportCommand::Tempo { bpm, ramp };
    control
        .transport(When::Beat(4.0), tempo(90.0, 0.0))
        .unwrap();
    control
        .transport(When::Beat(8.0), tempo(150.0, 4.0))
        .unwrap();
    let want = TempoMap::new(
        120.0,
        Default::default(),
        &[
            TempoPoint {
                beat: 4.0,
                bpm: 90.0,
                ramp: 0.0,
            },
            TempoPoint {
                beat: 8.0,
                bpm: 150.0,
                ramp: 4.0,
            },
        ],
        &[],
        48_000,
    )
    .unwrap();
    let frames = want.frame_of(20.0) as usize;
    let mut audio = render(&mut engine, frames / 2, 777);
    // An edit half way: the song goes on at the changed tempo.
    live.add(
        "s",
        Sine::new(
            1,
            48000,
            &SineSettings {
                freq: 440.0,
                amp: 0.0,
                ..SineSettings::default()
            },
        ),
    )
    .unwrap();
    live.commit().unwrap();
    audio.extend(render(&mut engine, frames - frames / 2, 777));
    assert_eq!(engine.swaps(), 1);
    let got: Vec<u64> = onsets(&audio).iter().map(|o| o.0 as u64).collect();
    let expected: Vec<u64> = beat_frames(&want, 0, frames as u64)
        .iter()
        .map(|b| b.0)
        .collect();
    assert_eq!(got, expected);
    let refused = control.transport(When::Now, tempo(0.0, 0.0));
    assert!(refused.is_err(), "a tempo of 0 is refused: {refused:?}");
}

/// The transport over OSC: commands, a beat in front of an address, and refusals that
/// name what is wrong.
#[test]
fn osc_moves_the_transport_and_times_messages_by_beat() {
    use downbeat::control::osc::{OscHandler, Rejection};
    use rosc::{encoder, OscMessage, OscPacket, OscType};
    let packet = |addr: &str, args: Vec<OscType>| {
        encoder::encode(&OscPacket::Message(OscMessage {
            addr: addr.into(),
            args,
        }))
        .unwrap()
    };
    let text = format!("{}[tempo]\nbpm = 120\n", support::constant_through_gain(64));
    let p = Project::parse(&text, "osc.toml").unwrap();
    let mut engine = Engine::new(p.build().unwrap());
    let mut osc = OscHandler::new(engine.controller(64));
    // Beat 2 is frame 48,000 at 120 bpm.
    let step = packet("/beat/2/node/g/gain/step", vec![OscType::Float(0.0)]);
    assert_eq!(osc.handle(&step), Ok(1));
    let audio = render(&mut engine, 50_000, 512);
    assert!(audio[..48_000].iter().all(|&x| x == 1.0));
    assert!(audio[48_000..].iter().all(|&x| x == 0.0));
    assert_eq!(osc.handle(&packet("/transport/stop", vec![])), Ok(1));
    assert_eq!(
        osc.handle(&packet("/transport/locate", vec![OscType::Int(8)])),
        Ok(1)
    );
    assert_eq!(
        osc.handle(&packet(
            "/transport/tempo",
            vec![OscType::Float(60.0), OscType::Float(2.0)]
        )),
        Ok(1)
    );
    render(&mut engine, 64, 64);
    let t = engine.schedule().transport();
    assert!(!t.is_playing());
    assert_eq!(t.position().beat, 8.0);
    assert_eq!(
        t.map().bpm_at(10.0),
        60.0,
        "ramped from beat 8 over 2 beats"
    );
    assert_eq!(
        osc.handle(&packet("/next_bar/transport/play", vec![])),
        Ok(1)
    );
    let refused = [
        packet(
            "/transport/loop",
            vec![OscType::Float(8.0), OscType::Float(4.0)],
        ),
        packet("/transport/tempo", vec![OscType::Float(0.0)]),
        packet("/transport/play", vec![OscType::Float(1.0)]),
        packet("/beat/soon/node/g/gain", vec![OscType::Float(1.0)]),
        packet("/transport/rewind", vec![]),
    ];
    for (k, bad) in refused.iter().enumerate() {
        let err = osc.handle(bad).expect_err("refused");
        let said = err.to_string();
        assert!(
            matches!(
                err,
                Rejection::Control { .. }
                    | Rejection::BadArguments { .. }
                    | Rejection::UnknownAddress(_)
            ),
            "{k}: {said}"
        );
    }
}

/// Automation in beats (`time = "beats"`) follows the song: a step on beat 1 and a ramp
/// from beat 2 to beat 3, on every pass of a loop, through a tempo ramp.
#[test]
fn automation_in_beats_follows_the_song() {
    let text = format!(
        "{}[[automation]]\nnode = \"g\"\nparam = \"gain\"\ntime = \"beats\"\n\
         points = [[1, 0.0], [2, 0.5], [3, 1.0, \"linear\"]]\n\
         [tempo]\nbpm = 100\nchanges = [{{ beat = 0, bpm = 160, ramp = 4 }}]\n\
         [transport]\nloop = [0, 4]\n",
        support::constant_through_gain(128)
    );
    let p = Project::parse(&text, "beats.toml").unwrap();
    let map = p.tempo.clone().unwrap();
    let (b1, b2, b3, pass) = (
        map.frame_of(1.0) as usize,
        map.frame_of(2.0) as usize,
        map.frame_of(3.0) as usize,
        map.frame_of(4.0) as usize,
    );
    let mut engine = Engine::new(p.build().unwrap());
    let audio = render(&mut engine, 3 * pass, 100);
    for k in 0..3 {
        let at = |f: usize| audio[k * pass + f];
        if k == 0 {
            assert_eq!(at(b1 - 1), 1.0, "before the first step");
        }
        assert_eq!(at(b1), 0.0, "pass {k}: the step on beat 1");
        assert_eq!(at(b2), 0.5, "pass {k}: the step on beat 2");
        let mid = (b2 + b3) / 2;
        let want = 0.5 + 0.5 * (mid - b2) as f32 / (b3 - b2) as f32;
        assert!(
            (at(mid) - want).abs() < 1e-3,
            "pass {k}: ramping, {} vs {want}",
            at(mid)
        );
        assert_eq!(at(b3 + 10), 1.0, "pass {k}: the ramp's end on beat 3");
    }
    let bad = text.replace("time = \"beats\"", "time = \"bars\"");
    let err = Project::parse(&bad, "beats.toml").expect_err("an unknown unit");
    assert!(err.message.contains("bars"), "{err}");
}

/// A controller whose events fill the schedule's queue does not hold back another's that
/// need no room there: a transport command, an event for a beat.
#[test]
fn a_full_queue_does_not_hold_back_the_transport() {
    let p = metronome("[tempo]\nbpm = 120\n");
    let mut engine = Engine::new(p.build().unwrap());
    let mut flood = engine.controller(4096);
    let mut transport = engine.controller(16);
    let room = engine.schedule().event_room();
    for k in 0..room + 100 {
        flood
            .step(When::Frame(10_000_000 + k as u64), "m", "gain", 0.5)
            .unwrap();
    }
    transport
        .transport(When::Now, TransportCommand::Stop)
        .unwrap();
    render(&mut engine, 64, 64);
    assert_eq!(
        engine.schedule().event_room(),
        0,
        "the flood filled the queue"
    );
    assert!(
        !engine.schedule().transport().is_playing(),
        "the stop went in beside the flood"
    );
    assert_eq!(
        engine.waiting_events(),
        100,
        "the flood's rest waits, in order"
    );
}
