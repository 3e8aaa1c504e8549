//! `opd client`'s command line: its commands and their arguments. Every
//! wallet address it takes may be written as a URL, a URL without its
//! scheme (`https` assumed) or a payment pointer (`$wallet.example/alice`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `opd client`.
#[derive(Debug, Args)]
#[command(after_help = "\
TLS: servers are trusted through the platform's trust store (SSL_CERT_FILE honoured), \
the compiled-in public roots and the authorities of --ca-file (OPD_CA_FILE). \
A refused certificate is named: not trusted (give its authority with --ca-file), \
expired or not valid yet, or issued for another host name.")]
pub struct ClientArgs {
    /// The client profile (wallet address, key id, private key) [default: opd-data/client.json, the demo's].
    #[arg(long, env = "OPD_CLIENT_PROFILE", global = true)]
    pub profile: Option<PathBuf>,
    /// Print the servers' JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// PEM bundle of certificate authorities to trust besides the platform's trust store and the compiled-in public roots (a private CA, a test network).
    #[arg(long, env = "OPD_CA_FILE", global = true)]
    pub ca_file: Option<PathBuf>,
    #[command(subcommand)]
    pub command: ClientCommand,
}

#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Pay someone: RECEIVER is a wallet address or an incoming payment URL (payment pointers such as $wallet.example/alice, and URLs without a scheme, https assumed, are taken too).
    Pay(PayArgs),
    /// The client's keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Read a wallet address document.
    #[command(name = "wallet-address")]
    WalletAddress {
        /// The wallet address's URL.
        url: String,
    },
    /// Request a grant (with the owner's consent in a browser when the server asks for it).
    Grant(GrantArgs),
    /// Rotate or revoke an access token.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Incoming payments (receiving money).
    #[command(subcommand, name = "incoming-payment")]
    IncomingPayment(IncomingCommand),
    /// Quotes.
    #[command(subcommand)]
    Quote(QuoteCommand),
    /// Outgoing payments (sending money).
    #[command(subcommand, name = "outgoing-payment")]
    OutgoingPayment(OutgoingCommand),
}

#[derive(Debug, Args)]
pub struct PayArgs {
    /// Who is paid: a wallet address (an incoming payment is made on it) or an incoming payment URL. A payment pointer ($wallet.example/alice is https://wallet.example/alice) or a URL without its scheme (wallet.example/alice: https assumed) is taken too.
    pub receiver: String,
    /// The wallet address paying (its owner approves on its consent page): a URL, a payment pointer ($wallet.example/alice) or a URL without its scheme (https assumed).
    #[arg(long)]
    pub from: String,
    /// What the receiver gets, in its asset, such as 12.34.
    #[arg(long, conflicts_with = "debit_amount", allow_hyphen_values = true)]
    pub amount: Option<String>,
    /// What the sender pays (fees included), in its asset, such as 12.34.
    #[arg(long, allow_hyphen_values = true)]
    pub debit_amount: Option<String>,
    /// How long to wait for the consent, in seconds.
    #[arg(long, default_value_t = 600)]
    pub consent_wait_secs: u64,
    /// How long to follow the payment once sent, in seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout_secs: u64,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Make a new key and a profile for WALLET_ADDRESS; prints the public key to register there.
    Generate {
        /// The wallet address the key is for (its URL, as the profile keeps it).
        #[arg(long)]
        wallet_address: String,
        /// The key's id (its JWK's kid).
        #[arg(long, default_value = "key-1")]
        key_id: String,
    },
    /// Print the profile's public key (a JWK).
    Show,
}

#[derive(Debug, Args)]
pub struct GrantArgs {
    /// The wallet address whose authorization server is asked: a URL, a payment pointer ($wallet.example/alice) or a URL without its scheme (https assumed).
    #[arg(long)]
    pub wallet_address: String,
    /// incoming-payment, quote or outgoing-payment.
    #[arg(long = "type")]
    pub kind: String,
    /// Comma-separated actions, such as create,read.
    #[arg(long, value_delimiter = ',', required = true)]
    pub actions: Vec<String>,
    /// Limit the grant to this wallet address (`identifier`) [default: none; outgoing payments: --wallet-address].
    #[arg(long)]
    pub identifier: Option<String>,
    /// Outgoing payments: the most that may be debited, such as 25.00.
    #[arg(long, allow_hyphen_values = true)]
    pub debit_amount: Option<String>,
    /// Outgoing payments: repeat the limit per interval, such as R/2026-11-01T00:00:00Z/P1M.
    #[arg(long)]
    pub interval: Option<String>,
    /// How long to wait for the consent, in seconds.
    #[arg(long, default_value_t = 600)]
    pub consent_wait_secs: u64,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Exchange a token for a new one.
    Rotate {
        /// The token's management URL.
        #[arg(long)]
        manage: String,
        /// The access token itself.
        #[arg(long)]
        token: String,
    },
    /// Revoke a token.
    Revoke {
        /// The token's management URL.
        #[arg(long)]
        manage: String,
        /// The access token itself.
        #[arg(long)]
        token: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum IncomingCommand {
    /// Create an incoming payment on a wallet address.
    Create {
        /// The wallet address: a URL, a payment pointer ($wallet.example/alice) or a URL without its scheme (https assumed).
        #[arg(long)]
        wallet_address: String,
        /// What it should receive, such as 12.34 [default: any amount].
        #[arg(long, allow_hyphen_values = true)]
        amount: Option<String>,
        /// Seconds until it expires [default: the server's].
        #[arg(long)]
        expires_in_secs: Option<u64>,
        /// Metadata as JSON, such as '{"description":"invoice 42"}'.
        #[arg(long)]
        metadata: Option<String>,
        /// An access token [default: a new grant].
        #[arg(long)]
        token: Option<String>,
    },
    /// Read an incoming payment.
    Get {
        /// The incoming payment's URL.
        url: String,
        /// An access token [default: a new grant].
        #[arg(long)]
        token: Option<String>,
    },
    /// List a wallet address's incoming payments.
    List {
        /// The wallet address: a URL, a payment pointer ($wallet.example/alice) or a URL without its scheme (https assumed).
        #[arg(long)]
        wallet_address: String,
        /// One page of this many [default: all].
        #[arg(long)]
        first: Option<u32>,
        /// Where the page starts: the cursor a previous page ended at.
        #[arg(long)]
        cursor: Option<String>,
        /// An access token [default: a new grant].
        #[arg(long)]
        token: Option<String>,
    },
    /// Complete an incoming payment: it accepts no more money.
    Complete {
        /// The incoming payment's URL.
        url: String,
        /// An access token [default: a new grant].
        #[arg(long)]
        token: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum QuoteCommand {
    /// Quote a payment from a wallet address to a receiver (an incoming payment URL).
    Create {
        /// The wallet address: a URL, a payment pointer ($wallet.example/alice) or a URL without its scheme (https assumed).
        #[arg(long)]
        wallet_address: String,
        /// The incoming payment's URL.
        #[arg(long)]
        receiver: String,
        /// Fixed send: what is debited, such as 12.34.
        #[arg(long, conflicts_with = "receive_amount", allow_hyphen_values = true)]
        debit_amount: Option<String>,
        /// Fixed delivery: what the receiver gets, in its asset, such as 12.34.
        #[arg(long, allow_hyphen_values = true)]
        receive_amount: Option<String>,
        /// An access token [default: a new grant].
        #[arg(long)]
        token: Option<String>,
    },
    /// Read a quote.
    Get {
        /// The quote's URL.
        url: String,
        /// The wallet address it was made for.
        #[arg(long)]
        wallet_address: String,
        /// An access token [default: a new grant].
        #[arg(long)]
        token: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum OutgoingCommand {
    /// Send a quoted payment (asks the owner's consent unless --token is given).
    Create {
        /// The wallet address: a URL, a payment pointer ($wallet.example/alice) or a URL without its scheme (https assumed).
        #[arg(long)]
        wallet_address: String,
        /// The quote URL.
        #[arg(long)]
        quote: String,
        /// An access token [default: a new grant, with the owner's consent].
        #[arg(long)]
        token: Option<String>,
        /// How long to wait for the consent, in seconds.
        #[arg(long, default_value_t = 600)]
        consent_wait_secs: u64,
    },
    /// Read an outgoing payment.
    Get {
        /// The outgoing payment's URL.
        url: String,
        /// The wallet address it was sent from.
        #[arg(long)]
        wallet_address: String,
        /// A token with read access (from `grant` or `outgoing-payment create --json`).
        #[arg(long)]
        token: String,
    },
    /// List a wallet address's outgoing payments.
    List {
        /// The wallet address: a URL, a payment pointer ($wallet.example/alice) or a URL without its scheme (https assumed).
        #[arg(long)]
        wallet_address: String,
        /// A token with read access (from `grant` or `outgoing-payment create --json`).
        #[arg(long)]
        token: String,
        /// One page of this many [default: all].
        #[arg(long)]
        first: Option<u32>,
        /// Where the page starts: the cursor a previous page ended at.
        #[arg(long)]
        cursor: Option<String>,
    },
}
