#![doc = include_str!("../README.md")]
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: failing loudly is the point"
)]

pub mod app;
pub mod client;
pub mod dice;
pub mod hostile;
pub mod pg;
pub mod proxy;
pub mod spec;
pub mod stores;
pub mod tls;
pub mod webhooks;

/// A loopback port free right now, for a server process a test starts
/// (another process may take it before the server binds it: callers that
/// can, retry on other ports).
///
/// Not from the kernel's ephemeral range: every outgoing connection takes
/// its local port from there, so a port handed out from it could be held
/// by some client connection when the server (or its restart, in the crash
/// tests) binds it: the three-node crash test saw a node's admin port
/// taken for its ten starts. Below that range only listeners take ports;
/// each port is handed out once per process.
pub fn free_port() -> u16 {
    use rand::Rng as _;
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let low = ephemeral_low().clamp(12_000, 65_535);
    let mut rng = rand::thread_rng();
    for _ in 0..1_000 {
        let port = rng.gen_range(10_000..low);
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if given.contains(&port) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    // Nothing free below the range: the kernel's choice.
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The first port of the kernel's ephemeral range (32768 when unknown).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// How long a command a test runs may take before it counts as hung.
pub const PROCESS_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs `cmd` to its end with its output captured, like
/// `Command::output`, but kills it and fails the test past
/// [`PROCESS_DEADLINE`]: a hung process names itself instead of hanging
/// the whole run.
pub fn output(cmd: &mut std::process::Command) -> std::process::Output {
    use std::io::Read as _;
    use std::process::Stdio;
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let read_all = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().unwrap()));
    let stderr = read_all(Box::new(child.stderr.take().unwrap()));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > PROCESS_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {PROCESS_DEADLINE:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    std::process::Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}
