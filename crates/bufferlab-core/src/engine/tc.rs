//! `tc` on the simulator: the `tc qdisc|class|filter` verbs on an interface's
//! qdisc tree, the ingress/clsact hook and its filters, and `tc qdisc show`.
//! Follows net/sched/sch_api.c (`tc_modify_qdisc`, `tc_get_qdisc`, `tc_dump_qdisc`),
//! net/sched/cls_api.c (`tc_new_tfilter`, `tc_del_tfilter`) and net/sched/sch_ingress.c.

use super::iface::root_snap;
use super::Simulator;
use crate::error::Result;
use crate::qdisc::ingress::Hook;
use crate::qdisc::spec::{FilterVerb, HookFilterRequest, HookSide};
use crate::qdisc::{AutoHandles, ParentSpec, QdiscSpec, QdiscStats, TcVerb};
use crate::qdisc::{ClassRequest, FilterRequest, QdiscCtx, QdiscInfo, QdiscTree, TcRequest};
use crate::topology::IfaceId;
use serde_json::{json, Value};

impl Simulator {
    /// One `tc qdisc` verb (a graft when its parent is a class, class_api/).
    pub fn tc(&mut self, req: &TcRequest) -> Result<()> {
        let iface = self.tc_iface(&req.dev)?;
        if is_hook_request(req) && self.ifaces[iface].tree.graft_slot(req).is_none() {
            return self.hook_tc(iface, req);
        }
        self.tc_on(iface, |tree, ctx, auto| tree.apply(req, ctx, auto))
    }

    /// One `tc class` verb: the kernel's warning for `tc` to print, if any.
    pub fn tc_class(&mut self, req: &ClassRequest) -> Result<Option<String>> {
        let iface = self.tc_iface(&req.dev)?;
        self.tc_on(iface, |tree, ctx, _| tree.class_request(req, ctx))
    }

    /// One `tc filter` verb on a qdisc's u32 filters.
    pub fn tc_filter(&mut self, req: &FilterRequest) -> Result<()> {
        let iface = self.tc_iface(&req.dev)?;
        self.tc_on(iface, |tree, _, _| tree.filter_request(req))
    }

    fn tc_iface(&self, dev: &str) -> Result<IfaceId> {
        Ok(self
            .topo
            .iface_by_name(dev)
            .ok_or_else(|| crate::error::TcError::NoDevice(dev.to_string()))?)
    }

    /// Apply one `tc` verb to `iface`'s qdiscs: what it changed goes to the
    /// queue trace, and on success the interface is kicked (a change may
    /// release packets at once: tbf refills its bucket).
    fn tc_on<T>(
        &mut self,
        iface: IfaceId,
        verb: impl FnOnce(
            &mut QdiscTree,
            &mut QdiscCtx,
            &mut AutoHandles,
        ) -> std::result::Result<T, crate::error::TcError>,
    ) -> Result<T> {
        let before = self
            .obs
            .traced(iface)
            .then(|| root_snap(&self.ifaces[iface]));
        let ifc = &mut self.ifaces[iface];
        let mut ctx = QdiscCtx::new(
            self.now,
            &mut self.arena,
            &mut ifc.drops,
            &mut self.reinject_buf,
        );
        let out = verb(&mut ifc.tree, &mut ctx, &mut self.auto_handles)?;
        if let Some(before) = before {
            let after = root_snap(&self.ifaces[iface]);
            let t = self.now.as_nanos();
            self.obs
                .with_trace(iface, |tr| tr.on_other(t, before, after));
        }
        self.kick(iface);
        self.settle_tsq();
        Ok(out)
    }

    pub fn qdisc_show(&self, dev: &str) -> Result<Vec<QdiscInfo>> {
        let iface = self
            .topo
            .iface_by_name(dev)
            .ok_or_else(|| crate::error::TcError::NoDevice(dev.to_string()))?;
        let ifc = &self.ifaces[iface];
        let mut blocks = ifc.tree.show();
        if let Some(h) = &ifc.hook {
            // after the transmit qdiscs, as tc lists the ingress queue's
            blocks.push(QdiscInfo {
                kind: if h.clsact { "clsact" } else { "ingress" },
                handle: 0xffff,
                parent: Some((0xffff, 0xfff1)),
                anonymous: false,
                options: serde_json::to_value(&h.spec).unwrap_or(Value::Null),
                stats: QdiscStats {
                    bytes: h.stats.bytes,
                    packets: h.stats.packets,
                    drops: h.stats.drops,
                    ..QdiscStats::default()
                },
                xstats: Some(json!({ "police": h.police_stats() })),
            });
        }
        Ok(blocks)
    }

    /// `tc filter show dev DEV [parent P]` (cls_api.c `tc_dump_tfilter`):
    /// without a parent the root qdisc's filters, `ffff:…` a hook's, `M:`
    /// those of the qdisc of handle M; nothing where there is no such qdisc
    /// or block (qdisc/filter_show.rs).
    pub fn filter_show(
        &mut self,
        dev: &str,
        parent: Option<u32>,
    ) -> Result<crate::qdisc::filter_show::FilterDump> {
        let iface = self.tc_iface(dev)?;
        let ifc = &mut self.ifaces[iface];
        Ok(match parent {
            Some(p) if p >> 16 == 0xffff => ifc
                .hook
                .as_ref()
                .map_or_else(Default::default, |h| h.filter_dump(p & 0xffff, self.now)),
            Some(p) if p & 0xffff != 0 => Default::default(),
            Some(p) => ifc.tree.filter_show(Some((p >> 16) as u16)),
            None => ifc.tree.filter_show(None),
        })
    }

    /// `tc class show`: the `qdisc_show` blocks, each walk-listed kind's
    /// classes added to its xstats as `classes` (cake's flows,
    /// `Qdisc::walked_classes`), computed now and only here.
    pub fn class_show(&self, dev: &str) -> Result<Vec<QdiscInfo>> {
        let mut blocks = self.qdisc_show(dev)?;
        if let Some(iface) = self.topo.iface_by_name(dev) {
            self.ifaces[iface]
                .tree
                .add_walked_classes(&mut blocks, self.now);
        }
        Ok(blocks)
    }

    /// `tc qdisc add|replace|change|del … ingress|clsact` (sch_api.c with
    /// the ingress queue as the only slot; docs/semantics/qdiscs.md §21).
    fn hook_tc(&mut self, iface: IfaceId, req: &TcRequest) -> Result<()> {
        use crate::error::TcError;
        let (clsact, spec) = match &req.qdisc {
            Some(QdiscSpec::Ingress(s)) => (false, Some(s)),
            Some(QdiscSpec::Clsact(s)) => (true, Some(s)),
            None => (false, None),
            Some(other) => {
                return Err(TcError::Invalid(format!(
                    "{} cannot be attached at ffff:fff1 (only ingress or clsact)",
                    other.kind()
                ))
                .into())
            }
        };
        let existing = self.ifaces[iface].hook.as_ref().map(|h| h.clsact);
        if req.verb == TcVerb::Delete {
            let Some(was_clsact) = existing else {
                return Err(TcError::Invalid(
                    "Cannot find specified qdisc on specified device".into(),
                )
                .into());
            };
            if spec.is_some() && was_clsact != clsact {
                return Err(TcError::Invalid("Invalid qdisc name".into()).into());
            }
            self.ifaces[iface].hook = None;
            return Ok(());
        }
        let spec = spec
            .ok_or_else(|| TcError::Invalid("a qdisc kind is required for this command".into()))?;
        let old = match (req.verb, existing) {
            (TcVerb::Add, Some(_)) => return Err(TcError::Exists.into()),
            (TcVerb::Change, None) => return Err(TcError::NotFound.into()),
            // the same handle ffff: with another kind (tc_modify_qdisc)
            (_, Some(c)) if c != clsact => {
                return Err(TcError::Invalid("Invalid qdisc name".into()).into())
            }
            (_, Some(_)) => self.ifaces[iface].hook.take(),
            _ => None,
        };
        // change/replace of the same kind: sch_ingress has no options to
        // change, the filters stay
        let spec = match (req.verb, &old) {
            (TcVerb::Change | TcVerb::Replace, Some(h)) => h.spec.clone(),
            _ => spec.clone(),
        };
        self.rebuild_hook(iface, clsact, &spec, old)
    }

    /// `tc filter add|delete` at a receive or transmit hook (cls_api.c
    /// `tc_new_tfilter`/`tc_del_tfilter` on the ingress/clsact block): `add`
    /// appends the filter (an automatic prio one below the highest,
    /// `tcf_auto_prio`), `delete` removes those of its prio (every one for
    /// prio 0). Policers of the filters that stay keep their state.
    pub fn tc_hook_filter(&mut self, req: &HookFilterRequest) -> Result<()> {
        use crate::error::TcError;
        let iface = self.tc_iface(&req.dev)?;
        let Some(hook) = &self.ifaces[iface].hook else {
            return Err(TcError::FilterExtack("Parent Qdisc doesn't exists".into()).into());
        };
        let clsact = hook.clsact;
        if req.hook == HookSide::Egress && !clsact {
            return Err(TcError::FilterExtack("Specified class doesn't exist".into()).into());
        }
        let mut spec = hook.spec.clone();
        let filters = match req.hook {
            HookSide::Ingress => &mut spec.ingress,
            HookSide::Egress => &mut spec.egress,
        };
        match (req.verb, &req.filter) {
            (FilterVerb::Delete, _) => {
                // tc_del_tfilter: prio 0 flushes the chain, another names a tcf_proto
                if req.prio != 0 && !filters.iter().any(|f| f.prio == req.prio) {
                    return Err(TcError::FilterExtack(
                        "Filter with specified priority/protocol not found".into(),
                    )
                    .into());
                }
                filters.retain(|f| req.prio != 0 && f.prio != req.prio)
            }
            (FilterVerb::Add, Some(f)) => {
                let mut f = f.clone();
                if f.prio == 0 {
                    f.prio = crate::qdisc::ingress::auto_prio(filters.iter().map(|f| f.prio))?;
                }
                filters.push(f);
            }
            (FilterVerb::Add, None) => {
                return Err(TcError::Invalid("a filter is required for this command".into()).into())
            }
        }
        let old = self.ifaces[iface].hook.take();
        self.rebuild_hook(iface, clsact, &spec, old)
    }

    /// Build `iface`'s hook from `spec`, reusing what `old` built of the
    /// same filters; on error `old` stays.
    fn rebuild_hook(
        &mut self,
        iface: IfaceId,
        clsact: bool,
        spec: &crate::qdisc::spec::HookSpec,
        old: Option<Hook>,
    ) -> Result<()> {
        let topo = &self.topo;
        // the namespace's action tables: the other hooks of the node
        let node = topo.iface_node[iface];
        let taken: Vec<_> = topo.node_ifaces[node]
            .iter()
            .filter(|&&i| i != iface)
            .filter_map(|&i| self.ifaces[i].hook.as_ref())
            .flat_map(|h| h.action_indexes())
            .collect();
        let built = Hook::new(
            iface,
            clsact,
            spec,
            self.now,
            &|d| topo.iface_by_name(d),
            old.as_ref(),
            &taken,
        );
        match built {
            Ok(h) => {
                self.ifaces[iface].hook = Some(h);
                Ok(())
            }
            Err(e) => {
                self.ifaces[iface].hook = old;
                Err(e.into())
            }
        }
    }
}

/// Does this `tc qdisc` request address the ingress queue (`ingress`,
/// `clsact`, `parent ffff:fff1`, or a delete of handle `ffff:`)?
fn is_hook_request(req: &TcRequest) -> bool {
    matches!(
        req.qdisc,
        Some(QdiscSpec::Ingress(_) | QdiscSpec::Clsact(_))
    ) || req.parent
        == Some(ParentSpec::Class {
            major: 0xffff,
            minor: 0xfff1,
        })
        || (req.verb == TcVerb::Delete && req.parent.is_none() && req.handle == Some(0xffff))
}
