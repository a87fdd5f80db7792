//! Raw bytes as a create-request body: the first byte picks the server limits, the rest is parsed
//! as JSON (as the server does) and goes through coercion and validation.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((first, rest)) = data.split_first() else {
        return;
    };
    let Ok(raw) = serde_json::from_slice::<serde_json::Value>(rest) else {
        return;
    };
    let first = [*first, 0, 0, 0];
    let Ok(limits) = clarify_fuzz::limits(&mut Unstructured::new(&first)) else {
        return;
    };
    clarify_fuzz::check::request(&raw, &limits);
});
