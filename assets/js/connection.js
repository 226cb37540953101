// The connection's state and the catch-up after a reconnect, over HeartbeatChannel (a channel
// with no stream: only its connected/disconnected callbacks matter).
//
// On every connect (the first included) the page asks `/rooms/:id/refresh?since=<ms>` for what
// it missed and renders the turbo-stream answer: appends of messages created since then and
// replacements of messages edited since. `since` is the server's time of the newest message
// the page holds (or the room's last update when it holds none), so client clocks don't
// matter. The request waits until the room's stream source is subscribed again, so nothing
// falls between the catch-up and the live stream; Turbo drops duplicates on append.
//
// <html> carries data-cable="connected|disconnected" and the `offline` class after 5 s
// disconnected; data-refreshes counts completed catch-ups. A tab that was hidden for more than
// a minute also catches up when shown.
import { listen } from "./util.js"

const OFFLINE_AFTER_MS = 5_000
const STALE_AFTER_HIDDEN_MS = 60_000
const STREAM_WAIT_MS = 5_000

export function startConnection({ consumer, Turbo, list }) {
  const root = document.documentElement
  const url = list.dataset.refreshRoomUrlValue
  let loadedAt = Number(list.dataset.refreshRoomLoadedAtValue) || 0
  let offlineTimer = null
  let hiddenAt = null
  let stopped = false

  const subscription = consumer.subscriptions.create({ channel: "HeartbeatChannel" }, {
    connected() {
      clearTimeout(offlineTimer)
      root.dataset.cable = "connected"
      root.classList.remove("offline")
      streamConnected().then(() => refresh("connection"))
    },
    disconnected() {
      root.dataset.cable = "disconnected"
      clearTimeout(offlineTimer)
      offlineTimer = setTimeout(() => root.classList.add("offline"), OFFLINE_AFTER_MS)
    },
  })

  function newest() {
    let max = loadedAt
    for (const message of list.querySelectorAll(".message[data-message-created-at]")) {
      max = Math.max(max, Number(message.dataset.messageCreatedAt) || 0)
    }
    return max
  }

  function streamConnected() {
    const source = document.querySelector('turbo-cable-stream-source[channel="RoomMessagesChannel"]')
    if (!source || source.hasAttribute("connected")) return Promise.resolve()
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
    const since = newest()
    let html
    try {
      const response = await fetch(`${url}?since=${since}&reason=${reason}`, {
        headers: { Accept: "text/vnd.turbo-stream.html" },
        credentials: "same-origin",
      })
      if (!response.ok) return
      html = await response.text()
    } catch {
      return // the server went away again: the next connect catches up
    }
    if (stopped) return
    if (html.trim() !== "") Turbo.renderStreamMessage(html)
    loadedAt = Math.max(since, newest())
    root.dataset.refreshes = String((Number(root.dataset.refreshes) || 0) + 1)
  }

  function visibilityChange() {
    if (document.hidden) {
      hiddenAt = Date.now()
    } else if (hiddenAt !== null) {
      if (Date.now() - hiddenAt > STALE_AFTER_HIDDEN_MS) refresh("visible")
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
