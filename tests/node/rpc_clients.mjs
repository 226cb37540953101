// Drives @rails/actioncable and @anycable/core (both unmodified) against a Hearth started with
// --rpc-url pointing at rpc_app.mjs: the app's channels, through Hearth, as any Rails app's
// clients would use them. One run covers the scenarios below in turn and prints `PASS <name>`
// for each (or `FAIL <why>` and exits 1):
//
//   node rpc_clients.mjs --base http://127.0.0.1:3000 --app http://127.0.0.1:9000
//                        --broadcast-key KEY [--timeout 60]
//
// --app is rpc_app.mjs' address (its /_control/log tells what the app saw); broadcasts go to
// Hearth's POST /_broadcast with --broadcast-key.
//
// With `--scenario restart`, only this: subscribe to an app's stream, print CONNECTED, and once
// the server restarted (the test restarts it) and the client resubscribed on its own, print
// RECONNECTED, broadcast, and print RECEIVED when the broadcast arrives.
import WS from "ws";
import { createCable } from "@anycable/core";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const base = args.base;
const wsUrl = base.replace(/^http/, "ws") + "/cable";
const timeout = Number(args.timeout ?? 60);
const out = (...parts) => process.stdout.write(parts.join(" ") + "\n");
const fail = (why) => { out("FAIL", why); process.exit(1); };
setTimeout(() => fail(`timeout after ${timeout}s`), timeout * 1000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(check, what, ms = 5000) {
  for (let waited = 0; waited < ms; waited += 25) {
    if (check()) return;
    await sleep(25);
  }
  fail(`never saw ${what}`);
}
async function appLog() {
  return (await fetch(`${args.app}/_control/log`)).json();
}
async function broadcast(stream, data) {
  const res = await fetch(`${base}/_broadcast`, {
    method: "POST",
    headers: { Authorization: `Bearer ${args["broadcast-key"]}`, "Content-Type": "application/json" },
    body: JSON.stringify({ stream, data: JSON.stringify(data) }),
  });
  if (res.status !== 201) fail(`broadcast answered ${res.status}`);
}

globalThis.addEventListener ??= () => {};
globalThis.removeEventListener ??= () => {};
globalThis.document ??= { visibilityState: "visible" };
const AC = await import("@rails/actioncable");

// A consumer whose socket sends `headers` (to `url`, /cable by default) and records every
// frame it receives.
function consumer(headers, url = wsUrl) {
  const frames = [];
  const state = { frames, closed: false, socket: null };
  AC.adapters.WebSocket = class extends WS {
    constructor(url, protocols) {
      super(url, protocols, { headers, origin: base });
      state.socket = this;
      this.on("message", (data) => frames.push(data.toString("utf8")));
      this.on("close", () => { state.closed = true; });
    }
  };
  state.consumer = AC.createConsumer(url);
  return state;
}

// Subscribes and records what the subscription sees, in order.
function subscribe(c, params) {
  const events = [];
  const sub = c.consumer.subscriptions.create(params, {
    connected: () => events.push("connected"),
    rejected: () => events.push("rejected"),
    received: (data) => events.push(data),
  });
  return { sub, events };
}
const has = (events, value) => events.some((e) => JSON.stringify(e) === JSON.stringify(value));

if (args.scenario === "restart") {
  const rita = consumer({ Cookie: "username=rita" });
  let confirmations = 0;
  rita.consumer.subscriptions.create({ channel: "StreamChannel", name: "after-restart" }, {
    async connected() {
      confirmations += 1;
      if (confirmations === 1) return out("CONNECTED");
      out("RECONNECTED", confirmations);
      await broadcast("after-restart", { after: "restart" });
    },
    disconnected({ willAttemptReconnect }) { out("DISCONNECTED", `willAttemptReconnect=${willAttemptReconnect}`); },
    received(data) {
      if (confirmations > 1 && data.after === "restart") {
        out("RECEIVED");
        process.exit(0);
      }
    },
    rejected() { fail("rejected"); },
  });
  await new Promise(() => {});
}

// Open through the whole run, for the pings (Action Cable's, every 3 s, with a timestamp).
const pinged = consumer({ Cookie: "username=pat" });
pinged.consumer.connect();

const alice = consumer({ Cookie: "username=alice" });
const echo = subscribe(alice, { channel: "EchoChannel", greet: true });
await until(() => echo.events.includes("connected"), "EchoChannel confirmed");
if (!alice.frames[0]?.startsWith('{"type":"welcome"')) fail(`first frame ${alice.frames[0]}`);
out("PASS welcome");
// Transmissions are sent as the app wrote them and in its order: serverless-js 0.1.0 puts
// the confirmation before what the channel transmitted in `subscribed` (anycable-rails puts
// it after); either way the frames are the app's, byte for byte.
await until(() => echo.events.length >= 2, "the greeting");
const id = JSON.stringify({ channel: "EchoChannel", greet: true });
const expected = [
  JSON.stringify({ identifier: id, type: "confirm_subscription" }),
  JSON.stringify({ identifier: id, message: { greeting: "hello alice" } }),
];
if (JSON.stringify(alice.frames.slice(1, 3)) !== JSON.stringify(expected)) fail(`frames ${JSON.stringify(alice.frames)}`);
out("PASS transmissions-in-order");

echo.sub.perform("echo", { text: "hi", n: 1 });
await until(() => has(echo.events, { text: "hi", n: 1 }), "the echo");
echo.sub.perform("whoami");
await until(() => echo.events.some((e) => e.identifiers), "whoami");
const who = echo.events.find((e) => e.identifiers).identifiers;
if (who.username !== "alice" || !who.url.endsWith("/cable")) fail(`identifiers ${JSON.stringify(who)}`);
echo.sub.perform("tick");
await until(() => echo.events.includes("tock"), "tock");
out("PASS perform", JSON.stringify(who));

// anycable-rails' order: what `subscribed` transmitted, then the confirmation, as sent.
const railsOrder = subscribe(alice, { channel: "RailsOrderChannel" });
await until(() => railsOrder.events.length >= 3, "the Rails-ordered answer");
if (JSON.stringify(railsOrder.events) !== JSON.stringify(["hello", "world", "connected"])) {
  fail(`Rails order ${JSON.stringify(railsOrder.events)}`);
}
out("PASS transmissions-before-confirm");

const news = subscribe(alice, { channel: "StreamChannel", name: "news" });
const mine = subscribe(alice, { channel: "StreamChannel", mine: true });
const other = subscribe(alice, { channel: "StreamChannel", name: "sports" });
await until(() => [news, mine, other].every((s) => s.events.includes("connected")), "streams confirmed");
await broadcast("news", { headline: "one" });
await broadcast("news", "<p>raw <b>html</b></p>");
await broadcast("news", '{"looks":"like json"}');
await broadcast("user:alice", { to: "alice" });
await broadcast("sports", { score: 3 });
await until(() => news.events.length >= 4 && mine.events.length >= 2 && other.events.length >= 2, "broadcasts");
if (!has(news.events, { headline: "one" }) || !has(news.events, "<p>raw <b>html</b></p>") || !has(news.events, '{"looks":"like json"}')) {
  fail(`news ${JSON.stringify(news.events)}`);
}
if (news.events.length !== 4 || !has(mine.events, { to: "alice" }) || mine.events.length !== 2 || other.events.length !== 2) {
  fail(`params do not keep subscriptions apart: ${JSON.stringify([news.events, mine.events, other.events])}`);
}
out("PASS streams");

news.sub.perform("unfollow", { name: "news" });
await until(() => has(news.events, { unfollowed: "news" }), "unfollowed");
news.sub.perform("follow", { name: "late" });
await until(() => has(news.events, { following: "late" }), "following");
await broadcast("news", { headline: "after stop" });
await broadcast("late", { headline: "late one" });
await until(() => has(news.events, { headline: "late one" }), "the followed stream");
if (has(news.events, { headline: "after stop" })) fail("a stopped stream still delivers");
out("PASS stop-stream-from");

const counter = subscribe(alice, { channel: "CounterChannel" });
await until(() => counter.events.includes("connected"), "CounterChannel confirmed");
counter.sub.perform("add", { by: 2 });
await until(() => has(counter.events, { count: 2 }), "count 2");
counter.sub.perform("add", { by: 3 });
await until(() => has(counter.events, { count: 5 }), "count 5");
out("PASS channel-state");

const rejected = subscribe(alice, { channel: "RejectChannel" });
await until(() => rejected.events.includes("rejected"), "the rejection");
out("PASS reject");

echo.sub.unsubscribe();
for (let i = 0; i < 100; i++) {
  const log = await appLog();
  if (log.some((e) => e.event === "unsubscribed" && e.channel === "EchoChannel" && e.username === "alice")) break;
  if (i === 99) fail("unsubscribe never reached the app");
  await sleep(50);
}
out("PASS unsubscribe");

alice.consumer.disconnect();
for (let i = 0; i < 100; i++) {
  const log = await appLog();
  const gone = log.some((e) => e.event === "disconnect" && e.username === "alice");
  const streamsGone = log.filter((e) => e.event === "unsubscribed" && e.channel === "StreamChannel" && e.username === "alice").length;
  // The state the counter kept reaches its `unsubscribed`: Hearth sends each subscription's
  // state map as JSON by identifier (anycable-go's disconnect), and serverless-js 0.1.0 keeps
  // its state as JSON under the identifier inside that map.
  const counted = log.find((e) => e.event === "unsubscribed" && e.channel === "CounterChannel" && e.username === "alice");
  const kept = counted && JSON.parse(Object.values(counted.state ?? {})[0] ?? "{}").count;
  if (gone && streamsGone === 3 && kept === 5) break;
  if (i === 99) fail(`disconnect never reached the app: ${JSON.stringify(log.slice(-6))}`);
  await sleep(50);
}
out("PASS disconnect-with-subscriptions");

const nobody = consumer({});
nobody.consumer.connect();
await until(() => nobody.closed, "the refused connection closed");
if (nobody.frames[0] !== '{"type":"disconnect","reason":"unauthorized"}') fail(`refusal ${JSON.stringify(nobody.frames)}`);
nobody.consumer.disconnect();
out("PASS refused-without-cookie");

const forger = consumer({ "X-Api-Token": "forged" });
forger.consumer.connect();
await until(() => forger.closed, "the connection refused by header closed");
if (forger.frames[0] !== '{"type":"disconnect","reason":"unauthorized"}') fail(`header refusal ${JSON.stringify(forger.frames)}`);
forger.consumer.disconnect();
out("PASS refused-by-header");

// The request URL, query string and host included, reaches the app's `connect`.
const asked = consumer({ Cookie: "username=quinn" }, `${wsUrl}?test=request_url`);
asked.consumer.connect();
await until(() => asked.frames.length > 0, "quinn's welcome");
const seen = (await appLog()).find((e) => e.event === "connect" && e.username === "quinn");
const host = new URL(base).host;
if (!seen || seen.url !== `http://${host}/cable?test=request_url`) fail(`connect saw ${JSON.stringify(seen)}`);
asked.consumer.disconnect();
out("PASS request-url");

const bob = consumer({ "X-Api-Token": "token-bob" });
const bobEcho = subscribe(bob, { channel: "EchoChannel" });
await until(() => bobEcho.events.includes("connected"), "bob's subscription");
bobEcho.sub.perform("whoami");
await until(() => bobEcho.events.some((e) => e.identifiers?.username === "bob"), "bob identified by header");
out("PASS accepted-by-header");

const kicked = subscribe(bob, { channel: "StreamChannel", name: "k" });
await until(() => kicked.events.includes("connected"), "kick subscription");
const bobSocket = bob.socket;
kicked.sub.perform("kick");
await until(() => bobSocket.readyState === WS.CLOSED, "closed by the app's disconnect");
bob.consumer.disconnect();
out("PASS app-disconnect");

const crowd = [];
for (let i = 0; i < 20; i++) {
  const c = consumer({ Cookie: `username=user${i}` });
  crowd.push({ c, s: subscribe(c, { channel: "StreamChannel", name: "crowd" }) });
}
await until(() => crowd.every(({ s }) => s.events.includes("connected")), "the crowd subscribed");
await broadcast("crowd", { all: true });
await until(() => crowd.every(({ s }) => has(s.events, { all: true })), "the crowd's broadcast");
for (const { c } of crowd) c.consumer.disconnect();
out("PASS many-clients");

// AnyCable's remote disconnect, matched against the app's identifiers of the connection.
const eve = consumer({ Cookie: "username=eve" });
const eveEcho = subscribe(eve, { channel: "EchoChannel" });
await until(() => eveEcho.events.includes("connected"), "eve's subscription");
eveEcho.sub.perform("whoami");
await until(() => eveEcho.events.some((e) => e.identifiers), "eve's identifiers");
const identifiers = JSON.stringify(eveEcho.events.find((e) => e.identifiers).identifiers);
const remote = await fetch(`${base}/_broadcast`, {
  method: "POST",
  headers: { Authorization: `Bearer ${args["broadcast-key"]}`, "Content-Type": "application/json" },
  body: JSON.stringify({ command: "disconnect", payload: { identifier: identifiers, reconnect: false } }),
});
if (remote.status !== 201) fail(`remote disconnect answered ${remote.status}`);
await until(() => eve.frames.includes('{"type":"disconnect","reason":"remote","reconnect":false}'), "the remote disconnect");
eve.consumer.disconnect();
out("PASS remote-disconnect");

// @anycable/core, with the extended protocol.
const frames = [];
class LoggingWS extends WS {
  constructor(url, protocols, options) {
    super(url, protocols, options);
    this.on("message", (data) => frames.push(data.toString("utf8")));
  }
}
const cable = createCable(wsUrl, {
  protocol: "actioncable-v1-ext-json",
  websocketImplementation: LoggingWS,
  websocketOptions: { headers: { Cookie: "username=carol" }, origin: base },
  monitor: false,
  logLevel: "error",
});
const channel = cable.subscribeTo("StreamChannel", { name: "ext" });
const got = [];
channel.on("message", (m) => got.push(m));
await channel.ensureSubscribed();
await broadcast("ext", { via: "anycable" });
await until(() => has(got, { via: "anycable" }), "the extended client's broadcast");
await channel.perform("follow", { name: "ext2" });
await until(() => has(got, { following: "ext2" }), "the extended client's action");
if (!frames[0].includes('"sid":')) fail(`ext welcome ${frames[0]}`);
cable.disconnect();
out("PASS anycable-client");

const pings = () => pinged.frames.map((f) => JSON.parse(f)).filter((f) => f.type === "ping");
await until(() => pings().length >= 2, "two pings", 8000);
const [first, second] = pings();
if (!Number.isInteger(first.message) || !(second.message > first.message)) fail(`pings ${JSON.stringify(pings())}`);
pinged.consumer.disconnect();
out("PASS ping");
process.exit(0);
