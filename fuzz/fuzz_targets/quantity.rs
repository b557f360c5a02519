//! The quantity parser (`hpa_reference::quantity`): any text parses or fails without a panic,
//! and a parsed milli-value formats to a text that parses back to it.

#![no_main]

use hpa_reference::quantity::{
    as_f64, format_milli_binary, format_milli_decimal, parse_milli, signum,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    let _ = signum(s);
    let _ = as_f64(s);
    if let Ok(milli) = parse_milli(s) {
        for text in [format_milli_decimal(milli), format_milli_binary(milli)] {
            assert_eq!(
                parse_milli(&text),
                Ok(milli),
                "{s:?} -> {milli} -> {text:?}"
            );
        }
    }
});
