//! Integration tests of the core model, one module per topic, compiled into one binary.

mod agui;
mod answers;
mod approvals;
mod coercion;
mod decisions;
mod display;
mod outcomes;
mod policy;
mod properties;
mod regressions;
mod replies;
mod rules;
mod tools;
mod transcript;
mod validation;
