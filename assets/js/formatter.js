// How the message list reads, decided in the browser for each reader (the message partial is
// one shared frame per broadcast, the same bytes for everyone):
//
// - `message--me` on one's own messages (data-user-id equal to the current-user-id meta);
// - times written in the reader's time zone: every `<time data-local-time="time|date">` gets
//   its text from its `datetime` (3:04pm; December 21, 2026), with the full date as title;
// - `message--first-of-day` on the first message of each local day, which shows the day
//   separator the partial carries;
// - `message--threaded` on a message by the same author as the one before it, less than
//   5 minutes later on the same day: no repeated avatar and name.
//
// The list is formatted at start and again after every change to its children (appends,
// replaces, removes, pages).
const THREAD_WITHIN_MS = 5 * 60 * 1000

const timeFormat = new Intl.DateTimeFormat("en-US", { hour: "numeric", minute: "2-digit", hour12: true })
const dateFormat = new Intl.DateTimeFormat("en-US", { month: "long", day: "numeric", year: "numeric" })
const fullFormat = new Intl.DateTimeFormat("en-US", { dateStyle: "full", timeStyle: "short" })

// 3:04pm in the reader's time zone.
export function clockTime(date) {
  const parts = Object.fromEntries(timeFormat.formatToParts(date).map((p) => [p.type, p.value]))
  return `${parts.hour}:${parts.minute}${(parts.dayPeriod ?? "").toLowerCase()}`
}

function dayKey(date) {
  return `${date.getFullYear()}-${date.getMonth()}-${date.getDate()}`
}

function localize(time) {
  const date = new Date(time.getAttribute("datetime"))
  if (Number.isNaN(date.getTime())) return
  const text = time.dataset.localTime === "date" ? dateFormat.format(date) : clockTime(date)
  if (time.textContent !== text) time.textContent = text
  time.title = fullFormat.format(date)
}

export function formatList(list, userId) {
  let previous = null
  for (const message of list.children) {
    if (!message.classList.contains("message")) continue
    const author = message.dataset.userId
    const at = Number(message.dataset.messageCreatedAt) || Date.now()
    const day = dayKey(new Date(at))
    const firstOfDay = !previous || previous.day !== day
    const threaded = !firstOfDay && previous.author === author && at - previous.at < THREAD_WITHIN_MS
    message.classList.toggle("message--me", Number(author) === userId)
    message.classList.toggle("message--first-of-day", firstOfDay)
    message.classList.toggle("message--threaded", threaded)
    for (const time of message.querySelectorAll("time[data-local-time]")) localize(time)
    previous = { author, at, day }
  }
}

export function startFormatter({ list, userId }) {
  formatList(list, userId)
  document.documentElement.dataset.timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone
  const observer = new MutationObserver(() => formatList(list, userId))
  observer.observe(list, { childList: true })
  return () => observer.disconnect()
}
