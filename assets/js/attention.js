// The tab's title and the app's badge count the rooms with unread messages in the sidebar:
// "(3) All Talk · Hearth", navigator.setAppBadge(3) (cleared at 0), kept up to date as
// unreads.js marks and clears rooms. On a phone, where the sidebar is behind the menu button,
// that button shows a dot while a room other than this one is unread.
export function startAttention({ roomId } = {}) {
  const sidebar = document.getElementById("sidebar")
  if (!sidebar) return () => {}
  const base = document.title.replace(/^\(\d+\) /, "")
  const menu = document.querySelector(".nav__menu")
  const dot = menu ? menuDot(menu) : null
  let last = -1
  function count() {
    const rooms = [...sidebar.querySelectorAll(".room-link--unread")]
    const elsewhere = rooms.some((item) => Number(item.dataset.roomId) !== roomId)
    if (dot && dot.hidden === elsewhere) {
      dot.hidden = !elsewhere
      menu.classList.toggle("nav__menu--unread", elsewhere)
    }
    const unread = rooms.length
    if (unread === last) return
    last = unread
    document.title = unread > 0 ? `(${unread}) ${base}` : base
    if ("setAppBadge" in navigator) {
      const done = unread > 0 ? navigator.setAppBadge(unread) : navigator.clearAppBadge()
      done?.catch?.(() => {})
    }
  }
  count()
  const observer = new MutationObserver(count)
  observer.observe(sidebar, { subtree: true, childList: true, attributes: true, attributeFilter: ["class"] })
  return () => {
    observer.disconnect()
    document.title = base
    dot?.remove()
    menu?.classList.remove("nav__menu--unread")
  }
}

// The menu button's dot (hidden until a room is unread), with words for screen readers.
function menuDot(menu) {
  for (const old of menu.querySelectorAll(".nav__menu-dot")) old.remove()
  const dot = document.createElement("span")
  dot.className = "nav__menu-dot"
  dot.hidden = true
  dot.innerHTML = '<span class="visually-hidden">(unread rooms)</span>'
  menu.append(dot)
  return dot
}
