//! Imports nothing else of this crate, so every room may use it and no room needs another for
//! what is here.
//!
//! The vocabulary the doors share: every error response ([`error`]), the A2A task a request is
//! ([`a2a`], for `/a2a` and its push notifications), request bodies and queries read with the
//! API's errors ([`extract`]), HMACs, constant-time comparison, hex and the answer link's token
//! ([`sign`]), a display block's image as a response ([`media`]), and the guard of outbound
//! calls to addresses others chose ([`outbound`]). The JSON of a request and its outcome is
//! `clarify_model::wire`, since the clients read it back into the same types; HTML escaping and
//! the insights' charts are `clarify-render`'s (`html`, `charts`), which `clarify report` draws
//! with too. `tests/it/structure.rs` fails, naming the file, line and path, when anything here
//! refers to the crate outside this folder.

pub mod a2a;
pub mod error;
pub mod extract;
pub mod json;
pub mod media;
pub mod outbound;
pub mod sign;
