// Presence over PresenceChannel: subscribing marks this member present in the room (and its
// unread mark cleared), unsubscribing absent. While the page stays open it sends `refresh`
// every 50 s; 5 s after the tab is hidden it sends `absent`, and `present` 5 s after it is
// shown again.
import { listen } from "./util.js"

const REFRESH_EVERY_MS = 50_000
const VISIBILITY_DELAY_MS = 5_000

export function startPresence({ consumer, roomId }) {
  const subscription = consumer.subscriptions.create({ channel: "PresenceChannel", room_id: roomId }, {})
  const refresher = setInterval(() => subscription.perform("refresh"), REFRESH_EVERY_MS)
  let absent = false
  let pending = null

  function visibilityChange() {
    clearTimeout(pending)
    pending = setTimeout(() => {
      if (document.hidden && !absent) {
        absent = true
        subscription.perform("absent")
      } else if (!document.hidden && absent) {
        absent = false
        subscription.perform("present")
      }
    }, VISIBILITY_DELAY_MS)
  }

  const unlisten = listen([document, "visibilitychange", visibilityChange])
  return () => {
    unlisten()
    clearInterval(refresher)
    clearTimeout(pending)
    subscription.unsubscribe()
  }
}
