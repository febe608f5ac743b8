//! The OSC reference ([`ADDRESSES`], [`TIMING`]) against the handler it documents: every
//! example is taken by an [`OscHandler`] on an engine built from [`EXAMPLE_PROJECT`], and the
//! same address with an argument of the wrong type is refused as bad arguments (not as an
//! unknown address), so an address the handler stops serving, or an argument whose type
//! changes, fails here.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use downbeat::control::osc::{
    timetag, OscArgCount, OscArgType, OscExample, OscExampleArg, OscHandler, Rejection, ADDRESSES,
    EXAMPLE_PROJECT, TIMING,
};
use downbeat::{project::Project, Engine};
use downbeat_graph::NodeConfig;
use rosc::{OscBundle, OscMessage, OscPacket, OscTime, OscType};

/// A handler that edits the graph too, on a fresh engine running [`EXAMPLE_PROJECT`] (each
/// message on a graph of its own: `/graph/remove lowpass` must find `lowpass`).
fn handler() -> (Engine, OscHandler) {
    let p = Project::parse(EXAMPLE_PROJECT, "example.toml").expect("the example project parses");
    let (editor, schedule) = p.editor().expect("the example project builds");
    let mut engine = Engine::new(schedule);
    let live = Arc::new(Mutex::new(engine.live_editor(editor)));
    let config = NodeConfig {
        sample_rate: p.sample_rate,
        max_block: p.block_size,
    };
    let osc = OscHandler::new(engine.controller(64)).with_editor(live, config);
    (engine, osc)
}

fn send(message: OscMessage) -> Result<usize, Rejection> {
    let (_engine, mut osc) = handler();
    osc.handle(&rosc::encoder::encode(&OscPacket::Message(message)).unwrap())
}

/// An argument of the wrong type for `kind`.
fn wrong(kind: OscArgType) -> OscType {
    match kind {
        OscArgType::Number => OscType::String("x".into()),
        OscArgType::String => OscType::Float(1.0),
        OscArgType::Value => OscType::Blob(vec![1]),
    }
}

/// `example` with each argument in turn replaced by one of the wrong type (`kinds` gives the
/// argument types, in the example's order), or, for an example without arguments, with one
/// argument too many: each must be refused as bad arguments.
fn refuses_wrong_arguments(pattern: &str, example: &OscExample, kinds: &[OscArgType]) {
    let mut variants = Vec::new();
    if example.args.is_empty() {
        let mut m = example.message();
        m.args.push(OscType::String("x".into()));
        variants.push(m);
    }
    for (i, &kind) in kinds.iter().enumerate() {
        let mut m = example.message();
        m.args[i] = wrong(kind);
        variants.push(m);
    }
    for m in variants {
        let got = send(m.clone());
        assert!(
            matches!(got, Err(Rejection::BadArguments { .. })),
            "{pattern}: {:?} {:?} should be refused as bad arguments, got {got:?}",
            m.addr,
            m.args
        );
    }
}

/// The type each argument of `example` has, read from the example itself (for the forms of
/// [`TIMING`], whose arguments are those of the address after the prefix).
fn kinds_of(example: &OscExample) -> Vec<OscArgType> {
    example
        .args
        .iter()
        .map(|a| match a {
            OscExampleArg::Float(_) | OscExampleArg::Int(_) => OscArgType::Number,
            OscExampleArg::String(_) => OscArgType::String,
        })
        .collect()
}

/// The documented argument types, one per argument of `example` (repeated arguments taken
/// in turn); panics when the example does not fit them.
fn documented_kinds(pattern: &str, example: &OscExample) -> Vec<OscArgType> {
    let address = ADDRESSES.iter().find(|a| a.pattern == pattern).unwrap();
    let fixed: Vec<_> = address
        .args
        .iter()
        .filter(|a| a.count != OscArgCount::Repeated)
        .collect();
    let repeated: Vec<_> = address
        .args
        .iter()
        .filter(|a| a.count == OscArgCount::Repeated)
        .collect();
    let mut kinds = Vec::new();
    for (i, given) in example.args.iter().enumerate() {
        let kind = match fixed.get(i) {
            Some(a) => a.kind,
            None if !repeated.is_empty() => repeated[(i - fixed.len()) % repeated.len()].kind,
            None => panic!("{pattern}: the example has more arguments than documented"),
        };
        let fits = matches!(
            (kind, given),
            (OscArgType::Value, _)
                | (
                    OscArgType::Number,
                    OscExampleArg::Float(_) | OscExampleArg::Int(_)
                )
                | (OscArgType::String, OscExampleArg::String(_))
        );
        assert!(
            fits,
            "{pattern}: example argument {} is not a {kind:?}",
            i + 1
        );
        kinds.push(kind);
    }
    let required = fixed.iter().filter(|a| a.count == OscArgCount::One).count();
    assert!(
        example.args.len() >= required,
        "{pattern}: the example leaves out a required argument"
    );
    kinds
}

/// Whether `address` is an instance of `pattern` (`<part>` stands for one non-empty part).
fn matches_pattern(address: &str, pattern: &str) -> bool {
    let (a, p): (Vec<_>, Vec<_>) = (address.split('/').collect(), pattern.split('/').collect());
    a.len() == p.len()
        && a.iter().zip(&p).all(|(a, p)| {
            if p.starts_with('<') && p.ends_with('>') {
                !a.is_empty()
            } else {
                a == p
            }
        })
}

#[test]
fn every_documented_address_takes_its_example_and_refuses_wrong_types() {
    for a in ADDRESSES {
        assert!(
            matches_pattern(a.example.address, a.pattern),
            "{}: the example's address is {}",
            a.pattern,
            a.example.address
        );
        let kinds = documented_kinds(a.pattern, &a.example);
        assert_eq!(
            send(a.example.message()),
            Ok(1),
            "{}: the example `{}`",
            a.pattern,
            a.example.oscsend()
        );
        // Numbers as doubles too.
        let mut doubles = a.example.message();
        for arg in &mut doubles.args {
            if let OscType::Float(x) = *arg {
                *arg = OscType::Double(f64::from(x));
            }
        }
        assert_eq!(send(doubles), Ok(1), "{}: numbers as doubles", a.pattern);
        // Optional arguments may be left out.
        let optional = a
            .args
            .iter()
            .filter(|x| x.count == OscArgCount::Optional)
            .count();
        if optional > 0 && a.example.args.len() == a.args.len() {
            let mut shorter = a.example.message();
            shorter.args.truncate(a.args.len() - optional);
            assert_eq!(
                send(shorter),
                Ok(1),
                "{}: without its optional arguments",
                a.pattern
            );
        }
        refuses_wrong_arguments(a.pattern, &a.example, &kinds);
    }
}

#[test]
fn the_table_covers_every_form_the_handler_serves() {
    let patterns: Vec<_> = ADDRESSES.iter().map(|a| a.pattern).collect();
    for form in [
        "/node/<node>/<param>",
        "/node/<node>/<param>/step",
        "/node/<node>/<param>/ramp",
        "/node/<node>/<param>/exp",
        "/node/<node>/note_on",
        "/node/<node>/note_off",
        "/node/<node>/all_notes_off",
        "/edge/<from>/<to>/gain_db",
        "/edge/<from>/<to>/gain_db/step",
        "/edge/<from>/<to>/gain_db/ramp",
        "/edge/<from>/<to>/gain_db/exp",
        "/graph/add",
        "/graph/remove",
        "/graph/connect",
        "/graph/disconnect",
        "/transport/play",
        "/transport/stop",
        "/transport/locate",
        "/transport/loop",
        "/transport/unloop",
        "/transport/tempo",
    ] {
        assert!(patterns.contains(&form), "{form} is not in ADDRESSES");
    }
    // A verb the handler does not serve is an unknown address, not bad arguments: the
    // refusals above are about the arguments.
    for address in [
        "/transport/rewind",
        "/graph/rename",
        "/node/lowpass/freq/jump",
    ] {
        let got = send(OscMessage {
            addr: address.into(),
            args: vec![],
        });
        assert!(
            matches!(got, Err(Rejection::UnknownAddress(_))),
            "{address}: {got:?}"
        );
    }
}

#[test]
fn every_timing_form_takes_its_example() {
    for t in TIMING {
        let Some(example) = t.example else {
            assert_eq!(t.pattern, "#bundle", "only the bundle has no example");
            continue;
        };
        assert_eq!(
            send(example.message()),
            Ok(1),
            "{}: the example `{}`",
            t.pattern,
            example.oscsend()
        );
        refuses_wrong_arguments(t.pattern, &example, &kinds_of(&example));
    }
    // A beat that is not one is bad arguments too.
    let got = send(OscMessage {
        addr: "/beat/soon/transport/play".into(),
        args: vec![],
    });
    assert!(
        matches!(got, Err(Rejection::BadArguments { .. })),
        "{got:?}"
    );
}

/// The bundle row: messages at a timetag, or at once, and checked whole.
#[test]
fn bundles_apply_their_messages_at_the_timetag() {
    let node: Vec<_> = ADDRESSES
        .iter()
        .filter(|a| a.pattern.starts_with("/node/"))
        .map(|a| OscPacket::Message(a.example.message()))
        .collect();
    let later = timetag(SystemTime::now() + Duration::from_millis(100));
    for tag in [later, OscTime::from((0, 1))] {
        let (_engine, mut osc) = handler();
        let bundle = OscPacket::Bundle(OscBundle {
            timetag: tag,
            content: node.clone(),
        });
        let packet = rosc::encoder::encode(&bundle).unwrap();
        assert_eq!(osc.handle(&packet), Ok(node.len()));
    }
    let (_engine, mut osc) = handler();
    let mut content = node.clone();
    content.push(OscPacket::Message(OscMessage {
        addr: "/node/lowpass/freq".into(),
        args: vec![OscType::String("x".into())],
    }));
    let bundle = OscPacket::Bundle(OscBundle {
        timetag: OscTime::from((0, 1)),
        content,
    });
    let got = osc.handle(&rosc::encoder::encode(&bundle).unwrap());
    assert!(
        matches!(got, Err(Rejection::BadArguments { .. })),
        "{got:?}"
    );
}
