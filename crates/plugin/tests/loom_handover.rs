//! Every interleaving of a restart's hand-over between a plugin's main thread and the audio
//! thread (`src/clap/handover.rs`): each value passes once, whole, in order, and a side
//! never reads the cell while the other writes it (loom's cell checks that; a missing
//! Release/Acquire pair shows up as a stale read).
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p downbeat-plugin --test loom_handover
//! --release` in a target directory of its own (`crates/plugin/ci.sh` does).
#![cfg(loom)]

mod sync {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::atomic::{AtomicU8, Ordering};
    pub(crate) use loom::sync::Arc;
}

#[path = "../src/clap/handover.rs"]
#[allow(dead_code)]
mod handover;

use loom::thread;

/// A whole round trip with each side looking as it does in the host: the audio side once
/// per block, the main side once per poll, neither waiting for the other.
#[test]
fn a_round_trip_passes_each_value_once_in_order() {
    loom::model(|| {
        let (main, audio) = handover::pair::<Vec<u32>>();
        let audio_thread = thread::spawn(move || {
            let mut got = None;
            for _ in 0..3 {
                if audio.wanted() {
                    audio.give(vec![1]);
                }
                if let Some(v) = audio.take_returned() {
                    audio.spend(vec![3]);
                    got = Some(v);
                    break;
                }
                thread::yield_now();
            }
            (got, audio)
        });
        assert!(main.ask());
        let mut given = None;
        let mut spent = None;
        for _ in 0..3 {
            if given.is_none() {
                if let Some(v) = main.take() {
                    given = Some(v);
                    main.give_back(vec![2]);
                }
            }
            if let Some(v) = main.take_spent() {
                spent = Some(v);
                break;
            }
            thread::yield_now();
        }
        let (got, audio) = audio_thread.join().unwrap();
        // What each side saw is what the other put, whole; a side that did not get as
        // far in its few looks finds the rest waiting in the cell.
        if let Some(v) = &given {
            assert_eq!(v, &[1]);
        }
        if let Some(v) = &got {
            assert!(given.is_some());
            assert_eq!(v, &[2]);
        }
        if let Some(v) = &spent {
            assert!(got.is_some());
            assert_eq!(v, &[3]);
        }
        let left = main.close(audio);
        match (&given, &got, &spent) {
            (None, None, None) => assert!(left.is_none() || left == Some(vec![1])),
            (Some(_), None, None) => assert_eq!(left, Some(vec![2])),
            (Some(_), Some(_), None) => assert_eq!(left, Some(vec![3])),
            _ => assert_eq!(left, None),
        }
    });
}
