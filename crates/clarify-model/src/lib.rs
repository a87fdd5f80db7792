//! The plain data that the store, the renderers, the chat platforms and the server all read:
//! what a stored request looks like ([`RequestRecord`]), what happened to it ([`Event`],
//! [`EventKind`]), who did it ([`Actor`]), the figures of an insights reading ([`Insights`]),
//! the HMAC every signature is made with ([`sign`]), the signed receipts of decisions
//! ([`receipt`]), and the JSON a server writes of a request and its outcome, which clients read
//! back into the same types ([`wire`]).
//!
//! It sits below the store so that a layer which only reads these types (a chat platform
//! rendering a request, the charts drawing figures) does not depend on the store's database
//! drivers: this crate does no I/O and pulls in no database or network crate, which a test over
//! `cargo tree` keeps so. The store makes and keeps these values; `clarify_store` re-exports
//! them under their old paths.

pub mod code;
pub mod figures;
pub mod receipt;
pub mod record;
pub mod sign;
pub mod wire;

pub use code::{SHORT_CODE_LEN, is_short_code_of, read_short_code, short_code};
pub use figures::{
    AGES, AgeFigures, DayFigures, FAST_APPROVAL_SECONDS, Insights, ResponderFigures,
    SurfaceFigures, TimeToDecision, ToolFigures,
};
pub use record::{Actor, Event, EventKind, OnCallShift, RequestRecord, StepUp, StoredResolution};
