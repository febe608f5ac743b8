//! The typed layer (`gc_struct!`): fields land on the words their declaration order says,
//! a delay-line voice rendered through it matches a plain model across blocks and
//! collections, stale typed handles are refused, and the accessors are real-time safe.

use std::time::Duration;

use downbeat_gc::{gc_struct, start, AccessError, Atomic, Config, Gc, Mode};
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

gc_struct! {
    /// A comb-filter voice: a delay line, a link to the next voice, and its state.
    struct Voice {
        refs {
            line / set_line: Atomic,
            next / set_next: Voice,
            other / set_other: Gc,
        }
        data {
            pos / set_pos: usize,
            feedback / set_feedback: f32,
            freq / set_freq: f64,
            on / set_on: bool,
            offset / set_offset: i32,
        }
    }
}

#[test]
fn fields_land_on_the_words_declared() {
    let (mut m, _c) = start(Config::small()).unwrap();
    let mut b = m.begin_block();
    assert_eq!((Voice::REFS, Voice::DATA), (3, 5));
    let v = Voice::alloc(&mut b).unwrap();
    let w = Voice::alloc(&mut b).unwrap();
    let line = b.alloc_atomic(16).unwrap();
    v.set_line(&mut b, Some(line)).unwrap();
    v.set_next(&mut b, Some(w)).unwrap();
    v.set_other(&mut b, Some(w.gc())).unwrap();
    v.set_pos(&mut b, 7).unwrap();
    v.set_feedback(&mut b, 0.25).unwrap();
    v.set_freq(&mut b, 440.0).unwrap();
    v.set_on(&mut b, true).unwrap();
    v.set_offset(&mut b, -3).unwrap();
    // The untyped view of the same object: fields in declaration order.
    let g = v.gc();
    assert_eq!(b.get_atomic(g, 0), Ok(Some(line)));
    assert_eq!(b.get_ref(g, 1), Ok(Some(w.gc())));
    assert_eq!(b.get_ref(g, 2), Ok(Some(w.gc())));
    assert_eq!(b.data(g, 0), Ok(7));
    assert_eq!(b.data(g, 1), Ok(0.25f32.to_bits() as u64));
    assert_eq!(b.data(g, 2), Ok(440f64.to_bits()));
    assert_eq!(b.data(g, 3), Ok(1));
    assert_eq!(b.data(g, 4), Ok(-3i32 as u64));
    assert_eq!(
        b.data(g, 5),
        Err(AccessError::NoSuchWord { index: 5, words: 5 })
    );
    // And back.
    b.set_data(g, 2, 220f64.to_bits()).unwrap();
    assert_eq!(v.freq(&b), Ok(220.0));
    assert_eq!(v.next(&b), Ok(Some(w)));
    assert_eq!(v.offset(&b), Ok(-3));
    assert_eq!(w.next(&b), Ok(None));
}

const LINE: usize = 37;
const BLOCK: usize = 64;

/// One block of a feedback comb filter, with the state in a typed object and the line read
/// and written as a plain slice.
fn render(b: &mut downbeat_gc::Block<'_>, v: Voice, input: f32, out: &mut [f32]) {
    let line = v.line(b).unwrap().expect("a line");
    let (mut pos, fb) = (v.pos(b).unwrap(), v.feedback(b).unwrap());
    let buf = b.samples(line).expect("the line is rooted");
    for y in out.iter_mut() {
        *y = buf[pos];
        buf[pos] = input + fb * buf[pos];
        pos = (pos + 1) % buf.len();
    }
    v.set_pos(b, pos).unwrap();
}

/// The same filter on a `Vec`.
fn model(line: &mut [f32], pos: &mut usize, fb: f32, input: f32, out: &mut [f32]) {
    for y in out.iter_mut() {
        *y = line[*pos];
        line[*pos] = input + fb * line[*pos];
        *pos = (*pos + 1) % line.len();
    }
}

#[test]
fn a_delay_line_voice_matches_a_plain_model_across_collections() {
    let config = Config {
        poll: Duration::from_micros(50),
        full_snapshot_every: Duration::from_millis(5),
        ..Config::small()
    };
    let (mut m, collector) = start(config).unwrap();
    {
        let mut b = m.begin_block();
        let v = Voice::alloc(&mut b).unwrap();
        let line = b.alloc_atomic(LINE * 4).unwrap();
        b.samples(line).unwrap().fill(0.0);
        v.set_line(&mut b, Some(line)).unwrap();
        v.set_feedback(&mut b, 0.5).unwrap();
        b.set_root(0, Some(v.gc())).unwrap();
    }
    let (mut line, mut pos) = (vec![0.0f32; LINE], 0usize);
    let (mut got, mut want) = ([0.0f32; BLOCK], [0.0f32; BLOCK]);
    for n in 0..200 {
        let input = (n % 7) as f32 * 0.1;
        let mut b = m.begin_block();
        // Garbage every block, so collections run while the voice lives.
        let junk = Voice::alloc(&mut b).unwrap();
        let junk_line = b.alloc_atomic(256).unwrap();
        junk.set_line(&mut b, Some(junk_line)).unwrap();
        let v = Voice::from_gc(b.root(0).unwrap().expect("rooted"));
        render(&mut b, v, input, &mut got);
        drop(b);
        model(&mut line, &mut pos, 0.5, input, &mut want);
        assert_eq!(got, want, "block {n}");
        std::thread::sleep(Duration::from_micros(200));
    }
    assert!(collector.stats().cycles > 0, "collections ran meanwhile");
    assert!(m.stats().objects_freed > 0);
    assert!(got.iter().any(|&s| s != 0.0), "the voice made sound");
}

#[test]
fn a_stale_typed_handle_is_refused() {
    let config = Config {
        mode: Mode::StopTheWorld,
        ..Config::small()
    };
    let (mut m, _c) = start(config).unwrap();
    let old = Voice::alloc(&mut m.begin_block()).unwrap(); // unrooted: collected
    let mut b = m.begin_block();
    let new = Voice::alloc(&mut b).unwrap(); // takes the freed block
    assert_eq!(old.freq(&b), Err(AccessError::Stale));
    assert_eq!(old.set_pos(&mut b, 1), Err(AccessError::Stale));
    assert_eq!(new.set_next(&mut b, Some(old)), Err(AccessError::Stale));
    assert_eq!(new.next(&b), Ok(None));
    assert_eq!(new.pos(&b), Ok(0));
}

/// The audio side of the typed layer: field reads and writes, reference writes, and the
/// slice loop make no allocation, free, lock or system call.
#[test]
fn typed_accessors_are_real_time_safe() {
    let (mut m, _c) = start(Config::small()).unwrap();
    let mut b = m.begin_block();
    let v = Voice::alloc(&mut b).unwrap();
    let w = Voice::alloc(&mut b).unwrap();
    let line = b.alloc_atomic(LINE * 4).unwrap();
    b.samples(line).unwrap().fill(0.0);
    v.set_line(&mut b, Some(line)).unwrap();
    let mut out = [0.0f32; BLOCK];
    let (sum, report) = guard::check_with(&guard::Options::new(), || {
        v.set_feedback(&mut b, 0.5).unwrap();
        v.set_freq(&mut b, 110.0).unwrap();
        v.set_next(&mut b, Some(w)).unwrap();
        w.set_other(&mut b, Some(v.gc())).unwrap();
        for k in 0..8 {
            render(&mut b, v, k as f32, &mut out);
        }
        let view = b.read_samples(line).unwrap();
        view.iter().sum::<f32>() + v.freq(&b).unwrap() as f32
    });
    assert!(report.is_complete(), "{report}");
    report.assert_clean();
    assert!(sum > 110.0);
}
