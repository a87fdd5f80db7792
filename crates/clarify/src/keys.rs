//! `clarify keys`: key management directly on the store, also while a server runs; and
//! `clarify keys generate`, which makes a key for `serve --admin-key-file` without a store.
//! `create` and `revoke` name the store they used on stderr, and only `keys create --create`
//! makes a new one ([`crate::store_arg`]).

use std::process::ExitCode;

use anyhow::Context as _;
use clarify_store::{Role, StoreOptions};

use crate::store_arg::{Missing, Use};

use crate::KeysCommand;

pub async fn run(command: KeysCommand, db: &str) -> anyhow::Result<ExitCode> {
    if let KeysCommand::Generate = command {
        println!("{}", clarify_store::generate_key());
        return Ok(ExitCode::SUCCESS);
    }
    let options = StoreOptions {
        reaper_interval: None,
        ..StoreOptions::default()
    };
    let missing = match command {
        KeysCommand::Create { create: true, .. } => Missing::Create,
        _ => Missing::Refuse,
    };
    let used = match command {
        KeysCommand::List => Use::Read,
        _ => Use::Write,
    };
    let store = crate::store_arg::open(db, options, missing, used).await?;
    match command {
        KeysCommand::Create {
            role, name, tenant, ..
        } => {
            let role = Role::parse(&role).context("unknown role; use agent, responder or admin")?;
            let key = store.create_key(&name, role, &tenant, &cli_actor()).await?;
            println!("{}", key.token);
        }
        KeysCommand::List => {
            println!(
                "{:<24} {:<10} {:<16} {:<26} STATUS",
                "NAME", "ROLE", "TENANT", "CREATED"
            );
            for k in store.keys().await? {
                let status = match k.revoked_at {
                    Some(at) => format!("revoked {}", at.format("%Y-%m-%d %H:%M")),
                    None => "active".to_owned(),
                };
                println!(
                    "{:<24} {:<10} {:<16} {:<26} {status}",
                    k.name,
                    // As text: a role's `Display` writes its name without the column's padding.
                    k.role.as_str(),
                    k.tenant,
                    k.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
                );
            }
        }
        KeysCommand::Generate => {}
        KeysCommand::Revoke { name } => {
            let key = store.revoke_key(&name, &cli_actor()).await?;
            eprintln!(
                "clarify: revoked key {:?} (tenant {})",
                key.name, key.tenant
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Who the audit chain names for a key created or revoked here: whoever runs the command on the
/// store itself, which no key identifies.
fn cli_actor() -> clarify_store::Actor {
    clarify_store::Actor {
        name: None,
        channel: "cli".to_owned(),
        groups: Vec::new(),
        principal: None,
        step_up: clarify_store::StepUp::None,
    }
}
