//! LLM-shaped create-request bodies, generated from the input, through coercion and validation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = clarify_fuzz::run_request(&mut arbitrary::Unstructured::new(data));
});
