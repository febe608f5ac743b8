//! The node registry is open: a type defined here, outside `downbeat-graph`, is used from a
//! project file, takes parameters the graph crate never declared, and is listed with the
//! built-in ones.

use downbeat::project::{node_reference, Project};
use downbeat::{lookup_node_type, register_node_type, RegistryError};
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NodeFactory, ParamError, ParamKind, ParamSpec,
    ParamValue, Params, ProcessContext, Unit,
};

/// Scales its one input channel by the product of every `factor_*` parameter it is given:
/// names no declaration lists, as a plugin's control ports would be.
struct Scaler;

static SCALER_PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "bias",
    doc: "added to every sample",
    kind: ParamKind::Float {
        min: -1.0,
        max: 1.0,
        default: 0.0,
    },
    unit: Unit::None,
    live: false,
}];

impl NodeFactory for Scaler {
    fn name(&self) -> &str {
        "test-scaler"
    }
    fn doc(&self) -> &str {
        "multiplies by its factors"
    }
    fn params(&self) -> &[ParamSpec] {
        SCALER_PARAMS
    }
    fn open_params(&self) -> Option<&str> {
        Some("`factor_NAME = x` multiplies by x")
    }
    fn create(
        &self,
        params: Vec<(String, ParamValue)>,
        _cfg: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError> {
        let mut factor = 1.0;
        let mut declared = Vec::new();
        for (name, value) in params {
            if !name.starts_with("factor_") {
                declared.push((name, value));
                continue;
            }
            match value {
                ParamValue::Float(v) => factor *= v,
                ParamValue::Int(v) => factor *= v as f64,
                _ => {
                    return Err(ParamError::Invalid {
                        name,
                        message: "expected a number".into(),
                    })
                }
            }
        }
        let declared = Params::validate(SCALER_PARAMS, declared)?;
        Ok(Box::new(ScalerNode {
            factor: factor as f32,
            bias: declared.float("bias") as f32,
        }))
    }
}

struct ScalerNode {
    factor: f32,
    bias: f32,
}

impl Node for ScalerNode {
    fn input_channels(&self) -> usize {
        1
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, _ctx: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        for (o, i) in output.channel_mut(0).iter_mut().zip(input.channel(0)) {
            *o = i * self.factor + self.bias;
        }
    }
}

fn register() {
    match register_node_type(Scaler) {
        Ok(()) | Err(RegistryError::NameTaken { .. }) => {}
        Err(e) => panic!("{e}"),
    }
}

const PROJECT: &str = r#"
block_size = 64
edges = ["osc -> scale -> out"]

[nodes.osc]
type = "sine"
channels = 1
freq = 1000.0

[nodes.scale]
type = "test-scaler"
factor_a = 0.5
factor_b = 3
bias = 0.25

[nodes.out]
type = "output"
channels = 1
"#;

#[test]
fn a_registered_type_is_used_from_a_project_file_with_its_own_parameters() {
    register();
    let mut reference = Project::parse(&PROJECT.replace("test-scaler", "gain"), "ref.toml");
    // The same keys on a built-in type are refused while parsing: only open types take
    // parameters they did not declare.
    let err = reference.as_mut().unwrap_err();
    assert!(
        err.message.contains("unknown parameter `factor_a`"),
        "{err}"
    );

    let project = Project::parse(PROJECT, "scaler.toml").unwrap();
    let mut schedule = project.build().unwrap();
    let plain = Project::parse(
        &PROJECT
            .replace("osc -> scale -> out", "osc -> out")
            .replace(
            "[nodes.scale]\ntype = \"test-scaler\"\nfactor_a = 0.5\nfactor_b = 3\nbias = 0.25\n",
            "",
        ),
        "plain.toml",
    )
    .unwrap();
    let mut dry = plain.build().unwrap();
    assert_eq!(dry.len(), 2, "the scaler was removed from the reference");
    schedule.process(64);
    dry.process(64);
    let (wet, dry) = (schedule.output().channel(0), dry.output().channel(0));
    assert!(dry.iter().any(|&s| s.abs() > 0.1));
    for (w, d) in wet.iter().zip(dry) {
        assert_eq!(*w, d * 1.5 + 0.25);
    }
}

#[test]
fn a_bad_value_for_an_open_parameter_points_at_it() {
    register();
    let text = PROJECT.replace("factor_b = 3", "factor_b = \"loud\"");
    let project = Project::parse(&text, "scaler.toml").unwrap();
    let err = project.build().unwrap_err();
    assert_eq!(err.line, 13, "{err}");
    assert!(err.message.contains("factor_b"), "{err}");
    // A declared parameter is still checked against its declaration while parsing.
    let err = Project::parse(&PROJECT.replace("bias = 0.25", "bias = 7.0"), "s.toml").unwrap_err();
    assert!(err.message.contains("bias"), "{err}");
}

#[test]
fn registered_types_are_listed_and_names_are_unique() {
    register();
    assert_eq!(
        lookup_node_type("test-scaler").map(|t| t.doc().to_string()),
        Some("multiplies by its factors".to_string())
    );
    let reference = node_reference();
    assert!(reference.contains("test-scaler: multiplies by its factors"));
    assert!(reference.contains("factor_NAME"), "{reference}");
    assert!(
        reference.find("sine:") < reference.find("test-scaler:"),
        "built-in types come first"
    );
    assert_eq!(
        register_node_type(Scaler),
        Err(RegistryError::NameTaken {
            name: "test-scaler".into()
        })
    );

    struct Named(&'static str);
    impl NodeFactory for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn doc(&self) -> &str {
            "x"
        }
        fn params(&self) -> &[ParamSpec] {
            &[]
        }
        fn create(
            &self,
            _: Vec<(String, ParamValue)>,
            _: &NodeConfig,
        ) -> Result<Box<dyn Node>, ParamError> {
            unreachable!()
        }
    }
    // Built in, from downbeat-nodes and from downbeat-file: neither can be taken over.
    for built_in in ["sine", "sampler"] {
        assert!(matches!(
            register_node_type(Named(built_in)),
            Err(RegistryError::NameTaken { .. })
        ));
    }
    assert!(matches!(
        register_node_type(Named("a -> b")),
        Err(RegistryError::BadName { .. })
    ));
    assert!(matches!(
        register_node_type(Named("")),
        Err(RegistryError::BadName { .. })
    ));
}
