// Typing notices over TypingNotificationsChannel: `start` at most once a second while the
// field holds text, `stop` when it is emptied or sent. Every member of the room receives
// `{action, user: {id, name}}`, the typer included, who ignores its own. A name is dropped
// after 5 s without a new `start`.
import { listen } from "./util.js"

const START_EVERY_MS = 1000
const FORGET_AFTER_MS = 5000

export function startTyping({ consumer, roomId, userId, form }) {
  const box = document.getElementById("typing_notifications")
  if (!form || !box) return () => {}
  const field = form.querySelector("trix-editor, textarea")
  const typers = new Map()
  let lastStart = 0

  const subscription = consumer.subscriptions.create(
    { channel: "TypingNotificationsChannel", room_id: roomId },
    {
      received({ action, user }) {
        if (!user || user.id === userId) return
        clearTimeout(typers.get(user.id)?.timer)
        if (action === "start") {
          const timer = setTimeout(() => forget(user.id), FORGET_AFTER_MS)
          typers.set(user.id, { name: user.name, timer })
        } else {
          typers.delete(user.id)
        }
        show()
      },
    },
  )

  function forget(id) {
    typers.delete(id)
    show()
  }

  function show() {
    const names = [...typers.values()].map((t) => t.name)
    if (names.length === 0) box.textContent = ""
    else if (names.length === 1) box.textContent = `${names[0]} is typing…`
    else box.textContent = `${names.slice(0, -1).join(", ")} and ${names.at(-1)} are typing…`
  }

  function stop() {
    if (lastStart === 0) return
    lastStart = 0
    subscription.perform("stop")
  }

  function input() {
    if (field.value.trim() === "") return stop()
    const now = Date.now()
    if (now - lastStart < START_EVERY_MS) return
    lastStart = now
    subscription.perform("start")
  }

  const unlisten = listen([field, "input", input], [field, "trix-change", input], [form, "submit", stop])
  return () => {
    unlisten()
    stop()
    subscription.unsubscribe()
    for (const { timer } of typers.values()) clearTimeout(timer)
    box.textContent = ""
  }
}
