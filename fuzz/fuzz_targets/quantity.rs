//! The quantity parser (`hpa_reference::quantity`): any text parses or fails without a panic,
//! the free functions agree with the quantity they read, and a parsed milli-value formats to a
//! text that parses back to it.
//!
//! With `HPA_QUANTITY_BIN` set to `adapters/upstream/bin/hpa-quantity` (`just upstream`), every
//! input is also read by apimachinery itself, in one long-lived process, and every answer must be
//! the reference's (tests/quantity_upstream.rs's oracle):
//! `HPA_QUANTITY_BIN=$PWD/adapters/upstream/bin/hpa-quantity just fuzz-inputs`.

#![no_main]

use std::sync::{Mutex, OnceLock};

use hpa_reference::quantity::{format_milli_binary, format_milli_decimal, parse_milli};
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/quantity_oracle.rs"]
mod quantity_oracle;

use quantity_oracle::{Upstream, free_functions_disagree, quick_for_upstream, reference};

/// apimachinery, when `HPA_QUANTITY_BIN` names it.
fn upstream() -> &'static Mutex<Option<Upstream>> {
    static UPSTREAM: OnceLock<Mutex<Option<Upstream>>> = OnceLock::new();
    UPSTREAM.get_or_init(|| {
        Mutex::new(std::env::var_os("HPA_QUANTITY_BIN").map(|path| {
            Upstream::start(std::path::Path::new(&path)).expect("HPA_QUANTITY_BIN starts")
        }))
    })
}

fuzz_target!(|s: &str| {
    let have = reference(s);
    assert_eq!(free_functions_disagree(s), None);
    if let Ok(milli) = parse_milli(s) {
        for text in [format_milli_decimal(milli), format_milli_binary(milli)] {
            assert_eq!(
                parse_milli(&text),
                Ok(milli),
                "{s:?} -> {milli} -> {text:?}"
            );
        }
    }
    if quick_for_upstream(s)
        && let Some(go) = upstream().lock().expect("not poisoned").as_mut()
    {
        let want = go.ask(&[s.to_owned()]).expect("hpa-quantity answers");
        assert_eq!(have, want[0], "{s:?}: reference vs apimachinery");
    }
});
