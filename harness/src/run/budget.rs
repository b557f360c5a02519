//! A case's budget for target-controlled text: every tick's trace is charged against it, and a
//! tick that does not fit keeps none of the target's text (the caps are [`crate::kept`]'s).

use crate::kept::{CASE_BUDGET_BYTES, TICK_BUDGET_BYTES};
use crate::run::trace::TickTrace;

/// A case's budget for target-controlled text ([`CASE_BUDGET_BYTES`] and [`TICK_BUDGET_BYTES`]
/// for each of its ticks), shared by the traces of all its HPAs.
#[derive(Debug, Clone)]
pub struct Budget {
    left: usize,
}

impl Budget {
    /// The budget of a case of `ticks` ticks (of all its HPAs).
    pub fn for_ticks(ticks: usize) -> Budget {
        Budget {
            left: CASE_BUDGET_BYTES.saturating_add(ticks.saturating_mul(TICK_BUDGET_BYTES)),
        }
    }

    /// Charges a tick's target-controlled text to the budget; when it does not fit, the tick
    /// keeps none of it and is marked ([`Truncated::over_budget`]). A tick is kept whole or not
    /// at all, never cut in the middle of a list.
    pub fn charge(&mut self, tick: &mut TickTrace) {
        let size = target_bytes(tick);
        if size <= self.left {
            self.left -= size;
            return;
        }
        self.left = 0;
        tick.metrics = Vec::new();
        tick.conditions = String::new();
        tick.events = Vec::new();
        tick.detail.metrics = Vec::new();
        tick.detail.conditions = Vec::new();
        tick.truncated
            .get_or_insert_with(Default::default)
            .over_budget = true;
    }
}

/// The bytes of a tick's trace that the target controls.
fn target_bytes(t: &TickTrace) -> usize {
    let strings = t
        .metrics
        .iter()
        .chain(&t.events)
        .map(String::len)
        .sum::<usize>();
    let conditions = t
        .detail
        .conditions
        .iter()
        .map(|c| c.type_.len() + c.status.len() + c.reason.len() + c.message.len())
        .sum::<usize>();
    let metrics = t
        .detail
        .metrics
        .iter()
        .map(|m| m.label.len())
        .sum::<usize>();
    strings + t.conditions.len() + conditions + metrics
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::MAX_TEXT_BYTES;

    #[test]
    fn a_tick_over_the_case_budget_keeps_none_of_the_targets_text() {
        let tick = |events: usize| TickTrace {
            events: vec!["x".repeat(MAX_TEXT_BYTES); events],
            conditions: "AbleToScale=True/Flood".into(),
            ..TickTrace::default()
        };
        let mut budget = Budget::for_ticks(3);
        let fits = (CASE_BUDGET_BYTES + 3 * TICK_BUDGET_BYTES) / (MAX_TEXT_BYTES * 64 + 22);
        for _ in 0..fits {
            let mut t = tick(64);
            budget.charge(&mut t);
            assert_eq!(t.events.len(), 64);
            assert_eq!(t.truncated, None);
        }
        let mut t = tick(64);
        budget.charge(&mut t);
        assert!(t.events.is_empty() && t.conditions.is_empty());
        let mark = t.truncated.expect("marked");
        assert!(mark.over_budget);
        assert!(
            mark.to_string().starts_with(
                "the case's budget for the target's text (1 MiB and 4 KiB a tick) is spent"
            ),
            "{mark}"
        );
        // Spent: even a small tick keeps nothing more, a tick without text is unmarked.
        let mut small = tick(0);
        budget.charge(&mut small);
        assert!(small.truncated.is_some_and(|m| m.over_budget));
        let mut none = TickTrace::default();
        budget.charge(&mut none);
        assert_eq!(none.truncated, None);
    }
}
