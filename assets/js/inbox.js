// The inbox badge (`#inbox_badge`: beside the sidebar's "Inbox" link, and on the inbox page)
// kept right in every tab. The server sends a new badge on `user_<id>_inbox` after a boost on
// one's message and after "Mark all read"; a new message that may be an item (a mention, a
// message in a direct room or a thread) and a read in a room come on the streams the sidebar
// already follows, after which the count is asked again (`GET /inbox/count`). On a room page
// unreads.js tells of those notices (`hearth:inbox-stale`); the inbox page follows the two
// streams itself and, when its count changes, reads its list again.
const STALE = "hearth:inbox-stale"

// Tells the badge that the count may have changed.
export function inboxStale() {
  dispatchEvent(new CustomEvent(STALE))
}

function setBadge(unread) {
  const badge = document.getElementById("inbox_badge")
  if (!badge || Number(badge.dataset.count) === unread) return false
  badge.dataset.count = String(unread)
  badge.hidden = unread === 0
  badge.textContent = unread === 0 ? "" : unread > 99 ? "99+" : String(unread)
  if (unread > 0) {
    const words = document.createElement("span")
    words.className = "visually-hidden"
    words.textContent = " unread"
    badge.append(words)
  }
  return true
}

// Asks the count again at most once per 150 ms, and once more 1.5 s later: presence writes a
// read mark at a bounded rate, so a read notice may come before its mark is written.
// `changed` runs when the count changed.
function recounter(changed) {
  let timer = null
  let later = null
  let stopped = false
  async function recount() {
    timer = null
    try {
      const response = await fetch("/inbox/count", { headers: { Accept: "application/json" }, credentials: "same-origin" })
      if (!response.ok || stopped) return
      const { unread } = await response.json()
      if (setBadge(Number(unread))) changed()
    } catch {
      // Offline: the next notice, or the sidebar's catch-up, asks again.
    }
  }
  return {
    soon() {
      if (stopped) return
      if (timer === null) timer = setTimeout(recount, 150)
      clearTimeout(later)
      later = setTimeout(() => {
        if (timer === null) timer = setTimeout(recount, 0)
      }, 1500)
    },
    stop() {
      stopped = true
      clearTimeout(timer)
      clearTimeout(later)
    },
  }
}

// On a room page: the badge of the sidebar.
export function startInboxBadge() {
  const counter = recounter(() => {})
  const stale = () => counter.soon()
  addEventListener(STALE, stale)
  return () => {
    removeEventListener(STALE, stale)
    counter.stop()
  }
}

// On the inbox page: the badge and the list, read again when the count changes or the
// server sends a new badge.
export function startInboxPage({ consumer }) {
  const page = document.getElementById("inbox")
  async function reload() {
    const response = await fetch(location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" })
    if (!response.ok) return
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html")
    const items = fresh.getElementById("inbox_items")
    if (items) document.getElementById("inbox_items")?.replaceWith(items)
  }
  const counter = recounter(reload)
  const stale = () => counter.soon()
  const subscriptions = [
    consumer.subscriptions.create({ channel: "UnreadRoomsChannel" }, { received: stale }),
    consumer.subscriptions.create({ channel: "ReadRoomsChannel" }, { received: stale }),
  ]
  function streamed(event) {
    if (event.target?.getAttribute?.("target") === "inbox_badge") setTimeout(reload, 0)
  }
  document.addEventListener("turbo:before-stream-render", streamed)
  page.dataset.live = "true"
  return () => {
    document.removeEventListener("turbo:before-stream-render", streamed)
    for (const s of subscriptions) s.unsubscribe()
    counter.stop()
  }
}
