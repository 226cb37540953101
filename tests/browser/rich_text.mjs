// Rich text and @mentions in a real browser (Debian's headless Chromium, playwright-core),
// against the `hearth` binary. Run by tests/browser.rs:
//
//   node rich_text.mjs --hearth PATH --work DIR --artifacts DIR [--timeout 120]
//
// David and Jason open room 1 at 1280×900. David types in the composer's Trix editor a URL,
// a bold word (Ctrl+B), `@Jas` (the autocomplete lists Jason; Enter inserts the mention) and
// a code block (the toolbar's Code button), and sends with Enter. Both pages show the message
// with the link (`rel="noopener noreferrer"`, `target="_blank"`), the `<strong>`, the code
// block highlighted by highlight.js and the mention chip; Jason's page marks the message
// `message--mentioned`, David's does not. Boxes are checked, screenshots kept (1280×900 for
// both, 390×844 for Jason). No page threw, and no request left the server's origin.
import { out, shot, fail, start, newPage, signIn as signInAt, finish, SEEDED, base } from "./harness.mjs"

// `email` signed in, in a new context of `viewport`, on room 1 with its composer ready.
async function signIn(who, email, viewport) {
  const page = await signInAt(await newPage(who, viewport), email)
  await page.goto(`${base}/rooms/1`)
  await page.waitForSelector('turbo-cable-stream-source[channel="RoomMessagesChannel"][connected]', { state: "attached" })
  await page.waitForSelector("trix-editor#message_body", { state: "visible" })
  return page
}

// The box of the first element matching `selector` inside `scope`, checked to be drawn inside
// the viewport.
async function boxInView(page, scope, selector, what) {
  const el = scope.locator(selector).first()
  await el.waitFor({ state: "visible", timeout: 10000 }).catch(() => fail(`${what}: ${selector} not visible`))
  const box = await el.boundingBox()
  const vp = page.viewportSize()
  if (!box || box.width < 1 || box.height < 1 || box.x < 0 || box.y < 0 || box.x + box.width > vp.width + 1 || box.y + box.height > vp.height + 1) {
    await fail(`${what}: box ${JSON.stringify(box)} outside ${JSON.stringify(vp)}`)
  }
  return box
}

try {
  await start(SEEDED)
  const desktop = { width: 1280, height: 900 }
  const david = await signIn("david", "david@example.com", desktop)
  const jason = await signIn("jason", "jason@example.com", desktop)
  out("PAGES", base)

  const editor = david.locator("trix-editor#message_body")
  await editor.click()
  // Each toggle of bold waits for the editor to have taken the keys before it and the toggle
  // itself: under load Trix can apply a key's input after a later shortcut.
  const boldIs = (on) => david.waitForFunction(([want]) => {
    const button = document.querySelector('trix-toolbar button[data-trix-attribute="bold"]')
    return button && button.classList.contains("trix-active") === want
  }, [on], { timeout: 5000 }).catch(() => fail(`bold did not turn ${on ? "on" : "off"}`))
  await editor.pressSequentially("see https://example.com/page and ", { delay: 10 })
  await david.waitForFunction(() => document.querySelector("trix-editor#message_body").textContent.includes("page and"), null, { timeout: 5000 })
  await david.keyboard.press("Control+B")
  await boldIs(true)
  await editor.pressSequentially("bold", { delay: 10 })
  await david.locator("trix-editor#message_body strong", { hasText: "bold" }).waitFor({ state: "attached", timeout: 5000 }).catch(() => fail("the editor has no bold \"bold\""))
  await david.keyboard.press("Control+B")
  await boldIs(false)
  await editor.pressSequentially(" hi @Jas", { delay: 30 })
  const option = david.locator(".mention-picker__option", { hasText: "Jason" }).first()
  await option.waitFor({ state: "visible", timeout: 10000 }).catch(() => fail("the autocomplete did not list Jason"))
  await boxInView(david, david, ".mention-picker", "the autocomplete")
  await david.screenshot({ path: shot("rich-text-autocomplete.png") })
  await david.keyboard.press("Enter")
  await david.locator("trix-editor#message_body figure[data-trix-content-type='application/vnd.campfire.mention']").waitFor({ state: "attached", timeout: 5000 }).catch(() => fail("no mention attachment in the editor"))
  out("AUTOCOMPLETE-INSERTED")
  await david.keyboard.press("Shift+Enter")
  await david.locator('trix-toolbar button[data-trix-attribute="code"]').click()
  await editor.pressSequentially("fn main() { let x = 1; }", { delay: 5 })
  await david.keyboard.press("Enter")

  for (const [who, page] of [["david", david], ["jason", jason]]) {
    const msg = page.locator("#message-area .message[data-message-id]", { hasText: "bold" }).last()
    await msg.waitFor({ state: "visible", timeout: 10000 }).catch(() => fail(`${who}: the message did not arrive`))
    // The poster's copy can be replaced once more (the post's answer and its broadcast each
    // render the server's copy), detaching the element mid-scroll: take the current one.
    for (let attempt = 0; ; attempt++) {
      try {
        await msg.scrollIntoViewIfNeeded()
        break
      } catch (error) {
        if (attempt >= 4 || !String(error).includes("not attached")) throw error
        await page.waitForTimeout(200)
      }
    }
    await boxInView(page, msg, '.trix-content a[href="https://example.com/page"][rel="noopener noreferrer"][target="_blank"]', `${who}: link`)
    await boxInView(page, msg, ".trix-content strong", `${who}: bold`)
    if ((await msg.locator(".trix-content strong").first().textContent()) !== "bold") await fail(`${who}: strong is not "bold"`)
    await boxInView(page, msg, '.trix-content pre[data-highlighted="yes"]', `${who}: highlighted code block`)
    if ((await msg.locator(".trix-content pre .hljs-keyword").count()) === 0) await fail(`${who}: the code block has no highlighted keyword`)
    await boxInView(page, msg, "action-text-attachment .mention", `${who}: mention chip`)
    const chip = await msg.locator("action-text-attachment .mention").first().textContent()
    if (chip !== "@Jason") await fail(`${who}: chip says ${chip}`)
    const mentioned = await msg.evaluate((el) => el.classList.contains("message--mentioned"))
    if (mentioned !== (who === "jason")) await fail(`${who}: message--mentioned is ${mentioned}`)
    out("RENDERED", who, `mentioned=${mentioned}`)
  }
  const cleared = await david.evaluate(() => document.getElementById("message_body").value)
  if (cleared !== "") await fail(`the composer kept ${cleared}`)
  out("COMPOSER-CLEARED")
  await david.screenshot({ path: shot("rich-text-david.png") })

  // Editing keeps the rich text: the edit form's editor holds the bold word and the mention.
  const own = david.locator("#message-area .message[data-message-id]", { hasText: "bold" }).last()
  const ownId = await own.getAttribute("id")
  await own.locator("summary").click()
  await own.locator("a.message__action", { hasText: "Edit" }).click()
  await david.waitForFunction((id) => document.querySelector(`#${id} trix-editor`)?.editor, ownId)
  const held = await own.locator("trix-editor").evaluate((el) => el.innerHTML)
  if (!held.includes("<strong>bold</strong>") || !held.includes("@Jason")) await fail(`the edit form holds ${held}`)
  await own.locator("trix-editor").evaluate((el) => {
    el.editor.setSelectedRange([0, 0])
    el.editor.insertString("Edited: ")
  })
  await own.locator('button[type="submit"]', { hasText: "Save changes" }).click()
  for (const [who, page] of [["david", david], ["jason", jason]]) {
    const msg = page.locator(`#${ownId}`)
    await msg.locator(".trix-content", { hasText: "Edited:" }).waitFor({ timeout: 10000 }).catch(() => fail(`${who}: the edit did not arrive`))
    if ((await msg.locator(".trix-content strong").count()) === 0) await fail(`${who}: the edit lost the bold word`)
    // The edited message may be drawn more than once (the form's answer, then the broadcast):
    // wait for the mention chip rather than reading the first drawing.
    await msg.locator("action-text-attachment .mention").first().waitFor({ timeout: 10000 }).catch(() => fail(`${who}: the edit lost the mention`))
    if ((await msg.locator("action-text-attachment .mention").count()) !== 1) await fail(`${who}: the edit drew the mention twice`)
    const mentioned = await msg.evaluate((el) => el.classList.contains("message--mentioned"))
    if (mentioned !== (who === "jason")) await fail(`${who}: after the edit message--mentioned is ${mentioned}`)
  }
  out("EDITED-KEEPS-RICH-TEXT")
  await jason.screenshot({ path: shot("rich-text-jason.png") })
  await jason.setViewportSize({ width: 390, height: 844 })
  await jason.locator("#message-area .message[data-message-id]", { hasText: "bold" }).last().scrollIntoViewIfNeeded()
  await jason.screenshot({ path: shot("rich-text-jason-mobile.png") })
  out("SCREENSHOTS")

  await finish()
} catch (e) {
  await fail(e.stack || String(e))
}
