//! Wide input sums added up in groups: the inputs of a node with more than [`SUM_GROUP`]
//! edges are cut, in their order, into groups of at most that many, each group's outputs
//! are added into a partial sum of its own, and the node's input is the sum of the partials
//! in order.
//!
//! A group's partial is added up as soon as its last input has run, on the thread that ran
//! it: the outputs it reads were just written there, by a core whose cache still holds them
//! (a few kilobytes, where a thousand inputs are a quarter of a megabyte). Read by the sum
//! instead, at the end of the block, every output would have to come back, from farther
//! away and, with two threads, half of them from the other core, whose next write then has
//! to take each line back: `docs/bench/engines.md` measured that exchange as most of the
//! cost of a second thread on a thousand sines.
//!
//! The grouping is a property of the graph, not of the threads: the serial processor, the
//! parallel one on any number of threads and the wasm build all add the same numbers in
//! the same order, so their output is the same to the bit. It is not the order of a plain
//! sum (`((a + b) + c) + …`), so a node with more than [`SUM_GROUP`] inputs rounds
//! differently from one that sums them all in a row.

use std::cell::UnsafeCell;
use std::ops::Range;

/// The most inputs one group of a wide input sum adds up. A node with at most this many
/// inputs sums them in a row, in their order, as before groups; one with more has them
/// cut into `ceil(n / SUM_GROUP)` groups of sizes as equal as they come (the first ones
/// one larger), whose partial sums are added in order.
///
/// 64 mono outputs of 64 frames are 16 KiB, which a core's first-level cache holds
/// between writing them and adding them up. [`sum_groups`] gives the cut.
///
/// ```
/// use downbeat_graph::SUM_GROUP;
/// assert_eq!(SUM_GROUP, 64);
/// ```
pub const SUM_GROUP: usize = 64;

/// The groups a node with `n` inputs adds up apart, as ranges of its inputs in their
/// order: one range `0..n` up to [`SUM_GROUP`] inputs, else `ceil(n / SUM_GROUP)`
/// consecutive ranges, the first `n % groups` of them one longer than the rest. The
/// node's input is each range's outputs added in order, then those partial sums in
/// order: the way to compute a schedule's bits without it.
///
/// ```
/// use downbeat_graph::sum_groups;
///
/// assert_eq!(sum_groups(3).collect::<Vec<_>>(), [0..3]);
/// assert_eq!(sum_groups(130).collect::<Vec<_>>(), [0..44, 44..87, 87..130]);
///
/// // The input of a node fed by 130 sources whose outputs are `x`, one frame:
/// let x: Vec<f32> = (0..130).map(|k| 1.0 / (1.0 + k as f32)).collect();
/// let input: f32 = sum_groups(x.len())
///     .map(|group| x[group].iter().sum::<f32>())
///     .sum();
/// assert!((input - 5.45).abs() < 0.01);
/// ```
pub fn sum_groups(n: usize) -> impl Iterator<Item = Range<usize>> {
    let groups = n.div_ceil(SUM_GROUP).max(1);
    let (size, longer) = (n / groups, n % groups);
    (0..groups).map(move |g| {
        let start = g * size + g.min(longer);
        start..start + size + usize::from(g < longer)
    })
}

/// Per node, a list of nodes: predecessors or successors.
pub(crate) type Lists = Vec<Box<[usize]>>;

/// One group: inputs `inputs` (positions in the node's list of predecessors) of `node`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Group {
    pub(crate) node: usize,
    pub(crate) inputs: Range<usize>,
}

/// Every group of a schedule, and their partial sums.
pub(crate) struct SumGroups {
    groups: Box<[Group]>,
    /// Per node: its groups (an empty range for a node summed in a row).
    of_node: Box<[Range<usize>]>,
    /// Per node: the groups whose last input it is, to add up right after it.
    after: Box<[Box<[usize]>]>,
    /// Per group, its partial sum: the node's input channels of `stride` frames each.
    // Each cell is written by the one thread that adds the group up, after the group's
    // inputs are done and before the node runs, which reads it (see `Schedule`).
    partials: Box<[UnsafeCell<Vec<f32>>]>,
}

impl SumGroups {
    /// Groups for the nodes whose predecessor lists (in processing order, each in the
    /// order its sum adds them) are `preds`, where `summed(i)` says whether node `i`'s
    /// input is a plain sum of its predecessors' outputs and `in_ch(i)` is its channel
    /// count; partials hold `stride` frames per channel.
    pub(crate) fn new(
        preds: &[Box<[usize]>],
        summed: impl Fn(usize) -> bool,
        in_ch: impl Fn(usize) -> usize,
        stride: usize,
    ) -> Self {
        let mut groups = Vec::new();
        let mut of_node = Vec::with_capacity(preds.len());
        let mut after = vec![Vec::new(); preds.len()];
        let mut partials = Vec::new();
        for (i, p) in preds.iter().enumerate() {
            let first = groups.len();
            if summed(i) && p.len() > SUM_GROUP {
                for inputs in sum_groups(p.len()) {
                    let last = p[inputs.end - 1];
                    after[last].push(groups.len());
                    groups.push(Group { node: i, inputs });
                    partials.push(UnsafeCell::new(crate::prefaulted(in_ch(i) * stride)));
                }
            }
            of_node.push(first..groups.len());
        }
        Self {
            groups: groups.into_boxed_slice(),
            of_node: of_node.into_boxed_slice(),
            after: after.into_iter().map(Vec::into_boxed_slice).collect(),
            partials: partials.into_boxed_slice(),
        }
    }

    /// How many groups there are.
    pub(crate) fn len(&self) -> usize {
        self.groups.len()
    }

    /// Group `g`.
    pub(crate) fn group(&self, g: usize) -> &Group {
        &self.groups[g]
    }

    /// Node `i`'s groups: empty for a node that sums its inputs in a row.
    pub(crate) fn of_node(&self, i: usize) -> Range<usize> {
        self.of_node[i].clone()
    }

    /// The groups to add up right after node `i` runs, when nodes run in order.
    pub(crate) fn after(&self, i: usize) -> &[usize] {
        &self.after[i]
    }

    /// Group `g`'s partial sum, to read.
    ///
    /// # Safety
    /// No thread may be writing it (see [`partial_mut`](SumGroups::partial_mut)).
    pub(crate) unsafe fn partial(&self, g: usize) -> &[f32] {
        // SAFETY: no writer, the caller's promise.
        unsafe { &*self.partials[g].get() }
    }

    /// Group `g`'s partial sum, to write.
    ///
    /// # Safety
    /// No other thread may access it until this borrow ends and is ordered before.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn partial_mut(&self, g: usize) -> &mut [f32] {
        // SAFETY: exclusive, the caller's promise.
        unsafe { &mut *self.partials[g].get() }
    }

    /// The predecessor and successor lists with every group as a node of its own, numbered
    /// after the graph's `n` nodes: a grouped node waits for its groups, each group for its
    /// inputs. The parallel processor schedules these; a group's task adds it up.
    pub(crate) fn with_groups(
        &self,
        preds: &[Box<[usize]>],
        succs: &[Box<[usize]>],
    ) -> (Lists, Lists) {
        let n = preds.len();
        let mut p: Vec<Box<[usize]>> = (0..n)
            .map(|i| {
                let r = self.of_node(i);
                if r.is_empty() {
                    preds[i].clone()
                } else {
                    r.map(|g| n + g).collect()
                }
            })
            .collect();
        p.extend(
            self.groups
                .iter()
                .map(|g| preds[g.node][g.inputs.clone()].into()),
        );
        let mut s: Vec<Vec<usize>> = (0..n + self.len()).map(|_| Vec::new()).collect();
        for (i, list) in succs.iter().enumerate() {
            for &next in list.iter() {
                if self.of_node(next).is_empty() {
                    s[i].push(next);
                }
            }
        }
        // An edge into a grouped node now ends at the group that holds it (an output summed
        // twice into one input counts twice, as each finished predecessor counts once).
        for (g, group) in self.groups.iter().enumerate() {
            for &from in &preds[group.node][group.inputs.clone()] {
                s[from].push(n + g);
            }
            s[n + g].push(group.node);
        }
        (p, s.into_iter().map(Vec::into_boxed_slice).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sum_is_cut_into_near_equal_groups_in_order() {
        let sizes = |n: usize| sum_groups(n).map(|r| r.len()).collect::<Vec<_>>();
        assert_eq!(sizes(64), [64]);
        assert_eq!(sizes(65), [33, 32]);
        assert_eq!(
            sizes(1000),
            [63, 63, 63, 63, 63, 63, 63, 63, 62, 62, 62, 62, 62, 62, 62, 62]
        );
        let ranges: Vec<_> = sum_groups(130).collect();
        assert_eq!(ranges, [0..44, 44..87, 87..130]);
        assert_eq!(sum_groups(0).map(|r| r.len()).collect::<Vec<_>>(), [0]);
    }

    #[test]
    fn groups_stand_between_their_inputs_and_the_node() {
        // 70 sources into node 70, which feeds 71; node 71 also takes source 0 directly.
        let n = 72;
        let mut preds: Vec<Box<[usize]>> = vec![Box::new([]); n];
        preds[70] = (0..70).collect();
        preds[71] = Box::new([0, 70]);
        let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, p) in preds.iter().enumerate() {
            for &from in p.iter() {
                succs[from].push(i);
            }
        }
        let succs: Vec<Box<[usize]>> = succs.into_iter().map(Vec::into_boxed_slice).collect();
        let groups = SumGroups::new(&preds, |_| true, |_| 1, 64);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups.of_node(70), 0..2);
        assert!(
            groups.of_node(71).is_empty(),
            "two inputs are summed in a row"
        );
        assert_eq!(groups.after(34), [0]);
        assert_eq!(groups.after(69), [1]);
        let (p, s) = groups.with_groups(&preds, &succs);
        assert_eq!(&*p[70], [72, 73]);
        assert_eq!(&*p[72], (0..35).collect::<Vec<_>>());
        assert_eq!(
            &*s[0],
            [71, 72],
            "source 0 feeds node 71 and the first group"
        );
        assert_eq!(&*s[69], [73]);
        assert_eq!(&*s[73], [70]);
        assert_eq!(&*s[70], [71]);
    }
}
