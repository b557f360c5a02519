//! The pods' lifecycle: created when the scale grows, started and made ready per the case's
//! start-up model, removed when it shrinks (as a ReplicaSet picks them), replaced in rolling
//! updates, and changed by the timeline.

use std::collections::BTreeSet;

use super::{RolloutState, SimPod, World, WorldError, check_replicas, requests};
use crate::case::model::{IntOrPercent, Phase, PodChange, Rollout};

impl World {
    pub(super) fn add_pod(&mut self, created: i64, initial: bool) {
        self.pods.push(SimPod::new(
            format!("{}-{:04}", self.name, self.next_seq),
            created,
            initial,
            self.revision,
        ));
        self.next_seq += 1;
    }

    pub(super) fn phase_at(&self, p: &SimPod, t: i64) -> Phase {
        p.phase.unwrap_or(if t < p.created + self.pending_seconds {
            Phase::Pending
        } else {
            Phase::Running
        })
    }

    pub(super) fn start_of(&self, p: &SimPod) -> i64 {
        p.created + self.pending_seconds
    }

    /// (ready, last transition) at `t`.
    pub(super) fn ready_at(&self, p: &SimPod, t: i64) -> (bool, i64) {
        if p.no_ready_condition {
            return (false, p.created);
        }
        if let Some(r) = p.ready {
            return r;
        }
        if self.phase_at(p, t) == Phase::Pending {
            return (false, p.created);
        }
        let start = self.start_of(p);
        let ready_time = start + self.ready_after;
        if t >= ready_time {
            (true, ready_time)
        } else {
            (false, start)
        }
    }

    pub(super) fn active(&self, p: &SimPod, t: i64) -> bool {
        !p.deleted && !matches!(self.phase_at(p, t), Phase::Failed | Phase::Succeeded)
    }

    pub(super) fn serving(&self, p: &SimPod, t: i64) -> bool {
        !p.deleted && self.phase_at(p, t) == Phase::Running && self.ready_at(p, t).0
    }

    /// What a ReplicaSet does when pods stop being active (deleted, `Failed`, `Succeeded`): a new
    /// pod for each active pod short of `spec.replicas`. The inactive ones stay listed.
    pub(super) fn replace_inactive(&mut self, t: i64) {
        let active = self.pods.iter().filter(|p| self.active(p, t)).count();
        for _ in active..self.replicas.max(0) as usize {
            self.add_pod(t, false);
        }
    }

    /// Sets `spec.replicas` and adds or removes pods to match.
    pub fn set_replicas(&mut self, replicas: i32, t: i64) -> Result<(), WorldError> {
        self.replicas = check_replicas(replicas)?;
        let active: Vec<usize> = (0..self.pods.len())
            .filter(|i| self.active(&self.pods[*i], t))
            .collect();
        let want = self.replicas as usize;
        if active.len() < want {
            for _ in active.len()..want {
                self.add_pod(t, false);
            }
        } else if active.len() > want {
            // ReplicaSet ranking (older revisions first during a rollout).
            let excess = active.len() - want;
            let remove: BTreeSet<usize> = self.ranked(active, t).into_iter().take(excess).collect();
            let mut i = 0;
            self.pods.retain(|_| {
                let keep = !remove.contains(&i);
                i += 1;
                keep
            });
        }
        Ok(())
    }

    /// Pods in the order a ReplicaSet removes them: pending first, then not ready, then newest;
    /// during a rollout, pods of older revisions before those of the new one.
    pub(super) fn ranked(&self, mut pods: Vec<usize>, t: i64) -> Vec<usize> {
        pods.sort_by_key(|i| {
            let p = &self.pods[*i];
            let pending = self.phase_at(p, t) == Phase::Pending;
            let ready = self.ready_at(p, t).0;
            (
                p.revision,
                !pending,
                ready,
                std::cmp::Reverse(p.created),
                std::cmp::Reverse(*i),
            )
        });
        pods
    }

    /// Starts a rolling update: a new template revision (with the rollout's requests; the old
    /// pods keep the old template's), carried out from this tick on by [`World::advance`].
    pub(super) fn start_rollout(&mut self, r: &Rollout) {
        self.revision += 1;
        for (container, reqs) in r.requests.iter().flatten() {
            for (resource, milli) in requests(reqs) {
                let template = self
                    .containers
                    .iter_mut()
                    .chain(self.sidecars.iter_mut())
                    .chain(self.init_containers.iter_mut())
                    .find(|c| &c.name == container);
                // The loader checked the container exists and requests the resource.
                let Some(template) = template else { continue };
                let Some(slot) = template.requests.iter_mut().find(|(n, _)| *n == resource) else {
                    continue;
                };
                let old = std::mem::replace(&mut slot.1, milli);
                for p in self.pods.iter_mut().filter(|p| p.revision < self.revision) {
                    p.requests
                        .entry(container.clone())
                        .or_default()
                        .entry(resource.clone())
                        .or_insert(old);
                }
            }
        }
        self.rollout = Some(RolloutState {
            max_surge: r
                .max_surge
                .clone()
                .unwrap_or(IntOrPercent::Percent("25%".into())),
            max_unavailable: r
                .max_unavailable
                .clone()
                .unwrap_or(IntOrPercent::Percent("25%".into())),
            min_ready: i64::from(r.min_ready_seconds),
            termination: i64::from(r.termination_seconds.unwrap_or(30)),
        });
    }

    /// Whether a pod counts as available at `t`: Running, Ready, not deleting, and (during a
    /// rollout) Ready for the rollout's `minReadySeconds`.
    pub(super) fn available(&self, p: &SimPod, t: i64) -> bool {
        let min_ready = self.rollout.as_ref().map_or(0, |r| r.min_ready);
        self.serving(p, t) && t - self.ready_at(p, t).1 >= min_ready
    }

    pub(super) fn pick(
        &self,
        ordinals: &Option<Vec<usize>>,
        newest: Option<usize>,
        all: bool,
    ) -> Vec<usize> {
        let n = self.pods.len();
        if all {
            (0..n).collect()
        } else if let Some(k) = newest {
            (n.saturating_sub(k)..n).collect()
        } else {
            ordinals
                .iter()
                .flatten()
                .copied()
                .filter(|i| *i < n)
                .collect()
        }
    }

    pub(super) fn apply_pod_change(&mut self, c: &PodChange, t: i64) {
        for i in self.pick(&c.ordinals, c.newest, c.all) {
            if let Some(phase) = c.phase {
                self.pods[i].phase = Some(phase);
            }
            if let Some(start) = c.started_at {
                self.pods[i].created = start - self.pending_seconds;
                self.pods[i].ready = None;
            }
            if let Some(ready) = c.ready {
                let (now_ready, since) = self.ready_at(&self.pods[i], t);
                self.pods[i].ready = Some(if now_ready == ready {
                    (ready, since)
                } else {
                    (ready, t)
                });
            }
            if let Some(has) = c.ready_condition {
                self.pods[i].no_ready_condition = !has;
            }
            if let Some(since) = c.ready_since {
                let (now_ready, _) = self.ready_at(&self.pods[i], t);
                self.pods[i].ready = Some((now_ready, since));
            }
            if let Some(d) = c.deleted {
                self.pods[i].deleted = d;
            }
            for (container, reqs) in c.requests.iter().flatten() {
                let slot = self.pods[i].requests.entry(container.clone()).or_default();
                for (r, v) in requests(reqs) {
                    slot.insert(r, v);
                }
            }
        }
    }

    /// Each listed pod's template revision (0 before any rollout, one more with each), in the
    /// order [`World::pods`] lists them: how the cluster lane pairs them with a real rollout's
    /// pods (`cluster::rollout`).
    pub fn pod_revisions(&self) -> Vec<u32> {
        let mut revisions: Vec<u32> = self.pods.iter().map(|p| p.revision).collect();
        if self.newest_first {
            revisions.reverse();
        }
        revisions
    }

    /// The template's revision: how many rollouts the timeline has started.
    pub fn revision(&self) -> u32 {
        self.revision
    }

    /// Pods at `t`: (total, ready and running).
    pub fn pod_counts(&self, t: i64) -> (usize, usize) {
        let total = self.pods.iter().filter(|p| !p.deleted).count();
        let ready = self.pods.iter().filter(|p| self.serving(p, t)).count();
        (total, ready)
    }
}
