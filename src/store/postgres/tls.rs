//! TLS for the cluster store's link to PostgreSQL, through rustls (ring provider).
//!
//! libpq's `sslmode` decides what is checked of the server's certificate:
//! `disable` and `prefer`/`require` without a CA file check nothing (the link is
//! encrypted against eavesdroppers, not against a man in the middle), `verify-ca` checks
//! the chain against the CA file but not the host name, and `verify-full` checks both.
//! `require` with a CA file behaves as `verify-ca`, as in libpq. Without a CA file,
//! `verify-ca` and `verify-full` trust the public web roots, so managed services whose
//! certificates chain to a public CA work out of the box.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use rustls::{Error as TlsError, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use thiserror::Error;
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode` values that bloomcast honours (`allow` is not offered: it would
/// try a plain connection first, which no production link wants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// The spellings accepted in `database_url`, for error messages.
    pub const NAMES: &'static str = "disable, prefer, require, verify-ca, verify-full";

    /// Parses libpq's spelling; `None` for anything else.
    pub fn parse(value: &str) -> Option<SslMode> {
        Some(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    /// What tokio-postgres negotiates: it knows only whether TLS is off, tried or
    /// required; the checks of the stronger modes live in the rustls verifier.
    pub fn negotiation(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as Wire;
        match self {
            SslMode::Disable => Wire::Disable,
            SslMode::Prefer => Wire::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => Wire::Require,
        }
    }
}

/// Where the trusted CA certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// The public web roots (Mozilla's list, built in): no file to deploy.
    Public,
    /// A PEM file of one or more CA certificates.
    File(PathBuf),
}

/// Why the TLS configuration cannot be built: mostly a CA file that cannot be used. Each
/// message says what failed; the cause is its `source`, shown after it by
/// [`crate::store::full_message`] (never in the message too, or it would show twice).
#[derive(Debug, Error)]
pub enum TlsSetupError {
    #[error("cannot read CA file {path}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("CA file {path} is not a PEM certificate list")]
    Pem {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("CA file {path} holds no certificate")]
    Empty { path: PathBuf },
    #[error("CA file {path}: certificate {index} is not a usable CA certificate")]
    Cert {
        path: PathBuf,
        index: usize,
        source: TlsError,
    },
    #[error("cannot build the certificate verifier")]
    Verifier(#[from] rustls::client::VerifierBuilderError),
    #[error("cannot configure TLS")]
    Config(#[from] TlsError),
}

/// The connector handed to every pool connection, configured for `mode`.
///
/// # Errors
/// [`TlsSetupError`] when the CA file cannot be read or holds no usable certificate.
pub fn connector(mode: SslMode, roots: &Roots) -> Result<MakeRustlsConnect, TlsSetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let verifier = verifier(mode, roots, provider)?;
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    // PostgreSQL 17 checks ALPN on direct TLS; older servers ignore it.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(MakeRustlsConnect::new(config))
}

/// The certificate check `mode` asks for. A CA file is loaded whatever the mode, so a
/// bad one is found at start even when this mode would not use it.
fn verifier(
    mode: SslMode,
    roots: &Roots,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, TlsSetupError> {
    let ca = match roots {
        Roots::File(path) => Some(load_ca_file(path)?),
        Roots::Public => None,
    };
    let webpki = |ca: Option<RootCertStore>| {
        let store = ca.unwrap_or_else(|| RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        });
        WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone()).build()
    };
    let check = match (mode, ca) {
        (SslMode::Disable | SslMode::Prefer, _) | (SslMode::Require, None) => Check::Nothing,
        (SslMode::Require | SslMode::VerifyCa, ca) => Check::Chain(webpki(ca)?),
        (SslMode::VerifyFull, ca) => Check::ChainAndName(webpki(ca)?),
    };
    Ok(Arc::new(ModeVerifier { check, provider }))
}

/// Reads every certificate of a PEM file into a root store.
///
/// # Errors
/// [`TlsSetupError`] naming the file.
pub fn load_ca_file(path: &Path) -> Result<RootCertStore, TlsSetupError> {
    let pem = std::fs::read(path).map_err(|source| TlsSetupError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut store = RootCertStore::empty();
    for (index, cert) in CertificateDer::pem_slice_iter(&pem).enumerate() {
        let cert = cert.map_err(|source| TlsSetupError::Pem {
            path: path.to_owned(),
            source,
        })?;
        store.add(cert).map_err(|source| TlsSetupError::Cert {
            path: path.to_owned(),
            index: index + 1,
            source,
        })?;
    }
    if store.is_empty() {
        return Err(TlsSetupError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(store)
}

/// What is checked of the server's certificate.
#[derive(Debug)]
enum Check {
    /// `prefer`/`require` without a CA: any certificate (the handshake signatures are
    /// still checked, so the session keys belong to the certificate presented).
    Nothing,
    /// `verify-ca`: the full WebPKI check (chain, validity, usage) but the host name.
    /// rustls checks the chain before the name, so a name mismatch is only ever
    /// reported for a certificate whose chain verified.
    Chain(Arc<WebPkiServerVerifier>),
    /// `verify-full`: WebPKI as browsers do it, host name included.
    ChainAndName(Arc<WebPkiServerVerifier>),
}

/// The verifier of every mode: one [`Check`] of the certificate, and the provider's
/// algorithms for the handshake signatures (what WebPKI's own verifier uses too).
#[derive(Debug)]
struct ModeVerifier {
    check: Check,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for ModeVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        let webpki = match &self.check {
            Check::Nothing => return Ok(ServerCertVerified::assertion()),
            Check::Chain(webpki) | Check::ChainAndName(webpki) => webpki,
        };
        let verdict =
            webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match (verdict, &self.check) {
            (
                Err(TlsError::InvalidCertificate(
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. },
                )),
                Check::Chain(_),
            ) => Ok(ServerCertVerified::assertion()),
            (verdict, _) => verdict,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests;
