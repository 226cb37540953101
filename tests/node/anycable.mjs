// Drives AnyCable's own JavaScript client, @anycable/core (pinned in package.json, unmodified),
// against a running Hearth with the extended protocol `actioncable-v1-ext-json`: sign in over
// HTTP, subscribe to the room's messages, then lose the socket twice while posts go on.
//
//   node anycable.mjs --base http://127.0.0.1:3000 [--timeout 20]
//
// The server is expected to keep 2 broadcasts per stream (--history-limit 2). Prints one line
// per event and exits 0 once all of this was seen:
//   RECV <frame>                      every frame the client received
//   LIVE live-1 <offset>              a post delivered live, with its position
//   RESTORED                          the reconnect restored the session (no re-subscribe)
//   CAUGHT-UP gap-1,gap-2             the two posts made while away, from the history, once
//   REJECTED-HISTORY                  three posts while away: past the history's reach, the
//                                     client is told (reject_history)
import WS from "ws";
import { session, meta, decode } from "./session.mjs";
import { createCable } from "@anycable/core";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const base = args.base;
const timeout = Number(args.timeout ?? 20);
const out = (...parts) => process.stdout.write(parts.join(" ") + "\n");
const fail = (why) => { out("FAIL", why); process.exit(1); };
setTimeout(() => fail(`timeout after ${timeout}s`), timeout * 1000);

const { cookieHeader, http } = session(base);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(check, what) {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await sleep(50);
  }
  fail(`never saw ${what}`);
}

const form = await (await http("/session/new")).text();
const login = await http("/session", {
  method: "POST",
  body: new URLSearchParams({ email_address: "david@example.com", password: "secret123456", authenticity_token: meta(form, "csrf-token") }),
});
if (login.status !== 302) fail(`sign-in answered ${login.status}`);
const room = await (await http("/rooms/1")).text();
const csrf = meta(room, "csrf-token");
const signed = decode(room.match(/<turbo-cable-stream-source channel="RoomMessagesChannel" signed-stream-name="([^"]*)"/)[1]);
const run = Date.now();
async function post(name) {
  const body = new URLSearchParams({ "message[body]": name, "message[client_message_id]": `${name}-${run}`, authenticity_token: csrf });
  const res = await http("/rooms/1/messages", { method: "POST", body, headers: { Accept: "text/vnd.turbo-stream.html" } });
  if (res.status !== 200) fail(`post ${name} answered ${res.status}`);
}

const frames = [];
let socket = null;
class LoggingWS extends WS {
  constructor(url, protocols, options) {
    super(url, protocols, options);
    socket = this;
    this.on("message", (data) => {
      const text = data.toString("utf8");
      frames.push(text);
      if (!text.includes('"type":"ping"')) out("RECV", text.slice(0, 300));
    });
  }
}

const wsUrl = base.replace(/^http/, "ws") + "/cable";
const cable = createCable(wsUrl, {
  protocol: "actioncable-v1-ext-json",
  websocketImplementation: LoggingWS,
  websocketOptions: { headers: { Cookie: cookieHeader() }, origin: base },
  monitor: false,
  logLevel: "error",
});
let restored = 0;
cable.on("connect", (ev) => { if (ev.restored) { restored += 1; out("RESTORED"); } });
let disconnected = 0;
cable.on("disconnect", () => { disconnected += 1; });

const received = [];
const channel = cable.subscribeTo("RoomMessagesChannel", { signed_stream_name: signed });
channel.on("message", (message, position) => {
  const m = typeof message === "string" && message.match(/id="message_([a-z]+-\d)-\d+"/);
  if (!m) return;
  received.push(m[1]);
  if (m[1].startsWith("live")) out("LIVE", m[1], position?.offset);
});
await channel.ensureSubscribed();

await post("live-1");
await until(() => received.includes("live-1"), "live-1");

// The network drops: no close frame. Two posts while away; the history keeps two.
socket.terminate();
await until(() => disconnected === 1, "the disconnect");
await sleep(200);
await post("gap-1");
await post("gap-2");
await cable.connect();
await until(() => restored === 1, "a restored session");
await until(() => received.includes("gap-1") && received.includes("gap-2"), "gap-1 and gap-2");
await sleep(300);
const once = ["gap-1", "gap-2"].every((n) => received.filter((r) => r === n).length === 1);
if (!once) fail(`received ${received.join(",")}`);
out("CAUGHT-UP", "gap-1,gap-2");

// Three posts while away: the oldest of them is no longer kept.
socket.terminate();
await until(() => disconnected === 2, "the second disconnect");
await sleep(200);
await post("far-1");
await post("far-2");
await post("far-3");
await cable.connect();
await until(() => restored === 2, "a second restored session");
await until(() => frames.some((f) => f.includes('"type":"reject_history"')), "reject_history");
out("REJECTED-HISTORY");
process.exit(0);
