//! Shared by the LV2 tests: requiring plugins and tools (a missing one fails the test,
//! whatever the environment), float WAV files, and running a node through a compiled graph.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use downbeat_graph::time::TempoMap;
use downbeat_graph::{AudioMut, AudioRef, CompileConfig, Graph, Node, Port, ProcessContext};
use downbeat_nodes::Output;
use downbeat_plugin::lv2::PluginInfo;

/// The Debian package of each plugin family the tests load (by URI prefix, the most
/// specific first), so that a failure says what to install.
const PACKAGES: [(&str, &str); 8] = [
    ("http://drobilla.net/plugins/mda/", "mda-lv2"),
    ("http://gareus.org/oss/lv2/avldrums", "avldrums.lv2"),
    ("http://gareus.org/oss/lv2/", "x42-plugins"),
    ("http://synthv1.sourceforge.net/", "synthv1-lv2"),
    ("urn:ardour:", "ardour-lv2-plugins"),
    ("urn:dragonfly:", "dragonfly-reverb-lv2"),
    ("urn:zamaudio:", "zam-plugins"),
    ("http://lsp-plug.in/", "lsp-plugins-lv2"),
];

/// The Debian package that installs the LV2 plugin `uri`, as far as [`PACKAGES`] knows.
pub fn package_of(uri: &str) -> &'static str {
    PACKAGES
        .iter()
        .find(|(prefix, _)| uri.starts_with(prefix))
        .map_or("its Debian package", |(_, package)| package)
}

/// Panics, failing the test, unless the LV2 plugin `uri` is installed: a test must not pass
/// by skipping what it tests, whatever the environment (`CI` or not) says.
pub fn require_plugin(uri: &str) {
    if let Err(e) = PluginInfo::find(uri, 48000) {
        panic!(
            "{e}; this test needs it: `bash scripts/deps.sh` installs it (Debian package {})",
            package_of(uri)
        );
    }
}

/// Panics, failing the test, unless the program `name` runs (`name --version`); `package`
/// is the Debian package that installs it.
pub fn require_tool(name: &str, package: &str) {
    let ran = std::process::Command::new(name).arg("--version").output();
    match ran {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "`{name} --version` failed ({}): this test needs {name}; `bash scripts/deps.sh` \
             installs it (Debian package {package})",
            o.status
        ),
        Err(e) => panic!(
            "{name} cannot be run ({e}): this test needs it; `bash scripts/deps.sh` installs \
             it (Debian package {package})"
        ),
    }
}

/// A fresh directory under the target dir for one test's files.
pub fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes interleaved samples as a 32-bit float WAV.
pub fn write_wav(path: &Path, channels: usize, rate: u32, interleaved: &[f32]) {
    let data: Vec<u8> = interleaved.iter().flat_map(|s| s.to_le_bytes()).collect();
    let mut b = Vec::new();
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&3u16.to_le_bytes()); // IEEE float
    b.extend_from_slice(&(channels as u16).to_le_bytes());
    b.extend_from_slice(&rate.to_le_bytes());
    b.extend_from_slice(&(rate * 4 * channels as u32).to_le_bytes());
    b.extend_from_slice(&(4 * channels as u16).to_le_bytes());
    b.extend_from_slice(&32u16.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(&data);
    std::fs::write(path, b).unwrap();
}

/// Reads a 32-bit float WAV (as `lv2apply` writes one for a float input): channels and
/// interleaved samples. Skips chunks other than `fmt ` and `data`.
pub fn read_wav(path: &Path) -> (usize, Vec<f32>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[0..4], b"RIFF", "{} is not a WAV file", path.display());
    let mut at = 12;
    let mut channels = 0;
    while at + 8 <= b.len() {
        let id = &b[at..at + 4];
        let len = u32::from_le_bytes(b[at + 4..at + 8].try_into().unwrap()) as usize;
        let body = &b[at + 8..(at + 8 + len).min(b.len())];
        if id == b"fmt " {
            let format = u16::from_le_bytes([body[0], body[1]]);
            let bits = u16::from_le_bytes([body[14], body[15]]);
            // 0xFFFE is WAVE_FORMAT_EXTENSIBLE; its sub-format is float in these files.
            assert!(
                (format == 3 || format == 0xFFFE) && bits == 32,
                "{}: format {format}, {bits} bits; expected 32-bit float",
                path.display()
            );
            channels = u16::from_le_bytes([body[2], body[3]]) as usize;
        } else if id == b"data" {
            let samples = body
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            return (channels, samples);
        }
        at += 8 + len + (len & 1);
    }
    panic!("{}: no data chunk", path.display());
}

/// A deterministic test signal: two sines per channel and a little pseudo-random noise,
/// with a loud burst in the middle so dynamics plugins have something to do.
pub fn signal(channels: usize, frames: usize, rate: u32) -> Vec<f32> {
    let mut seed = 0x1234_5678u32;
    let mut out = Vec::with_capacity(channels * frames);
    for i in 0..frames {
        let t = i as f32 / rate as f32;
        let loud = if (frames / 3..frames / 2).contains(&i) {
            2.0
        } else {
            0.4
        };
        for c in 0..channels {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let noise = (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
            let f = 220.0 * (c + 1) as f32;
            out.push(
                loud * (0.5 * (std::f32::consts::TAU * f * t).sin()
                    + 0.2 * (std::f32::consts::TAU * 3.1 * f * t).sin())
                    + 0.05 * noise,
            );
        }
    }
    out
}

/// Plays interleaved samples, then silence.
pub struct Player {
    pub channels: usize,
    pub data: Vec<f32>,
}

/// A [`Player`] whose channels are grouped in the given ports, in order, so that it can feed
/// each port of a node (a side chain too).
pub struct PortPlayer(pub Player, pub Vec<Port>);

impl Node for PortPlayer {
    fn input_channels(&self) -> usize {
        0
    }
    fn output_channels(&self) -> usize {
        self.0.channels
    }
    fn output_ports(&self) -> Vec<Port> {
        self.1.clone()
    }
    fn process(&mut self, ctx: &ProcessContext, input: AudioRef<'_>, output: AudioMut<'_>) {
        self.0.process(ctx, input, output);
    }
}

impl Node for Player {
    fn input_channels(&self) -> usize {
        0
    }
    fn output_channels(&self) -> usize {
        self.channels
    }
    fn process(&mut self, ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        for c in 0..self.channels {
            for (k, o) in output.channel_mut(c).iter_mut().enumerate() {
                let i = (ctx.position as usize + k) * self.channels + c;
                *o = self.data.get(i).copied().unwrap_or(0.0);
            }
        }
    }
}

/// Gathers the ports of a node's output (its `ports`) into one port of every channel, in
/// order: what the graph's output takes.
pub struct Gather(pub Vec<Port>);

impl Node for Gather {
    fn input_channels(&self) -> usize {
        self.0.iter().map(|p| p.channels).sum()
    }
    fn output_channels(&self) -> usize {
        self.input_channels()
    }
    fn input_ports(&self) -> Vec<Port> {
        self.0.clone()
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        for c in 0..output.channels() {
            output.channel_mut(c).copy_from_slice(input.channel(c));
        }
    }
}

/// Runs `input` (interleaved, `in_channels`) through `node` in a compiled graph
/// (player -> node -> output) in blocks of `block` frames; returns the output interleaved.
/// The player feeds every input port of the node (a side chain too), channels in the
/// node's order, and every output port of the node reaches the output.
pub fn render(
    node: Box<dyn Node>,
    in_channels: usize,
    input: &[f32],
    rate: u32,
    block: usize,
) -> Vec<f32> {
    render_outputs(node, in_channels, input, rate, block).0
}

/// As [`render`], and the value of each of the node's outputs (`Node::outputs`) after the
/// last block, by name, read through the schedule as a watcher reads them.
pub fn render_outputs(
    node: Box<dyn Node>,
    in_channels: usize,
    input: &[f32],
    rate: u32,
    block: usize,
) -> (Vec<f32>, Vec<(&'static str, f32)>) {
    render_song(node, in_channels, input, rate, block, None)
}

/// As [`render_outputs`], with the song playing by `map` (a project's `[tempo]`) rather than
/// the schedule's own 120 bpm in 4/4, when it is given.
pub fn render_song(
    node: Box<dyn Node>,
    in_channels: usize,
    input: &[f32],
    rate: u32,
    block: usize,
    map: Option<TempoMap>,
) -> (Vec<f32>, Vec<(&'static str, f32)>) {
    let frames = input.len() / in_channels.max(1);
    let out_channels = node.output_channels();
    let names: Vec<&'static str> = node.outputs().iter().map(|o| o.name).collect();
    let (in_ports, out_ports) = (node.input_ports(), node.output_ports());
    let mut g = Graph::new();
    let fx = g.add_boxed("fx", node);
    if in_channels > 0 {
        let player = g.add(
            "player",
            PortPlayer(
                Player {
                    channels: in_channels,
                    data: input.to_vec(),
                },
                in_ports.clone(),
            ),
        );
        for p in &in_ports {
            g.connect((player, p.name.as_str()), (fx, p.name.as_str()));
        }
    }
    let out = g.add("out", Output::new(out_channels));
    let gather = g.add("gather", Gather(out_ports.clone()));
    for p in &out_ports {
        g.connect((fx, p.name.as_str()), (gather, p.name.as_str()));
    }
    g.connect(gather, out);
    g.set_output(out);
    let mut schedule = g
        .compile(CompileConfig {
            sample_rate: rate,
            max_block: block,
        })
        .unwrap();
    if let Some(map) = map {
        schedule.set_tempo(map);
    }
    // A render, not a live run: a node that depends on another thread (an LV2 worker, a
    // CLAP plugin's restart on the CLAP main thread) waits for it, so the output does not
    // depend on how fast that thread is.
    schedule.set_offline(true);
    let mut result = vec![0.0; frames * out_channels];
    let mut done = 0;
    while done < frames {
        let n = block.min(frames - done);
        schedule.process(n);
        schedule.output_interleaved(&mut result[done * out_channels..(done + n) * out_channels]);
        done += n;
    }
    let table = schedule.param_table();
    let outputs = names
        .into_iter()
        .map(|name| {
            let id = table.resolve_watched("fx", name).unwrap();
            (name, schedule.param_value(id).unwrap())
        })
        .collect();
    (result, outputs)
}
