// Unread marks in the sidebar: UnreadRoomsChannel says a room got a message (`{roomId}`;
// `"mentioned":true` when it mentions this user), ReadRoomsChannel that this user became
// present in a room, perhaps in another tab (`{room_id}`). The current room is never marked.
// A mention, or any message in a direct room, also asks for attention (bold and a dot:
// `room-link--attention`). Any message in a direct room, this one included, moves its entry to
// the top of the direct rooms (the sidebar lists them by latest activity, as Campfire's
// sorted list does). A notice that may change the inbox (a mention, a message in a direct room
// or a thread, a read) asks its badge to count again (inbox.js).
import { inboxStale } from "./inbox.js"

export function startUnreads({ consumer, roomId }) {
  function toTop(id) {
    const item = document.querySelector(`#user_sidebar #direct_rooms > .room-link[data-room-id="${Number(id)}"]`)
    const list = item?.parentElement
    if (list && list.firstElementChild !== item) list.prepend(item)
  }
  function mark(id, unread, mentioned = false) {
    for (const item of document.querySelectorAll(`#user_sidebar .room-link[data-room-id="${Number(id)}"]`)) {
      item.classList.toggle("room-link--unread", unread)
      if (!unread) item.classList.remove("room-link--attention")
      else if (mentioned || item.classList.contains("room-link--direct")) item.classList.add("room-link--attention")
    }
  }
  const unreads = consumer.subscriptions.create({ channel: "UnreadRoomsChannel" }, {
    received({ roomId: id, mentioned }) {
      toTop(id)
      if (id !== roomId) mark(id, true, mentioned === true)
      const shared = document.querySelector(`#user_sidebar #shared_rooms .room-link[data-room-id="${Number(id)}"]`)
      if (mentioned === true || !shared) inboxStale()
    },
  })
  const reads = consumer.subscriptions.create({ channel: "ReadRoomsChannel" }, {
    received({ room_id: id }) {
      mark(id, false)
      inboxStale()
    },
  })
  return () => {
    unreads.unsubscribe()
    reads.unsubscribe()
  }
}
