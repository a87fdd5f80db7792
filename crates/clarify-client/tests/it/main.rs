//! The client against a server that answers every call with one canned reply, so what a newer
//! or a refusing server sends can be fixed exactly.

mod records;
