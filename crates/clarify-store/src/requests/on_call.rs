//! On-call schedules as responders: a request naming `oncall:...` among its `responders` (or
//! `escalate_to`) keeps who was on call, read through [`StoreOptions::on_call`] when it is
//! created and again when it escalates.
//!
//! What was read is kept with the request ([`OnCallShift`]) and appended to at each reading, so
//! the record shows who was on call when, and whoever a reading found may answer from then on
//! ([`RequestRecord::allows_responder`]). A schedule that cannot be read fails open: the
//! reading keeps why, the request's other responders answer it meanwhile, and the escalation
//! reads it again.
//!
//! [`StoreOptions::on_call`]: crate::StoreOptions::on_call
//! [`RequestRecord::allows_responder`]: crate::RequestRecord::allows_responder

use clarify_core::{NewRequest, ONCALL_PREFIX};

use crate::Store;
use crate::error::StoreError;
use crate::record::{OnCallShift, RequestRecord};

/// The `oncall:` responders a new request names: those of its `responders` (its `escalate_to`
/// are read when it escalates).
pub(super) fn on_call_names(request: &NewRequest) -> Vec<String> {
    request
        .responders
        .iter()
        .flatten()
        .filter(|n| n.starts_with(ONCALL_PREFIX))
        .cloned()
        .collect()
}

impl Store {
    /// Reads each of `names` for the request `id`: who is on call, or why that could not be
    /// read. Nothing is read for a request naming no schedule.
    pub(crate) async fn read_on_call(&self, id: &str, names: Vec<String>) -> Vec<OnCallShift> {
        let mut shifts = Vec::with_capacity(names.len());
        for responder in names {
            let read = match &self.inner.on_call {
                Some(reader) => (reader.0)(responder.clone()).await,
                None => Err("no on-call provider is configured ([oncall.pagerduty] or \
                             [oncall.opsgenie])"
                    .to_owned()),
            };
            let (people, unreadable) = match read {
                Ok(people) => (people, None),
                Err(why) => {
                    tracing::warn!(
                        request = id,
                        responder = responder.as_str(),
                        error = why.as_str(),
                        "the on-call schedule could not be read; the request's other \
                         responders may answer it, and the schedule is read again at its \
                         escalation"
                    );
                    (Vec::new(), Some(why))
                }
            };
            shifts.push(OnCallShift {
                responder,
                people,
                unreadable,
                read_at: self.now(),
            });
        }
        shifts
    }

    /// Reads the on-call schedules of a request that has just escalated (its `responders` and
    /// its `escalate_to`) again and keeps the reading with the earlier ones, so whoever is on
    /// call now may answer too. A request resolved meanwhile is left as it is.
    pub(crate) async fn reread_on_call(&self, record: &RequestRecord) -> Result<(), StoreError> {
        let names = record.on_call_responders();
        if names.is_empty() {
            return Ok(());
        }
        let mut shifts = record.on_call.clone();
        shifts.extend(self.read_on_call(&record.id, names).await);
        self.inner.backend.set_on_call(&record.id, &shifts).await?;
        Ok(())
    }
}
