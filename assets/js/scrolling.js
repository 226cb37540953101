// Keeps the message list scrolled to the newest message while the reader is at the bottom,
// and loads older messages above the list when "Older messages" is clicked.
import { listen } from "./util.js"

const NEAR_BOTTOM_PX = 80
const PAGE_SIZE = 40

export function startScrolling({ list }) {
  const area = document.getElementById("message-area")
  if (!area) return () => {}
  let pinned = true
  area.scrollTop = area.scrollHeight

  function scrolled() {
    pinned = area.scrollTop + area.clientHeight >= area.scrollHeight - NEAR_BOTTOM_PX
  }
  const observer = new MutationObserver(() => {
    if (pinned) area.scrollTop = area.scrollHeight
  })
  observer.observe(list, { childList: true, subtree: true })

  async function loadOlder(event) {
    const link = event.target.closest("a.load-older")
    if (!link) return
    event.preventDefault()
    let html
    try {
      const response = await fetch(link.href, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      if (!response.ok) return
      html = response.status === 204 ? "" : await response.text()
    } catch {
      return
    }
    const template = document.createElement("template")
    template.innerHTML = html
    const older = template.content.querySelectorAll(".message[data-message-id]")
    const height = area.scrollHeight
    list.prepend(template.content)
    area.scrollTop += area.scrollHeight - height
    const first = list.querySelector(".message[data-message-id]")
    if (older.length < PAGE_SIZE || !first) link.remove()
    else link.href = link.href.replace(/before=\d+/, `before=${first.dataset.messageId}`)
  }

  const unlisten = listen([area, "scroll", scrolled, { passive: true }], [area, "click", loadOlder])
  return () => {
    unlisten()
    observer.disconnect()
  }
}
