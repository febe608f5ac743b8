//! Drives a node directly through `Node::process`, as the schedule would.

use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};

pub const SR: u32 = 48000;

/// Runs `input` (one `Vec` per channel; empty for a source) through `node` for `frames`
/// frames in blocks of `block`. The output buffer is filled with NaN before every call, so
/// unwritten samples are caught.
pub fn run_frames(
    node: &mut dyn Node,
    input: &[Vec<f32>],
    frames: usize,
    block: usize,
) -> Vec<Vec<f32>> {
    run_blocks(node, input, frames, &[block])
}

/// As [`run_frames`], the blocks taking the sizes of `blocks` in turn, repeating.
pub fn run_blocks(
    node: &mut dyn Node,
    input: &[Vec<f32>],
    frames: usize,
    blocks: &[usize],
) -> Vec<Vec<f32>> {
    let ic = node.input_channels();
    let oc = node.output_channels();
    assert_eq!(input.len(), ic);
    let stride = blocks.iter().copied().max().expect("a block size");
    let mut inbuf = vec![0.0f32; ic * stride];
    let mut outbuf = vec![0.0f32; oc * stride];
    let mut out = vec![Vec::with_capacity(frames); oc];
    let mut pos = 0;
    for &block in blocks.iter().cycle() {
        if pos == frames {
            break;
        }
        let n = block.min(frames - pos);
        for (c, ch) in input.iter().enumerate() {
            inbuf[c * stride..c * stride + n].copy_from_slice(&ch[pos..pos + n]);
        }
        outbuf.fill(f32::NAN);
        let ctx = ProcessContext::new(SR, n, pos as u64);
        node.process(
            &ctx,
            AudioRef::new(&inbuf, ic, stride, n),
            AudioMut::new(&mut outbuf, oc, stride, n),
        );
        for (c, ch) in out.iter_mut().enumerate() {
            let written = &outbuf[c * stride..c * stride + n];
            assert!(written.iter().all(|s| s.is_finite()), "unwritten output");
            ch.extend_from_slice(written);
        }
        pos += n;
    }
    out
}

/// Runs `input` through `node` in blocks of `block`.
#[allow(dead_code)]
pub fn run(node: &mut dyn Node, input: &[Vec<f32>], block: usize) -> Vec<Vec<f32>> {
    run_frames(node, input, input[0].len(), block)
}

/// Renders `frames` frames of a source in blocks of `block`.
#[allow(dead_code)]
pub fn render(node: &mut dyn Node, frames: usize, block: usize) -> Vec<Vec<f32>> {
    run_frames(node, &[], frames, block)
}
