// Link previews in a real browser. Run by tests/suite/browser_link_previews.rs:
//
//   node link_previews.mjs --hearth PATH --work DIR --artifacts DIR --image PNG [--timeout 180]
//
// A small site on loopback serves a page with Open Graph tags and its image (Hearth is started
// with `HEARTH_LINK_PREVIEW_ALLOW_NETWORK=127.0.0.1/32`, as an intranet would be allowed).
// David pastes the page's URL into the composer of the Designers room (4): the composer asks
// `POST /unfurl_link` with the URL, and the card (title, description, image) appears in the
// editor; Send posts it with the message. Jason, watching the room, and Kevin on a phone get
// the message with the card under it, its image served by Hearth (no browser ever asks the
// site: the harness fails on requests that leave Hearth's origin). Screenshots at 1280×900 and
// 390×844, light and dark. Each step prints one line; "OK" at the end.
import { createServer } from "node:http"
import { readFileSync } from "node:fs"
import { args, out, shot, fail, check, start, newPage, signIn, connected, finish, boxInView, SEEDED, base } from "./harness.mjs"

const ROOM = 4
const EMBED = "application/vnd.actiontext.opengraph-embed"
const image = readFileSync(args.image)
const siteHits = []

const site = createServer((request, response) => {
  siteHits.push(`${request.method} ${request.url} ${request.headers["user-agent"] ?? ""}`)
  if (request.url === "/trail") {
    response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" })
    response.end(`<!doctype html><html><head><title>Trail</title>
      <meta property="og:title" content="The ridge trail above the lake">
      <meta property="og:description" content="Six hours on the ridge, two huts and a view of three glaciers: the route, the maps and when to go.">
      <meta property="og:image" content="/trail.png">
      </head><body>The trail</body></html>`)
  } else if (request.url === "/trail.png") {
    response.writeHead(200, { "Content-Type": "image/png", "Content-Length": image.length })
    response.end(image)
  } else {
    response.writeHead(404)
    response.end()
  }
})
await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve))
const url = `http://127.0.0.1:${site.address().port}/trail`

async function onRoom(who, email, options) {
  const page = await newPage(who, options.viewport, options)
  await signIn(page, email)
  await page.goto(`${base}/rooms/${ROOM}`)
  await connected(page)
  return page
}

try {
  await start({ ...SEEDED, HEARTH_LINK_PREVIEW_ALLOW_NETWORK: "127.0.0.1/32" })
  const wide = { viewport: { width: 1280, height: 900 } }
  const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }
  const david = await onRoom("david", "david@example.com", wide)
  const jason = await onRoom("jason", "jason@example.com", wide)
  const kevin = await onRoom("kevin", "kevin@example.com", phone)

  const asked = []
  const posted = []
  david.on("request", (r) => {
    const path = new URL(r.url()).pathname
    if (path === "/unfurl_link") asked.push({ method: r.method(), body: r.postData() ?? "" })
    if (path === `/rooms/${ROOM}/messages` && r.method() === "POST") posted.push(r.postData() ?? "")
  })

  // The paste: text first, then the URL as a clipboard paste (Trix's `trix-paste`).
  const editor = david.locator("form.composer trix-editor")
  await editor.click()
  await david.keyboard.type("Our route for Saturday ")
  await editor.evaluate((element, text) => {
    const data = new DataTransfer()
    data.setData("text/plain", text)
    element.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }))
  }, url)
  const draft = david.locator(`form.composer trix-editor figure[data-trix-content-type="${EMBED}"] .og-embed`)
  await draft.waitFor({ state: "visible", timeout: 15000 })
  await check(asked.length === 1 && asked[0].method === "POST" && JSON.parse(asked[0].body).url === url, `the composer asked: ${JSON.stringify(asked)}`)
  out("UNFURL-REQUEST", JSON.stringify(asked[0]))
  const draftBox = await boxInView(david, `form.composer trix-editor figure[data-trix-content-type="${EMBED}"] .og-embed`, "the card in the composer")
  const editorBox = await editor.boundingBox()
  await check(draftBox.y >= editorBox.y - 1 && draftBox.y + draftBox.height <= editorBox.y + editorBox.height + 1, `the card is inside the editor: ${JSON.stringify({ draftBox, editorBox })}`)
  const draftTitle = await draft.locator(".og-embed__title").textContent()
  await check(draftTitle.includes("The ridge trail above the lake"), `the draft card's title: ${draftTitle}`)
  const draftImage = await draft.locator(".og-embed__image img").getAttribute("src")
  await check(draftImage?.startsWith("/unfurl_link/images/"), `the draft card's image is Hearth's: ${draftImage}`)
  await check(siteHits.length >= 2 && siteHits.every((h) => h.includes("Hearth link preview")), `only the server asked the site: ${siteHits}`)
  out("CARD-IN-COMPOSER", JSON.stringify(draftBox), siteHits.join(" | "))
  await david.screenshot({ path: shot("link-previews-composer-1280x900.png") })

  // Send: the card goes with the message.
  await david.click("form.composer button[type=submit]")
  await david.waitForFunction(() => document.querySelector("form.composer trix-editor")?.editor.getDocument().toString().trim() === "")
  await check(posted.length === 1 && decodeURIComponent(posted[0].replace(/\+/g, " ")).includes(EMBED), `the post holds the card: ${posted[0]?.slice(0, 300)}`)
  out("POSTED-WITH-CARD")

  // Jason and Kevin get it by broadcast, the card under the text, its image loaded from Hearth.
  for (const [who, page] of [["jason", jason], ["kevin", kevin]]) {
    const card = page.locator("#message-area .message .og-embed").last()
    await card.waitFor({ state: "visible", timeout: 20000 })
    await page.waitForFunction(() => {
      const img = [...document.querySelectorAll("#message-area .og-embed__image img")].pop()
      return img && img.complete && img.naturalWidth > 0
    })
    const shown = await card.evaluate((el) => {
      const message = el.closest(".message")
      const text = message.querySelector(".message__presentation").textContent
      const link = el.querySelector(".og-embed__title a")
      const img = el.querySelector(".og-embed__image img")
      return { text, href: link.href, target: link.target, title: link.textContent, description: el.querySelector(".og-embed__description").textContent, src: img.getAttribute("src"), natural: [img.naturalWidth, img.naturalHeight] }
    })
    await check(shown.href === url && shown.target === "_blank", `${who}: the title links to the page: ${JSON.stringify(shown)}`)
    await check(shown.title === "The ridge trail above the lake" && shown.description.startsWith("Six hours on the ridge"), `${who}: the card's text: ${JSON.stringify(shown)}`)
    await check(shown.src.startsWith("/unfurl_link/images/") && shown.natural[0] <= 640 && shown.natural[1] <= 360, `${who}: the image is Hearth's re-encoded copy: ${JSON.stringify(shown)}`)
    await check(shown.text.includes("Our route for Saturday"), `${who}: the text is kept: ${shown.text}`)
    const box = await boxInView(page, "#message-area .message .og-embed >> nth=-1", `${who}: the card`)
    const body = await card.evaluate((el) => el.closest(".message__body").getBoundingClientRect().toJSON())
    const imageBox = await card.locator(".og-embed__image").boundingBox()
    await check(box.x >= body.x - 1 && box.x + box.width <= body.x + body.width + 1, `${who}: the card stays in its message: ${JSON.stringify({ box, body })}`)
    await check(imageBox && imageBox.width > 100 && imageBox.height > 40, `${who}: the image has a box: ${JSON.stringify(imageBox)}`)
    out("CARD-SHOWN", who, JSON.stringify(box), JSON.stringify(imageBox))
  }

  for (const scheme of ["light", "dark"]) {
    for (const [page, size] of [[jason, "1280x900"], [kevin, "390x844"]]) {
      await page.emulateMedia({ colorScheme: scheme })
      await page.locator("#message-area .message .og-embed").last().scrollIntoViewIfNeeded()
      await page.screenshot({ path: shot(`link-previews-${size}-${scheme}.png`) })
    }
  }
  out("SCREENSHOTS")
  site.close()
  await finish()
} catch (error) {
  site.close()
  await fail(error.stack ?? String(error))
}
