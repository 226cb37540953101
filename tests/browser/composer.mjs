// The composer's behaviour in a real browser: Debian's headless Chromium, driven by
// playwright-core, against the `hearth` binary. Run by tests/suite/browser_composer.rs:
//
//   node composer.mjs --hearth PATH --work DIR --artifacts DIR --image PNG [--timeout 240]
//
// David on a desktop (1280×900, no touch) and Kevin on a phone (390×844, touch):
// 1. FOCUS-DESKTOP: David's room opens with the focus in the composer (`document.activeElement`),
//    without the desktop's formatting toolbar over the newest messages until he types.
// 2. FOCUS-ROOM-SWITCH: a click on another room in the sidebar opens it with the focus in its
//    composer; FOCUS-TURBO-VISIT: so does a Turbo visit to a room (the same window, its body
//    replaced).
// 3. DESKTOP-ENTER: Shift+Enter starts a new line and posts nothing; Enter posts the two lines
//    as one message (one POST); the focus is back in the composer. FOCUS-AFTER-SEND-BUTTON: a
//    click on Send leaves the focus in the composer too.
// 4. TOUCH-NO-FOCUS: Kevin's room opens without the focus in the composer (no soft keyboard).
// 5. TOUCH-ENTER-NEWLINE: on the phone Enter starts a new line and posts nothing (no POST in
//    2 s); TOUCH-SEND-BUTTON: the Send button posts both lines as one message.
// 6. STAGED: David picks two files (a PNG and a text file): they wait above the field (a
//    thumbnail and a chip, boxes above the editor, in view, uncovered also once the toolbar
//    shows) and nothing is uploaded or posted.
//    He types, removes the text file with its × (its accessible name), presses Send: exactly
//    one direct upload (the PNG) and two message POSTs, one with the text and one with the
//    PNG's signed id (SENT-TEXT-AND-FILE); both messages show in the room, the text file
//    nowhere; the row is empty and the focus in the composer.
// 7. PASTE-STAGED, DROP-STAGED: an image pasted into the editor, and a file dropped on it, wait
//    in the row (nothing uploaded, nothing in Trix's text).
// 8. NOT-SENT-WAITS: files alone whose upload is refused say they were not sent and wait in
//    the row again; FILES-ALONE-SENT: the next Send posts them, one message each, no text.
// Screenshots of the row at 1280×900 and 390×844, light and dark. Each step prints one line;
// "OK" at the end.
import { readFileSync } from "node:fs"
import { args, out, shot, fail, check, start, newPage, signIn, connected, finish, SEEDED, base } from "./harness.mjs"

const ROOM = 4 // Designers: David, Jason, JZ, Kevin
const OTHER = 3 // HQ
const png = readFileSync(args.image)
const requests = [] // "who METHOD path body"

async function signInAs(options, who, email, room) {
  const page = await newPage(who, options.viewport, options)
  page.on("request", (request) => {
    if (request.method() !== "POST") return
    const path = new URL(request.url()).pathname
    if (path.endsWith("/messages") || path.includes("/direct_uploads")) requests.push({ who, path, body: request.postData() ?? "" })
  })
  await signIn(page, email)
  await page.goto(`${base}/rooms/${room}`)
  await connected(page)
  return page
}

const posts = (who, path) => requests.filter((r) => r.who === who && r.path === path)
const messagePath = (room) => `/rooms/${room}/messages`

// Whether the composer's editor has the focus.
const composerFocused = (page) => page.evaluate(() => document.activeElement?.matches?.("form.composer trix-editor") ?? false)
async function waitForComposerFocus(page, what) {
  await page.waitForFunction(() => document.activeElement?.matches?.("form.composer trix-editor"), null, { timeout: 5000 })
    .catch(async () => fail(`${what}: the focus is on ${await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 120))}`))
}

// The text of the editor's document (Trix's own, with "\n" for a new line).
const editorText = (page) => page.evaluate(() => document.querySelector("form.composer trix-editor").editor.getDocument().toString())

// The last message in the list whose text includes `text`, once it is the server's (not pending).
async function waitForMessage(page, text) {
  await page.waitForFunction((text) => [...document.querySelectorAll("#message-area .message:not(.message--pending)")].some((m) => m.querySelector(".message__presentation")?.innerText.includes(text)), text, { timeout: 15000 })
    .catch(() => fail(`no message with ${JSON.stringify(text)}`))
  return page.evaluate((text) => [...document.querySelectorAll("#message-area .message:not(.message--pending)")].filter((m) => m.querySelector(".message__presentation")?.innerText.includes(text)).pop().querySelector(".message__presentation").innerText, text)
}

// The staged row: its items' names, kinds and boxes, and the editor's box.
const stagedRow = (page) => page.evaluate(() => {
  const row = document.querySelector(".composer__staged")
  const box = (e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width, h: r.height, bottom: r.bottom, right: r.right } }
  return {
    hidden: row.hidden,
    items: [...row.querySelectorAll(".composer__staged-file")].map((li) => ({
      name: li.querySelector(".composer__staged-name").textContent,
      // what is drawn at the middle of the item and at its ×: the item itself (nothing covers it)
      uncovered: [li, li.querySelector("button")].every((e) => { const r = e.getBoundingClientRect(); return li.contains(document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2)) }),
      image: li.querySelector("img.composer__staged-thumbnail")?.naturalWidth ?? null,
      box: box(li),
      remove: li.querySelector("button.composer__staged-remove")?.getAttribute("aria-label"),
    })),
    editor: box(document.querySelector("form.composer trix-editor")),
    viewport: { w: innerWidth, h: innerHeight },
  }
})

async function pick(page, files) {
  await page.setInputFiles("input.composer__file", files)
  await page.waitForFunction((n) => document.querySelectorAll(".composer__staged .composer__staged-file").length === n, files.length, { timeout: 5000 })
    .catch(() => fail(`${files.length} files picked: the row does not show them`))
  await page.waitForFunction(() => [...document.querySelectorAll(".composer__staged img")].every((img) => img.complete && img.naturalWidth > 0))
}

async function shots(page, name) {
  const { width, height } = page.viewportSize()
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme })
    await page.screenshot({ path: shot(`composer-${name}-${width}x${height}-${scheme}.png`) })
  }
  await page.emulateMedia({ colorScheme: "light" })
}

try {
  await start(SEEDED)
  const notes = { name: "a-notes.txt", mimeType: "text/plain", buffer: Buffer.from("minutes of the meeting\n") }
  const photo = { name: "b-photo.png", mimeType: "image/png", buffer: png }

  // 1. A desktop: the room opens with the focus in the composer.
  const david = await signInAs({ viewport: { width: 1280, height: 900 } }, "david", "david@example.com", ROOM)
  await waitForComposerFocus(david, "a room opened on a desktop")
  // The toolbar (shown on a desktop while the editor is being used) does not cover the list yet.
  await david.waitForTimeout(300)
  await check(!(await david.locator("#composer trix-toolbar").isVisible()), "the toolbar shows over the messages as the room opens")
  out("FOCUS-DESKTOP", await david.evaluate(() => `${document.activeElement.tagName.toLowerCase()}#${document.activeElement.id}`), "toolbar hidden")

  // 2. A click on another room in the sidebar opens it with the focus in its composer; so does
  //    a Turbo visit (the same window, its body replaced).
  await david.locator(`#shared_rooms li[data-room-id="${OTHER}"] a`).click()
  await david.waitForURL(new RegExp(`/rooms/${OTHER}$`))
  await connected(david)
  await waitForComposerFocus(david, "after a room switch from the sidebar")
  out("FOCUS-ROOM-SWITCH", `room ${ROOM} -> ${OTHER}`)
  await david.evaluate(() => { window.sameWindow = true })
  await david.evaluate((room) => window.Turbo.visit(`/rooms/${room}`), ROOM)
  await david.waitForFunction((room) => document.querySelector('meta[name="current-room-id"]')?.content === String(room), ROOM)
  await connected(david)
  await check(await david.evaluate(() => window.sameWindow === true), "the Turbo visit made a full page load")
  await waitForComposerFocus(david, "after a Turbo visit to a room")
  out("FOCUS-TURBO-VISIT", `room ${OTHER} -> ${ROOM}`)

  // 3. Desktop keys: Shift+Enter is a new line, Enter sends, the focus stays.
  await david.keyboard.type("desk one")
  await david.keyboard.press("Shift+Enter")
  await david.keyboard.type("desk two")
  await david.waitForTimeout(500)
  await check(posts("david", messagePath(ROOM)).length === 0, `Shift+Enter posted: ${JSON.stringify(requests)}`)
  await check((await editorText(david)).includes("desk one\ndesk two"), `Shift+Enter: the editor holds ${JSON.stringify(await editorText(david))}`)
  await david.keyboard.press("Enter")
  const deskText = await waitForMessage(david, "desk two")
  await check(/desk one\s*\n\s*desk two/.test(deskText), `the message's lines: ${JSON.stringify(deskText)}`)
  await check(posts("david", messagePath(ROOM)).length === 1, `Enter: ${posts("david", messagePath(ROOM)).length} posts`)
  await waitForComposerFocus(david, "after sending with Enter")
  await check((await editorText(david)).trim() === "", "the composer is empty after sending")
  await david.keyboard.type("by the button")
  await david.locator('form.composer button[type="submit"]').click()
  await waitForMessage(david, "by the button")
  await waitForComposerFocus(david, "after sending with the Send button")
  await check(posts("david", messagePath(ROOM)).length === 2, `Send: ${posts("david", messagePath(ROOM)).length} posts`)
  out("DESKTOP-ENTER", JSON.stringify(deskText))
  out("FOCUS-AFTER-SEND-BUTTON")

  // 4. A touch device: the room opens without the focus in the composer.
  const kevin = await signInAs({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }, "kevin", "kevin@example.com", ROOM)
  await kevin.waitForTimeout(1000)
  await check(await kevin.evaluate(() => navigator.maxTouchPoints > 0), "the phone's context has touch")
  await check(!(await composerFocused(kevin)), "a touch device's composer took the focus when the room opened")
  out("TOUCH-NO-FOCUS", await kevin.evaluate(() => document.activeElement?.tagName.toLowerCase()))

  // 5. Enter on the phone: a new line, nothing posted; the Send button posts.
  await kevin.locator("form.composer trix-editor").tap()
  await waitForComposerFocus(kevin, "a tap on the phone's composer")
  await kevin.keyboard.type("phone one")
  await kevin.keyboard.press("Enter")
  await kevin.keyboard.type("phone two")
  await kevin.waitForTimeout(2000)
  await check(posts("kevin", messagePath(ROOM)).length === 0, `Enter on a touch device posted: ${JSON.stringify(posts("kevin", messagePath(ROOM)))}`)
  const phoneDraft = await editorText(kevin)
  await check(/phone one\n+phone two/.test(phoneDraft), `Enter on a touch device: the editor holds ${JSON.stringify(phoneDraft)}`)
  out("TOUCH-ENTER-NEWLINE", JSON.stringify(phoneDraft), "posts=0")
  await kevin.locator('form.composer button[type="submit"]').tap()
  const phoneText = await waitForMessage(kevin, "phone two")
  await check(/phone one\s*\n\s*phone two/.test(phoneText), `the phone's message: ${JSON.stringify(phoneText)}`)
  await check(posts("kevin", messagePath(ROOM)).length === 1, `the Send button: ${posts("kevin", messagePath(ROOM)).length} posts`)
  out("TOUCH-SEND-BUTTON", JSON.stringify(phoneText))

  // 6. Two files wait in the composer; one is taken out; Send posts the text and the other.
  const before = requests.length
  await pick(david, [notes, photo])
  const staged = await stagedRow(david)
  await check(!staged.hidden && staged.items.length === 2, `the row: ${JSON.stringify(staged)}`)
  const [chip, thumb] = staged.items // sorted by name
  await check(chip.name === "a-notes.txt" && chip.image === null && chip.remove === "Remove a-notes.txt", `the text file's chip: ${JSON.stringify(chip)}`)
  await check(thumb.name === "b-photo.png" && thumb.image > 0 && thumb.remove === "Remove b-photo.png", `the image's thumbnail: ${JSON.stringify(thumb)}`)
  for (const item of staged.items) {
    await check(item.box.bottom <= staged.editor.y + 1 && item.box.y >= 0 && item.box.right <= staged.viewport.w, `${item.name} is not above the field, in view: ${JSON.stringify(staged)}`)
  }
  await david.waitForTimeout(500)
  await check(requests.length === before, `picking sent something: ${JSON.stringify(requests.slice(before))}`)
  out("STAGED", staged.items.map((i) => `${i.name}:${i.image ? "thumbnail" : "chip"}@${Math.round(i.box.x)},${Math.round(i.box.y)}`).join(" "))
  await david.locator("form.composer trix-editor").click()
  await david.keyboard.type("Here is the photo")
  await david.locator("#composer trix-toolbar").waitFor({ state: "visible", timeout: 5000 }).catch(() => fail("typing on a desktop shows no toolbar"))
  const typing = await stagedRow(david)
  await check(typing.items.every((i) => i.uncovered), `the toolbar covers the waiting files: ${JSON.stringify(typing)}`)
  await shots(david, "staged")

  await david.getByRole("button", { name: "Remove a-notes.txt" }).click()
  const left = await stagedRow(david)
  await check(left.items.length === 1 && left.items[0].name === "b-photo.png", `after removing the text file: ${JSON.stringify(left)}`)
  await check(await david.evaluate(() => document.activeElement?.getAttribute("aria-label")) === "Remove b-photo.png", "the focus goes to the next file's ×")
  await check(requests.length === before, `removing sent something: ${JSON.stringify(requests.slice(before))}`)
  out("REMOVED", "a-notes.txt")

  await david.locator('form.composer button[type="submit"]').click()
  await waitForMessage(david, "Here is the photo")
  await david.waitForFunction(() => [...document.querySelectorAll("#message-area .message:not(.message--pending)")].some((m) => m.querySelector('img.message__attachment[alt="b-photo.png"], .message__file-name[title="b-photo.png"]')), null, { timeout: 30000 })
    .catch(() => fail("the photo's message did not show"))
  await david.waitForTimeout(1000)
  const sent = requests.slice(before)
  const uploads = sent.filter((r) => r.path.includes("/direct_uploads"))
  const messagePosts = sent.filter((r) => r.path === messagePath(ROOM))
  await check(uploads.length === 1 && uploads[0].body.includes('"b-photo.png"'), `direct uploads: ${JSON.stringify(uploads)}`)
  await check(messagePosts.length === 2, `message posts: ${JSON.stringify(messagePosts)}`)
  const textPost = messagePosts.find((r) => new URLSearchParams(r.body).has("message[body]"))
  const filePost = messagePosts.find((r) => new URLSearchParams(r.body).has("message[attachment]"))
  await check(textPost && new URLSearchParams(textPost.body).get("message[body]").includes("Here is the photo") && !new URLSearchParams(textPost.body).has("message[attachment]"), `the text's post: ${JSON.stringify(textPost)}`)
  await check(filePost && new URLSearchParams(filePost.body).get("message[attachment]").length > 20 && !new URLSearchParams(filePost.body).get("message[body]"), `the file's post: ${JSON.stringify(filePost)}`)
  await check(await david.evaluate(() => !document.querySelector("#message-area").innerHTML.includes("a-notes.txt")), "the removed file was posted")
  const after = await stagedRow(david)
  await check(after.hidden && after.items.length === 0, `the row after Send: ${JSON.stringify(after)}`)
  await waitForComposerFocus(david, "after sending files")
  await check((await editorText(david)).trim() === "", "the composer is empty after sending the files")
  out("SENT-TEXT-AND-FILE", `uploads=${uploads.length} posts=${messagePosts.length}`, `text=${JSON.stringify(new URLSearchParams(textPost.body).get("message[body]"))}`)

  // 7. A pasted image and a dropped file wait in the row; Trix takes neither.
  const base64 = png.toString("base64")
  const beforePaste = requests.length
  await david.evaluate((base64) => {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))
    const data = new DataTransfer()
    data.items.add(new File([bytes], "pasted.png", { type: "image/png" }))
    const editor = document.querySelector("form.composer trix-editor")
    editor.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }))
  }, base64)
  await david.waitForFunction(() => document.querySelectorAll(".composer__staged .composer__staged-file").length === 1, null, { timeout: 5000 })
    .catch(() => fail("the pasted image is not in the row"))
  await david.waitForTimeout(1000)
  await check(requests.length === beforePaste, `the paste sent something: ${JSON.stringify(requests.slice(beforePaste))}`)
  await check(await david.evaluate(() => document.querySelector("form.composer trix-editor").editor.getDocument().getAttachments().length === 0), "Trix took the pasted image")
  out("PASTE-STAGED", (await stagedRow(david)).items.map((i) => i.name).join(","))
  await david.evaluate(() => {
    const data = new DataTransfer()
    data.items.add(new File(["a,b\n1,2\n"], "dropped.csv", { type: "text/csv" }))
    const editor = document.querySelector("form.composer trix-editor")
    editor.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }))
  })
  await david.waitForFunction(() => document.querySelectorAll(".composer__staged .composer__staged-file").length === 2, null, { timeout: 5000 })
    .catch(() => fail("the dropped file is not in the row"))
  await david.waitForTimeout(500)
  await check(requests.length === beforePaste, `the drop sent something: ${JSON.stringify(requests.slice(beforePaste))}`)
  await check(await david.evaluate(() => document.querySelector("form.composer trix-editor").editor.getDocument().getAttachments().length === 0), "Trix took the dropped file")
  out("DROP-STAGED", (await stagedRow(david)).items.map((i) => i.name).join(","))

  // 8. Files alone, their upload refused: each says it was not sent and waits in the row again;
  //    the next Send posts them, one message each, and no text message.
  await david.route("**/rails/active_storage/direct_uploads", (route) => route.abort())
  const beforeFailure = requests.length
  await david.locator('form.composer button[type="submit"]').click()
  await david.waitForFunction(() => document.querySelectorAll(".composer__staged .composer__staged-file").length === 2 && /was not sent/.test(document.querySelector(".composer__upload-status").textContent), null, { timeout: 15000 })
    .catch(() => fail("the files that were not sent are not back in the row"))
  const status = await david.locator(".composer__upload-status").textContent()
  await check(/was not sent/.test(status), `the status after a refused upload: ${JSON.stringify(status)}`)
  await check(requests.slice(beforeFailure).every((r) => r.path.includes("/direct_uploads")), `a refused upload posted a message: ${JSON.stringify(requests.slice(beforeFailure))}`)
  out("NOT-SENT-WAITS", JSON.stringify(status))
  await david.unroute("**/rails/active_storage/direct_uploads")
  const beforeRetry = requests.length
  await david.locator('form.composer button[type="submit"]').click()
  for (const name of ["dropped.csv", "pasted.png"]) {
    await david.waitForFunction((name) => document.querySelector(`#message-area .message:not(.message--pending) :is(img.message__attachment[alt="${name}"], .message__file-name[title="${name}"])`), name, { timeout: 30000 })
      .catch(() => fail(`${name} did not show after Send`))
  }
  const retried = requests.slice(beforeRetry).filter((r) => r.path === messagePath(ROOM))
  await check(retried.length === 2 && retried.every((r) => new URLSearchParams(r.body).has("message[attachment]") && !new URLSearchParams(r.body).has("message[body]")), `files alone: ${JSON.stringify(retried)}`)
  await check((await stagedRow(david)).items.length === 0, "the row is not empty after the files were sent")
  out("FILES-ALONE-SENT", `posts=${retried.length}`)

  // The phone's row: a thumbnail and a chip above its field, in view.
  await pick(kevin, [notes, photo])
  const phoneRow = await stagedRow(kevin)
  await check(!(await kevin.locator("#composer trix-toolbar").isVisible()), "the phone's toolbar shows without its button")
  for (const item of phoneRow.items) {
    await check(item.uncovered && item.box.bottom <= phoneRow.editor.y + 1 && item.box.x >= 0 && item.box.right <= phoneRow.viewport.w, `the phone's row: ${JSON.stringify(phoneRow)}`)
  }
  await shots(kevin, "staged")
  out("PHONE-STAGED", phoneRow.items.map((i) => `${i.name}@${Math.round(i.box.x)},${Math.round(i.box.y)}`).join(" "))
  await finish()
} catch (error) {
  await fail(error.stack ?? String(error))
}
