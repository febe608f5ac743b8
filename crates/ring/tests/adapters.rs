//! ParamQueue and AudioQueue: records are never torn, frames never split.

use downbeat_ring::{deinterleave, interleave, AudioQueue, Full, ParamChange, ParamQueue};

mod common;

#[test]
fn param_changes_round_trip_and_wrap() {
    let (mut tx, mut rx) = ParamQueue::new(3);
    for round in 0..10u32 {
        let changes: Vec<_> = (0..3)
            .map(|i| ParamChange {
                id: u32::MAX - i,
                value: round as f32 + 0.25,
                frame: round * 7 + i,
            })
            .collect();
        for &c in &changes {
            tx.push(c).unwrap();
        }
        assert!(tx.is_full());
        assert_eq!(tx.push(changes[0]), Err(Full(changes[0])));
        assert_eq!(rx.available_read(), 3);
        assert_eq!(rx.drain().collect::<Vec<_>>(), changes);
        assert!(rx.is_empty());
        assert_eq!(tx.available_write(), 3);
    }
}

#[test]
fn param_records_are_never_torn_across_threads() {
    let n = if cfg!(miri) { 100 } else { 200_000u32 };
    let (mut tx, mut rx) = ParamQueue::new(5);
    let producer = std::thread::spawn(move || {
        for i in 0..n {
            let change = ParamChange {
                id: i,
                value: i as f32 * 0.5,
                frame: i.wrapping_mul(3),
            };
            while tx.push(change).is_err() {
                common::backoff();
            }
        }
    });
    let mut next = 0;
    while next < n {
        match rx.pop() {
            Some(c) => {
                assert_eq!(
                    (c.id, c.value, c.frame),
                    (next, next as f32 * 0.5, next * 3)
                );
                next += 1;
            }
            None => common::backoff(),
        }
    }
    producer.join().unwrap();
}

#[test]
fn interleave_handles_any_block_length_and_channel_count() {
    let lengths: &[usize] = if cfg!(miri) {
        &[0, 1, 3, 129]
    } else {
        &[0, 1, 3, 127, 128, 129, 1000]
    };
    for channels in 1..=6usize {
        for &frames in lengths {
            let planar: Vec<Vec<f32>> = (0..channels)
                .map(|c| (0..frames).map(|f| (f * 10 + c) as f32).collect())
                .collect();
            let views: Vec<&[f32]> = planar.iter().map(Vec::as_slice).collect();
            let mut inter = vec![0.0; frames * channels];
            assert_eq!(interleave(&views, &mut inter), frames);
            for (k, x) in inter.iter().enumerate() {
                assert_eq!(*x, ((k / channels) * 10 + k % channels) as f32);
            }
            let mut back = vec![vec![-1.0; frames]; channels];
            let mut outs: Vec<&mut [f32]> = back.iter_mut().map(Vec::as_mut_slice).collect();
            assert_eq!(deinterleave(&inter, &mut outs), frames);
            assert_eq!(back, planar);
        }
    }
    // Short buffers limit the frame count; no channels means nothing to do.
    let mut out = [0.0; 5];
    assert_eq!(interleave(&[&[1.0; 4], &[2.0; 3]], &mut out), 2);
    assert_eq!(interleave(&[], &mut out), 0);
    assert_eq!(
        deinterleave(&[1.0; 7], &mut [&mut [0.0; 9], &mut [0.0; 9]]),
        3
    );
    assert_eq!(deinterleave(&[1.0; 7], &mut []), 0);
}

#[test]
fn audio_queue_moves_whole_frames_through_the_wrap() {
    for channels in [1usize, 2, 3, 8] {
        let (mut tx, mut rx) = AudioQueue::new(channels, 10);
        let mut next_in = 0usize;
        let mut next_out = 0usize;
        let mut rng = common::Rng::new(channels as u64);
        for _ in 0..if cfg!(miri) { 60 } else { 500 } {
            let frames = rng.below(14);
            if rng.below(2) == 0 {
                let planar: Vec<Vec<f32>> = (0..channels)
                    .map(|c| {
                        (0..frames)
                            .map(|f| ((next_in + f) * 16 + c) as f32)
                            .collect()
                    })
                    .collect();
                let views: Vec<&[f32]> = planar.iter().map(Vec::as_slice).collect();
                next_in += tx.push_planar(&views);
            } else {
                // Odd lengths: the trailing partial frame must stay behind.
                let samples: Vec<f32> = (0..frames * channels + rng.below(channels))
                    .map(|k| ((next_in + k / channels) * 16 + k % channels) as f32)
                    .collect();
                next_in += tx.push_interleaved(&samples);
            }
            let frames = rng.below(14);
            if rng.below(2) == 0 {
                let mut back = vec![vec![0.0; frames]; channels];
                let mut outs: Vec<&mut [f32]> = back.iter_mut().map(Vec::as_mut_slice).collect();
                let got = rx.pop_planar(&mut outs);
                for (c, channel) in back.iter().enumerate() {
                    for (f, x) in channel[..got].iter().enumerate() {
                        assert_eq!(*x, ((next_out + f) * 16 + c) as f32);
                    }
                }
                next_out += got;
            } else {
                let mut out = vec![0.0; frames * channels + rng.below(channels)];
                let got = rx.pop_interleaved(&mut out);
                for (k, x) in out[..got * channels].iter().enumerate() {
                    assert_eq!(*x, ((next_out + k / channels) * 16 + k % channels) as f32);
                }
                next_out += got;
            }
            assert_eq!(next_in - next_out, rx.available_read());
            assert_eq!(tx.available_write(), 10 - rx.available_read());
        }
    }
}

#[test]
fn audio_frames_are_never_split_across_threads() {
    let channels = 3;
    let frames = if cfg!(miri) { 200 } else { 300_000usize };
    let (mut tx, mut rx) = AudioQueue::new(channels, 7);
    let producer = std::thread::spawn(move || {
        let mut rng = common::Rng::new(7);
        let mut sent = 0;
        while sent < frames {
            let n = (1 + rng.below(9)).min(frames - sent);
            let block: Vec<f32> = (0..n * channels)
                .map(|k| ((sent + k / channels) * 4 + k % channels) as f32)
                .collect();
            let pushed = tx.push_interleaved(&block);
            if pushed == 0 {
                common::backoff();
            }
            sent += pushed;
        }
    });
    let mut rng = common::Rng::new(11);
    let mut got = 0;
    let (mut a, mut b, mut c) = ([0.0; 16], [0.0; 16], [0.0; 16]);
    while got < frames {
        let n = 1 + rng.below(16);
        let popped = rx.pop_planar(&mut [&mut a[..n], &mut b[..n], &mut c[..n]]);
        for f in 0..popped {
            let base = ((got + f) * 4) as f32;
            assert_eq!([a[f], b[f], c[f]], [base, base + 1.0, base + 2.0]);
        }
        if popped == 0 {
            common::backoff();
        }
        got += popped;
    }
    producer.join().unwrap();
}

#[test]
#[should_panic(expected = "one slice per channel")]
fn wrong_channel_count_panics() {
    let (mut tx, _rx) = AudioQueue::new(2, 4);
    tx.push_planar(&[&[0.0]]);
}
