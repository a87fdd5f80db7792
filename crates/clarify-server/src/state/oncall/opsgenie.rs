//! Opsgenie's Who Is On Call API: `GET /v2/schedules/{schedule}/on-calls?flat=true` by the
//! schedule's name (or its id, when it is a UUID), authorised by `Authorization: GenieKey …`;
//! it answers the on-call people's e-mail addresses (`data.onCallRecipients`).

use serde::Deserialize;

use super::{OnCallUser, Provider, failure, refusal};

#[derive(Deserialize)]
struct Answer {
    data: Data,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    #[serde(default)]
    on_call_recipients: Vec<String>,
}

/// Who is on call now for the schedule `schedule` (a name, or an id).
pub(super) async fn on_call(
    client: &reqwest::Client,
    provider: &Provider,
    schedule: &str,
) -> Result<Vec<OnCallUser>, String> {
    let mut url = reqwest::Url::parse(&provider.api_url)
        .map_err(|e| format!("[oncall.opsgenie] api_url is not a URL: {e}"))?;
    url.path_segments_mut()
        .map_err(|()| "[oncall.opsgenie] api_url cannot have a path".to_owned())?
        .pop_if_empty()
        .extend(["v2", "schedules", schedule, "on-calls"]);
    let by = if is_uuid(schedule) { "id" } else { "name" };
    url.query_pairs_mut()
        .append_pair("scheduleIdentifierType", by)
        .append_pair("flat", "true");
    let response = client
        .get(url)
        .header(
            reqwest::header::AUTHORIZATION,
            format!("GenieKey {}", provider.token),
        )
        .send()
        .await
        .map_err(|e| failure("Opsgenie", &e))?;
    if !response.status().is_success() {
        return Err(refusal("Opsgenie", response).await);
    }
    let answer: Answer = response
        .json()
        .await
        .map_err(|e| format!("Opsgenie's answer names no on-call recipients: {e}"))?;
    let mut users: Vec<OnCallUser> = Vec::new();
    for email in answer.data.on_call_recipients {
        let user = OnCallUser {
            id: None,
            email: Some(email),
        };
        if !users.contains(&user) {
            users.push(user);
        }
    }
    Ok(users)
}

/// Whether `text` is written like a UUID (`8-4-4-4-12` hex digits), as Opsgenie's ids are.
fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}
