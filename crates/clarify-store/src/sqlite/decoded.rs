//! How a request row is read: its columns ([`row_parts`]), and what the stored JSON of recently
//! used requests decodes to, kept by id. Below `requests` and `insights`, which both read rows.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use clarify_core::{Answers, NewRequest, Resolution};

use super::lock;
use crate::codec::RowParts;
use crate::error::StoreError;
use crate::record::{RequestRecord, StoredResolution};

/// A request row's columns, in the order of [`crate::codec::COLUMNS`].
pub(super) fn row_parts(row: &rusqlite::Row<'_>) -> rusqlite::Result<RowParts> {
    Ok(RowParts {
        id: row.get(0)?,
        tenant: row.get(1)?,
        status: row.get(2)?,
        spec: row.get(3)?,
        created_at: row.get(4)?,
        expires_at: row.get(5)?,
        resolved_at: row.get(6)?,
        answered_by: row.get(7)?,
        channel: row.get(8)?,
        answers: row.get(9)?,
        votes: row.get(10)?,
        remind_at: row.get(11)?,
        escalated_at: row.get(12)?,
        resolved_seq: row.get(13)?,
        resolved_principal: row.get(14)?,
        on_call: row.get(15)?,
    })
}

/// Requests whose decoded form is kept (see [`Decoded`]), and how much of their stored text: a
/// round trip needs only its own request, and requests may be up to tens of kilobytes each.
const MAX_DECODED: usize = 1024;
const MAX_DECODED_BYTES: usize = 1 << 20;

/// What the stored JSON of recently used requests decodes to, by request id, so a round trip
/// (the create, the answer's read, the resolution, the waiter's reads) parses a request's JSON
/// at most once instead of at every read.
///
/// An entry is used only for a row whose text is exactly the text it was decoded from, so it
/// cannot go stale: another process sharing the file, a failed commit, a purge or a reused id
/// leave rows whose text either matches (and then means the same) or does not (and is parsed
/// as before). Comparing costs a `memcmp` of the text, against a parse and its allocations.
#[derive(Default)]
pub(super) struct Decoded {
    entries: Mutex<DecodedEntries>,
}

#[derive(Default)]
struct DecodedEntries {
    by_id: HashMap<String, DecodedRequest>,
    /// Ids in the order first kept; the oldest goes when full.
    order: VecDeque<String>,
    /// The stored text the entries hold.
    bytes: usize,
}

struct DecodedRequest {
    spec: String,
    request: Arc<NewRequest>,
    /// An answered request's stored answers, and what they decode to.
    answers: Option<(String, Answers)>,
    /// Whether this process created it announced on a channel; `None` when another did, or
    /// not known.
    announced: Option<bool>,
}

impl Decoded {
    /// Decodes a request row, reusing what its text decoded to before; `known` is the answers
    /// the caller just stored, with their text.
    pub(super) fn decode(
        &self,
        parts: RowParts,
        known: Option<(String, Answers)>,
    ) -> Result<RequestRecord, StoreError> {
        let (request, recalled) = {
            let entries = lock(&self.entries);
            match entries.by_id.get(&parts.id) {
                Some(d) if d.spec == parts.spec => {
                    let answers = match (&d.answers, &parts.answers) {
                        (Some((text, answers)), Some(stored)) if text == stored => {
                            Some(answers.clone())
                        }
                        _ => None,
                    };
                    (Some(Arc::clone(&d.request)), answers)
                }
                _ => (None, None),
            }
        };
        let new_spec = request.is_none().then(|| parts.spec.clone());
        let new_answers = match recalled {
            Some(_) => None,
            None => parts.answers.clone(),
        };
        let answers = recalled.or_else(|| {
            known
                .filter(|(text, _)| parts.answers.as_ref() == Some(text))
                .map(|(_, answers)| answers)
        });
        let id = (new_spec.is_some() || new_answers.is_some()).then(|| parts.id.clone());
        let record = parts.decode_reusing(request, answers)?;
        if let Some(id) = id {
            let answers = match (&record.resolution, new_answers) {
                (
                    Some(StoredResolution {
                        resolution: Resolution::Answered(a),
                        ..
                    }),
                    Some(text),
                ) => Some((text, a.clone())),
                _ => None,
            };
            self.remember(&id, new_spec, &record.request, answers, None);
        }
        Ok(record)
    }

    /// Whether request `id`, stored with `spec`, was created here and announced on no
    /// channel: then it has no announcement to follow up.
    pub(super) fn unannounced(&self, id: &str, spec: &str) -> bool {
        lock(&self.entries)
            .by_id
            .get(id)
            .is_some_and(|d| d.announced == Some(false) && d.spec == spec)
    }

    /// Keeps what request `id`'s `spec` and `answers` decode to, and whether it was announced
    /// when known; without `spec`, only adds `answers` to the entry already kept.
    pub(super) fn remember(
        &self,
        id: &str,
        spec: Option<String>,
        request: &Arc<NewRequest>,
        answers: Option<(String, Answers)>,
        announced: Option<bool>,
    ) {
        let text = |d: &DecodedRequest| d.spec.len() + d.answers.as_ref().map_or(0, |a| a.0.len());
        let mut entries = lock(&self.entries);
        let entries = &mut *entries;
        match (entries.by_id.get_mut(id), spec) {
            (Some(d), None) => {
                if answers.is_some() {
                    entries.bytes -= text(d);
                    d.answers = answers;
                    entries.bytes += text(d);
                }
            }
            (Some(d), Some(spec)) => {
                entries.bytes -= text(d);
                *d = DecodedRequest {
                    spec,
                    request: Arc::clone(request),
                    answers,
                    announced,
                };
                entries.bytes += text(d);
            }
            (None, None) => {}
            (None, Some(spec)) => {
                let d = DecodedRequest {
                    spec,
                    request: Arc::clone(request),
                    answers,
                    announced,
                };
                entries.bytes += text(&d);
                entries.order.push_back(id.to_owned());
                entries.by_id.insert(id.to_owned(), d);
            }
        }
        while entries.order.len() > MAX_DECODED || entries.bytes > MAX_DECODED_BYTES {
            let Some(oldest) = entries.order.pop_front() else {
                break;
            };
            if let Some(d) = entries.by_id.remove(&oldest) {
                entries.bytes -= text(&d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_requests_keep_the_newest_within_their_bound() {
        let decoded = Decoded::default();
        let raw = serde_json::json!({"question": "Deploy?"});
        let request = Arc::new(
            clarify_core::parse_request(&raw, &clarify_core::Limits::default()).expect("request"),
        );
        let spec = "x".repeat(64 << 10);
        for i in 0..100 {
            decoded.remember(&format!("r{i}"), Some(spec.clone()), &request, None, None);
        }
        let entries = lock(&decoded.entries);
        assert_eq!(entries.by_id.len(), MAX_DECODED_BYTES / spec.len());
        assert!(entries.by_id.contains_key("r99") && !entries.by_id.contains_key("r0"));
        let held: usize = entries.by_id.values().map(|d| d.spec.len()).sum();
        assert_eq!(entries.bytes, held);
    }
}
