//! The registry's machinery: [`platforms!`] turns the list of platforms in `lib.rs`, one line
//! each, into everything that dispatches on a platform, so that no list of platforms is written
//! twice and the compiler checks every one:
//! - the modules, `pub mod <platform>;`;
//! - `RawChannel`, a `[[channels]]` table tagged by its `type`, whose JSON Schema is the
//!   handbook's configuration reference;
//! - `AnyPlatform`, a configured channel's platform, with its name, its `[identities]`
//!   prefix, and its [`Platform`](crate::platform::Platform) methods dispatched;
//! - `NAMES`, every platform's `type`.
//!
//! A macro because each of these is an enum or a `match` over the same list: generics cannot
//! make an enum, and a trait object cannot be deserialized by its tag or described by a schema.

/// Declares the platforms: `Variant("type", module::Type)`, each with the doc line the
/// configuration reference shows for its `type`.
macro_rules! platforms {
    ($($(#[doc = $doc:literal])* $variant:ident($name:literal, $module:ident::$ty:ident),)+) => {
        $(pub mod $module;)+

        /// One `[[channels]]` entry; `type` says which platform, and which keys it takes.
        #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
        #[serde(tag = "type")]
        pub enum RawChannel {
            $(
                $(#[doc = $doc])*
                #[serde(rename = $name)]
                $variant(<$module::$ty as $crate::platform::Platform>::Table),
            )+
        }

        impl RawChannel {
            /// The channel this table describes, its secrets read through `env` (which resolves
            /// a `<key>_env` variable): the name first, then the platform's own keys.
            pub fn check(
                self,
                env: &dyn Fn(&str) -> Option<String>,
            ) -> Result<Channel, $crate::config::Invalid> {
                use $crate::config::PlatformTable;
                let secrets = $crate::config::SecretReader { env };
                match self {
                    $(
                        Self::$variant(table) => {
                            let name = $crate::config::channel_name(table.name())?;
                            let allow_unmapped = table.allow_unmapped();
                            Ok(Channel {
                                name,
                                platform: AnyPlatform::$variant(table.check(&secrets)?),
                                allow_unmapped,
                            })
                        }
                    )+
                }
            }
        }

        /// A configured channel's platform, with its settings.
        #[derive(Debug, Clone)]
        pub enum AnyPlatform {
            $($variant($module::$ty),)+
        }

        $(
            impl From<$module::$ty> for AnyPlatform {
                fn from(platform: $module::$ty) -> Self {
                    Self::$variant(platform)
                }
            }
        )+

        /// Every platform's name, as in a `[[channels]]` table's `type`.
        pub const NAMES: &[&str] = &[$($name),+];

        /// The platforms' prefixes in `[identities]` (`slack` in `"slack:U012ABCDEF"`), each
        /// once.
        pub fn identity_prefixes() -> Vec<&'static str> {
            let mut prefixes: Vec<&'static str> = Vec::new();
            for prefix in [$(<$module::$ty as $crate::platform::Platform>::IDENTITY),+]
                .into_iter()
                .flatten()
            {
                if !prefixes.contains(&prefix) {
                    prefixes.push(prefix);
                }
            }
            prefixes
        }

        impl AnyPlatform {
            /// The platform's name, as in the configuration's `type`.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $name,)+
                }
            }

            /// The prefix of the platform's people in `[identities]`, if it has people.
            pub fn identity(&self) -> Option<&'static str> {
                match self {
                    $(Self::$variant(_) => <$module::$ty as $crate::platform::Platform>::IDENTITY,)+
                }
            }

            /// Posts `notice` (see [`Platform::send`]($crate::platform::Platform::send)).
            pub async fn send(
                &self,
                client: &reqwest::Client,
                notice: &$crate::notice::Notice<'_>,
            ) -> Result<$crate::notice::Sent, $crate::notice::SendError> {
                use $crate::platform::Platform;
                match self {
                    $(Self::$variant(p) => Platform::send(p, client, notice).await,)+
                }
            }

            /// Posts `notice` through `desk` (see
            /// [`Platform::deliver`]($crate::platform::Platform::deliver)).
            pub async fn deliver<D: $crate::platform::Desk>(
                &self,
                desk: &D,
                client: &reqwest::Client,
                notice: &$crate::notice::Notice<'_>,
            ) -> Result<$crate::notice::Sent, $crate::notice::SendError> {
                use $crate::platform::Platform;
                match self {
                    $(Self::$variant(p) => Platform::deliver(p, desk, client, notice).await,)+
                }
            }

            /// Answers a call to the channel's hook (see
            /// [`Platform::hook`]($crate::platform::Platform::hook)).
            pub async fn hook<D: $crate::platform::Desk>(
                &self,
                desk: &D,
                channel: &str,
                call: $crate::platform::Call<'_>,
            ) -> $crate::platform::HookReply {
                use $crate::platform::Platform;
                match self {
                    $(Self::$variant(p) => Platform::hook(p, desk, channel, call).await,)+
                }
            }

            /// Answers a `GET` to the channel's hook (see
            /// [`Platform::handshake`]($crate::platform::Platform::handshake)).
            pub fn handshake(&self, channel: &str, query: &str) -> $crate::platform::HookReply {
                use $crate::platform::Platform;
                match self {
                    $(Self::$variant(p) => Platform::handshake(p, channel, query),)+
                }
            }

            /// Loads what the channel needs before it sends (see
            /// [`Platform::prepare`]($crate::platform::Platform::prepare)).
            pub async fn prepare<D: $crate::platform::Desk>(&self, desk: &D, channel: &str) {
                use $crate::platform::Platform;
                match self {
                    $(Self::$variant(p) => Platform::prepare(p, desk, channel).await,)+
                }
            }

            /// What the channel runs in the background, if anything.
            pub fn background<D: $crate::platform::Desk>(
                &self,
                desk: D,
                channel: String,
            ) -> Option<futures_util::future::BoxFuture<'static, ()>> {
                use $crate::platform::Platform;
                match self {
                    $(Self::$variant(p) => Platform::background(p, desk, channel),)+
                }
            }

            /// What a person the channel does not know is told instead of a link, if anything.
            pub fn unknown_person(&self, who: &str) -> Option<String> {
                use $crate::platform::Platform;
                match self {
                    $(Self::$variant(p) => Platform::unknown_person(p, who),)+
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::{NAMES, RawChannel, identity_prefixes};

    #[test]
    fn every_registered_platform_is_a_type_and_its_people_a_prefix() {
        assert_eq!(
            NAMES,
            [
                "slack",
                "telegram",
                "discord",
                "mattermost",
                "teams",
                "google_chat",
                "email",
                "ntfy",
                "whatsapp_cloud",
                "sms",
                "whatsapp",
                "voice"
            ]
        );
        // ntfy is answered only through signed links: it has no people to name. The channels
        // that text or call a number name their people by it, under one prefix.
        assert_eq!(
            identity_prefixes(),
            [
                "slack",
                "telegram",
                "discord",
                "mattermost",
                "teams",
                "google_chat",
                "email",
                "phone"
            ]
        );
        for name in NAMES {
            let table = serde_json::json!({"type": name});
            let error = serde_json::from_value::<RawChannel>(table)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains("missing field"), "{name}: {error}");
        }
        let error = serde_json::from_value::<RawChannel>(serde_json::json!({"type": "fax"}))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("unknown variant `fax`"), "{error}");
    }
}
