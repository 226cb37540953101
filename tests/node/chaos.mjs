// The clients and the checker of scripts/chaos: N clients on the cable nodes, half the stock
// @rails/actioncable consumer (actioncable-v1-json) doing what the room page does after every
// connect (GET /rooms/1/refresh?cursor=…, appends deduplicated by element id as Turbo does),
// half @anycable/core (actioncable-v1-ext-json: restores its session and asks the history);
// a poster posting at a steady rate; random TCP resets of client sockets. At the end, per
// client: missing, duplicated and out-of-order messages.
//
//   node chaos.mjs --base http://127.0.0.1:3000 --cables ws://127.0.0.1:3001,ws://127.0.0.1:3002
//        [--n 1000] [--users 20] [--duration 60] [--rate 5] [--resets 2] [--drain 30]
//
// Prints progress lines, then one JSON line `RESULT {...}`; exits 0 when every client holds
// every accepted post exactly once and in order, 3 otherwise.
import WS from "ws";
import { createCable } from "@anycable/core";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const base = args.base;
const cables = args.cables.split(",");
const N = Number(args.n ?? 1000);
const USERS = Number(args.users ?? 20);
const DURATION = Number(args.duration ?? 60);
const RATE = Number(args.rate ?? 5);
const RESETS = Number(args.resets ?? 2);
const DRAIN = Number(args.drain ?? 30);
const out = (...parts) => process.stdout.write(parts.join(" ") + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const decode = (s) => s.replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCharCode(parseInt(h, 16)))
  .replace(/&#(\d+);/g, (_, d) => String.fromCharCode(Number(d))).replace(/&quot;/g, '"').replace(/&amp;/g, "&");

/// One signed-in user: a cookie jar, the room page's CSRF token, stream name and cursor.
async function session(email, password) {
  const jar = new Map();
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  async function http(path, init = {}) {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await fetch(base + path, { redirect: "manual", ...init, headers: { Cookie: cookie(), ...(init.headers ?? {}) } });
        for (const line of res.headers.getSetCookie()) {
          const [pair] = line.split(";");
          const i = pair.indexOf("=");
          jar.set(pair.slice(0, i), pair.slice(i + 1));
        }
        return res;
      } catch (e) {
        if (attempt >= 5) throw e;
        await sleep(200);
      }
    }
  }
  const form = await (await http("/session/new")).text();
  const csrf0 = decode(form.match(/<meta name="csrf-token" content="([^"]*)"/)[1]);
  const login = await http("/session", { method: "POST", body: new URLSearchParams({ email_address: email, password, authenticity_token: csrf0 }) });
  if (login.status !== 302) throw new Error(`sign-in of ${email} answered ${login.status}`);
  const room = await (await http("/rooms/1")).text();
  return {
    http,
    cookie,
    csrf: decode(room.match(/<meta name="csrf-token" content="([^"]*)"/)[1]),
    signed: decode(room.match(/<turbo-cable-stream-source channel="RoomMessagesChannel" signed-stream-name="([^"]*)"/)[1]),
    cursor: Number(decode(room.match(/data-refresh-room-cursor-value="([^"]*)"/)?.[1] ?? "0")) || 0,
    refreshUrl: decode(room.match(/data-refresh-room-url-value="([^"]*)"/)?.[1] ?? "/rooms/1/refresh"),
  };
}

const seqsIn = (text) => [...new Set([...text.matchAll(/chaos-(\d+)\b/g)].map((m) => Number(m[1])))];

// What one client saw.
class Seen {
  constructor(kind) {
    this.kind = kind;
    this.live = [];          // every seq delivered over the socket, in arrival order
    this.page = new Set();   // stock clients: the page's message elements (Turbo drops duplicates)
    this.connects = 0;
    this.connected = false;  // the socket is up (a failed catch-up is asked again meanwhile)
    this.catchUps = 0;
    this.reloads = 0;        // catch-ups answered with a reload (too much missed)
    this.failedTries = 0;    // catch-up requests that failed (and were asked again while connected)
    this.rejected = 0;       // reject_history frames (ext-json)
    this.restored = 0;
    this.events = [];        // what happened to this client, with the time since posting began
  }
  note(what) {
    const t = ((Date.now() - (globalThis.postingStarted ?? Date.now())) / 1000).toFixed(1);
    this.events.push(`${t}s ${what}${this.live.length ? ` (live last ${this.live[this.live.length - 1]})` : ""}`);
  }
}

const sessions = [];
for (let u = 1; u <= USERS; u++) sessions.push(await session(`user${u}@example.com`, "password"));
out("SIGNED-IN", USERS);

globalThis.addEventListener ??= () => {};
globalThis.removeEventListener ??= () => {};
globalThis.document ??= { visibilityState: "visible" };
const AC = await import("@rails/actioncable");
AC.adapters.logger = { log: () => {} };
const sockets = new Map(); // client index -> its current WebSocket
AC.adapters.WebSocket = class extends WS {
  constructor(url, protocols) {
    const u = new URL(url);
    const i = Number(u.searchParams.get("client"));
    const origin = u.origin.replace(/^ws/, "http");
    super(url, protocols, { headers: { Cookie: sessions[i % USERS].cookie() }, origin });
    sockets.set(i, this);
  }
};

/// The room page's catch-up (assets/js/connection.js): GET refresh?cursor=, appends kept once
/// by element id; a `refresh` action (too much missed) reloads the page: its messages, its
/// cursor. A failure worth retrying (no answer, 5xx, 408, 429) is asked again while the client
/// stays connected, after the answer's Retry-After or 1 s doubling to 30 s; a new connect
/// starts over.
function catchUp(s, seen) {
  let cursor = s.cursor;
  let run = 0;
  const once = async () => {
    try {
      const res = await s.http(`${s.refreshUrl}?cursor=${cursor}&reason=connection`, { headers: { Accept: "text/vnd.turbo-stream.html" } });
      if (!res.ok) {
        seen.note(`catch-up answered ${res.status}`);
        seen.failedTries += 1;
        const retry = res.status >= 500 || res.status === 408 || res.status === 429;
        const after = Number(res.headers.get("Retry-After"));
        return retry ? { after: after > 0 ? after * 1000 : null } : null;
      }
      let next = Number(res.headers.get("X-Refresh-Cursor"));
      let html = await res.text();
      if (html.includes('action="refresh"')) {
        seen.reloads += 1;
        html = await (await s.http("/rooms/1")).text();
        next = Number(decode(html.match(/data-refresh-room-cursor-value="([^"]*)"/)?.[1] ?? "0")) || 0;
        // The reloaded page shows its last page; what is older is there by scrolling back
        // (GET /rooms/1/messages?before=<oldest id>), as a reader would.
        let older = html;
        for (let pages = 0; pages < 50; pages++) {
          const ids = [...older.matchAll(/data-message-id="(\d+)"/g)].map((m) => Number(m[1]));
          if (ids.length === 0) break;
          const page = await s.http(`/rooms/1/messages?before=${Math.min(...ids)}`);
          if (page.status !== 200) break;
          older = await page.text();
          html += older;
        }
      }
      const got = seqsIn(html);
      for (const seq of got) seen.page.add(seq);
      seen.note(`catch-up ${res.status} cursor ${cursor}->${next} got ${got.length ? `${Math.min(...got)}-${Math.max(...got)}` : "none"}`);
      if (next > cursor) cursor = next;
      seen.catchUps += 1;
      return null;
    } catch (e) {
      seen.note(`catch-up failed ${e}`);
      seen.failedTries += 1;
      return { after: null }; // the server went away: try again, or the next connect does
    }
  };
  return async () => {
    const mine = ++run;
    let wait = 1000;
    for (;;) {
      const failed = await once();
      if (!failed || mine !== run || !seen.connected) return;
      const delay = failed.after ?? wait;
      wait = Math.min(wait * 2, 30_000);
      await sleep(delay);
      if (mine !== run || !seen.connected) return;
    }
  };
}

const clients = [];
function stock(i) {
  const s = sessions[i % USERS];
  const seen = new Seen("v1-json");
  // Round-robin over the cable nodes on every connect, as a load balancer would.
  let attempt = Math.floor(i / 2);
  const consumer = AC.createConsumer(() => `${cables[attempt++ % cables.length]}/cable?client=${i}`);
  const refresh = catchUp(s, seen);
  consumer.subscriptions.create({ channel: "RoomMessagesChannel", signed_stream_name: s.signed }, {
    connected() { seen.connects += 1; seen.connected = true; seen.note("confirmed"); refresh(); },
    disconnected() { seen.connected = false; seen.note("disconnected"); },
    received(data) {
      for (const seq of seqsIn(typeof data === "string" ? data : JSON.stringify(data))) {
        seen.live.push(seq);
        seen.page.add(seq);
      }
    },
  });
  return { seen, ready: () => seen.connects > 0 };
}

function ext(i) {
  const s = sessions[i % USERS];
  const seen = new Seen("ext-json");
  // Told the history no longer covers what it missed, the page catches up as a stock one does.
  const refresh = catchUp(s, seen);
  const url = `${cables[Math.floor(i / 2) % cables.length]}/cable?client=${i}`;
  class Tracked extends WS {
    constructor(u, protocols, options) {
      super(u, protocols, options);
      sockets.set(i, this);
      this.on("message", (data) => {
        if (data.includes('"reject_history"')) { seen.rejected += 1; seen.note("reject_history"); refresh(); }
      });
    }
  }
  const cable = createCable(url, {
    protocol: "actioncable-v1-ext-json",
    websocketImplementation: Tracked,
    websocketOptions: { headers: { Cookie: s.cookie() }, origin: new URL(url).origin.replace(/^ws/, "http") },
    logLevel: "error",
  });
  cable.on("connect", (ev) => { seen.connects += 1; seen.connected = true; if (ev.restored) seen.restored += 1; seen.note(ev.restored ? "restored" : "connected"); });
  cable.on("disconnect", () => { seen.connected = false; seen.note("disconnected"); });
  const channel = cable.subscribeTo("RoomMessagesChannel", { signed_stream_name: s.signed });
  channel.on("message", (message) => {
    for (const seq of seqsIn(typeof message === "string" ? message : JSON.stringify(message))) {
      seen.live.push(seq);
      seen.page.add(seq);
    }
  });
  let ready = false;
  channel.ensureSubscribed().then(() => { ready = true; }, () => {});
  return { seen, ready: () => ready };
}

for (let i = 0; i < N; i++) {
  clients.push(i % 2 === 0 ? stock(i) : ext(i));
  if (i % 50 === 49) await sleep(100);
}
const readyBy = Date.now() + 120_000;
while (clients.some((c) => !c.ready()) && Date.now() < readyBy) await sleep(200);
const notReady = clients.filter((c) => !c.ready()).length;
out("READY", N - notReady, "of", N);
await sleep(1000);

// The poster: user 1, steady rate, one post at a time; only answered (200) posts count.
const poster = sessions[0];
const accepted = [];
let postErrors = 0;
const postedAt = []; // "<seq>@<seconds since posting began, when answered>"
let seq = 0;
let posting = true;
const started = Date.now();
globalThis.postingStarted = started;
out("POSTING", DURATION, "s at", RATE, "/s");
const postLoop = (async () => {
  while (posting) {
    const at = started + (seq * 1000) / RATE;
    if (at > Date.now()) await sleep(at - Date.now());
    const n = ++seq;
    const body = new URLSearchParams({ "message[body]": `chaos-${n}`, "message[client_message_id]": `cm${started}x${n}`, authenticity_token: poster.csrf });
    // One post at a time, so the server's order is the sequence's (what "in order" checks).
    try {
      const res = await poster.http("/rooms/1/messages", { method: "POST", body, headers: { Accept: "text/vnd.turbo-stream.html" } });
      if (res.status === 200) { accepted.push(n); postedAt.push(`${n}@${((Date.now() - started) / 1000).toFixed(1)}`); } else postErrors += 1;
      await res.arrayBuffer();
    } catch {
      postErrors += 1;
    }
  }
})();

// Random TCP resets: a socket destroyed with RST, no close frame.
let resets = 0;
const resetLoop = (async () => {
  while (posting && RESETS > 0) {
    await sleep(1000 / RESETS);
    const i = Math.floor(Math.random() * N);
    const ws = sockets.get(i);
    const raw = ws?._socket;
    if (raw && !raw.destroyed && typeof raw.resetAndDestroy === "function") {
      raw.resetAndDestroy();
      resets += 1;
    }
  }
})();

const tick = setInterval(() => out("PROGRESS", Math.round((Date.now() - started) / 1000), "s posted", accepted.length, "resets", resets), 10_000);
await sleep(DURATION * 1000);
posting = false;
await postLoop;
await resetLoop;
await sleep(1500); // the last answers
clearInterval(tick);

const want = [...accepted].sort((a, b) => a - b);
const has = (c) => c.seen.page;
const complete = (c) => want.every((n) => has(c).has(n));
const drainBy = Date.now() + DRAIN * 1000;
while (clients.some((c) => !complete(c)) && Date.now() < drainBy) await sleep(500);

function check(c) {
  const wanted = new Set(want);
  const held = has(c);
  const missing = want.filter((n) => !held.has(n)).length;
  const counts = new Map();
  for (const n of c.seen.live) counts.set(n, (counts.get(n) ?? 0) + 1);
  const duplicated = [...counts.values()].filter((k) => k > 1).length;
  let outOfOrder = 0, last = 0;
  for (const n of c.seen.live) { if (n < last) outOfOrder += 1; else last = n; }
  const extra = [...held].filter((n) => !wanted.has(n)).length;
  return { missing, duplicated, outOfOrder, extra };
}

const rows = {};
for (const c of clients) {
  const k = c.seen.kind;
  const r = (rows[k] ??= { kind: k, clients: 0, complete: 0, missing: 0, duplicated: 0, outOfOrder: 0, clientsWithMissing: 0, clientsWithDuplicates: 0, clientsOutOfOrder: 0, connects: 0, catchUps: 0, reloads: 0, failedTries: 0, rejectedHistory: 0, restored: 0 });
  const v = check(c);
  r.clients += 1;
  if (v.missing === 0 && v.duplicated === 0 && v.outOfOrder === 0) r.complete += 1;
  r.missing += v.missing;
  r.duplicated += v.duplicated;
  r.outOfOrder += v.outOfOrder;
  if (v.missing) r.clientsWithMissing += 1;
  if (v.duplicated) r.clientsWithDuplicates += 1;
  if (v.outOfOrder) r.clientsOutOfOrder += 1;
  r.connects += c.seen.connects;
  r.catchUps += c.seen.catchUps;
  r.reloads += c.seen.reloads;
  r.failedTries += c.seen.failedTries;
  r.rejectedHistory += c.seen.rejected;
  r.restored += c.seen.restored;
}
// The first few clients that do not hold everything once and in order, in detail.
const ranges = (ns) => {
  const out = [];
  for (const n of ns) {
    const last = out[out.length - 1];
    if (last && n === last[1] + 1) last[1] = n; else out.push([n, n]);
  }
  return out.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(",");
};
const shown = {};
clients.forEach((c, i) => {
  const v = check(c);
  shown[c.seen.kind] ??= 0;
  if ((v.missing || v.duplicated || v.outOfOrder) && shown[c.seen.kind]++ < 8) {
    const missing = want.filter((n) => !c.seen.page.has(n));
    out("DETAIL", `client ${i} ${c.seen.kind}`, `missing ${ranges(missing)}`, `dup ${v.duplicated}`, `disorder ${v.outOfOrder}`,
      `connects ${c.seen.connects} catch-ups ${c.seen.catchUps} reloads ${c.seen.reloads} rejected ${c.seen.rejected} restored ${c.seen.restored}`,
      `live tail ${c.seen.live.slice(-12).join(",")}`);
    out("EVENTS", `client ${i}`, c.seen.events.join(" | "));
  }
});
out("POSTED", postedAt.join(" "));
const result = { clients: N, ready: N - notReady, posted: accepted.length, postErrors, resets, seconds: DURATION, rows: Object.values(rows) };
out("RESULT", JSON.stringify(result));
const ok = result.rows.every((r) => r.complete === r.clients) && notReady === 0;
process.exit(ok ? 0 : 3);
