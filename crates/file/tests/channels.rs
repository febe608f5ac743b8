//! The channel rule the player and the sampler use: mono into anything duplicates, anything
//! into mono averages, other counts fold channel i onto i % out (averaged) and repeat inputs on
//! outputs no input reaches.

use downbeat_file::map_channels;

#[test]
fn mono_into_stereo_plays_on_both_sides_and_stereo_into_mono_averages() {
    let mut stereo = [9.0; 6];
    assert_eq!(map_channels(&[0.5, -1.0, 0.25], 1, &mut stereo, 2), 3);
    assert_eq!(stereo, [0.5, 0.5, -1.0, -1.0, 0.25, 0.25]);
    let mut mono = [9.0; 2];
    assert_eq!(map_channels(&[1.0, 0.0, 0.5, -0.5], 2, &mut mono, 1), 2);
    assert_eq!(mono, [0.5, 0.0]);
}

#[test]
fn other_counts_fold_and_repeat() {
    // Four channels into stereo: (c0 + c2) / 2, (c1 + c3) / 2.
    let mut out = [0.0; 2];
    map_channels(&[1.0, 2.0, 3.0, 4.0], 4, &mut out, 2);
    assert_eq!(out, [2.0, 3.0]);
    // Stereo into four: L R L R.
    let mut out = [0.0; 4];
    map_channels(&[1.0, 2.0], 2, &mut out, 4);
    assert_eq!(out, [1.0, 2.0, 1.0, 2.0]);
    // Three into two: (c0 + c2) / 2, c1.
    let mut out = [0.0; 2];
    map_channels(&[1.0, 2.0, 5.0], 3, &mut out, 2);
    assert_eq!(out, [3.0, 2.0]);
}

#[test]
fn the_shorter_side_bounds_the_frames_and_zero_channels_map_nothing() {
    let mut out = [0.0; 3];
    assert_eq!(map_channels(&[1.0; 10], 2, &mut out, 1), 3);
    assert_eq!(map_channels(&[1.0; 10], 0, &mut out, 1), 0);
    assert_eq!(map_channels(&[1.0; 10], 2, &mut out, 0), 0);
}
