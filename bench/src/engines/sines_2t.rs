//! `sines` on two threads (issue 28's target "at least 1.8x scsynth and 2x supernova on
//! `sines` with 2 threads"): Downbeat with `--threads 2` against supernova with `-T 2` and
//! the 1000 synths in one parallel group, which supernova spreads over its threads;
//! scsynth on its one thread is the reference. As for `fanin` on two threads, the figure
//! is wall-clock time per second of audio: two threads finish sooner but never spend less
//! CPU.

use super::cases::Case;
use super::sc::{self, osc};
use super::Engine;
use crate::report::Report;

/// The parallel group holding the sines (any node id the scores do not use).
const PAR_GROUP: i32 = 2;
/// `/p_new` add action: at the tail of the target.
const TAIL: i32 = 1;
/// The root node.
const ROOT: i32 = 0;

/// The engines `sines` adds to its single-thread ones.
pub fn engines() -> [Engine; 2] {
    [
        Engine::Downbeat { threads: 2 },
        Engine::Supernova { threads: 2 },
    ]
}

/// The score for supernova on two threads: `sc::score`'s synths, each moved from the root
/// group into one parallel group at the root's tail.
pub fn score(case: &Case) -> Vec<u8> {
    let (setup, nodes) = commands(case);
    osc::score(&[
        (0.0, setup),
        (0.0, nodes),
        (
            case.seconds,
            vec![osc::Message::new("/c_set", vec![0.into(), 0.into()])],
        ),
    ])
}

/// `sc::commands` for `case`, with the synths moved into the parallel group.
fn commands(case: &Case) -> (Vec<osc::Message>, Vec<osc::Message>) {
    let (setup, mut nodes) = sc::commands(case);
    for m in nodes.iter_mut().filter(|m| m.address == "/s_new") {
        // `/s_new` arguments: def, id, add action, target.
        m.args[3] = PAR_GROUP.into();
    }
    nodes.insert(
        0,
        osc::Message::new("/p_new", vec![PAR_GROUP.into(), TAIL.into(), ROOT.into()]),
    );
    (setup, nodes)
}

/// Adds the `sines_wall` rows (every engine's wall-clock seconds per second of audio, its
/// start-up out) and `sines_wall_whole` (start-up in), and the ratios
/// `sines_2t_vs_scsynth` and `sines_2t_vs_supernova` of each (`_whole_` for the latter).
pub fn report(report: &mut Report, list: &[Engine], figures: &[super::Figures]) {
    for (e, f) in list.iter().zip(figures) {
        report.add("sines_wall", &e.name(), super::WALL_UNIT, &f.wall);
        report.add(
            "sines_wall_whole",
            &e.name(),
            super::WALL_UNIT,
            &f.whole_wall,
        );
    }
    let two = Engine::Downbeat { threads: 2 }.name();
    for (rival, key) in [
        (Engine::Scsynth, "scsynth"),
        (Engine::Supernova { threads: 2 }, "supernova"),
    ] {
        let r = rival.name();
        super::ratio(
            report,
            &format!("sines_2t_vs_{key}"),
            "sines_wall",
            &two,
            &r,
        );
        let whole = format!("sines_2t_whole_vs_{key}");
        super::ratio(report, &whole, "sines_wall_whole", &two, &r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::cases::Kind;

    #[test]
    fn every_sine_goes_into_the_parallel_group() {
        let case = Case {
            kind: Kind::Sines,
            n: 3,
            seconds: 1.0,
        };
        let (_, nodes) = commands(&case);
        assert_eq!(nodes[0].address, "/p_new");
        let targets: Vec<&osc::Arg> = nodes[1..].iter().map(|m| &m.args[3]).collect();
        let par = osc::Arg::from(PAR_GROUP);
        assert_eq!(targets, [&par; 3], "every sine in the parallel group");
        let text = score(&case);
        let plain = sc::score(&case);
        // One `/p_new` more than the one-thread score, and the same number of synths.
        let count = |s: &[u8], what: &[u8]| s.windows(what.len()).filter(|w| *w == what).count();
        assert_eq!(count(&text, b"/p_new"), 1);
        assert_eq!(count(&plain, b"/p_new"), 0);
        assert_eq!(count(&text, b"/s_new"), 3);
    }
}
