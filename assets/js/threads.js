// Threads beside their room. On a wide screen (from 1100 px) "Reply in thread" and a parent's
// summary open the thread in the panel beside the messages (the thread's own page drawn with
// `?panel=1`, framed); on a narrower screen they open the thread as its own page. The panel's
// close button (and Escape inside it) asks the room page to close it.
const WIDE = matchMedia("(min-width: 1100px)")
const CLOSE = "hearth:close-thread"

function panelPath(path) {
  const url = new URL(path, location.href)
  url.searchParams.set("panel", "1")
  return url.pathname + url.search
}

// In the panel: the close button and Escape close the panel instead of leaving the room.
function startInPanel() {
  const ask = () => window.parent.postMessage(CLOSE, location.origin)
  const onClick = (event) => {
    if (!event.target.closest?.("[data-thread-close]")) return
    event.preventDefault()
    ask()
  }
  const onKey = (event) => {
    if (event.key === "Escape" && !event.target.closest?.("form, details[open]")) ask()
  }
  document.addEventListener("click", onClick)
  document.addEventListener("keydown", onKey)
  return () => {
    document.removeEventListener("click", onClick)
    document.removeEventListener("keydown", onKey)
  }
}

export function startThreads() {
  if (document.getElementById("app")?.classList.contains("room--panel")) return startInPanel()
  const app = document.getElementById("app")
  const panel = document.getElementById("thread_panel")
  const frame = panel?.querySelector("iframe")
  if (!app || !panel || !frame) return () => {}

  function open(path) {
    frame.src = panelPath(path)
    panel.hidden = false
    app.classList.add("room--with-thread")
  }
  function close() {
    panel.hidden = true
    frame.removeAttribute("src")
    app.classList.remove("room--with-thread")
  }
  const onClick = (event) => {
    const link = event.target.closest?.(".thread-summary__link")
    if (!link || !WIDE.matches || event.metaKey || event.ctrlKey || event.shiftKey) return
    event.preventDefault()
    open(link.getAttribute("href"))
  }
  // Before Turbo's own listener: the thread is found (or started) by a fetch, then framed.
  const onSubmit = async (event) => {
    const form = event.target.closest?.(".message__action--thread")
    if (!form || !WIDE.matches) return
    event.preventDefault()
    form.closest("details")?.removeAttribute("open")
    const token = document.querySelector('meta[name="csrf-token"]')?.content ?? ""
    const response = await fetch(form.action, {
      method: "POST",
      headers: { "X-CSRF-Token": token, Accept: "text/html" },
      credentials: "same-origin",
    })
    if (response.ok && response.redirected) open(new URL(response.url).pathname)
  }
  const onMessage = (event) => {
    if (event.origin === location.origin && event.data === CLOSE) close()
  }
  const onWidth = () => {
    if (!WIDE.matches && !panel.hidden) close()
  }
  document.addEventListener("click", onClick)
  document.addEventListener("submit", onSubmit, true)
  addEventListener("message", onMessage)
  WIDE.addEventListener("change", onWidth)
  return () => {
    document.removeEventListener("click", onClick)
    document.removeEventListener("submit", onSubmit, true)
    removeEventListener("message", onMessage)
    WIDE.removeEventListener("change", onWidth)
  }
}
