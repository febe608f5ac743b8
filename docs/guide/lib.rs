//! The guide (`docs/guide`, an mdBook) as doctests: every Rust example in its chapters, and
//! in the repository's README, is compiled and run by `cargo test -p downbeat-guide` (part of
//! `cargo test --workspace`), so neither can drift from the API it shows. The crate has no
//! code of its own.
//!
//! Each chapter is the documentation of an item that exists only when rustdoc collects
//! doctests.

/// One item per chapter: its documentation is the chapter, its examples the doctests.
macro_rules! chapters {
    ($($name:ident = $path:literal;)*) => {
        $(
            #[cfg(doctest)]
            #[doc = include_str!($path)]
            pub struct $name;
        )*
    };
}

chapters! {
    Readme = "../../README.md";
    Introduction = "src/introduction.md";
    StartRust = "src/start/rust.md";
    StartCli = "src/start/cli.md";
    StartWeb = "src/start/web.md";
    StartPython = "src/start/python.md";
    ConceptsGraph = "src/concepts/graph.md";
    ConceptsDevices = "src/concepts/devices.md";
    ConceptsControl = "src/concepts/control.md";
    ConceptsLiveEdits = "src/concepts/live-edits.md";
    ConceptsMusicalTime = "src/concepts/musical-time.md";
    ConceptsRealtime = "src/concepts/realtime.md";
    TasksFiles = "src/tasks/files.md";
    TasksNotes = "src/tasks/notes.md";
    TasksPlugins = "src/tasks/plugins.md";
    TasksAudit = "src/tasks/audit.md";
    TasksRecord = "src/tasks/record.md";
    TasksOsc = "src/tasks/osc.md";
    TasksBrowser = "src/tasks/browser.md";
    TasksLoad = "src/tasks/load.md";
    TasksScaleOut = "src/tasks/scale-out.md";
    DesignRing = "src/design/ring.md";
    DesignParallel = "src/design/parallel.md";
    DesignClock = "src/design/clock.md";
    DesignNotify = "src/design/notify.md";
    DesignMemory = "src/design/memory.md";
    ReferenceNodes = "src/reference/nodes.md";
    ReferenceOsc = "src/reference/osc.md";
    ReferenceCli = "src/reference/cli.md";
    ReferenceProject = "src/reference/project.md";
}
