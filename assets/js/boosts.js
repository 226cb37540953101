// Only the booster sees the remove button of a boost: the chips (also those appended live)
// carry data-booster-id; one style rule, written once per page for the signed-in person's id,
// shows their own chips' delete forms (the stylesheet hides all of them).
function showOwnBoostDeletes() {
  const id = document.querySelector('meta[name="current-user-id"]')?.content
  if (!id || !/^\d+$/.test(id) || document.getElementById("own-boosts-style")) return
  const style = document.createElement("style")
  style.id = "own-boosts-style"
  style.textContent = `.boost[data-booster-id="${id}"] .boost__delete { display: inline-flex; }`
  document.head.append(style)
}

addEventListener("turbo:load", showOwnBoostDeletes)
if (document.readyState !== "loading") showOwnBoostDeletes()

// "Add a boost": the link beside a message's boosts loads the form into its frame (Turbo);
// Escape or Cancel puts the link back without leaving the page, a sent boost does the same
// from the server's answer, and the focus goes back to the link (or to the message's menu
// button while the message has no boosts). The "+" of the message menu opens the same form
// in place.
const openedFrom = new WeakMap()

function boostFrameOf(element) {
  return element?.closest?.('turbo-frame[id^="new_boost_"]') ?? null
}

// The link, or the message's menu button while the message has no boosts to show it beside.
function focusAddLink(frame) {
  const link = frame?.querySelector(".boosts__add")
  const target = link?.checkVisibility() ? link : frame?.closest(".message")?.querySelector(".message__actions-button")
  target?.focus({ preventScroll: true })
}

function closeBoostForm(frame) {
  const link = openedFrom.get(frame)
  if (!link) return false
  frame.removeAttribute("src")
  frame.replaceChildren(link)
  openedFrom.delete(frame)
  focusAddLink(frame)
  return true
}

function boostClicked(event) {
  const add = event.target.closest?.(".boosts__add")
  if (add) {
    const frame = boostFrameOf(add)
    if (frame) openedFrom.set(frame, add)
    return
  }
  // The menu's "+" targets the same frame: the menu closes as the form opens.
  const pickerNew = event.target.closest?.(".boost-picker__new")
  if (pickerNew) {
    const frame = document.getElementById(pickerNew.dataset.turboFrame ?? "")
    const link = frame?.querySelector(".boosts__add")
    if (link) openedFrom.set(frame, link)
    pickerNew.closest("details")?.removeAttribute("open")
    return
  }
  const cancel = event.target.closest?.("[data-boost-cancel]")
  if (cancel && closeBoostForm(boostFrameOf(cancel))) event.preventDefault()
}

function boostKeydown(event) {
  if (event.key !== "Escape" || event.isComposing) return
  const frame = boostFrameOf(event.target)
  if (frame?.querySelector(".boost-form") && closeBoostForm(frame)) {
    event.preventDefault()
    event.stopPropagation()
  }
}

function boostFrameLoaded(event) {
  const input = event.target.querySelector?.(".boost-form__input")
  if (input && boostFrameOf(event.target) === event.target) input.focus({ preventScroll: true })
}

// The answer to a sent boost updates the frame back to its link: focus it.
function boostStreamRendered(event) {
  const stream = event.target
  if (stream?.getAttribute?.("action") !== "update") return
  const frame = document.getElementById(stream.getAttribute("target") ?? "")
  if (!frame?.id.startsWith("new_boost_")) return
  const render = event.detail.render
  event.detail.render = async (element) => {
    await render(element)
    openedFrom.delete(frame)
    frame.removeAttribute("src")
    focusAddLink(frame)
  }
}

document.addEventListener("click", boostClicked)
document.addEventListener("keydown", boostKeydown, true)
document.addEventListener("turbo:frame-load", boostFrameLoaded)
document.addEventListener("turbo:before-stream-render", boostStreamRendered)
