//! The stdio transport of `rss mcp`, guarded: every line from the client is checked
//! before the MCP library sees it, and the JSON-RPC 2.0 errors the library would not send
//! are sent here — `-32700` (with `"id": null`) for a line that is not JSON or not UTF-8,
//! `-32600` with the request's own `id` (when it has a readable one) for JSON that is not a
//! valid message — so a client never waits for an answer that will not come. A line longer
//! than [`MAX_LINE`] is dropped unread (answered `-32600`), and the server stays up.
//!
//! The library reads and writes through in-memory pipes; one task forwards checked lines
//! to it, another writes its output and these error replies to stdout whole line by whole
//! line, so the two never interleave.

use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// The longest line (one JSON-RPC message) read from the client.
pub const MAX_LINE: usize = 16 << 20;

/// Pipe size between the guard and the library.
const PIPE: usize = 256 * 1024;

/// A JSON-RPC error response.
fn error_reply(id: Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// A valid message: pass it on.
    Forward,
    /// Answer this instead.
    Reply(String),
    /// An invalid notification: notifications get no answer, even an error.
    Drop,
}

fn judge(line: &[u8]) -> Verdict {
    let Ok(text) = std::str::from_utf8(line) else {
        return Verdict::Reply(error_reply(Value::Null, -32700, "Parse error: not UTF-8"));
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::Reply(error_reply(
                Value::Null,
                -32700,
                &format!("Parse error: {e}"),
            ));
        }
    };
    match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        Ok(_) => Verdict::Forward,
        Err(e) => {
            let id = value
                .get("id")
                .filter(|id| id.is_string() || id.is_number());
            let is_notification = value.get("method").is_some() && value.get("id").is_none();
            match id {
                None if is_notification => Verdict::Drop,
                id => Verdict::Reply(error_reply(
                    id.cloned().unwrap_or(Value::Null),
                    -32600,
                    &format!("Invalid Request: {e}"),
                )),
            }
        }
    }
}

/// One line read with a cap: `None` at the end of input, `Some(Err(()))` for a line that
/// passed the cap (the rest of it is skipped).
async fn next_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> Option<Result<(), ()>> {
    line.clear();
    let mut oversized = false;
    loop {
        let buf = match reader.fill_buf().await {
            Ok(b) => b,
            Err(_) => return None,
        };
        if buf.is_empty() {
            return match (line.is_empty(), oversized) {
                (true, false) => None,
                (_, true) => Some(Err(())),
                (false, false) => Some(Ok(())),
            };
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !oversized {
            if line.len() + chunk.len() > MAX_LINE {
                oversized = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        if done.is_some() {
            return Some(if oversized { Err(()) } else { Ok(()) });
        }
    }
}

async fn inbound<R: AsyncRead + Unpin>(
    input: R,
    mut to_server: DuplexStream,
    replies: mpsc::UnboundedSender<String>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::new();
    while let Some(read) = next_line(&mut reader, &mut line).await {
        if read.is_err() {
            let msg = format!("Invalid Request: a message longer than {MAX_LINE} bytes");
            let _ = replies.send(error_reply(Value::Null, -32600, &msg));
            continue;
        }
        let trimmed = line.strip_suffix(b"\r").unwrap_or(&line);
        if trimmed.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match judge(trimmed) {
            Verdict::Forward => {
                let ok = to_server.write_all(trimmed).await.is_ok()
                    && to_server.write_all(b"\n").await.is_ok();
                if !ok {
                    break;
                }
            }
            Verdict::Reply(r) => {
                tracing::debug!("answering an unreadable message: {r}");
                let _ = replies.send(r);
            }
            Verdict::Drop => tracing::debug!("dropping an invalid notification"),
        }
    }
    let _ = to_server.shutdown().await;
}

async fn outbound<W: AsyncWrite + Unpin>(
    from_server: DuplexStream,
    mut output: W,
    mut replies: mpsc::UnboundedReceiver<String>,
) {
    let mut lines = BufReader::new(from_server).lines();
    let mut server_open = true;
    let mut replies_open = true;
    while server_open || replies_open {
        let line = tokio::select! {
            l = lines.next_line(), if server_open => match l {
                Ok(Some(l)) => l,
                _ => { server_open = false; continue; }
            },
            r = replies.recv(), if replies_open => match r {
                Some(r) => r,
                None => { replies_open = false; continue; }
            },
        };
        let ok = output.write_all(line.as_bytes()).await.is_ok()
            && output.write_all(b"\n").await.is_ok()
            && output.flush().await.is_ok();
        if !ok {
            break;
        }
        // Once the library is done, a late error reply has no one waiting on it.
        if !server_open {
            break;
        }
    }
}

/// The transport for the library: it reads checked lines and writes to `output` through
/// the guard tasks.
pub fn transport<R, W>(input: R, output: W) -> (DuplexStream, DuplexStream)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_server, server_in) = tokio::io::duplex(PIPE);
    let (server_out, from_server) = tokio::io::duplex(PIPE);
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(inbound(input, to_server, tx));
    tokio::spawn(outbound(from_server, output, rx));
    (server_in, server_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Value {
        match judge(line.as_bytes()) {
            Verdict::Reply(r) => serde_json::from_str(&r).unwrap(),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn unreadable_lines_are_answered_with_their_id_when_it_can_be_read() {
        let r = reply("{not json");
        assert_eq!(r["error"]["code"], -32700);
        assert!(r["id"].is_null());
        let r = reply(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"oops"}"#);
        assert_eq!(r["error"]["code"], -32600);
        assert_eq!(r["id"], 7);
        let r = reply(r#"{"jsonrpc":"2.0","id":"a","nonsense":true}"#);
        assert_eq!(r["id"], "a");
        let r = reply(r#"[1,2,3]"#);
        assert!(r["id"].is_null());
        match judge(&[0xff, 0xfe, b'{']) {
            Verdict::Reply(r) => assert!(r.contains("-32700")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn valid_messages_pass_and_invalid_notifications_get_no_answer() {
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert_eq!(judge(ping.as_bytes()), Verdict::Forward);
        let bad_note = r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":5}"#;
        assert_eq!(judge(bad_note.as_bytes()), Verdict::Drop);
    }

    #[tokio::test]
    async fn an_endless_line_is_dropped_and_the_next_one_is_read() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\n{\"a\":1}\n");
        let mut reader = BufReader::new(&input[..]);
        let mut line = Vec::new();
        assert_eq!(next_line(&mut reader, &mut line).await, Some(Err(())));
        assert_eq!(next_line(&mut reader, &mut line).await, Some(Ok(())));
        assert_eq!(line, b"{\"a\":1}");
        assert_eq!(next_line(&mut reader, &mut line).await, None);
    }
}
