//! Answer bodies against a generated request: every accepted answer fits the request.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = clarify_fuzz::run_answer(&mut arbitrary::Unstructured::new(data));
});
