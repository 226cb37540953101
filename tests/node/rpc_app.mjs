// A small app whose channels run behind AnyCable's HTTP RPC, answered by AnyCable's own
// JavaScript implementation of the RPC side, @anycable/serverless-js (pinned in package.json,
// unmodified), behind a node:http server: what Hearth's `--rpc-url` talks to in the tests.
//
//   node rpc_app.mjs [--port 0] [--secret KEY]
//
// Prints `LISTENING <port>` once it accepts calls. POST /_anycable/{connect,command,disconnect}
// are the RPC (401 without `Authorization: Bearer <KEY>` when --secret is given); beside them:
//   GET  /_control/log          the calls' events so far, one JSON array (connects, commands,
//                               unsubscribes, disconnects with their subscription lists)
//   POST /_control/slow?ms=N    every RPC answer waits N ms from now on (0: none)
// and the actions `malformed` and `oversized` of any channel get a broken answer (truncated
// JSON, 2 MiB), as a broken app could give.
//
// Hostile answers, for the hardening tests: a `hostile` cookie makes `connect` answer a JSON
// array (`array`), identifiers of 300 KiB (`huge_ids`), or accept without identifiers
// (`anonymous`, the SDK then answers `identifiers: ""`); and HostileChannel's actions
// `many_streams {count}` (streams `many-0`… in one answer) and `bloat {bytes}` (a new
// connection-state key of that many bytes at each call).
//
// The connection accepts a `username` cookie or an `x-api-token` header (`token-<name>`),
// identified by `{username, url}`; anything else is refused. Channels:
//   EchoChannel      echoes `echo` data back; `whoami` transmits the identifiers; with
//                    `{greet: true}` it transmits in `subscribed` (before the confirmation)
//   StreamChannel    streams from `params.name` (and `user:<username>` with `{mine: true}`);
//                    `follow {name}`, `unfollow {name}`, `unfollow_all` change its streams;
//                    `kick` asks for the connection to be closed
//   CounterChannel   keeps `count` in its channel state across commands: `add {by}` transmits
//                    the new count; `unsubscribed` logs the state it was given
//   RejectChannel    always rejects
//   RailsOrderChannel answered here, not by the SDK, as anycable-rails answers a subscribe
//                    whose `subscribed` transmits "hello" and "world": the transmissions, then
//                    the confirmation (serverless-js puts the confirmation first)
// EchoChannel's `tick` (no data) transmits the string "tock".
import { register } from "node:module";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

register("./rpc_resolve.mjs", pathToFileURL(new URL(".", import.meta.url).pathname + "/"));
const { Application, Channel, handler } = await import("@anycable/serverless-js");

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const log = [];
let slowMs = 0;

function cookie(header, name) {
  for (const part of (header ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return decodeURIComponent(v.join("="));
  }
  return null;
}

class App extends Application {
  async connect(handle) {
    const headers = handle.env.headers ?? {};
    const token = headers["x-api-token"];
    const username = cookie(headers.cookie, "username") ?? (token?.startsWith("token-") ? token.slice(6) : null);
    log.push({ event: "connect", username, url: handle.env.url, remote_addr: headers.REMOTE_ADDR ?? null });
    const hostile = cookie(headers.cookie, "hostile");
    if (hostile === "anonymous") return;
    if (hostile === "huge_ids") {
      handle.identifiedBy({ username, pad: "x".repeat(300 * 1024) });
      return;
    }
    if (!username) {
      handle.reject();
      return;
    }
    handle.identifiedBy({ username, url: handle.env.url });
  }

  async disconnect(handle) {
    log.push({ event: "disconnect", username: handle.identifiers?.username });
  }
}

class EchoChannel extends Channel {
  async subscribed(handle, params) {
    log.push({ event: "subscribed", channel: "EchoChannel", params });
    if (params.greet) handle.transmit({ greeting: `hello ${handle.identifiers.username}` });
  }
  async unsubscribed(handle, params) {
    log.push({ event: "unsubscribed", channel: "EchoChannel", params, username: handle.identifiers?.username });
  }
  async echo(handle, _params, payload) {
    handle.transmit(payload);
  }
  async whoami(handle) {
    handle.transmit({ identifiers: handle.identifiers });
  }
  async tick(handle) {
    handle.transmit("tock");
  }
}

class StreamChannel extends Channel {
  async subscribed(handle, params) {
    if (params.name) handle.streamFrom(params.name);
    if (params.mine) handle.streamFrom(`user:${handle.identifiers.username}`);
  }
  async unsubscribed(handle, params) {
    log.push({ event: "unsubscribed", channel: "StreamChannel", params, username: handle.identifiers?.username });
  }
  async follow(handle, _params, { name }) {
    handle.streamFrom(name);
    handle.transmit({ following: name });
  }
  async unfollow(handle, _params, { name }) {
    handle.stopStreamFrom(name);
    handle.transmit({ unfollowed: name });
  }
  async unfollow_all(handle) {
    handle.stopAllStreams();
    handle.transmit({ unfollowed: "all" });
  }
  async kick(handle) {
    handle.delegate.close();
  }
}

class CounterChannel extends Channel {
  async subscribed(handle) {
    handle.state = { count: 0 };
  }
  async unsubscribed(handle, params) {
    log.push({ event: "unsubscribed", channel: "CounterChannel", params, state: handle.state, username: handle.identifiers?.username });
  }
  async add(handle, _params, { by }) {
    const count = (handle.state?.count ?? 0) + Number(by ?? 1);
    handle.state = { ...(handle.state ?? {}), count };
    handle.transmit({ count });
  }
}

class RejectChannel extends Channel {
  async subscribed(handle) {
    handle.reject();
  }
}

// Its subscribe is answered by hand (`railsOrderAnswer`); its unsubscribes by the SDK.
class RailsOrderChannel extends Channel {}
class HostileChannel extends Channel {
  async many_streams(handle, _params, { count }) {
    for (let i = 0; i < Number(count); i++) handle.streamFrom(`many-${i}`);
    handle.transmit({ streams: Number(count) });
  }
  async bloat(handle, _params, { bytes }) {
    const env = handle.delegate.env;
    const cstate = env.cstate ?? {};
    env.cstate = { ...cstate, [`k${Object.keys(cstate).length}`]: "x".repeat(Number(bytes)) };
    handle.transmit({ bloated: Object.keys(env.cstate).length });
  }
}

const app = new App();
app.registerChannel("EchoChannel", new EchoChannel());
app.registerChannel("StreamChannel", new StreamChannel());
app.registerChannel("CounterChannel", new CounterChannel());
app.registerChannel("RejectChannel", new RejectChannel());
app.registerChannel("RailsOrderChannel", new RailsOrderChannel());
app.registerChannel("HostileChannel", new HostileChannel());

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function actionOf(body) {
  try {
    const { command, data } = JSON.parse(body.toString("utf8"));
    return command === "message" ? JSON.parse(data).action : null;
  } catch {
    return null;
  }
}
// anycable-rails' answer to a subscribe whose `subscribed` transmits twice: what the channel
// transmitted, in order, then the confirmation.
function railsOrderAnswer(path, body) {
  if (!path.endsWith("/command")) return null;
  const { command, identifier } = JSON.parse(body.toString("utf8") || "{}");
  if (command !== "subscribe" || JSON.parse(identifier ?? "{}").channel !== "RailsOrderChannel") return null;
  const transmissions = ["hello", "world"].map((message) => JSON.stringify({ identifier, message }));
  transmissions.push(JSON.stringify({ identifier, type: "confirm_subscription" }));
  return { status: 1, transmissions, streams: [], stopped_streams: [], error_msg: "" };
}
function hostileOf(body) {
  try {
    return cookie(JSON.parse(body.toString("utf8")).env?.headers?.cookie, "hostile");
  } catch {
    return null;
  }
}
const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  const url = new URL(req.url, "http://127.0.0.1");
  const answer = (status, value) => {
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify(value));
  };
  if (url.pathname === "/_control/log") return answer(200, log);
  if (url.pathname === "/_control/slow") {
    slowMs = Number(url.searchParams.get("ms") ?? 0);
    return answer(200, { slow_ms: slowMs });
  }
  if (!url.pathname.startsWith("/_anycable/") || req.method !== "POST") return answer(404, {});
  if (args.secret && req.headers.authorization !== `Bearer ${args.secret}`) return answer(401, {});
  if (slowMs > 0) await sleep(slowMs);
  // Bad answers on request, as a broken app could give them (not the SDK's doing): the action
  // `malformed` is answered with truncated JSON, `oversized` with 2 MiB.
  const action = url.pathname.endsWith("/command") ? actionOf(body) : null;
  if (url.pathname.endsWith("/command")) {
    const { command, identifier } = JSON.parse(body.toString("utf8") || "{}");
    log.push({ event: "command", command, identifier });
  }
  const railsOrder = railsOrderAnswer(url.pathname, body);
  if (railsOrder) return answer(200, railsOrder);
  if (url.pathname.endsWith("/connect") && hostileOf(body) === "array") return answer(200, [1]);
  if (action === "malformed") {
    res.writeHead(200, { "Content-Type": "application/json" });
    return res.end('{"status":1,"transmissions":[');
  }
  if (action === "oversized") return answer(200, { status: 1, transmissions: ["x".repeat(2 * 1024 * 1024)] });
  const request = new Request(url.href, { method: "POST", headers: req.headers, body });
  try {
    answer(200, await handler(request, app));
  } catch (e) {
    answer(200, { status: 0, error_msg: String(e?.message ?? e) });
  }
});
server.listen(Number(args.port ?? 0), "127.0.0.1", () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`);
});
