//! HFSC's schedulers: the real-time criterion (eligible and deadline times
//! from the real-time curve, the class with the earliest deadline among the
//! eligible) and link sharing (virtual times from the link-sharing curve, the
//! child with the smallest virtual time at each level, bounded by the upper
//! limit curve). Follows net/sched/sch_hfsc.c (`init_ed`, `update_ed`,
//! `update_d`, `eltree_get_mindl`, `eltree_get_minel`, `init_vf`,
//! `update_vf`, `update_cfmin`, `vttree_get_minvt`).

use super::Hfsc;

impl Hfsc {
    /// `qdisc_peek_len` of a backlogged class, as last seen.
    pub(super) fn head_len(&self, i: usize) -> u32 {
        self.classes[i].head_len
    }

    /// `eltree_get_mindl`: among the classes eligible at `now`, the one with
    /// the smallest deadline.
    pub(super) fn get_mindl(&self, now: u64) -> Option<usize> {
        let mut el: Vec<(u64, u64, usize)> = self
            .classes
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.el.map(|s| (c.e, s, i)))
            .collect();
        el.sort_unstable();
        let mut best: Option<usize> = None;
        for (e, _, i) in el {
            if e > now {
                break;
            }
            if best.is_none_or(|b| self.classes[i].d < self.classes[b].d) {
                best = Some(i);
            }
        }
        best
    }

    /// `eltree_get_minel`
    pub(super) fn get_minel(&self) -> Option<usize> {
        self.classes
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.el.map(|s| (c.e, s, i)))
            .min()
            .map(|(_, _, i)| i)
    }

    /// The children of `p` in its vt tree, by (vt, insertion order).
    fn vt_children(&self, p: usize) -> Vec<usize> {
        let mut v: Vec<(u64, u64, usize)> = self
            .classes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.parent == Some(p))
            .filter_map(|(i, c)| c.vtn.map(|s| (c.vt, s, i)))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, _, i)| i).collect()
    }

    /// `update_cfmin`: the smallest fit time among `p`'s active children.
    fn update_cfmin(&mut self, p: usize) {
        let m = self
            .classes
            .iter()
            .filter(|c| c.parent == Some(p))
            .filter_map(|c| c.cfn.map(|s| (c.f, s)))
            .min();
        self.classes[p].cfmin = m.map_or(0, |(f, _)| f);
    }

    /// `vttree_get_minvt`: descend from the root by smallest vt among the
    /// children that fit at `now`.
    pub(super) fn get_minvt(&mut self, now: u64) -> Option<usize> {
        if self.classes[0].cfmin > now {
            return None;
        }
        let mut cl = 0;
        while self.classes[cl].level > 0 {
            let next = self
                .vt_children(cl)
                .into_iter()
                .find(|&c| self.classes[c].f <= now)?;
            let vt = self.classes[next].vt;
            let p = &mut self.classes[cl];
            if p.cvtmin < vt {
                p.cvtmin = vt;
            }
            cl = next;
        }
        Some(cl)
    }

    /// `init_ed`
    pub(super) fn init_ed(&mut self, i: usize, next_len: u32, now: u64) {
        let cl = &mut self.classes[i];
        let rsc = cl.rsc.expect("a real-time class");
        cl.deadline.min_with(&rsc, now, cl.cumul);
        cl.eligible = cl.deadline;
        if rsc.convex() {
            cl.eligible.dx = 0;
            cl.eligible.dy = 0;
        }
        cl.e = cl.eligible.y2x(cl.cumul);
        cl.d = cl.deadline.y2x(cl.cumul + next_len as u64);
        let s = self.next_seq();
        self.classes[i].el = Some(s);
    }

    /// `update_ed`
    pub(super) fn update_ed(&mut self, i: usize, next_len: u32) {
        let cl = &mut self.classes[i];
        cl.e = cl.eligible.y2x(cl.cumul);
        cl.d = cl.deadline.y2x(cl.cumul + next_len as u64);
        let s = self.next_seq();
        self.classes[i].el = Some(s);
    }

    /// `update_d`
    pub(super) fn update_d(&mut self, i: usize, next_len: u32) {
        let cl = &mut self.classes[i];
        cl.d = cl.deadline.y2x(cl.cumul + next_len as u64);
    }

    /// `init_vf`: class `i` becomes backlogged; activate it and every
    /// ancestor that was idle.
    pub(super) fn init_vf(&mut self, i: usize, now: u64) {
        let mut go_active = true;
        let mut cl = i;
        while let Some(p) = self.classes[cl].parent {
            if go_active {
                let c = &mut self.classes[cl];
                go_active = c.nactive == 0;
                c.nactive += 1;
            }
            if go_active {
                let max_vt = self.vt_children(p).last().map(|&m| self.classes[m].vt);
                match max_vt {
                    Some(max) => {
                        let pc = &self.classes[p];
                        let mut vt = max;
                        if pc.cvtmin != 0 {
                            vt = (pc.cvtmin + vt) / 2;
                        }
                        let (pperiod, _) = (pc.vtperiod, ());
                        let c = &mut self.classes[cl];
                        if pperiod != c.parentperiod || vt > c.vt {
                            c.vt = vt;
                        }
                    }
                    None => {
                        let off = self.classes[p].cvtoff;
                        self.classes[cl].vt = off;
                        self.classes[p].cvtmin = 0;
                    }
                }
                let (pperiod, pnactive) = (self.classes[p].vtperiod, self.classes[p].nactive);
                let c = &mut self.classes[cl];
                if let Some(fsc) = c.fsc {
                    c.virt.min_with(&fsc, c.vt, c.total);
                }
                c.vtadj = 0;
                c.vtperiod += 1;
                c.parentperiod = pperiod;
                if pnactive == 0 {
                    c.parentperiod += 1;
                }
                c.f = 0;
                let s1 = self.next_seq();
                let s2 = self.next_seq();
                let c = &mut self.classes[cl];
                c.vtn = Some(s1);
                c.cfn = Some(s2);
                if let Some(usc) = c.usc {
                    c.ulimit.min_with(&usc, now, c.total);
                    c.myf = c.ulimit.y2x(c.total);
                }
            }
            let c = &self.classes[cl];
            let f = c.myf.max(c.cfmin);
            if f != c.f {
                self.classes[cl].f = f;
                let s = self.next_seq();
                self.classes[cl].cfn = Some(s);
            }
            self.update_cfmin(p);
            cl = p;
        }
    }

    /// `update_vf`: `len` bytes left class `i`; advance `total` and the
    /// virtual times on the path, deactivating what became idle.
    pub(super) fn update_vf(&mut self, i: usize, len: u32) {
        let mut go_passive = self.classes[i].qlen() == 0 && self.classes[i].fsc.is_some();
        let mut cl = i;
        while let Some(p) = self.classes[cl].parent {
            self.classes[cl].total += len as u64;
            if self.classes[cl].fsc.is_none() || self.classes[cl].nactive == 0 {
                cl = p;
                continue;
            }
            if go_passive {
                let c = &mut self.classes[cl];
                c.nactive -= 1;
                go_passive = c.nactive == 0;
            }
            let pcvtmin = self.classes[p].cvtmin;
            let c = &mut self.classes[cl];
            c.vt = c.virt.y2x(c.total).wrapping_add(c.vtadj);
            if c.vt < pcvtmin {
                c.vtadj += pcvtmin - c.vt;
                c.vt = pcvtmin;
            }
            if go_passive {
                let vt = c.vt;
                c.vtn = None;
                c.cfn = None;
                if vt > self.classes[p].cvtoff {
                    self.classes[p].cvtoff = vt;
                }
                self.update_cfmin(p);
                cl = p;
                continue;
            }
            let s = self.next_seq();
            let c = &mut self.classes[cl];
            c.vtn = Some(s);
            if c.usc.is_some() {
                c.myf = c.ulimit.y2x(c.total);
            }
            let f = c.myf.max(c.cfmin);
            if f != c.f {
                c.f = f;
                let s = self.next_seq();
                self.classes[cl].cfn = Some(s);
                self.update_cfmin(p);
            }
            cl = p;
        }
    }
}
