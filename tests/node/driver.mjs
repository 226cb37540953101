// Drives the official @rails/actioncable consumer (under Node, with `ws` as its WebSocket)
// against a running Hearth, the way a browser page would: sign in over HTTP, read the signed
// stream name from the room page, subscribe, post, and wait for the turbo-stream append.
//
//   node driver.mjs --base http://127.0.0.1:3000 --scenario post|unauthorized|rejected|restart|deflate
//                   [--email david@example.com] [--password secret123456] [--timeout 10]
//                   [--cable http://node1:3001,http://node2:3002] [--cid CLIENT_MESSAGE_ID]
//
// With --cable, /cable is opened on those nodes instead of --base, the next one at every
// (re)connect (the consumer's URL is a function, which @rails/actioncable calls each time):
// with `restart`, a client whose node stops reconnects to the next node.
//
// Prints one line per event and exits 0 when the scenario's outcome was observed:
//   post          RECEIVED <client_message_id>   (the append reached the subscription)
//   unauthorized  DISCONNECTED reconnect=false    (no cookie: the server refused the connection)
//   rejected      REJECTED                        (a tampered signed stream name)
//   restart       CONNECTED, then (after the server restarts) DISCONNECTED, RECONNECTED and
//                 RECEIVED <client_message_id>    (resubscribed by the client on its own, and
//                                                 live again: a post after the restart arrives)
//   deflate       EXTENSIONS <what the server agreed>, CONNECTED, then FRAME <base64>: the
//                 whole decoded frame (as `ws` hands it over, inflated) of the room's broadcast
//                 carrying --cid, which someone else posts. `ws` offers permessage-deflate
//                 (its default) and here compresses every message it sends (threshold 0), so
//                 the server inflates the subscribe command too.
import WS from "ws";
import { session, meta, decode } from "./session.mjs";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const base = args.base;
const scenario = args.scenario ?? "post";
const email = args.email ?? "david@example.com";
const password = args.password ?? "secret123456";
const timeout = Number(args.timeout ?? 10);
const cableNodes = (args.cable ? args.cable.split(",") : [base]).map((u) => u.replace(/^http/, "ws") + "/cable");
let nextNode = 0;
const cableUrl = () => cableNodes[nextNode++ % cableNodes.length];
const out = (...parts) => process.stdout.write(parts.join(" ") + "\n");
const fail = (why) => { out("FAIL", why); process.exit(1); };
setTimeout(() => fail(`timeout after ${timeout}s`), timeout * 1000);

const { jar, cookieHeader, http } = session(base);

async function signIn() {
  const form = await (await http("/session/new")).text();
  const body = new URLSearchParams({ email_address: email, password, authenticity_token: meta(form, "csrf-token") });
  const res = await http("/session", { method: "POST", body });
  if (res.status !== 302 || !jar.has("session_token")) fail(`sign-in answered ${res.status}`);
  out("SIGNED-IN", email);
}

// A post scenario ends once both the HTTP answer and the broadcast are in, whichever is first.
const done = (() => {
  let posted = false, received = false;
  const check = () => { if (posted && received) process.exit(0); };
  return { posted() { posted = true; check(); }, received() { received = true; check(); } };
})();

globalThis.addEventListener ??= () => {};
globalThis.removeEventListener ??= () => {};
globalThis.document ??= { visibilityState: "visible" };
const AC = await import("@rails/actioncable");
AC.adapters.WebSocket = class extends WS {
  constructor(url, protocols) {
    // The Origin Hearth expects is the node's own (`<scheme>://<Host>`).
    const origin = new URL(url).origin.replace(/^ws/, "http");
    const perMessageDeflate = scenario === "deflate" ? { threshold: 0 } : true;
    super(url, protocols, { headers: jar.size ? { Cookie: cookieHeader() } : {}, origin, perMessageDeflate });
    this.on("message", (data) => out("RECV", data.toString("utf8").slice(0, 200)));
    if (scenario === "deflate") {
      this.on("open", () => out("EXTENSIONS", this.extensions));
      this.on("message", (data) => {
        if (data.toString("utf8").includes(`id=\\"message_${args.cid}\\"`)) {
          out("FRAME", Buffer.from(data).toString("base64"));
          process.exit(0);
        }
      });
    }
  }
};
AC.adapters.logger = { log: () => {} };

if (scenario === "unauthorized") {
  const consumer = AC.createConsumer(cableUrl);
  consumer.subscriptions.create({ channel: "HeartbeatChannel" }, {
    connected() { fail("connected without a session"); },
  });
  const poll = setInterval(() => {
    const c = consumer.connection;
    if (c.webSocket && c.webSocket.readyState === WS.CLOSED && !c.monitor.isRunning()) {
      clearInterval(poll);
      out("DISCONNECTED", "reconnect=false");
      process.exit(0);
    }
  }, 50);
} else {
  await signIn();
  const room = await (await http("/rooms/1")).text();
  const csrf = meta(room, "csrf-token");
  const signed = decode(room.match(/<turbo-cable-stream-source channel="RoomMessagesChannel" signed-stream-name="([^"]*)"/)[1]);
  const consumer = AC.createConsumer(cableUrl);
  if (scenario === "rejected") {
    consumer.subscriptions.create({ channel: "RoomMessagesChannel", signed_stream_name: signed.slice(0, -1) + "0" }, {
      connected() { fail("a tampered name was confirmed"); },
      rejected() { out("REJECTED"); process.exit(0); },
    });
  } else if (scenario === "deflate") {
    consumer.subscriptions.create({ channel: "RoomMessagesChannel", signed_stream_name: signed }, {
      connected() { out("CONNECTED"); },
      rejected() { fail("rejected"); },
    });
  } else if (scenario === "restart") {
    let confirmations = 0;
    const cid = `node-restart-${Date.now()}`;
    consumer.subscriptions.create({ channel: "RoomMessagesChannel", signed_stream_name: signed }, {
      async connected() {
        confirmations += 1;
        if (confirmations === 1) { out("CONNECTED"); return; }
        out("RECONNECTED", confirmations);
        const body = new URLSearchParams({ "message[body]": "after the restart", "message[client_message_id]": cid, authenticity_token: csrf });
        const res = await http("/rooms/1/messages", { method: "POST", body, headers: { Accept: "text/vnd.turbo-stream.html" } });
        out("POSTED", res.status);
        done.posted();
      },
      disconnected({ willAttemptReconnect }) { out("DISCONNECTED", `willAttemptReconnect=${willAttemptReconnect}`); },
      received(data) {
        if (confirmations > 1 && typeof data === "string" && data.includes(`id="message_${cid}"`)) {
          out("RECEIVED", cid);
          done.received();
        }
      },
      rejected() { fail("rejected"); },
    });
  } else {
    const cid = `node-${Date.now()}`;
    consumer.subscriptions.create({ channel: "RoomMessagesChannel", signed_stream_name: signed }, {
      async connected() {
        out("CONNECTED");
        const body = new URLSearchParams({ "message[body]": "hello from @rails/actioncable", "message[client_message_id]": cid, authenticity_token: csrf });
        const res = await http("/rooms/1/messages", { method: "POST", body, headers: { Accept: "text/vnd.turbo-stream.html" } });
        out("POSTED", res.status);
        done.posted();
      },
      received(data) {
        if (typeof data === "string" && data.includes(`id="message_${cid}"`) && data.startsWith('<turbo-stream action="append"')) {
          out("RECEIVED", cid);
          done.received();
        }
      },
      rejected() { fail("rejected"); },
    });
  }
}
