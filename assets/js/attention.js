// The tab's title and the app's badge count the rooms with unread messages in the sidebar:
// "(3) All Talk · Hearth", navigator.setAppBadge(3) (cleared at 0), kept up to date as
// unreads.js marks and clears rooms.
export function startAttention() {
  const sidebar = document.getElementById("sidebar")
  if (!sidebar) return () => {}
  const base = document.title.replace(/^\(\d+\) /, "")
  let last = -1
  function count() {
    const unread = sidebar.querySelectorAll(".room-link--unread").length
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
  }
}
