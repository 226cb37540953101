// The connection's state and the catch-up after a reconnect, over HeartbeatChannel (a channel
// with no stream: only its connected/disconnected callbacks matter).
//
// On every connect (the first included) the page asks `/rooms/:id/refresh?cursor=<change id>`
// for what it missed and renders the turbo-stream answer: appends of messages posted since,
// replacements of messages edited or boosted since, removals of messages deleted since (or,
// when too much was missed, Turbo's `refresh` action, which reloads the page). The cursor is
// the server's: the page starts with the one it was rendered with and takes each answer's
// X-Refresh-Cursor; what arrives live never moves it, so a live message can't hide an older
// one the page missed. The request waits until the room's stream source is subscribed again,
// so nothing falls between the catch-up and the live stream; Turbo drops duplicates on
// append (and ordering.js puts every append in its place).
//
// A catch-up that fails (no answer, a server error such as the 503 of a busy database, a
// timeout, a rate limit) is asked again while the page stays connected: after the answer's
// Retry-After, else 1 s, doubling to 30 s. Without that, a page whose one catch-up failed
// would lack what was posted while it was away for as long as its socket stays up. A new
// connect starts over; a refusal (400, 403, 404) is not asked again.
//
// The sidebar catches up at the same time, from its own positions (sidebar_catch_up.js), once
// every stream source of the page is subscribed again.
//
// <html> carries data-cable="connected|disconnected" and the `offline` class after 5 s
// disconnected; data-refreshes counts completed catch-ups. A tab that was hidden for more than
// a minute also catches up when shown.
import { listen, worthRetrying, retryAfterMs } from "./util.js"
import { catchUpSidebar } from "./sidebar_catch_up.js"

const OFFLINE_AFTER_MS = 5_000
const STALE_AFTER_HIDDEN_MS = 60_000
const STREAM_WAIT_MS = 5_000
const RETRY_FIRST_MS = 1_000
const RETRY_MAX_MS = 30_000

export function startConnection({ consumer, Turbo, list }) {
  const root = document.documentElement
  const url = list.dataset.refreshRoomUrlValue
  let cursor = Number(list.dataset.refreshRoomCursorValue) || 0
  let offlineTimer = null
  let hiddenAt = null
  let stopped = false
  // Per catch-up ("room", "sidebar"): its pending retry and the run it belongs to (a newer
  // run, from a new connect, makes an older one stop).
  const retries = { room: { timer: null, run: 0 }, sidebar: { timer: null, run: 0 } }

  const subscription = consumer.subscriptions.create({ channel: "HeartbeatChannel" }, {
    connected() {
      clearTimeout(offlineTimer)
      root.dataset.cable = "connected"
      root.classList.remove("offline")
      streamConnected().then(() => catchUpAll("connection"))
    },
    disconnected() {
      root.dataset.cable = "disconnected"
      clearTimeout(offlineTimer)
      offlineTimer = setTimeout(() => root.classList.add("offline"), OFFLINE_AFTER_MS)
    },
  })

  function catchUpAll(reason) {
    return Promise.all([persist("room", () => refresh(reason)), persist("sidebar", () => catchUpSidebar(Turbo))])
  }

  // Runs `attempt` and, while it fails worth retrying and the page stays connected, again.
  async function persist(name, attempt) {
    const state = retries[name]
    clearTimeout(state.timer)
    const run = ++state.run
    let wait = RETRY_FIRST_MS
    for (;;) {
      const failed = await attempt()
      if (!failed || stopped || run !== state.run) return
      if (root.dataset.cable !== "connected") return // the next connect catches up
      const delay = failed.after ?? wait
      wait = Math.min(wait * 2, RETRY_MAX_MS)
      await new Promise((resolve) => { state.timer = setTimeout(resolve, delay) })
      if (stopped || run !== state.run) return
    }
  }

  function streamConnected() {
    return Promise.all([...document.querySelectorAll("turbo-cable-stream-source")].map(sourceConnected))
  }

  function sourceConnected(source) {
    if (source.hasAttribute("connected")) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        observer.disconnect()
        clearTimeout(timer)
        resolve()
      }
      const observer = new MutationObserver(() => source.hasAttribute("connected") && done())
      observer.observe(source, { attributes: true, attributeFilter: ["connected"] })
      const timer = setTimeout(done, STREAM_WAIT_MS)
    })
  }

  // One catch-up of the room's messages: null when done (or refused for good), else
  // `{ retry: true, after }` (the answer's Retry-After in ms, or null).
  async function refresh(reason) {
    if (stopped) return null
    let html, next
    try {
      const response = await fetch(`${url}?cursor=${cursor}&reason=${reason}`, {
        headers: { Accept: "text/vnd.turbo-stream.html" },
        credentials: "same-origin",
      })
      if (!response.ok) return worthRetrying(response.status) ? { retry: true, after: retryAfterMs(response) } : null
      next = Number(response.headers.get("X-Refresh-Cursor"))
      html = await response.text()
    } catch {
      return { retry: true, after: null } // the server went away: try again, or the next connect does
    }
    if (stopped) return null
    if (html.trim() !== "") Turbo.renderStreamMessage(html)
    if (next > cursor) cursor = next
    root.dataset.refreshes = String((Number(root.dataset.refreshes) || 0) + 1)
    return null
  }

  function visibilityChange() {
    if (document.hidden) {
      hiddenAt = Date.now()
    } else if (hiddenAt !== null) {
      if (Date.now() - hiddenAt > STALE_AFTER_HIDDEN_MS) {
        catchUpAll("visible")
      }
      hiddenAt = null
    }
  }

  const unlisten = listen([document, "visibilitychange", visibilityChange])
  return () => {
    stopped = true
    clearTimeout(retries.room.timer)
    clearTimeout(retries.sidebar.timer)
    unlisten()
    clearTimeout(offlineTimer)
    subscription.unsubscribe()
    root.classList.remove("offline")
    delete root.dataset.cable
  }
}
