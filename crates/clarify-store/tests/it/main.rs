//! Store tests: one binary. `conformance` runs every case against every backend, `access` does
//! the same for keys, tokens, secrets and webhook deliveries, and `gate` for approval gating;
//! `support` opens the stores they need.

/// Turns each case (an `async fn(Store, Env)`) into one test per backend:
/// `<module>::memory::<case>`, `<module>::sqlite::<case>`, `<module>::postgres::<case>`. Cases
/// under `durable` need a store that outlives its process and run on SQLite and PostgreSQL only.
/// Defined here, before the modules, so every test module can use it.
macro_rules! conformance {
    (every: [$($case:ident),* $(,)?], durable: [$($durable:ident),* $(,)?] $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    crate::support::run(crate::support::Kind::Memory, super::$case).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    crate::support::run(crate::support::Kind::Sqlite, super::$case).await;
                }
            )*
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $durable() {
                    crate::support::run(crate::support::Kind::Sqlite, super::$durable).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    crate::support::run(crate::support::Kind::Postgres, super::$case).await;
                }
            )*
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $durable() {
                    crate::support::run(crate::support::Kind::Postgres, super::$durable).await;
                }
            )*
        }
    };
}

mod access;
mod agui;
mod audit;
mod conformance;
mod deadlines;
mod decisions;
mod feed;
mod gate;
mod identities;
mod insights;
mod passkeys;
mod people;
mod push;
mod rules;
mod support;
