//! `[[channels]]` as a list: each table is checked by its platform
//! ([`clarify_channels::RawChannel`], beside the platform's client), and what crosses
//! tables is checked here: every name is unique and none is taken by Web Push.

use clarify_channels::Channel;
use clarify_channels::RawChannel;

use super::Fail;

/// The channels `serve` announces on, in the file's order, their secrets read through `env`;
/// each table's first problem goes to `problems`, and the tables after it are still checked.
pub(super) fn check(
    raw: Vec<RawChannel>,
    env: &dyn Fn(&str) -> Option<String>,
    fail: Fail<'_>,
    problems: &mut super::Problems,
) -> Vec<Channel> {
    let mut channels: Vec<Channel> = Vec::with_capacity(raw.len());
    for (i, table) in raw.into_iter().enumerate() {
        let at = format!("channels[{i}]");
        let Some(channel) = problems.keep(
            table
                .check(env)
                .map_err(|e| fail(&format!("{at}.{}", e.key), e.problem)),
        ) else {
            continue;
        };
        if channel.name.starts_with(clarify_store::PUSH_CHANNEL_PREFIX) {
            problems.add(fail(
                &format!("{at}.name"),
                format!(
                    "{:?} starts with \"push:\", which names Web Push subscriptions; choose another name",
                    channel.name
                ),
            ));
            continue;
        }
        if channels.iter().any(|c| c.name == channel.name) {
            problems.add(fail(
                &format!("{at}.name"),
                format!(
                    "{:?} names two channels; each needs its own name",
                    channel.name
                ),
            ));
            continue;
        }
        channels.push(channel);
    }
    channels
}
