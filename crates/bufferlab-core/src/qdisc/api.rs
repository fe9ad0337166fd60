//! The `tc qdisc add|change|replace|link|delete` verbs on one device's
//! chain — the role of Linux's net/sched/sch_api.c: `tc_modify_qdisc`
//! (the CREATE/EXCL/REPLACE decision procedure, docs/semantics/qdiscs.md §1.3),
//! `tc_get_qdisc` (delete), `qdisc_graft`, `qdisc_create`,
//! `qdisc_alloc_handle`, and `qdisc_tree_flush_backlog` for what a graft
//! purges. A verb whose parent is a class of a qdisc that owns classes (or a
//! qdisc grafted on one) goes to that qdisc's `graft` (class_api/).

use super::fifo::Fifo;
use super::ops::{BuildEnv, ChildChange, Purged, Qdisc, Reduce};
use super::spec::{ParentSpec, QdiscSpec, TcVerb};
use super::tree::{HeldFlow, Node, QdiscTree};
use super::{AnyQdisc, QdiscCtx, TcRequest};
use crate::error::TcError;
use crate::time::SimTime;

/// Source of automatic handles (`8001:`, `8002:`, …), machine-wide in Linux
/// (docs/semantics/qdiscs.md §1.3, P19).
#[derive(Clone, Debug)]
pub struct AutoHandles {
    pub next: u16,
}

impl Default for AutoHandles {
    fn default() -> Self {
        AutoHandles { next: 0x8001 }
    }
}

impl AutoHandles {
    /// `qdisc_alloc_handle`: the next major from the machine-wide counter
    /// (8001, 8002, …, fffe, 8000, 8001, …) that `in_use` does not claim on
    /// this device; `None` after 0x8000 tries. The counter advances past
    /// every candidate tried.
    pub fn alloc(&mut self, in_use: impl Fn(u16) -> bool) -> Option<u16> {
        for _ in 0..0x8000 {
            let h = if self.next == 0 || self.next == 0xFFFF {
                0x8000
            } else {
                self.next
            };
            self.next = if h == 0xFFFE { 0x8000 } else { h + 1 };
            if !in_use(h) {
                return Some(h);
            }
        }
        None
    }
}

/// The rule of `check_netem_in_tree` over the netems of a whole tree (for
/// each, whether it duplicates).
pub(super) fn netem_mix(all: &[bool]) -> Result<(), TcError> {
    if all.len() >= 2 && all.contains(&true) {
        return Err(TcError::Invalid(
            "netem: cannot mix duplicating netems with other netems in tree".into(),
        ));
    }
    Ok(())
}

/// Netlink request flags of the `tc qdisc` verbs (tc_qdisc.c).
const CREATE: u8 = 1;
const EXCL: u8 = 2;
const REPLACE: u8 = 4;

fn verb_flags(verb: TcVerb) -> u8 {
    match verb {
        TcVerb::Add => CREATE | EXCL,
        TcVerb::Replace => CREATE | REPLACE,
        TcVerb::Change | TcVerb::Delete => 0,
        TcVerb::Link => REPLACE,
    }
}

impl QdiscTree {
    /// One `tc qdisc add|change|replace|link|delete` (docs/semantics/qdiscs.md §1.3).
    pub fn apply(
        &mut self,
        req: &TcRequest,
        ctx: &mut QdiscCtx,
        auto: &mut AutoHandles,
    ) -> Result<(), TcError> {
        self.check_dev(&req.dev)?;
        self.settled(ctx, |tree, ctx| match tree.graft_slot(req) {
            Some(slot) => tree.graft(req, slot?, ctx),
            None => tree.apply_verb(req, ctx, auto),
        })
    }

    /// The request names this device.
    pub(super) fn check_dev(&self, dev: &str) -> Result<(), TcError> {
        if dev != self.dev {
            return Err(TcError::NoDevice(dev.to_string()));
        }
        Ok(())
    }

    /// Run one verb; the packets it purged leave the tree as drops
    /// (`held`).
    pub(super) fn settled<T>(
        &mut self,
        ctx: &mut QdiscCtx,
        verb: impl FnOnce(&mut Self, &mut QdiscCtx) -> Result<T, TcError>,
    ) -> Result<T, TcError> {
        let before = HeldFlow::start(ctx);
        let result = verb(self, ctx);
        self.held = before.settle(ctx, self.held, None);
        result
    }

    fn apply_verb(
        &mut self,
        req: &TcRequest,
        ctx: &mut QdiscCtx,
        auto: &mut AutoHandles,
    ) -> Result<(), TcError> {
        match req.verb {
            TcVerb::Delete => self.delete(req, ctx),
            verb => self.modify(req, verb_flags(verb), ctx, auto),
        }
    }

    /// `tc_modify_qdisc`.
    fn modify(
        &mut self,
        req: &TcRequest,
        f: u8,
        ctx: &mut QdiscCtx,
        auto: &mut AutoHandles,
    ) -> Result<(), TcError> {
        let spec = req
            .qdisc
            .as_ref()
            .ok_or_else(|| TcError::Invalid("a qdisc kind is required for this command".into()))?;
        let handle = req.handle.filter(|&h| h != 0);
        let Some(parent) = req.parent else {
            // Neither root nor parent: the handle names the qdisc to change.
            let h = handle.ok_or_else(|| TcError::Invalid("Handle cannot be zero".into()))?;
            let idx = self.find(h).ok_or(TcError::NotFound)?;
            return self.modify_at(idx, f, spec, ctx);
        };
        let (slot, p_idx, minor) = match parent {
            ParentSpec::Root => (0, None, 0),
            ParentSpec::Class { major, minor } => {
                let p = self.find(major).ok_or(TcError::NotFound)?;
                (p + 1, Some(p), minor)
            }
        };
        // The slot's occupant; default children (handle 0) never block.
        let classful = match p_idx {
            Some(p) => self.nodes[p].q.classful(),
            None => true,
        };
        let q_idx =
            (classful && slot < self.nodes.len() && self.nodes[slot].handle != 0).then_some(slot);
        if let (Some(qi), Some(h)) = (q_idx, handle) {
            if self.nodes[qi].handle == h {
                return self.modify_at(qi, f, spec, ctx);
            }
        }
        if let Some(h) = handle {
            if q_idx.is_some() && f & REPLACE == 0 {
                return Err(TcError::Exists);
            }
            return match self.find(h) {
                None => self.create_and_graft(
                    slot,
                    p_idx,
                    minor,
                    Some(h),
                    f & CREATE != 0,
                    spec,
                    ctx,
                    auto,
                ),
                Some(j) => {
                    if f & EXCL != 0 {
                        return Err(TcError::Exists);
                    }
                    if spec.kind() != self.nodes[j].q.kind() {
                        return Err(TcError::Invalid("Invalid qdisc name".into()));
                    }
                    if j < slot {
                        return Err(TcError::Invalid("Qdisc parent/child loop detected".into()));
                    }
                    self.graft_move(slot, j, minor, ctx);
                    Ok(())
                }
            };
        }
        match q_idx {
            None => {
                self.create_and_graft(slot, p_idx, minor, None, f & CREATE != 0, spec, ctx, auto)
            }
            Some(qi) => {
                if spec.kind() != self.nodes[qi].q.kind() {
                    // add/replace with another kind graft a new qdisc; so does a
                    // flagless `change` (docs/semantics/qdiscs.md §1.3, the logic since Linux
                    // commit da71714e "fix a qdisc modification with ambiguous
                    // command request", 2023; older kernels answered add with
                    // EEXIST and change with EINVAL here).
                    if f & CREATE != 0 && f & (REPLACE | EXCL) != 0 {
                        return self
                            .create_and_graft(slot, p_idx, minor, None, true, spec, ctx, auto);
                    }
                    if f == 0 {
                        return self
                            .create_and_graft(slot, p_idx, minor, None, true, spec, ctx, auto);
                    }
                }
                self.modify_at(qi, f, spec, ctx)
            }
        }
    }

    /// MODIFY: change an existing qdisc in place; counters are kept.
    fn modify_at(
        &mut self,
        idx: usize,
        f: u8,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
    ) -> Result<(), TcError> {
        if f & EXCL != 0 {
            return Err(TcError::Exists);
        }
        if spec.kind() != self.nodes[idx].q.kind() {
            return Err(TcError::Invalid("Invalid qdisc name".into()));
        }
        self.check_netem_in_tree(spec, Some(idx))?;
        let (upper, lower) = self.nodes.split_at_mut(idx + 1);
        let child = lower.first().map(|c| &c.q);
        let changed = upper[idx].q.change(spec, ctx, child)?;
        self.tell_ancestors(idx, changed.purged);
        match changed.child {
            ChildChange::Keep => {}
            ChildChange::Replace(child) => {
                self.purge_from(idx + 1, ctx);
                self.nodes.truncate(idx + 1);
                self.nodes.push(Node::new(0, 1, true, *child));
            }
            ChildChange::FifoLimit(limit) => self.set_fifo_child_limit(idx, limit),
        }
        Ok(())
    }

    /// tbf_change's child handling: a fifo child (default or not) gets the
    /// new limit in place (`fifo_set_limit`, sch_fifo.c); any other child
    /// keeps its own; an empty slot (noop) gets a new default bfifo if
    /// `limit > 0`.
    fn set_fifo_child_limit(&mut self, idx: usize, limit: u32) {
        match self.nodes.get_mut(idx + 1) {
            Some(child) => {
                if let AnyQdisc::Fifo(f) = &mut child.q {
                    f.set_limit(limit);
                }
            }
            None if limit > 0 => self
                .nodes
                .push(Node::new(0, 1, true, Fifo::bfifo(limit).into())),
            None => {}
        }
    }

    /// CREATE_AND_GRAFT: build the new qdisc (with its default child), then
    /// put it into the slot, purging the previous occupant.
    #[allow(clippy::too_many_arguments)]
    fn create_and_graft(
        &mut self,
        slot: usize,
        p_idx: Option<usize>,
        minor: u16,
        handle: Option<u16>,
        allowed: bool,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        auto: &mut AutoHandles,
    ) -> Result<(), TcError> {
        if !allowed {
            return Err(TcError::NotFound);
        }
        let handle = match handle {
            Some(h) => h,
            None => auto.alloc(|h| self.find(h).is_some()).ok_or_else(|| {
                TcError::Invalid("Maximum number of qdisc handles was exceeded".into())
            })?,
        };
        self.check_netem_in_tree(spec, None)?;
        self.created += 1;
        let mut segment = self.build(spec, handle, slot == 0, ctx.now)?;
        if let Some(p) = p_idx {
            if !self.nodes[p].q.classful() {
                return Err(TcError::Invalid(format!(
                    "Operation not supported: qdisc {} has no classes to attach to",
                    self.nodes[p].q.kind()
                )));
            }
        }
        segment[0].parent_minor = minor;
        self.purge_from(slot, ctx);
        self.nodes.truncate(slot);
        self.nodes.extend(segment);
        self.fixup();
        Ok(())
    }

    /// sch_netem.c's check at `init` and `change` (Linux 6.16, "Restrict
    /// conditions for adding duplicating netems to qdisc tree"): a netem that
    /// duplicates may not share a device's tree with any other netem, nor may
    /// a netem join a tree holding a duplicating one. A duplicate is
    /// re-enqueued at the root, so two netems on its path copy each other's
    /// copies without end, at one instant. `spec` is being created (the qdiscs
    /// it replaces are still there, as in the kernel) or changes `nodes[at]`
    /// (which then does not count). SIM: applied in both profiles.
    fn check_netem_in_tree(&self, spec: &QdiscSpec, at: Option<usize>) -> Result<(), TcError> {
        let mut new = Vec::new();
        spec.netems(&mut new);
        if new.is_empty() {
            return Ok(());
        }
        let mut all = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if Some(i) != at {
                super::tree::chain_netems(std::slice::from_ref(n), &mut all);
            }
        }
        all.extend(new);
        netem_mix(&all)
    }

    /// `qdisc_create`: `init` of a new qdisc (validation included), followed
    /// by the default child it creates (tbf and red with `limit > 0`, sfb).
    fn build(
        &self,
        spec: &QdiscSpec,
        handle: u16,
        at_root: bool,
        now: SimTime,
    ) -> Result<Vec<Node>, TcError> {
        let stream = format!("{}/qdisc{}", self.dev, self.created);
        let env = BuildEnv {
            seed: self.seed,
            stream: &stream,
            profile: self.profile,
            now,
            at_root,
        };
        let built = AnyQdisc::build(spec, &env)?;
        let mut segment = vec![Node::new(handle, 0, false, built.qdisc)];
        segment.extend(
            built
                .default_child
                .map(|child| Node::new(0, 1, true, child)),
        );
        Ok(segment)
    }

    /// Graft an existing qdisc found deeper in the chain into `slot`: the
    /// qdiscs in between are destroyed (their own packets purged).
    fn graft_move(&mut self, slot: usize, j: usize, minor: u16, ctx: &mut QdiscCtx) {
        let purged = self.reset_nodes(slot..j, ctx);
        self.tell_ancestors(slot, purged);
        self.nodes.drain(slot..j);
        self.nodes[slot].parent_minor = minor;
        self.fixup();
    }

    /// Destroy `nodes[k..]`: free every packet they hold (purged) and tell the
    /// ancestors (`qdisc_tree_flush_backlog`).
    fn purge_from(&mut self, k: usize, ctx: &mut QdiscCtx) {
        let purged = self.reset_nodes(k..self.nodes.len(), ctx);
        self.tell_ancestors(k, purged);
    }

    /// Reset the qdiscs `nodes[range]`; what they freed.
    fn reset_nodes(&mut self, range: std::ops::Range<usize>, ctx: &mut QdiscCtx) -> Purged {
        let mut purged = Purged::default();
        for node in &mut self.nodes[range] {
            purged.add(node.reset(ctx));
        }
        purged
    }

    /// The ancestors of `nodes[k]` (`nodes[..k]`) learn that `purged` left
    /// their subtree as drops (`qdisc_tree_reduce_backlog`).
    pub(super) fn tell_ancestors(&mut self, k: usize, purged: Purged) {
        if purged.packets == 0 {
            return;
        }
        for node in &mut self.nodes[..k] {
            node.q.absorb(Reduce::purged(purged));
        }
    }

    /// `tc qdisc del` (`tc_get_qdisc` with RTM_DELQDISC).
    fn delete(&mut self, req: &TcRequest, ctx: &mut QdiscCtx) -> Result<(), TcError> {
        let handle = req.handle.filter(|&h| h != 0);
        let Some(parent) = req.parent else {
            if let Some(h) = handle {
                let idx = self.find(h).ok_or(TcError::NotFound)?;
                if let Some(spec) = &req.qdisc {
                    if spec.kind() != self.nodes[idx].q.kind() {
                        return Err(TcError::Invalid("Invalid qdisc name".into()));
                    }
                }
            }
            return Err(TcError::Invalid("Classid cannot be zero".into()));
        };
        let idx = match parent {
            ParentSpec::Root => 0,
            ParentSpec::Class { major, .. } => {
                let p = self.find(major).ok_or(TcError::NotFound)?;
                if !self.nodes[p].q.classful() {
                    return Err(TcError::NotFound);
                }
                p + 1
            }
        };
        let node = self.nodes.get(idx).ok_or(TcError::NotFound)?;
        if let Some(h) = handle {
            if node.handle != h {
                return Err(TcError::Invalid("Invalid handle".into()));
            }
        }
        if let Some(spec) = &req.qdisc {
            if spec.kind() != node.q.kind() {
                return Err(TcError::Invalid("Invalid qdisc name".into()));
            }
        }
        if node.handle == 0 {
            return Err(TcError::NotFound);
        }
        self.purge_from(idx, ctx);
        self.nodes.truncate(idx);
        if idx == 0 {
            self.nodes.push(Node::default_root(self.nic));
        }
        self.fixup();
        Ok(())
    }

    /// Position of the qdisc with handle major `h` (never a handle-0 one).
    fn find(&self, h: u16) -> Option<usize> {
        if h == 0 {
            return None;
        }
        self.nodes.iter().position(|n| n.handle == h)
    }

    /// Re-derive position-dependent flags after the chain changed.
    fn fixup(&mut self) {
        for (i, n) in self.nodes.iter_mut().enumerate() {
            n.q.placed(i == 0);
        }
    }
}
