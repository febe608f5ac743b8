//! [`map_channels`]: the one rule for putting a file's channels on a node's channels.

/// Copies `frames` interleaved frames of `input` (`in_channels` per frame) into `output`
/// (`out_channels` per frame), by Downbeat's channel rule:
///
/// * **equal counts**: channel *c* goes to channel *c*;
/// * **mono into anything**: every output channel gets the mono channel (a mono file into a
///   stereo node plays the same signal, at full level, on both sides);
/// * **anything into mono**: the average of all input channels (stereo into mono is
///   `(L + R) / 2`, so a full-scale signal on both sides stays full scale);
/// * **other counts**: input channel *i* goes to output channel `i % out_channels`, and each
///   output channel is the average of the input channels that land on it; an output channel
///   that no input lands on (more outputs than inputs) repeats input channel
///   `c % in_channels`. So stereo into 4 channels is L R L R, and 4 into stereo is
///   `(c0 + c2) / 2, (c1 + c3) / 2`. The first two rules are the special cases of this one.
///
/// Writes `frames * out_channels` samples and returns `frames`, where `frames` is the smaller
/// of `input.len() / in_channels` and `output.len() / out_channels`. Never allocates, locks or
/// makes a system call: the player and the sampler call it on the audio thread. A channel
/// count of zero maps nothing and returns 0.
///
/// ```
/// use downbeat_file::map_channels;
///
/// let mono = [0.5, -0.25];
/// let mut stereo = [0.0; 4];
/// assert_eq!(map_channels(&mono, 1, &mut stereo, 2), 2);
/// assert_eq!(stereo, [0.5, 0.5, -0.25, -0.25]);
///
/// let mut back = [0.0; 2];
/// map_channels(&[1.0, 0.0, 0.5, 0.5], 2, &mut back, 1);
/// assert_eq!(back, [0.5, 0.5]);
/// ```
pub fn map_channels(
    input: &[f32],
    in_channels: usize,
    output: &mut [f32],
    out_channels: usize,
) -> usize {
    if in_channels == 0 || out_channels == 0 {
        return 0;
    }
    let frames = (input.len() / in_channels).min(output.len() / out_channels);
    let input = &input[..frames * in_channels];
    let output = &mut output[..frames * out_channels];
    if in_channels == out_channels {
        output.copy_from_slice(input);
    } else if in_channels == 1 {
        for (out, &x) in output.chunks_exact_mut(out_channels).zip(input) {
            out.fill(x);
        }
    } else if out_channels == 1 {
        let scale = 1.0 / in_channels as f32;
        for (out, frame) in output.iter_mut().zip(input.chunks_exact(in_channels)) {
            *out = frame.iter().sum::<f32>() * scale;
        }
    } else {
        for (out, frame) in output
            .chunks_exact_mut(out_channels)
            .zip(input.chunks_exact(in_channels))
        {
            for (c, o) in out.iter_mut().enumerate() {
                if c >= in_channels {
                    *o = frame[c % in_channels];
                } else {
                    let mut sum = 0.0;
                    let mut n = 0u32;
                    let mut i = c;
                    while i < in_channels {
                        sum += frame[i];
                        n += 1;
                        i += out_channels;
                    }
                    *o = sum / n as f32;
                }
            }
        }
    }
    frames
}
