//! `clarify-example-agent`: parses flags and the environment, runs the conversation, prints the
//! model's final answer on stdout. Progress (questions asked, where to answer them, what the
//! model did) goes to stderr. Exit codes: 0 done, 1 error, 2 usage error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use clarify_example_agent::{AgentError, Provider, Settings, run};

/// A chat agent that asks a human through clarify when it needs a decision, and writes files
/// only with a human's approval. Resumes where it stopped when run again with the same state file.
#[derive(Debug, Parser)]
#[command(
    name = "clarify-example-agent",
    version,
    max_term_width = 100,
    after_help = "Examples:\n  clarify-example-agent 'Write a haiku about the sea to sea.txt'\n  clarify-example-agent          # resume the conversation in clarify-agent.json"
)]
struct Cli {
    /// What to do: starts a conversation, or continues a finished one. Leave out to resume.
    task: Option<String>,
    /// The conversation, rewritten after every step.
    #[arg(
        long,
        env = "CLARIFY_AGENT_STATE",
        default_value = "clarify-agent.json"
    )]
    state: PathBuf,
    /// The only directory write_file writes in.
    #[arg(long, env = "CLARIFY_AGENT_SANDBOX", default_value = "sandbox")]
    sandbox: PathBuf,
    /// The clarify server.
    #[arg(long, env = "CLARIFY_URL", default_value = "http://127.0.0.1:7420")]
    url: String,
    /// An agent key of the clarify server.
    #[arg(long, env = "CLARIFY_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The OpenAI-compatible API, up to and without `/chat/completions`.
    #[arg(
        long,
        env = "OPENAI_BASE_URL",
        default_value = "https://api.openai.com/v1"
    )]
    base_url: String,
    /// The provider's API key (some local servers need none).
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// The model to use.
    #[arg(long, env = "OPENAI_MODEL")]
    model: Option<String>,
    /// The system message of a new conversation.
    #[arg(long, default_value = clarify_example_agent::DEFAULT_SYSTEM, hide_default_value = true)]
    system: String,
    /// At most this many model requests in one run.
    #[arg(long, default_value_t = 20)]
    max_turns: u32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("clarify-example-agent: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(start(cli)) {
        Ok(answer) => {
            println!("{answer}");
            ExitCode::SUCCESS
        }
        Err(e @ AgentError::Usage(_)) => {
            eprintln!("clarify-example-agent: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("clarify-example-agent: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn start(cli: Cli) -> Result<String, AgentError> {
    let provider = Provider::new(
        &cli.base_url,
        cli.api_key,
        cli.model.as_deref().unwrap_or_default(),
    )?;
    run(Settings {
        task: cli.task.filter(|t| !t.trim().is_empty()),
        state_path: cli.state,
        sandbox: cli.sandbox,
        system: cli.system,
        clarify_url: cli.url,
        clarify_token: cli.token,
        provider,
        max_turns: cli.max_turns,
    })
    .await
}
