// `/play <name>` in a real browser: Debian's headless Chromium, driven by playwright-core,
// against the `hearth` binary. Run by tests/suite/browser_sounds.rs:
//
//   node sounds.mjs --hearth PATH --work DIR --artifacts DIR --names a,b,c [--timeout 240]
//
// David (1280×900) posts sounds in the main room; Jason (390×844) reads it live. Every page's
// AudioContext is watched (a spy counts the oscillators and noise sources it makes). Each step
// prints one line; "OK" at the end when every step held.
import { args, out, check, fail, start, newPage, signIn, connected, boxInView, finish, shot, base } from "./harness.mjs"

const ROOM = 1
const ENV = { HEARTH_SEED_USERS: "20", HEARTH_POST_RATE_LIMIT: "0", HEARTH_ROOM_RATE_LIMIT: "0" }
const NAMES = String(args.names ?? "").split(",").filter(Boolean)
// The pictures the gallery screenshot shows (Campfire draws these as images).
const PICTURES = ["56k", "clowntown", "curb", "dangerzone", "deeper", "donotwant", "drama", "greatjob", "loggins", "nyan", "pushit", "rumble", "what", "yay", "yeah"]

// Counts what the page's live AudioContexts make (an OfflineAudioContext is not counted).
function spyOnAudio() {
  window.audioSpy = { contexts: 0, oscillators: 0, sources: 0 }
  const Live = window.AudioContext
  window.AudioContext = class extends Live {
    constructor(...rest) {
      super(...rest)
      window.audioSpy.contexts++
    }
  }
  for (const [method, counter] of [["createOscillator", "oscillators"], ["createBufferSource", "sources"]]) {
    const original = BaseAudioContext.prototype[method]
    BaseAudioContext.prototype[method] = function (...rest) {
      if (this instanceof Live) window.audioSpy[counter]++
      return original.apply(this, rest)
    }
  }
}

async function say(page, text) {
  await page.evaluate((t) => {
    const editor = document.querySelector("trix-editor#message_body").editor
    editor.loadHTML("")
    editor.insertString(t)
  }, text)
  await page.focus("#message_body")
  await page.keyboard.press("Enter")
}

const resetSpy = (page) => page.evaluate(() => {
  delete document.documentElement.dataset.soundPlayed
  window.audioSpy.oscillators = 0
  window.audioSpy.sources = 0
})
const spy = (page) => page.evaluate(() => ({ ...window.audioSpy, played: document.documentElement.dataset.soundPlayed }))
const sound = (page, name) => page.locator(`#message-area .message:not(.message--pending) .message__sound[data-sound="${name}"]`).last()

// Posts `/play name` as David; resolves once both pages drew it and played it.
async function play(david, jason, name) {
  await resetSpy(david)
  await resetSpy(jason)
  await say(david, `/play ${name}`)
  for (const [who, page] of [["David", david], ["Jason", jason]]) {
    await sound(page, name).waitFor({ timeout: 10000 })
    await page.waitForFunction((n) => document.documentElement.dataset.soundPlayed === n, name, { timeout: 10000 })
    const s = await spy(page)
    await check(s.contexts >= 1 && s.oscillators + s.sources > 0, `${who}: /play ${name} started no Web Audio (${JSON.stringify(s)})`)
  }
  return spy(jason)
}

// A step that throws (a wait that timed out) fails the scenario with its message, stopping the
// browser and the servers.
async function scenario() {
  await start(ENV)
  const david = await newPage("David")
  const jason = await newPage("Jason", { width: 390, height: 844 }, { hasTouch: true, isMobile: true })
  for (const page of [david, jason]) await page.addInitScript(spyOnAudio)
  await signIn(david, "david@example.com")
  await signIn(jason, "jason@example.com")
  for (const page of [david, jason]) {
    await page.goto(`${base}/rooms/${ROOM}`)
    await connected(page)
  }

  // Every name has a recipe, and every recipe makes an audible sound (rendered offline).
  const recipes = await david.evaluate(async (names) => {
    const { RECIPES, schedule } = await import("/assets/js/sounds.js")
    if (!RECIPES || !schedule) return { keys: [], silent: ["sounds.js exports no RECIPES table"] }
    const silent = []
    for (const name of names) {
      if (!RECIPES[name]) continue
      const ctx = new OfflineAudioContext(1, 22050 * 4, 22050)
      schedule(ctx, name)
      const data = (await ctx.startRendering()).getChannelData(0)
      let peak = 0
      for (const x of data) peak = Math.max(peak, Math.abs(x))
      if (!(peak > 0.01)) silent.push(`${name}:${peak}`)
    }
    return { keys: Object.keys(RECIPES).sort(), silent }
  }, NAMES)
  await check(NAMES.length === 56, `--names has ${NAMES.length} names`)
  await check(JSON.stringify(recipes.keys) === JSON.stringify([...NAMES].sort()), `the recipes' names differ from the table's: ${recipes.keys.join(",")}`)
  await check(recipes.silent.length === 0, `silent recipes: ${recipes.silent.join(", ")}`)
  out("EVERY-NAME-HAS-A-RECIPE", `${recipes.keys.length} recipes, each audible when rendered`)

  // 56k: a picture, its box as the table gives it, beside the speaker.
  let s = await play(david, jason, "56k")
  const art = await boxInView(david, '#message-area .message__sound[data-sound="56k"] svg.sound-art', "56k picture")
  await check(Math.round(art.width) === 84 && Math.round(art.height) === 34, `56k picture box ${JSON.stringify(art)}`)
  const button = await david.locator('#message-area .message__sound[data-sound="56k"]').last().boundingBox()
  const speaker = await david.locator('#message-area .message__sound[data-sound="56k"] svg.message__sound-icon').last().boundingBox()
  await check(speaker && speaker.x + speaker.width <= art.x && speaker.width > 4, `the speaker is not before the picture: ${JSON.stringify(speaker)}`)
  await check(button.x <= art.x && button.x + button.width >= art.x + art.width && button.y <= art.y && button.y + button.height >= art.y + art.height, "the picture is outside its button")
  await check((await david.locator('#message-area .message__sound[data-sound="56k"] .message__sound-text').count()) === 0, "56k shows text")
  await check(!(await david.locator("#message-area .message").last().innerText()).includes("/play"), "the command is shown")
  out("PLAY-56K", `picture ${Math.round(art.width)}×${Math.round(art.height)}; Jason's page made ${s.oscillators} oscillators, ${s.sources} noise sources`)

  // greatjob: a picture too.
  s = await play(david, jason, "greatjob")
  const great = await boxInView(jason, '#message-area .message__sound[data-sound="greatjob"] svg.sound-art', "greatjob picture (phone)")
  await check(Math.round(great.width) === 140 && Math.round(great.height) === 26, `greatjob picture box ${JSON.stringify(great)}`)
  await check((await jason.locator('#message-area .message__sound[data-sound="greatjob"] svg.sound-art').last().getAttribute("aria-label")).length > 0, "greatjob picture has no label")
  out("PLAY-GREATJOB", `picture ${Math.round(great.width)}×${Math.round(great.height)} on the phone; ${s.oscillators} oscillators, ${s.sources} noise sources`)

  // trombone: a line of text, in the button, beside the speaker.
  s = await play(david, jason, "trombone")
  const line = jason.locator('#message-area .message__sound[data-sound="trombone"] .message__sound-text').last()
  const text = (await line.innerText()).trim()
  await check(text.length > 3 && !text.includes("/play"), `trombone's line: ${text}`)
  const lineBox = await boxInView(jason, '#message-area .message__sound[data-sound="trombone"] .message__sound-text', "trombone line")
  await check(lineBox.height < 60, `the line wraps oddly: ${JSON.stringify(lineBox)}`)
  await check((await jason.locator('#message-area .message__sound[data-sound="trombone"] svg.sound-art').count()) === 0, "trombone has a picture")
  out("PLAY-TROMBONE", `"${text}"; ${s.oscillators} oscillators`)

  // A few more pictures and lines, for the screenshots.
  for (const name of ["nyan", "tada", "dangerzone"]) await play(david, jason, name)
  out("PLAY-MORE", "nyan, tada, dangerzone drawn and played on both pages")

  // Clicking a sound plays it again.
  await resetSpy(david)
  await sound(david, "56k").click()
  await david.waitForFunction(() => document.documentElement.dataset.soundPlayed === "56k")
  s = await spy(david)
  await check(s.oscillators > 0, `the click made no oscillator: ${JSON.stringify(s)}`)
  out("CLICK-REPLAYS", `${s.oscillators} oscillators`)

  // An unknown name is an ordinary message, and plays nothing.
  await resetSpy(jason)
  await say(david, "/play drumroll")
  const plain = jason.locator("#message-area .message .trix-content", { hasText: "/play drumroll" }).last()
  await plain.waitFor()
  await check((await jason.locator('#message-area .message__sound[data-sound="drumroll"]').count()) === 0, "drumroll drawn as a sound")
  s = await spy(jason)
  await check(!s.played && s.oscillators === 0 && s.sources === 0, `an unknown name played: ${JSON.stringify(s)}`)
  out("UNKNOWN-IS-TEXT", "/play drumroll shown as typed, nothing played")

  // Screenshots: both sizes, light and dark.
  for (const scheme of ["light", "dark"]) {
    for (const [page, size] of [[david, "1280x900"], [jason, "390x844"]]) {
      await page.emulateMedia({ colorScheme: scheme })
      await sound(page, "dangerzone").scrollIntoViewIfNeeded()
      const path = shot(`sounds-${size}-${scheme}.png`)
      await page.screenshot({ path })
      out("SCREENSHOT", path)
    }
  }

  // Every picture at once, as the page's stylesheet draws it: the server's partial for each,
  // set side by side over David's page (light and dark).
  const csrf = await david.evaluate(() => document.querySelector('meta[name="csrf-token"]').content)
  for (const name of PICTURES) {
    if (["56k", "greatjob", "nyan", "dangerzone"].includes(name)) continue
    const status = await david.evaluate(async ([name, csrf, room]) => {
      const body = new URLSearchParams({ "message[body]": `/play ${name}`, "message[client_message_id]": crypto.randomUUID(), authenticity_token: csrf })
      return (await fetch(`/rooms/${room}/messages`, { method: "POST", body, headers: { Accept: "text/vnd.turbo-stream.html" } })).status
    }, [name, csrf, ROOM])
    await check(status < 300, `posting /play ${name}: ${status}`)
  }
  for (const name of PICTURES) await sound(david, name).waitFor({ timeout: 10000 })
  for (const scheme of ["light", "dark"]) {
    await david.emulateMedia({ colorScheme: scheme })
    await david.evaluate((names) => {
      document.getElementById("sound-gallery")?.remove()
      const sheet = document.createElement("div")
      sheet.id = "sound-gallery"
      sheet.style.cssText = "position:fixed;inset:0;z-index:1000;display:flex;flex-wrap:wrap;gap:12px;align-content:flex-start;padding:16px;overflow:auto;background:var(--color-bg)"
      for (const name of names) {
        const copy = document.querySelector(`#message-area .message__sound[data-sound="${name}"]`).cloneNode(true)
        sheet.append(copy)
      }
      document.body.append(sheet)
    }, PICTURES)
    const path = shot(`sounds-pictures-1280x900-${scheme}.png`)
    await david.screenshot({ path })
    out("SCREENSHOT", path)
  }
  await david.evaluate(() => document.getElementById("sound-gallery").remove())
  out("PICTURES", `${PICTURES.length} pictures drawn`)
}

await scenario().catch((error) => fail(String(error?.message ?? error).split("\n")[0]))
await finish()
