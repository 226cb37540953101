// Scrolling and paging of the message list (the behaviour of Campfire's message paginator):
//
// - The page opens at the newest message and follows new ones while the reader is at the
//   bottom. A deep link (/rooms/:id/@:message_id, data-highlight-message-id) opens scrolled to
//   its message, highlighted.
// - When the first message of the list comes into view after having been out of it, the page
//   before it loads by itself (GET …/messages?before=ID) above, the scroll position kept;
//   after a deep link, the last message coming into view loads the page after it (?after=ID)
//   until a short or empty page says the list reaches the newest message.
// - The list holds at most 300 messages (+20 leeway): loading at one end trims the other.
//   Trimming the newest ones means the list no longer reaches the present.
// - While the list does not reach the present (data-up-to-date="false"), messages arriving
//   live are kept aside, not shown after a gap; they are added once paging reaches them.
// - "Jump to newest" shows when messages arrive while the reader is above the fold (or the
//   list does not reach the present); it scrolls to the bottom, or loads the newest page.
import { listen } from "./util.js"

const NEAR_BOTTOM_PX = 80
const PAGE_SIZE = 40
const MAX_MESSAGES = 300
const MAX_MESSAGES_LEEWAY = 20

const messagesOf = (list) => [...list.children].filter((element) => element.dataset.messageId)

function parse(html) {
  const template = document.createElement("template")
  template.innerHTML = html
  return template.content
}

export function startScrolling({ list }) {
  const area = document.getElementById("message-area")
  if (!area) return () => {}
  const url = list.dataset.pagesUrl
  const button = area.querySelector(".jump-to-newest")
  let upToDate = list.dataset.upToDate !== "false"
  let pinned = true
  let loading = false
  let stopped = false
  let firstWasHidden = false
  let first = null
  let last = null
  const keptAside = new Map() // message id → its HTML, arrived live while the list lags

  function setUpToDate(value) {
    upToDate = value
    list.dataset.upToDate = String(value)
    if (value) addKeptAside()
  }

  function atBottom() {
    return area.scrollTop + area.clientHeight >= area.scrollHeight - NEAR_BOTTOM_PX
  }

  function showJump(show) {
    if (button) button.hidden = !show
  }

  // --- the start: the bottom, or the deep link's message --------------------------------------
  const highlighted = list.dataset.highlightMessageId &&
    list.querySelector(`.message[data-message-id="${list.dataset.highlightMessageId}"]`)
  if (highlighted) {
    highlighted.classList.add("message--highlighted")
    highlighted.scrollIntoView({ block: "center" })
    pinned = upToDate && atBottom()
  } else {
    area.scrollTop = area.scrollHeight
  }

  function scrolled() {
    pinned = upToDate && atBottom()
    if (pinned) showJump(false)
  }

  // --- paging ---------------------------------------------------------------------------------
  const intersections = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const isFirst = entry.target === first
      if (!entry.isIntersecting) {
        if (isFirst) firstWasHidden = true
        continue
      }
      // The first message is in view at once whenever a page is added above it: only a
      // reveal after it was hidden counts (Campfire's ScrollTracker does the same).
      if (isFirst && firstWasHidden) addPage("before", entry.target.dataset.messageId)
      else if (entry.target === last && !upToDate) addPage("after", entry.target.dataset.messageId)
    }
  }, { root: area })

  function track() {
    intersections.disconnect()
    const messages = messagesOf(list)
    first = messages[0] ?? null
    last = messages.at(-1) ?? null
    firstWasHidden = false
    if (first) intersections.observe(first)
    if (last && last !== first) intersections.observe(last)
  }

  async function fetchPage(params) {
    const target = new URL(url, location.href)
    for (const [k, v] of Object.entries(params)) target.searchParams.set(k, v)
    const response = await fetch(target, { headers: { Accept: "text/html" }, credentials: "same-origin" })
    if (response.status === 204) return null
    if (!response.ok) throw new Error(`${target.pathname} answered ${response.status}`)
    return parse(await response.text())
  }

  async function addPage(direction, id) {
    if (loading || stopped || !id) return
    loading = true
    try {
      const page = await fetchPage({ [direction]: id })
      if (stopped) return
      const count = page ? page.querySelectorAll(".message[data-message-id]").length : 0
      if (direction === "before") {
        if (page) {
          const height = area.scrollHeight
          const top = area.scrollTop
          list.prepend(page)
          area.scrollTop = top + (area.scrollHeight - height)
          trim("bottom")
        }
      } else {
        if (page) {
          list.append(page)
          trim("top")
        }
        if (count < PAGE_SIZE) setUpToDate(true)
      }
      list.dataset.pagesLoaded = String((Number(list.dataset.pagesLoaded) || 0) + 1)
    } catch (error) {
      console.warn(error)
    } finally {
      loading = false
    }
  }

  function trim(end) {
    const messages = messagesOf(list)
    const overage = messages.length - MAX_MESSAGES
    if (overage <= MAX_MESSAGES_LEEWAY) return
    const gone = end === "top" ? messages.slice(0, overage) : messages.slice(-overage)
    if (end === "top") {
      const height = area.scrollHeight
      const top = area.scrollTop
      for (const message of gone) message.remove()
      area.scrollTop = top - (height - area.scrollHeight)
    } else {
      for (const message of gone) message.remove()
      setUpToDate(false)
    }
  }

  // --- live messages --------------------------------------------------------------------------
  function beforeStreamRender(event) {
    const stream = event.detail?.newStream ?? event.target
    if (stream?.getAttribute?.("action") !== "append" || stream.getAttribute("target") !== list.id) return
    const arrived = [...stream.templateContent.querySelectorAll(".message[data-message-id]")]
    if (arrived.length === 0) return
    if (!upToDate) {
      for (const message of arrived) keptAside.set(Number(message.dataset.messageId), message.outerHTML)
      event.detail.render = async () => {}
      showJump(true)
      return
    }
    if (!pinned) showJump(true)
  }

  function addKeptAside() {
    const lastId = Number(messagesOf(list).at(-1)?.dataset.messageId) || 0
    const ids = [...keptAside.keys()].filter((id) => id > lastId).sort((a, b) => a - b)
    for (const id of ids) {
      const message = parse(keptAside.get(id)).firstElementChild
      if (message && !document.getElementById(message.id)) list.append(message)
    }
    keptAside.clear()
  }

  async function jumpToNewest() {
    showJump(false)
    if (!upToDate) {
      try {
        const page = await fetchPage({})
        if (stopped) return
        const pending = [...list.querySelectorAll(".message--pending")]
        list.replaceChildren(page ?? "", ...pending)
        keptAside.clear()
        setUpToDate(true)
      } catch (error) {
        console.warn(error)
        return
      }
      if (/\/@\d+$/.test(location.pathname)) history.replaceState(history.state, "", location.pathname.replace(/\/@\d+$/, ""))
    }
    pinned = true
    area.scrollTop = area.scrollHeight
  }

  // Posting while reading old messages brings the newest back first.
  function submitStart(event) {
    if (!event.target.matches?.("form.composer")) return
    if (upToDate) {
      pinned = true
      showJump(false)
      area.scrollTop = area.scrollHeight
    } else {
      jumpToNewest()
    }
  }

  const observer = new MutationObserver(() => {
    track()
    if (pinned) area.scrollTop = area.scrollHeight
  })
  observer.observe(list, { childList: true })
  track()

  // The area shrinks when the composer grows (its toolbar shown, a long draft) or a phone's
  // keyboard opens: a reader at the bottom stays there, the newest message in view.
  const resizes = new ResizeObserver(() => {
    if (pinned) area.scrollTop = area.scrollHeight
  })
  resizes.observe(area)

  const unlisten = listen(
    [area, "scroll", scrolled, { passive: true }],
    [document, "turbo:before-stream-render", beforeStreamRender],
    [document, "turbo:submit-start", submitStart],
    ...(button ? [[button, "click", jumpToNewest]] : []),
  )
  return () => {
    stopped = true
    unlisten()
    observer.disconnect()
    intersections.disconnect()
    resizes.disconnect()
  }
}
