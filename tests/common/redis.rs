//! A Redis server of a test's (or benchmark's) own, from the `redis-server` binary, on a
//! free loopback port with nothing persisted; killed when dropped.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct OwnRedis {
    child: Child,
    port: u16,
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

impl OwnRedis {
    /// `bin` listening on `port` (waits up to 5 s for it to accept connections).
    pub fn start(bin: &str, port: u16) -> OwnRedis {
        let child = Command::new(bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let server = OwnRedis { child, port };
        for _ in 0..250 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server did not listen on {port} within 5 s");
    }

    /// Its URL, database 0.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
