//! The `listen` setting: an IP address or a host name, and a port. A name is kept as
//! written and resolved when the server binds (`localhost:8080` works), so the
//! configuration itself does no I/O.

use std::fmt;
use std::net::SocketAddr;

/// `HOST:PORT` where HOST is an IPv4 address, a bracketed IPv6 address or a host name.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct ListenAddr(String);

impl ListenAddr {
    /// The port asked for (0: any free port).
    pub fn port(&self) -> u16 {
        // Checked when parsed: the text ends in `:PORT`.
        self.0
            .rsplit_once(':')
            .and_then(|(_, port)| port.parse().ok())
            .unwrap_or(0)
    }

    /// The text to hand to a resolver (`tokio::net::TcpListener::bind` tries each address
    /// a name resolves to, in order, and keeps the first it can bind).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for ListenAddr {
    type Err = String;

    fn from_str(text: &str) -> Result<ListenAddr, String> {
        let text = text.trim();
        if text.parse::<SocketAddr>().is_ok() {
            return Ok(ListenAddr(text.to_owned()));
        }
        let usage = "expected ADDRESS:PORT or HOST:PORT, e.g. 0.0.0.0:8080 or localhost:8080";
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err(format!("no port: {usage}"));
        };
        if port.parse::<u16>().is_err() {
            return Err(format!("{port:?} is not a port (0 to 65535): {usage}"));
        }
        if host.contains(':') || host.starts_with('[') {
            return Err(format!(
                "{host:?} is not an IPv6 address in brackets: {usage}, or [::1]:8080"
            ));
        }
        let name_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_';
        if host.is_empty() || !host.chars().all(name_char) {
            return Err(format!(
                "{host:?} is not an IP address or host name: {usage}"
            ));
        }
        Ok(ListenAddr(text.to_owned()))
    }
}

impl TryFrom<String> for ListenAddr {
    type Error = String;

    fn try_from(text: String) -> Result<ListenAddr, String> {
        text.parse()
    }
}

impl From<SocketAddr> for ListenAddr {
    fn from(addr: SocketAddr) -> ListenAddr {
        ListenAddr(addr.to_string())
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_host_names_with_a_port_are_accepted() {
        for good in [
            "127.0.0.1:8080",
            "[::1]:0",
            "localhost:8080",
            "db-1.example.com:1",
        ] {
            let addr: ListenAddr = good.parse().unwrap();
            assert_eq!(addr.as_str(), good);
        }
        assert_eq!("localhost:8080".parse::<ListenAddr>().unwrap().port(), 8080);
    }

    #[test]
    fn text_that_is_no_host_and_port_says_what_is_expected() {
        for bad in [
            "nowhere",
            "localhost:http",
            ":8080",
            "::1:8080",
            "a b:80",
            "host:70000",
        ] {
            let err = bad.parse::<ListenAddr>().unwrap_err();
            assert!(err.contains("HOST:PORT"), "{bad}: {err}");
        }
    }
}
