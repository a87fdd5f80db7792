//! Typed replies to the questions of a generated request: every accepted reply is an answer the
//! answer parser accepts as well.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = clarify_fuzz::run_reply(&mut arbitrary::Unstructured::new(data));
});
