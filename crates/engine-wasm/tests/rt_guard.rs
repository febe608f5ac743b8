//! The per-block path under the guard: events of every op, renders, meters and values
//! neither allocate, free, lock nor make a system call (natively; in the browser the exports
//! run them inside the worklet's `process()`). The guard runs its closure on a thread of its
//! own, where the exports' per-thread state is empty, so this drives the [`Session`] they
//! wrap.

use downbeat_engine_wasm::*;
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

const PROJECT: &str = "block_size = 64\nedges = [\"a -> g -> out\", \"k -> g\"]\n\
    [nodes.a]\ntype = \"sine\"\n[nodes.k]\ntype = \"synth\"\n\
    [nodes.g]\ntype = \"gain\"\n[nodes.out]\ntype = \"output\"\n";

#[test]
fn events_and_renders_are_real_time_safe() {
    let mut s = Session::load(PROJECT, "g.toml").unwrap();
    let gain = s.param_id("g", "gain").unwrap();
    let freq = s.param_id("a", "freq").unwrap();
    let synth = s.instrument_id("k").unwrap();
    assert_eq!(s.render(64), Ok(64));
    let mut results = Vec::with_capacity(40 * 7);
    let mut sum = 0.0f32;
    let report = guard::check(|| {
        for block in 0..40u64 {
            let at = 64 + block * 64;
            let f = 200.0 + block as f32;
            results.push(s.event(Op::Set, freq, Some(at + 3), f, 0.0, 0));
            results.push(s.event(Op::Step, gain, Some(at + 10), 0.5, 0.0, 0));
            results.push(s.event(Op::Ramp, gain, Some(at + 20), 1.0, 0.001, 0));
            results.push(s.event(Op::NoteOn, ALL, Some(at + 5), 60.0, 100.0, 1));
            results.push(s.event(Op::NoteOn, synth, Some(at + 6), 64.0, 90.0, 2));
            results.push(s.event(Op::NoteOff, ALL, Some(at + 40), 60.0, 0.0, 1));
            results.push(s.event(Op::AllNotesOff, ALL, None, 0.0, 0.0, ALL));
            sum += s.render(64).map_or(f32::NAN, |n| n as f32);
            sum += s.peak(0) + s.rms(1) + s.value(gain).unwrap_or(f32::NAN) + s.output(0)[63];
        }
    });
    report.assert_clean();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert!(sum.is_finite() && sum > 40.0 * 64.0, "{sum}");
    assert_eq!(s.dropped(), 0);
    assert_eq!(s.position(), 41 * 64);
}
