//! The step protocol's decoders: an implementation's answer line as the harness decodes it
//! (`protocol::decode_answer`), and a harness message as an implementation decodes it — a tick
//! then goes through `Tick::into_snapshot` and the reference core, as `hpa-step-reference` does.
//! No input panics.

#![no_main]

use hpa_harness::protocol::{ToImplementation, decode_answer};
use hpa_harness::targets::{CoreSession, Session};
use hpa_reference::{Memory, Settings};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    let _ = decode_answer(s);
    if let Ok(ToImplementation::Tick(tick)) = serde_json::from_str::<ToImplementation>(s) {
        if let Ok(snapshot) = (*tick).into_snapshot(None) {
            let mut session = CoreSession::new(Settings::default(), Memory::default());
            let _ = session.tick(&snapshot);
        }
    }
});
