//! Every example project that runs without a plugin renders the same bits with subnormal
//! numbers flushed to zero on the audio thread (`Schedule::process`'s default, FTZ and DAZ
//! on x86-64) and without (`Schedule::set_flush_denormals(false)`, what WebAssembly always
//! does): the mode makes the audio thread faster and changes nothing in what it plays, so a
//! Web build can render what a native one renders. The projects that come with a MIDI file
//! in the guide play it; `input` nodes hear a test signal. Here and not in the graph
//! crate's tests because only the CLI registers the node types some examples use.
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]

use std::path::Path;

use downbeat::midi::{play, MidiFile};
use downbeat::nodes::Capture;
use downbeat::project::Project;

mod projects;

/// Seconds rendered of each project in each mode.
const SECONDS: usize = 6;

/// The MIDI file the guide plays each project with.
const MIDI: &[(&str, &str)] = &[("drums.toml", "drums.mid"), ("synth.toml", "tune.mid")];

/// The output of `path` for [`SECONDS`], as bits, with the flush mode `flush`.
fn render(path: &Path, flush: bool) -> Vec<u32> {
    let p = Project::load(path).unwrap();
    let capture = Capture::new(projects::CAPTURE_CHANNELS, p.block_size);
    let mut schedule = capture.connect(|| p.build()).unwrap();
    schedule.set_offline(true);
    schedule.set_flush_denormals(flush);
    let name = path.file_name().unwrap().to_str().unwrap();
    if let Some((_, mid)) = MIDI.iter().find(|(project, _)| *project == name) {
        let file = MidiFile::read(&path.with_file_name(mid)).unwrap();
        let table = schedule.param_table();
        let cc = p.cc_mappings(&table).unwrap();
        let events = play::events(&file, &table, &cc, p.sample_rate).unwrap();
        schedule.add_to_timeline(events).unwrap();
    }
    let block = p.block_size;
    let blocks = SECONDS * p.sample_rate as usize / block;
    let mut bits = Vec::new();
    let mut input = vec![0.0f32; block * projects::CAPTURE_CHANNELS];
    for b in 0..blocks {
        for (k, x) in input.iter_mut().enumerate() {
            let frame = b * block + k / projects::CAPTURE_CHANNELS;
            *x = projects::input_sample(frame, k % projects::CAPTURE_CHANNELS);
        }
        capture.write_interleaved(&input);
        schedule.process(block);
        let out = schedule.output();
        for c in 0..out.channels() {
            bits.extend(out.channel(c).iter().map(|s| s.to_bits()));
        }
    }
    bits
}

#[test]
fn every_example_renders_the_same_bits_with_and_without_flushing() {
    projects::register_node_types();
    let mut checked = Vec::new();
    let mut failures = Vec::new();
    for path in projects::examples() {
        let text = std::fs::read_to_string(&path).unwrap();
        if ["clap", "lv2"]
            .iter()
            .any(|t| text.contains(&format!("type = \"{t}\"")))
        {
            // A plugin's arithmetic is its own: only the built-in nodes promise this.
            eprintln!("not checked {}: it runs a plugin", path.display());
            continue;
        }
        let flushed = render(&path, true);
        let kept = render(&path, false);
        assert!(
            flushed.iter().any(|&b| f32::from_bits(b).abs() > 1e-3),
            "{} rendered nothing audible",
            path.display()
        );
        if let Some(i) = flushed.iter().zip(&kept).position(|(a, b)| a != b) {
            failures.push(format!(
                "{}: value {i} is {:e} flushed, {:e} not ({} differ)",
                path.display(),
                f32::from_bits(flushed[i]),
                f32::from_bits(kept[i]),
                flushed.iter().zip(&kept).filter(|(a, b)| a != b).count()
            ));
        }
        checked.push(path.file_name().unwrap().to_string_lossy().into_owned());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // hello, echoes, synth, drums, player, fanin84: a lost example must not pass unseen.
    assert!(checked.len() >= 6, "only {checked:?} checked");
}
