//! What the fuzz targets share: generators of LLM-shaped input ([`shape`]) and the properties
//! every target checks on what the core parsers return ([`check`]).
//!
//! The targets in `fuzz_targets/` are thin: each turns the fuzzer's bytes into input (raw JSON, or
//! structured input through `arbitrary`) and hands it to a `check` function, which panics, and so
//! reports a crash, when a property does not hold.

pub mod check;
pub mod shape;

use arbitrary::{Result, Unstructured};
use clarify_core::Limits;

/// A server setting chosen by the fuzzer: `max_options` 1 to 24 and one of the default timeouts.
pub fn limits(u: &mut Unstructured<'_>) -> Result<Limits> {
    let max_options = u.int_in_range(1..=Limits::MAX_OPTIONS_CEILING)?;
    let timeout = *u.choose(&[
        0,
        Limits::DEFAULT_TIMEOUT_SECONDS,
        Limits::MAX_TIMEOUT_SECONDS,
    ])?;
    Ok(Limits::new(max_options, timeout).unwrap_or_default())
}

/// The request-shaped target: a generated request through coercion and validation.
pub fn run_request(u: &mut Unstructured<'_>) -> Result<()> {
    let limits = limits(u)?;
    let raw = shape::request(u)?;
    check::request(&raw, &limits);
    Ok(())
}

/// The answer target: a generated request, then generated answer bodies against it.
pub fn run_answer(u: &mut Unstructured<'_>) -> Result<()> {
    let limits = limits(u)?;
    let raw = shape::request(u)?;
    let Some(request) = check::request(&raw, &limits) else {
        return Ok(());
    };
    for _ in 0..u.int_in_range(1..=4)? {
        let body = shape::answer_body(u, &request)?;
        check::submission(&request, &body);
    }
    Ok(())
}

/// The typed-reply target: a generated request, then generated replies to each question.
pub fn run_reply(u: &mut Unstructured<'_>) -> Result<()> {
    let limits = limits(u)?;
    let raw = shape::request(u)?;
    let Some(request) = check::request(&raw, &limits) else {
        return Ok(());
    };
    for question in &request.questions {
        for _ in 0..u.int_in_range(1..=3)? {
            let reply = shape::reply(u, question)?;
            check::reply(&request, question, &reply);
        }
    }
    Ok(())
}
