//! A TCP proxy for tests, between a node and PostgreSQL, that can cut the link without
//! closing it: once cut, nothing is forwarded either way and every socket stays open
//! (no FIN, no RST), as when a route is lost. Connections made after [`Proxy::restore`]
//! are forwarded again; those that were cut stay silent for good, so a client that keeps
//! using them never recovers: it has to replace them.

use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub struct Proxy {
    pub port: u16,
    cut: watch::Sender<bool>,
    /// The accept loop and every connection's task, aborted on drop.
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
    /// Sockets of cut connections, held open and silent.
    held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// Forwards a new port on 127.0.0.1 to `upstream` on 127.0.0.1.
    pub async fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, _) = watch::channel(false);
        let tasks: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let accept = {
            let (cut, tasks, held) = (cut.clone(), tasks.clone(), held.clone());
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    if *cut.borrow() {
                        held.lock().unwrap().push(client);
                        continue;
                    }
                    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                        continue; // dropped: the client sees the refusal as a close
                    };
                    let pair = forward(client, server, cut.subscribe(), held.clone());
                    tasks.lock().unwrap().push(tokio::spawn(pair));
                }
            })
        };
        tasks.lock().unwrap().push(accept);
        Proxy {
            port,
            cut,
            tasks,
            held,
        }
    }

    /// Stops forwarding on every connection, keeping them open; new connections are
    /// accepted and never answered.
    pub fn cut(&self) {
        self.cut.send_replace(true);
    }

    /// New connections are forwarded again (the cut ones stay silent).
    pub fn restore(&self) {
        self.cut.send_replace(false);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
        self.held.lock().unwrap().clear();
    }
}

/// Copies both ways until the link is cut, then holds both sockets open, silent.
async fn forward(
    mut client: TcpStream,
    mut server: TcpStream,
    mut cut: watch::Receiver<bool>,
    held: Arc<Mutex<Vec<TcpStream>>>,
) {
    let closed = tokio::select! {
        biased;
        _ = cut.wait_for(|cut| *cut) => false,
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => true,
    };
    if !closed {
        held.lock().unwrap().extend([client, server]);
    }
}
