// The sidebar behind the menu button on narrow screens (under 768 px): the button opens it
// over the messages, the scrim, Escape or following a link in it closes it. While closed on
// a narrow screen it is `inert`, so focus and screen readers skip it. The current room's entry
// in the sidebar is marked (`room-link--current`) whenever the sidebar frame loads.
import { listen } from "./util.js"

const NARROW = matchMedia("(max-width: 767.98px)")

export function startSidebar({ roomId }) {
  const app = document.getElementById("app")
  const sidebar = document.getElementById("sidebar")
  const button = document.querySelector("[data-sidebar-toggle]")
  const scrim = document.querySelector("[data-sidebar-close]")
  if (!app || !sidebar || !button) return () => {}

  function set(open) {
    app.classList.toggle("room--sidebar-open", open)
    button.setAttribute("aria-expanded", String(open))
    if (scrim) scrim.hidden = !open
    sidebar.inert = NARROW.matches && !open
  }

  function markCurrent() {
    for (const item of sidebar.querySelectorAll(".room-link")) {
      const current = Number(item.dataset.roomId) === roomId
      item.classList.toggle("room-link--current", current)
      item.querySelector("a")?.toggleAttribute("aria-current", current)
      if (current) item.querySelector("a")?.setAttribute("aria-current", "page")
    }
  }

  set(false)
  markCurrent()
  const observer = new MutationObserver(markCurrent)
  observer.observe(sidebar, { childList: true, subtree: true })
  const stop = listen(
    [button, "click", () => set(!app.classList.contains("room--sidebar-open"))],
    [scrim ?? document, "click", (event) => { if (event.currentTarget === scrim) set(false) }],
    [document, "keydown", (event) => { if (event.key === "Escape" && app.classList.contains("room--sidebar-open")) set(false) }],
    [sidebar, "click", (event) => { if (event.target.closest("a")) set(false) }],
    [NARROW, "change", () => set(false)],
  )
  return () => {
    observer.disconnect()
    stop()
  }
}
