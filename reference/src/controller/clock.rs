//! The controller's clock, injected so tests (and the harness's virtual time) drive it.

use std::sync::Mutex;

use crate::time::Time;

/// A source of the current instant.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Time;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Time {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Time::from_micros(i64::try_from(since.as_micros()).unwrap_or(i64::MAX))
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock(Mutex<Time>);

impl ManualClock {
    /// A clock at `t`.
    pub fn new(t: Time) -> Self {
        ManualClock(Mutex::new(t))
    }

    /// Sets the time.
    pub fn set(&self, t: Time) {
        if let Ok(mut now) = self.0.lock() {
            *now = t;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Time {
        self.0.lock().map(|t| *t).unwrap_or_default()
    }
}
