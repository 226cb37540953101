// The skip-to-content link (`a[data-skip-link]`, the first thing Tab reaches on every page):
// Enter or a click moves the focus to what its href names (the room's messages), or to the
// page's <main> where nothing has that id, so the next Tab continues from there.
function target(link) {
  const id = decodeURIComponent(link.hash.slice(1))
  return (id && document.getElementById(id)) || document.querySelector("main")
}

document.addEventListener("click", (event) => {
  const link = event.target instanceof Element ? event.target.closest("a[data-skip-link]") : null
  if (!link) return
  const to = target(link)
  if (!to) return
  event.preventDefault()
  if (!to.hasAttribute("tabindex")) to.setAttribute("tabindex", "-1")
  to.focus()
})
