//! The parallel processor's unit of work: a *task*, one node or a chain of nodes fused at
//! compile time.
//!
//! A node whose only successor has no other predecessor can hand over to nothing but that
//! successor, and the successor can start only after it: running the two as one task loses
//! no parallelism, and saves the per-node hand-over (a queue slot, two shared counters
//! decremented, an idle thread's poll of them) that costs more than a tiny node does.

/// The graph's nodes grouped into tasks, in topological order of their first nodes.
pub(crate) struct Tasks {
    /// Every task's nodes, task after task, each task's in processing order.
    nodes: Box<[usize]>,
    /// Task `t` holds `nodes[start[t]..start[t + 1]]`.
    start: Box<[usize]>,
    /// The tasks that wait for each task: those of its last node's successors.
    succs: Box<[Box<[usize]>]>,
    /// How many tasks each task waits for (its first node's predecessors, counted with
    /// repeats, as each finished predecessor counts once).
    waits: Box<[usize]>,
}

impl Tasks {
    /// Fuses every maximal chain `a → b → …` in which each node but the last has exactly
    /// one successor and each node but the first exactly one predecessor. `preds` and
    /// `succs` are per node, nodes in topological order.
    pub(crate) fn new(preds: &[Box<[usize]>], succs: &[Box<[usize]>]) -> Self {
        let n = preds.len();
        // A node continues its predecessor's chain when each is the other's only link.
        let continues = |i: usize| preds[i].len() == 1 && succs[preds[i][0]].len() == 1;
        let mut task_of = vec![usize::MAX; n];
        let mut nodes = Vec::with_capacity(n);
        let mut start = vec![0];
        for head in (0..n).filter(|&i| !continues(i)) {
            let t = start.len() - 1;
            let mut cur = head;
            loop {
                task_of[cur] = t;
                nodes.push(cur);
                match succs[cur][..] {
                    [next] if continues(next) => cur = next,
                    _ => break,
                }
            }
            start.push(nodes.len());
        }
        let tasks = start.len() - 1;
        let tail = |t: usize| nodes[start[t + 1] - 1];
        // A successor of a task's last node starts a task of its own: were it the only
        // successor with no other predecessor, the chain would have taken it in.
        let succs: Box<[Box<[usize]>]> = (0..tasks)
            .map(|t| succs[tail(t)].iter().map(|&s| task_of[s]).collect())
            .collect();
        let waits = (0..tasks).map(|t| preds[nodes[start[t]]].len()).collect();
        Self {
            nodes: nodes.into_boxed_slice(),
            start: start.into_boxed_slice(),
            succs,
            waits,
        }
    }

    /// How many tasks there are.
    pub(crate) fn len(&self) -> usize {
        self.waits.len()
    }

    /// Task `t`'s nodes, in the order they run.
    pub(crate) fn nodes(&self, t: usize) -> &[usize] {
        &self.nodes[self.start[t]..self.start[t + 1]]
    }

    /// Task `t`'s first node.
    pub(crate) fn head(&self, t: usize) -> usize {
        self.nodes[self.start[t]]
    }

    /// The tasks that wait for task `t`.
    pub(crate) fn succs(&self, t: usize) -> &[usize] {
        &self.succs[t]
    }

    /// How many finished tasks task `t` waits for.
    pub(crate) fn waits(&self, t: usize) -> usize {
        self.waits[t]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::tests::lists;

    #[test]
    fn chains_fuse_up_to_a_fork_or_a_join() {
        // 0 → 1 → 2 → 5, 3 → 4 → 5, 5 → 6 → 7, 5 → 8: two branches join at 5, which
        // forks to 6 (a chain 6 → 7) and 8.
        let edges = [
            (0, 1),
            (1, 2),
            (2, 5),
            (3, 4),
            (4, 5),
            (5, 6),
            (6, 7),
            (5, 8),
        ];
        let (preds, succs) = lists(&edges, 9);
        let t = Tasks::new(&preds, &succs);
        let all: Vec<&[usize]> = (0..t.len()).map(|k| t.nodes(k)).collect();
        assert_eq!(all, [&[0, 1, 2][..], &[3, 4], &[5], &[6, 7], &[8]]);
        assert_eq!(t.succs(0), [2]);
        assert_eq!(t.succs(1), [2]);
        assert_eq!(t.succs(2), [3, 4]);
        assert_eq!((t.waits(0), t.waits(2), t.waits(3)), (0, 2, 1));
        assert_eq!(t.head(3), 6);
    }

    #[test]
    fn a_node_with_two_edges_from_one_predecessor_starts_a_task() {
        // Two edges 0 → 1 (a node's output summed twice into another's input).
        let (preds, succs) = lists(&[(0, 1), (0, 1)], 2);
        let t = Tasks::new(&preds, &succs);
        assert_eq!(t.len(), 2);
        assert_eq!(t.succs(0), [1, 1]);
        assert_eq!(t.waits(1), 2);
    }
}
