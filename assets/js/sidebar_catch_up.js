// The sidebar's catch-up after a reconnect (docs/reliable-delivery.md). The sidebar frame's
// list carries the positions of its four streams in the stream history when it was rendered
// (data-sidebar-history on #sidebar_rooms: the room lists, the unread and read marks); after a
// reconnect the page sends them to /users/me/sidebar/catch_up and renders the turbo-stream
// answer: what the list missed (Turbo drops duplicates, so what came live is not doubled), the
// entries whose unread mark changed, or, when the history no longer covers the gap (a restart,
// too much missed), the whole list rendered again, never a page reload. The answer's
// X-Sidebar-History is what to send next time. <html data-sidebar-catch-ups> counts them.
//
// Resolves to null when done (or refused for good), or, when it failed and is worth trying
// again, to `{ retry: true, after }` (`after`: the answer's Retry-After in ms, or null); the
// page asks again while it stays connected (connection.js).
import { worthRetrying, retryAfterMs } from "./util.js"

export async function catchUpSidebar(Turbo) {
  const nav = document.getElementById("sidebar_rooms")
  const history = nav?.dataset.sidebarHistory
  if (!history) return null // the frame has not loaded yet: its positions are fresh when it does
  let html, next
  try {
    const response = await fetch(`/users/me/sidebar/catch_up?history=${encodeURIComponent(history)}`, {
      headers: { Accept: "text/vnd.turbo-stream.html" },
      credentials: "same-origin",
    })
    if (!response.ok) return worthRetrying(response.status) ? { retry: true, after: retryAfterMs(response) } : null
    next = response.headers.get("X-Sidebar-History")
    html = await response.text()
  } catch {
    return { retry: true, after: null } // the server went away: try again, or the next connect does
  }
  if (html.trim() !== "") Turbo.renderStreamMessage(html)
  const current = document.getElementById("sidebar_rooms")
  if (next && current) current.dataset.sidebarHistory = next
  const root = document.documentElement
  root.dataset.sidebarCatchUps = String((Number(root.dataset.sidebarCatchUps) || 0) + 1)
  return null
}
