//! Other nodes' writes as they commit: each append notifies the schema's channel in its
//! own transaction (`pg_notify`, delivered on commit), and each node keeps one
//! connection of its own that `LISTEN`s to it ([`Store::changes`]). A notification is
//! a signal to read the store, not data: the payload (the hour) is not trusted, and a
//! reconnect signals too, for whatever was missed while the connection was down.
//!
//! [`Store::changes`]: crate::store::Store::changes

use futures_util::stream::{self, StreamExt};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Config};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The longest channel name PostgreSQL takes (`NAMEDATALEN - 1`).
const MAX_CHANNEL: usize = 63;

/// The channel of the nodes sharing `schema` (unquoted): `bloomcast.<schema>`, or a
/// digest of the schema in place of one too long for a channel name.
pub(super) fn channel(schema: &str) -> String {
    let plain = format!("bloomcast.{schema}");
    if plain.len() <= MAX_CHANNEL {
        return plain;
    }
    use sha1::Digest as _;
    let digest = sha1::Sha1::digest(schema.as_bytes());
    format!("bloomcast.{}", hex::encode(&digest[..16]))
}

/// Listens on `channel` over a connection of its own (reconnecting with backoff while
/// the receiver lives); the receiver gets `()` after each notification and after each
/// (re)connection. Signals fold: at most one waits at a time.
pub(super) fn spawn(
    mut config: Config,
    tls: MakeRustlsConnect,
    channel: String,
) -> mpsc::Receiver<()> {
    // A link frozen half-open would otherwise hold the listener silent for as long as
    // the kernel keeps the socket.
    config
        .connect_timeout(Duration::from_secs(3))
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(10))
        .keepalives_interval(Duration::from_secs(5))
        .keepalives_retries(3);
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(100);
        loop {
            let listened = tokio::select! {
                r = listen(&config, tls.clone(), &channel, &tx) => r,
                () = tx.closed() => return,
            };
            match listened {
                Ok(()) => backoff = Duration::from_millis(100),
                Err(e) => {
                    tracing::warn!(error = %e, "the change feed from PostgreSQL dropped; reconnecting")
                }
            }
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = tx.closed() => return,
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    });
    rx
}

/// One connection's life: `LISTEN`, a signal once it holds (what was missed before),
/// then one per notification until the connection ends.
async fn listen(
    config: &Config,
    tls: MakeRustlsConnect,
    channel: &str,
    tx: &mpsc::Sender<()>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(tls).await?;
    // The connection's messages (notifications among them) arrive only while it is
    // polled, the LISTEN's reply included: both are driven together.
    let mut messages = stream::poll_fn(move |cx| connection.poll_message(cx));
    let quoted = channel.replace('"', "\"\"");
    let statement = format!("LISTEN \"{quoted}\"");
    let listen = client.batch_execute(&statement);
    tokio::pin!(listen);
    let mut listening = false;
    loop {
        tokio::select! {
            r = &mut listen, if !listening => {
                r?;
                listening = true;
                let _ = tx.try_send(());
            }
            message = messages.next() => match message {
                Some(Ok(AsyncMessage::Notification(_))) => {
                    let _ = tx.try_send(());
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
        }
    }
}
