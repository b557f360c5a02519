//! What the harness keeps of what a target answers: the caps, in one place, that bound its memory
//! and its reports whatever an implementation sends (docs/command-line.md, "Limits").
//!
//! An answer is checked against the case's expectations whole, as it arrives, and then dropped
//! ([`crate::run`]); what a case keeps is its trace, and every text and list of it that the target
//! controls passes through these caps first: per tick at most [`MAX_ITEMS_PER_TICK`] events,
//! conditions and metrics, each text clipped to [`MAX_TEXT_BYTES`]; per case at most
//! [`CASE_BUDGET_BYTES`] plus [`TICK_BUDGET_BYTES`] a tick of such text in all ([`crate::run::Budget`]), after
//! which a tick keeps only the harness's own facts (times, replica and pod counts, the desired and current counts). What was
//! left out is marked on the tick ([`Truncated`]: the JSON report's `truncated`, a line in the
//! human report). No honest implementation comes near a cap, so they never change a verdict.
//!
//! The other bounds on an implementation: an answer line is at most
//! [`crate::targets::exec::pipes::MAX_LINE_BYTES`] and the stderr kept is its last
//! [`crate::targets::exec::pipes::STDERR_TAIL_BYTES`].

use std::fmt;

use serde::Serialize;

/// The most events, conditions and current metrics (each) a tick's trace keeps. Upstream records
/// at most a few events a sync and writes three condition types and one metric per spec metric.
pub const MAX_ITEMS_PER_TICK: usize = 64;

/// The longest text a trace keeps of one item (4 KiB): an event (`Type Reason: message`), a
/// condition's type, status, reason or message, a current metric. Upstream's longest messages
/// are a few hundred bytes.
pub const MAX_TEXT_BYTES: usize = 4 * 1024;

/// The target-controlled text (events, conditions, metrics) the traces of one case keep in all,
/// with [`TICK_BUDGET_BYTES`] for each of its ticks: 1 MiB. Beyond the budget a tick keeps none
/// ([`Truncated::over_budget`]).
pub const CASE_BUDGET_BYTES: usize = 1024 * 1024;

/// What each tick of a case adds to its budget (4 KiB), so a long case is never cut short: the
/// corpus's busiest tick on the reference has about 1 KiB of such text, its busiest case a
/// few hundred bytes a tick.
pub const TICK_BUDGET_BYTES: usize = 4 * 1024;

/// The longest expected or actual text a failure keeps (16 KiB): a failing events check, say,
/// lists the events the implementation sent.
pub const MAX_FAILURE_TEXT_BYTES: usize = 16 * 1024;

/// The longest error a case keeps (128 KiB): the diagnostic with the implementation's stderr tail.
pub const MAX_ERROR_BYTES: usize = 128 * 1024;

/// The longest name an implementation's `hello` may give itself in reports (`name version`).
pub const MAX_NAME_BYTES: usize = 256;

/// What a tick's trace left out of the target's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Truncated {
    /// Events beyond [`MAX_ITEMS_PER_TICK`], not kept.
    pub dropped_events: usize,
    /// Conditions beyond [`MAX_ITEMS_PER_TICK`], not kept.
    pub dropped_conditions: usize,
    /// Current metrics beyond [`MAX_ITEMS_PER_TICK`], not kept.
    pub dropped_metrics: usize,
    /// Texts cut to [`MAX_TEXT_BYTES`].
    pub clipped_texts: usize,
    /// The case's [`CASE_BUDGET_BYTES`] were spent: none of this tick's events, conditions and
    /// metrics is kept.
    pub over_budget: bool,
}

impl Truncated {
    /// Nothing was left out.
    pub fn is_empty(&self) -> bool {
        *self == Truncated::default()
    }

    /// Keeps the first [`MAX_ITEMS_PER_TICK`] of `items`, counting the others in `dropped`.
    pub fn first<'a, T>(items: &'a [T], dropped: &mut usize) -> &'a [T] {
        *dropped += items.len().saturating_sub(MAX_ITEMS_PER_TICK);
        &items[..items.len().min(MAX_ITEMS_PER_TICK)]
    }

    /// `s`, cut to [`MAX_TEXT_BYTES`] (counted) when longer.
    pub fn text(&mut self, s: String) -> String {
        match crate::util::text::clip_bytes(&s, MAX_TEXT_BYTES) {
            Some(cut) => {
                self.clipped_texts += 1;
                cut
            }
            None => s,
        }
    }
}

impl fmt::Display for Truncated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.over_budget {
            parts.push(format!(
                "the case's budget for the target's text ({} MiB and {} KiB a tick) is spent: this tick's events, conditions and metrics are not kept",
                CASE_BUDGET_BYTES / (1024 * 1024),
                TICK_BUDGET_BYTES / 1024
            ));
        }
        for (n, what) in [
            (self.dropped_events, "events"),
            (self.dropped_conditions, "conditions"),
            (self.dropped_metrics, "metrics"),
        ] {
            if n > 0 {
                parts.push(format!(
                    "{n} more {what} than the {MAX_ITEMS_PER_TICK} kept"
                ));
            }
        }
        if self.clipped_texts > 0 {
            parts.push(format!(
                "{} texts cut to {} KiB",
                self.clipped_texts,
                MAX_TEXT_BYTES / 1024
            ));
        }
        write!(f, "{}", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_keeps_its_first_items_and_counts_the_rest() {
        let items: Vec<usize> = (0..MAX_ITEMS_PER_TICK + 5).collect();
        let mut dropped = 0;
        assert_eq!(
            Truncated::first(&items, &mut dropped).len(),
            MAX_ITEMS_PER_TICK
        );
        assert_eq!(dropped, 5);
        assert_eq!(Truncated::first(&items[..3], &mut dropped).len(), 3);
        assert_eq!(dropped, 5);
    }
}
