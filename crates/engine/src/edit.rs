//! [`LiveEditor`]: edits to the graph a running engine plays, from a control thread.
//!
//! The graph crate's [`Editor`] compiles each batch of edits into a schedule that keeps
//! every node the batch leaves alone; a [`LiveEditor`] sends it to the engine, which swaps
//! it in at the next block boundary, and frees what the engine hands back (the old schedule
//! with the removed nodes) here, off the audio thread. How an edit travels:
//!
//! ```text
//! control thread                               audio thread
//! add/remove/connect/disconnect (the batch)
//! commit: compile with stand-ins ──ring──────▶ next block: take_over moves each kept
//!                                              node in (a few fields swapped per node)
//! next commit: drop it ◀──────────────ring──── old schedule: stand-ins, removed nodes
//! ```

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use downbeat_graph::{EditError, Editor, ParamTable};
use downbeat_rt::reclaim::Reclaimer;

use crate::swap::ScheduleSender;
use crate::Engine;

/// Schedules a live editor may have in flight to the engine before it takes them.
pub const EDITS_IN_FLIGHT: usize = 8;

/// Why [`LiveEditor::commit`] did not send a batch.
#[derive(Debug)]
pub enum CommitError {
    /// The batch does not make a graph (see [`EditError`]); it is dropped, and the running
    /// graph is unchanged.
    Edit(EditError),
    /// The engine has not taken the batches committed before (it is not running, or is
    /// behind): the batch is kept, commit again later.
    Busy,
}

impl std::fmt::Display for CommitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommitError::Edit(e) => e.fmt(f),
            CommitError::Busy => write!(
                f,
                "the engine has not taken the {EDITS_IN_FLIGHT} edits committed before; commit again once it runs"
            ),
        }
    }
}

impl std::error::Error for CommitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CommitError::Edit(e) => Some(e),
            CommitError::Busy => None,
        }
    }
}

impl From<EditError> for CommitError {
    fn from(e: EditError) -> Self {
        CommitError::Edit(e)
    }
}

/// An [`Editor`] wired to a running engine: the edit methods are the editor's (through
/// `Deref`), and [`commit`](LiveEditor::commit) sends the batch to the engine, which applies
/// it at one block boundary. Made by [`Engine::live_editor`].
///
/// ```
/// use downbeat::{project::Project, Engine};
/// use downbeat_nodes::Gain;
///
/// let p = Project::parse(
///     "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
///     "x.toml",
/// ).unwrap();
/// let (editor, schedule) = p.editor().unwrap();
/// let mut engine = Engine::new(schedule);
/// let mut live = engine.live_editor(editor);
/// let mut block = vec![0.0; engine.block_size() * engine.channels()];
/// engine.process(&mut block);
///
/// // A gain between the sine and the output; the sine keeps its phase.
/// live.add("quiet", Gain::new(2, 0.5)).unwrap();
/// live.disconnect("s", "out").unwrap();
/// live.connect("s", "quiet").unwrap();
/// live.connect("quiet", "out").unwrap();
/// live.commit().unwrap();
/// engine.process(&mut block); // the edit lands at this block's start
/// assert_eq!(engine.swaps(), 1);
/// assert!(live.table().node_key("quiet").is_some());
/// ```
pub struct LiveEditor {
    editor: Editor,
    sender: ScheduleSender,
    reclaimer: Reclaimer,
    table: Arc<ParamTable>,
}

impl std::fmt::Debug for LiveEditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveEditor")
            .field("editor", &self.editor)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Wires `editor` to this engine: the editor [`Editor::new`] (or
    /// [`Project::editor`](crate::project::Project::editor)) returned with the schedule this
    /// engine runs. Opens the engine's swap channel (see [`swap_channel`](Engine::swap_channel)),
    /// replacing one opened before.
    ///
    /// # Panics
    /// When `editor` was not made with this engine's schedule: its commits could never
    /// take over.
    pub fn live_editor(&mut self, editor: Editor) -> LiveEditor {
        assert_eq!(
            editor.schedule_id(),
            self.schedule().id(),
            "the editor was made with another schedule than the one this engine runs"
        );
        let table = Arc::new(self.schedule().param_table());
        let (sender, reclaimer) = self.swap_channel(EDITS_IN_FLIGHT);
        LiveEditor {
            editor,
            sender,
            reclaimer,
            table,
        }
    }
}

impl LiveEditor {
    /// Sends the batch of edits made since the last commit to the engine, which applies it
    /// at its next block boundary, all at once. Frees the schedules the engine handed back
    /// since the last call (with the nodes removed by earlier commits). Allocates: call it
    /// from a control thread.
    ///
    /// # Errors
    /// [`CommitError::Edit`] when the edited graph does not compile (the batch is dropped),
    /// [`CommitError::Busy`] when the engine has not taken the edits sent before (the batch
    /// is kept).
    pub fn commit(&mut self) -> Result<(), CommitError> {
        self.reclaim();
        if self.sender.room() == 0 {
            return Err(CommitError::Busy);
        }
        let schedule = self.editor.commit()?;
        self.table = Arc::new(schedule.param_table());
        if let Err(e) = self.sender.send(schedule) {
            unreachable!("an editor's schedule has the engine's format and room was checked: {e}");
        }
        Ok(())
    }

    /// Frees the schedules the engine has handed back (each with the stand-ins and the nodes
    /// its edit removed); [`commit`](LiveEditor::commit) does it too. Returns how many.
    pub fn reclaim(&mut self) -> usize {
        self.reclaimer.collect()
    }

    /// The names and ranges of the parameters of the graph as last committed: give it to a
    /// controller ([`Controller::set_table`](crate::control::Controller::set_table)) so that
    /// it can address the nodes an edit added.
    pub fn table(&self) -> Arc<ParamTable> {
        Arc::clone(&self.table)
    }
}

impl Deref for LiveEditor {
    type Target = Editor;

    fn deref(&self) -> &Editor {
        &self.editor
    }
}

impl DerefMut for LiveEditor {
    fn deref_mut(&mut self) -> &mut Editor {
        &mut self.editor
    }
}
