// permessage-deflate (RFC 7692) in a real browser: Debian's headless Chromium, which offers it
// on every WebSocket, opens the room page of a server the Rust test started and shares with
// its other clients (`@rails/actioncable` over `ws`, raw sockets with and without the
// extension). Run by tests/suite/browser_deflate.rs:
//
//   node deflate.mjs --hearth PATH --work DIR --artifacts DIR --base URL --cid ID
//                    [--email jz@example.com] [--timeout 120]
//
// Prints, one line each:
//   EXTENSIONS <value>  the cable handshake's `Sec-WebSocket-Extensions` answer (from the
//                       DevTools protocol: what Chromium agreed to)
//   CONNECTED           the room page's RoomMessagesChannel source is subscribed
//   FRAME <base64>      the whole frame, as Chromium decoded it, of the broadcast that carries
//                       --cid (posted by the Rust test)
//   OK
import { chromium } from "playwright-core"
import { args, out, signIn, connected, CHROMIUM, FLAGS } from "./harness.mjs"

const base = args.base
const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS })
const end = async (code) => {
  await browser.close().catch(() => {})
  process.exit(code)
}
setTimeout(() => { out("FAIL", "timeout"); end(1) }, Number(args.timeout ?? 120) * 1000).unref()

try {
  const context = await browser.newContext()
  const page = await context.newPage()
  page.on("pageerror", (e) => { out("FAIL", `page error: ${e.message}`); end(1) })
  const cdp = await context.newCDPSession(page)
  await cdp.send("Network.enable")
  const answers = []
  cdp.on("Network.webSocketHandshakeResponseReceived", ({ response }) => {
    const found = Object.entries(response.headers).find(([name]) => name.toLowerCase() === "sec-websocket-extensions")
    answers.push(found ? found[1] : "")
  })
  const frame = new Promise((resolve) => {
    page.on("websocket", (ws) => ws.on("framereceived", ({ payload }) => {
      if (typeof payload === "string" && payload.includes(`id=\\"message_${args.cid}\\"`)) resolve(payload)
    }))
  })
  await signIn(page, args.email ?? "jz@example.com", base)
  await page.goto(`${base}/rooms/1`)
  await connected(page, 'turbo-cable-stream-source[channel="RoomMessagesChannel"][connected]')
  out("EXTENSIONS", answers.at(-1) ?? "")
  out("CONNECTED")
  const payload = await frame
  out("FRAME", Buffer.from(payload, "utf8").toString("base64"))
  out("OK")
  await end(0)
} catch (error) {
  out("FAIL", error.message)
  await end(1)
}
