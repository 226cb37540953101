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
// The sidebar catches up at the same time, from its own positions (sidebar_catch_up.js), once
// every stream source of the page is subscribed again.
//
// <html> carries data-cable="connected|disconnected" and the `offline` class after 5 s
// disconnected; data-refreshes counts completed catch-ups. A tab that was hidden for more than
// a minute also catches up when shown.
import { listen } from "./util.js"
import { catchUpSidebar } from "./sidebar_catch_up.js"

const OFFLINE_AFTER_MS = 5_000
const STALE_AFTER_HIDDEN_MS = 60_000
const STREAM_WAIT_MS = 5_000

export function startConnection({ consumer, Turbo, list }) {
  const root = document.documentElement
  const url = list.dataset.refreshRoomUrlValue
  let cursor = Number(list.dataset.refreshRoomCursorValue) || 0
  let offlineTimer = null
  let hiddenAt = null
  let stopped = false

  const subscription = consumer.subscriptions.create({ channel: "HeartbeatChannel" }, {
    connected() {
      clearTimeout(offlineTimer)
      root.dataset.cable = "connected"
      root.classList.remove("offline")
      streamConnected().then(() => Promise.all([refresh("connection"), catchUpSidebar(Turbo)]))
    },
    disconnected() {
      root.dataset.cable = "disconnected"
      clearTimeout(offlineTimer)
      offlineTimer = setTimeout(() => root.classList.add("offline"), OFFLINE_AFTER_MS)
    },
  })

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

  async function refresh(reason) {
    if (stopped) return
    let html, next
    try {
      const response = await fetch(`${url}?cursor=${cursor}&reason=${reason}`, {
        headers: { Accept: "text/vnd.turbo-stream.html" },
        credentials: "same-origin",
      })
      if (!response.ok) return
      next = Number(response.headers.get("X-Refresh-Cursor"))
      html = await response.text()
    } catch {
      return // the server went away again: the next connect catches up
    }
    if (stopped) return
    if (html.trim() !== "") Turbo.renderStreamMessage(html)
    if (next > cursor) cursor = next
    root.dataset.refreshes = String((Number(root.dataset.refreshes) || 0) + 1)
  }

  function visibilityChange() {
    if (document.hidden) {
      hiddenAt = Date.now()
    } else if (hiddenAt !== null) {
      if (Date.now() - hiddenAt > STALE_AFTER_HIDDEN_MS) {
        refresh("visible")
        catchUpSidebar(Turbo)
      }
      hiddenAt = null
    }
  }

  const unlisten = listen([document, "visibilitychange", visibilityChange])
  return () => {
    stopped = true
    unlisten()
    clearTimeout(offlineTimer)
    subscription.unsubscribe()
    root.classList.remove("offline")
    delete root.dataset.cable
  }
}
