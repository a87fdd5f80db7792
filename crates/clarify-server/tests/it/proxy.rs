//! A TCP proxy in front of PostgreSQL that a test can cut: every connection through it is closed
//! and new ones are refused until it is restored. The machine's PostgreSQL is shared with other
//! tests, so an outage is made here, between one server and the database, never by stopping it.

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A proxy on 127.0.0.1 forwarding to the PostgreSQL of a URL.
pub struct Proxy {
    /// The database URL, pointing through the proxy.
    pub url: String,
    /// While false, the port is closed and every connection through it is cut.
    open: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts forwarding to the host and port of `postgres_url`.
    pub async fn start(postgres_url: &str) -> Self {
        let mut url = url::Url::parse(postgres_url).expect("a PostgreSQL URL");
        let upstream = format!(
            "{}:{}",
            url.host_str().unwrap_or("127.0.0.1"),
            url.port().unwrap_or(5432)
        );
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        url.set_host(Some("127.0.0.1")).expect("host");
        url.set_port(Some(port)).expect("port");
        let (open, opened) = watch::channel(true);
        let task = tokio::spawn(accept(listener, port, upstream, opened));
        Self {
            url: url.to_string(),
            open,
            task,
        }
    }

    /// Closes every connection through the proxy and refuses new ones (the port is closed).
    pub fn cut(&self) {
        self.open.send_replace(false);
    }

    /// Accepts connections again, on the same port.
    pub fn restore(&self) {
        self.open.send_replace(true);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.open.send_replace(false);
        self.task.abort();
    }
}

async fn accept(first: TcpListener, port: u16, upstream: String, mut open: watch::Receiver<bool>) {
    let mut listener = Some(first);
    loop {
        let Some(current) = listener.take() else {
            // Closed: wait to be restored, then listen on the same port again.
            if open.wait_for(|open| *open).await.is_err() {
                return;
            }
            listener = Some(
                TcpListener::bind(("127.0.0.1", port))
                    .await
                    .expect("the proxy's port is free again"),
            );
            continue;
        };
        tokio::select! {
            accepted = current.accept() => {
                if let Ok((client, _)) = accepted {
                    tokio::spawn(forward(client, upstream.clone(), open.clone()));
                }
                listener = Some(current);
            }
            closed = async { open.wait_for(|open| !*open).await.map(|_| ()) } => {
                if closed.is_err() {
                    return;
                }
                // Dropping the listener closes the port: connecting is refused.
                drop(current);
            }
        }
    }
}

/// Pipes one connection until either side closes it or the proxy is cut; a connection accepted
/// just as the proxy was cut is closed at once.
async fn forward(mut client: TcpStream, upstream: String, mut open: watch::Receiver<bool>) {
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = open.wait_for(|open| !*open) => {}
    }
}
