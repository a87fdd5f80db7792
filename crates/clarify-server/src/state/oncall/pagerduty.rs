//! PagerDuty's REST API, as far as who is on call: `GET /oncalls` filtered by one schedule or
//! one escalation policy, with the users included (their e-mail addresses), authorised by
//! `Authorization: Token token=…`.

use serde::Deserialize;

use super::{OnCallUser, Provider, failure, refusal};

/// What the on-calls are filtered by.
pub(super) enum Filter<'a> {
    Schedule(&'a str),
    /// Whoever is on call at the policy's first level.
    Policy(&'a str),
}

#[derive(Deserialize)]
struct OnCalls {
    oncalls: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    user: User,
    #[serde(default)]
    escalation_level: Option<u32>,
}

#[derive(Deserialize)]
struct User {
    id: String,
    /// Present with `include[]=users`.
    #[serde(default)]
    email: Option<String>,
}

/// Who is on call now for `filter`.
pub(super) async fn on_call(
    client: &reqwest::Client,
    provider: &Provider,
    filter: Filter<'_>,
) -> Result<Vec<OnCallUser>, String> {
    let mut url = reqwest::Url::parse(&format!("{}/oncalls", provider.api_url))
        .map_err(|e| format!("[oncall.pagerduty] api_url is not a URL: {e}"))?;
    {
        let mut query = url.query_pairs_mut();
        match filter {
            Filter::Schedule(id) => query.append_pair("schedule_ids[]", id),
            Filter::Policy(id) => query.append_pair("escalation_policy_ids[]", id),
        };
        query.append_pair("include[]", "users");
        query.append_pair("earliest", "true");
    }
    let response = client
        .get(url)
        .header(
            reqwest::header::AUTHORIZATION,
            format!("Token token={}", provider.token),
        )
        .header(
            reqwest::header::ACCEPT,
            "application/vnd.pagerduty+json;version=2",
        )
        .send()
        .await
        .map_err(|e| failure("PagerDuty", &e))?;
    if !response.status().is_success() {
        return Err(refusal("PagerDuty", response).await);
    }
    let body: OnCalls = response
        .json()
        .await
        .map_err(|e| format!("PagerDuty's answer is not a list of on-calls: {e}"))?;
    let first_level = body.oncalls.iter().filter_map(|e| e.escalation_level).min();
    let mut users: Vec<OnCallUser> = Vec::new();
    for entry in body.oncalls {
        if matches!(filter, Filter::Policy(_)) && entry.escalation_level != first_level {
            continue;
        }
        let user = OnCallUser {
            id: Some(entry.user.id),
            email: entry.user.email,
        };
        if !users.contains(&user) {
            users.push(user);
        }
    }
    Ok(users)
}
