//! Inputs the fuzz targets of `fuzz/` found, kept with their fixes: each once made the
//! engine's readers panic, hang or ask for gigabytes. The input is in `fuzz_regressions/`,
//! named after its target.

use std::path::{Path, PathBuf};

use downbeat::device::InputFile;

fn input(name: &str) -> (PathBuf, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_regressions")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, bytes)
}

/// `wav_input`: an extensible header whose valid-bits field says 43280 bits per sample;
/// computing the integer scale from it shifted a `u64` by 43279 (a panic in debug builds,
/// garbage in release). Refused now, naming the file and the bits.
#[test]
fn an_input_wav_with_impossible_sample_bits_is_refused_by_name() {
    let (path, bytes) = input("wav_input-extensible-valid-bits.bin");
    let err = InputFile::from_bytes(&bytes, &path)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("43280-bit"), "{err}");
}

/// `osc_packet`: `/transport/locate` to beat 3.2e35 (a float of `z` bytes). Its frame
/// saturated at `u64::MAX` and the transport's next look-up added one to it (a panic in
/// debug builds). A place past the song's last frame is refused now, the song plays on from
/// where it was, and the refusal is counted; a far loop or a frame past the end likewise.
#[test]
fn a_locate_past_the_end_of_the_song_is_refused() {
    use downbeat::control::osc::OscHandler;
    use downbeat::project::Project;
    use downbeat::Engine;
    use downbeat_graph::time::{Transport, TransportCommand, TransportError, LAST_FRAME};

    let (_, bytes) = input("osc_packet-far-locate.bin");
    let text = "block_size = 64\nedges = [\"m -> out\"]\n[nodes.m]\ntype = \"metronome\"\n\
                [nodes.out]\ntype = \"output\"\n[tempo]\nbpm = 120\n";
    let mut engine = Engine::new(Project::parse(text, "far.toml").unwrap().build().unwrap());
    let mut osc = OscHandler::new(engine.controller(16));
    assert_eq!(
        osc.handle(&bytes),
        Ok(1),
        "a number of beats: the map decides"
    );
    let mut out = vec![0.0f32; 64 * engine.channels()];
    for _ in 0..4 {
        engine.process(&mut out);
    }
    let song = engine.schedule().transport().position();
    assert_eq!(song.song_frame, 4 * 64, "played on from where it was");
    assert_eq!(engine.undelivered_events(), 1);

    let mut t = Transport::new(Default::default());
    let far = f64::from(f32::from_bits(0x7a7a_7a7a));
    for command in [
        TransportCommand::LocateBeat(far),
        TransportCommand::Loop(0.0, far),
        TransportCommand::LocateFrame(LAST_FRAME + 1),
        TransportCommand::LocateFrame(u64::MAX),
    ] {
        let err = t.apply(command).expect_err("past the end");
        assert!(matches!(err, TransportError::PastTheEnd { .. }), "{err}");
        assert!(
            err.to_string().contains("past the end of the song"),
            "{err}"
        );
    }
    assert_eq!(t.apply(TransportCommand::LocateFrame(LAST_FRAME)), Ok(()));
    t.apply(TransportCommand::Play).unwrap();
    let piece = t.piece(64);
    t.advance(piece);
    assert_eq!(
        t.position().song_frame,
        LAST_FRAME + 64,
        "the last frame plays on"
    );
}
