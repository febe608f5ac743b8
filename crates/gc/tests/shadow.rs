//! A randomized mutator checked against a shadow model of reachability, for every collector:
//! nothing reachable is ever freed (its contents would be zeroed or reused, and the checks
//! below would see it), and everything unreachable is freed within two collection cycles (the
//! one running when it became unreachable may have missed it; the next one may not).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use downbeat_gc::{start, Atomic, Barrier, Block, Collector, Config, Gc, Mode, Mutator};

const ROOTS: usize = 8;
/// Fields 0 and 1 reference objects, field 2 an atomic block; one data word holds an id.
const REFS: usize = 3;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Clone)]
struct Obj {
    id: u64,
    refs: [Option<Gc>; 2],
    line: Option<(Atomic, u8, usize)>,
}

#[derive(Default)]
struct Model {
    roots: [Option<Gc>; ROOTS],
    objs: HashMap<Gc, Obj>,
    next_id: u64,
}

impl Model {
    fn reachable(&self) -> HashSet<Gc> {
        let mut seen = HashSet::new();
        let mut stack: Vec<Gc> = self.roots.iter().flatten().copied().collect();
        while let Some(g) = stack.pop() {
            if seen.insert(g) {
                stack.extend(self.objs[&g].refs.iter().flatten().copied());
            }
        }
        seen
    }

    fn prune(&mut self) {
        let live = self.reachable();
        self.objs.retain(|g, _| live.contains(g));
    }

    fn atomics(&self) -> usize {
        self.objs.values().filter(|o| o.line.is_some()).count()
    }
}

fn random_live(model: &Model, rng: &mut Rng) -> Option<Gc> {
    if model.objs.is_empty() {
        return None;
    }
    // HashMap order is arbitrary but deterministic enough for a random pick.
    model.objs.keys().nth(rng.below(model.objs.len())).copied()
}

fn step(block: &mut Block<'_>, model: &mut Model, rng: &mut Rng) {
    match rng.below(10) {
        0..=4 => {
            let Ok(g) = block.alloc(REFS, 1) else { return };
            for f in 0..REFS {
                assert_eq!(
                    block.get_ref(g, f).unwrap(),
                    None,
                    "fresh objects are zeroed"
                );
                assert_eq!(block.get_atomic(g, f).unwrap(), None);
            }
            assert_eq!(block.data(g, 0).unwrap(), 0, "fresh objects are zeroed");
            model.next_id += 1;
            let id = model.next_id;
            block.set_data(g, 0, id).unwrap();
            let mut obj = Obj {
                id,
                refs: [None, None],
                line: None,
            };
            if rng.below(3) == 0 {
                let len = 16 + rng.below(4000);
                if let Ok(a) = block.alloc_atomic(len) {
                    let fill = (id % 251) as u8 + 1;
                    block.bytes(a).unwrap().fill(fill);
                    block.set_atomic(g, 2, Some(a)).unwrap();
                    obj.line = Some((a, fill, len));
                }
            }
            // Link to an existing object so graphs form, including cycles.
            if let Some(other) = random_live(model, rng) {
                block.set_ref(g, 0, Some(other)).unwrap();
                obj.refs[0] = Some(other);
                if rng.below(4) == 0 {
                    let f = rng.below(2);
                    block.set_ref(other, f, Some(g)).unwrap();
                    model.objs.get_mut(&other).unwrap().refs[f] = Some(g);
                }
            }
            model.objs.insert(g, obj);
            let r = rng.below(ROOTS);
            if model.roots[r].is_none() || rng.below(3) == 0 {
                block.set_root(r, Some(g)).unwrap();
                model.roots[r] = Some(g);
            }
        }
        5 | 6 => {
            let r = rng.below(ROOTS);
            block.set_root(r, None).unwrap();
            model.roots[r] = None;
        }
        7 => {
            if let Some(o) = random_live(model, rng) {
                let f = rng.below(2);
                block.set_ref(o, f, None).unwrap();
                model.objs.get_mut(&o).unwrap().refs[f] = None;
            }
        }
        _ => {
            if let (Some(a), Some(b)) = (random_live(model, rng), random_live(model, rng)) {
                let f = rng.below(2);
                block.set_ref(a, f, Some(b)).unwrap();
                model.objs.get_mut(&a).unwrap().refs[f] = Some(b);
                let r = rng.below(ROOTS);
                block.set_root(r, Some(a)).unwrap();
                model.roots[r] = Some(a);
            }
        }
    }
}

fn verify(block: &mut Block<'_>, model: &Model) {
    for (r, root) in model.roots.iter().enumerate() {
        assert_eq!(block.root(r).unwrap(), *root);
    }
    for (&g, obj) in &model.objs {
        assert_eq!(
            block.data(g, 0).unwrap(),
            obj.id,
            "a reachable object was freed or overwritten"
        );
        for f in 0..2 {
            assert_eq!(block.get_ref(g, f).unwrap(), obj.refs[f]);
        }
        assert_eq!(block.get_atomic(g, 2).unwrap(), obj.line.map(|l| l.0));
        if let Some((a, fill, len)) = obj.line {
            let bytes = block.bytes(a).expect("a reachable atomic block was freed");
            assert_eq!(bytes.len(), len);
            assert!(bytes.iter().all(|&b| b == fill), "atomic block overwritten");
        }
    }
}

/// Called right after the block that made the last change ended. Blocks run (without
/// changing anything) until two more collection cycles have completed: their frees are queued
/// by then, and the next `begin_block` applies them all (the heap holds fewer blocks than
/// the free budget), so what is live must then be exactly what the model reaches.
fn settle(m: &mut Mutator, c: &Collector, model: &Model) {
    let want = (model.objs.len() as u64, model.atomics() as u64);
    let c0 = c.stats().cycles;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let done = c.stats().cycles >= c0 + 2;
        let mut b = m.begin_block();
        verify(&mut b, model);
        // A write that changes nothing, in a root slot the model does not use: the
        // replicating collector only starts a collection when something was written.
        b.set_root(ROOTS, None).unwrap();
        drop(b);
        if done {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "two collections never completed: {:?}",
            c.stats()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        m.live(),
        want,
        "unreachable objects survived two cycles (live vs reachable)"
    );
}

fn run(seed: u64, mode: Mode, blocks: usize) {
    run_with(seed, mode, 16384, blocks)
}

fn run_with(seed: u64, mode: Mode, comp_stack: usize, blocks: usize) {
    let config = Config {
        mode,
        comp_stack,
        roots: ROOTS + 1,
        heap_bytes: 64 << 10,
        atomic_bytes: 4 << 20,
        atomic_slots: 2048,
        poll: Duration::from_micros(50),
        full_snapshot_every: Duration::from_millis(20),
        ..Config::small()
    };
    let (mut m, collector) = start(config).unwrap();
    let mut model = Model::default();
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    for n in 0..blocks {
        let mut b = m.begin_block();
        verify(&mut b, &model);
        for _ in 0..1 + rng.below(12) {
            step(&mut b, &mut model, &mut rng);
        }
        verify(&mut b, &model);
        drop(b);
        model.prune();
        let (objs, atomics) = m.live();
        assert!(objs >= model.objs.len() as u64 && atomics >= model.atomics() as u64);
        if n % 50 == 0 {
            m.audit().unwrap();
        }
        if n % 7 == 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    settle(&mut m, &collector, &model);
    // Drop everything: all of it must come back.
    {
        let mut b = m.begin_block();
        for r in 0..ROOTS {
            b.set_root(r, None).unwrap();
        }
    }
    model.roots = [None; ROOTS];
    model.prune();
    settle(&mut m, &collector, &model);
    assert_eq!(m.live(), (0, 0));
    assert!(
        m.audit().unwrap() > 0,
        "freed blocks are zeroed and on the free lists"
    );
    let s = collector.stats();
    assert!(s.cycles > 0 && s.objects_freed > 0, "{s:?}");
    if mode == Mode::Snapshot {
        assert!(
            s.full_snapshot.count > 0,
            "full snapshots were forced: {s:?}"
        );
        assert!(s.partial_snapshot.count > 0);
    }
    if let Mode::Replicating(barrier) = mode {
        assert!(
            s.replicated_words > 0,
            "the barrier fed the snapshot: {s:?}"
        );
        assert_eq!(s.full_snapshot.count + s.partial_snapshot.count, 0);
        let overflowed = s.stack_overflows > 0;
        assert_eq!(
            overflowed,
            barrier == Barrier::Stacks && comp_stack < 64,
            "only a tiny stack overflows: {s:?}"
        );
    }
}

#[test]
fn snapshot_collector_matches_the_shadow_model() {
    for seed in 1..=4 {
        run(seed, Mode::Snapshot, 1500);
    }
}

#[test]
fn replicating_collector_with_a_complementary_block_matches_the_shadow_model() {
    for seed in 20..=22 {
        run(seed, Mode::Replicating(Barrier::Block), 1500);
    }
}

#[test]
fn replicating_collector_with_complementary_stacks_matches_the_shadow_model() {
    for seed in 30..=32 {
        run(seed, Mode::Replicating(Barrier::Stacks), 1500);
    }
}

/// A stack of 8 entries overflows in most cycles, so the fallback scan of the block carries
/// most collections.
#[test]
fn replicating_collector_falls_back_to_the_block_when_a_stack_overflows() {
    run_with(40, Mode::Replicating(Barrier::Stacks), 8, 1500);
}

#[test]
fn stop_the_world_baseline_matches_the_shadow_model() {
    for seed in 10..=11 {
        run(seed, Mode::StopTheWorld, 1500);
    }
}

#[test]
fn out_of_memory_is_an_error_and_collection_recovers_it() {
    let config = Config {
        heap_bytes: 4096,
        poll: Duration::from_micros(50),
        ..Config::small()
    };
    let (mut m, _c) = start(config).unwrap();
    let mut failed = false;
    {
        let mut b = m.begin_block();
        for _ in 0..1000 {
            match b.alloc(0, 6) {
                Ok(_) => {}
                Err(e) => {
                    assert_eq!(e, downbeat_gc::GcError::OutOfMemory);
                    failed = true;
                    break;
                }
            }
        }
    }
    assert!(failed);
    // Nothing was rooted: after a few blocks the heap is reusable.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut b = m.begin_block();
        if b.alloc(0, 6).is_ok() {
            break;
        }
        drop(b);
        assert!(Instant::now() < deadline, "garbage was never reclaimed");
        std::thread::sleep(Duration::from_millis(1));
    }
}
