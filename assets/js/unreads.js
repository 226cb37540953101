// Unread marks in the sidebar: UnreadRoomsChannel says a room got a message (`{roomId}`),
// ReadRoomsChannel that this user became present in a room, perhaps in another tab
// (`{room_id}`). The current room is never marked.
export function startUnreads({ consumer, roomId }) {
  function mark(id, unread) {
    for (const item of document.querySelectorAll(`#user_sidebar .room-link[data-room-id="${Number(id)}"]`)) {
      item.classList.toggle("room-link--unread", unread)
    }
  }
  const unreads = consumer.subscriptions.create({ channel: "UnreadRoomsChannel" }, {
    received({ roomId: id }) {
      if (id !== roomId) mark(id, true)
    },
  })
  const reads = consumer.subscriptions.create({ channel: "ReadRoomsChannel" }, {
    received({ room_id: id }) {
      mark(id, false)
    },
  })
  return () => {
    unreads.unsubscribe()
    reads.unsubscribe()
  }
}
