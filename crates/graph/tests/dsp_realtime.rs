//! `process` and `set_param` of every built-in node type are real-time safe: under the
//! guard they make no allocation, free, lock, page fault or system call.

use downbeat_graph::{node_types, AudioMut, AudioRef, Node, NodeConfig, ParamKind, ProcessContext};
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

const CFG: NodeConfig = NodeConfig {
    sample_rate: 48000.0,
    max_block: 512,
};

/// Feeds alternating stretches of signal and silence in odd block sizes (enough for FFT
/// frames, note onsets and silence skips), changing every live parameter now and then.
fn exercise(
    node: &mut dyn Node,
    live: &[(usize, f32)],
    input: &[f32],
    silence: &[f32],
    output: &mut [f32],
) {
    let (ic, oc, stride) = (node.input_channels(), node.output_channels(), CFG.max_block);
    let mut position = 0u64;
    for (round, &frames) in [511usize, 1, 100, 512, 37]
        .iter()
        .cycle()
        .take(600)
        .enumerate()
    {
        let src = if (round / 100) % 2 == 0 {
            input
        } else {
            silence
        };
        let ctx = ProcessContext {
            sample_rate: CFG.sample_rate,
            frames,
            position,
        };
        node.process(
            &ctx,
            AudioRef::new(src, ic, stride, frames),
            AudioMut::new(output, oc, stride, frames),
        );
        if round % 50 == 0 {
            for &(i, v) in live {
                node.set_param(i, v);
            }
        }
        position += frames as u64;
    }
}

#[test]
fn processing_and_live_params_are_real_time_safe() {
    for ty in node_types() {
        let mut node = ty.instantiate(Vec::new(), &CFG).unwrap();
        let (ic, oc) = (node.input_channels(), node.output_channels());
        let input: Vec<f32> = (0..ic * CFG.max_block)
            .map(|i| ((i * 31) % 17) as f32 / 17.0 - 0.5)
            .collect();
        let silence = vec![0.0f32; ic * CFG.max_block];
        let mut output = vec![0.0f32; oc * CFG.max_block];
        let live: Vec<(usize, f32)> = ty
            .params
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p.kind {
                ParamKind::Float { default, .. } => Some((i, default as f32)),
                _ => None,
            })
            .collect();
        // Warm-up outside the guard: first touches of lazily mapped memory are not the
        // node's steady state.
        exercise(node.as_mut(), &live, &input, &silence, &mut output);
        let report = guard::check(|| exercise(node.as_mut(), &live, &input, &silence, &mut output));
        assert!(
            report.is_clean(),
            "`{}` is not real-time safe:\n{report}",
            ty.name
        );
    }
}
