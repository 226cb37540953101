// Keeps the message list in order. Every message element carries data-sort-value (its id,
// which the server hands out in commit order). Turbo's `append` puts new elements at the end,
// whatever their value: a poster's own answer can arrive after later broadcasts, and a
// catch-up can repeat messages already shown. So after each append to the list, every
// message it brought is moved back past the neighbours that sort after it.
import { listen } from "./util.js"

function sortValue(element) {
  return Number(element?.dataset?.sortValue) || 0
}

// Moves `message` up to the first position where the element before it sorts no later.
function place(list, message) {
  if (!message || message.parentElement !== list) return
  const value = sortValue(message)
  let first = null
  for (let before = message.previousElementSibling; before && sortValue(before) > value; before = before.previousElementSibling) {
    first = before
  }
  if (first) first.before(message)
}

export function startOrdering({ list }) {
  function beforeStreamRender(event) {
    const stream = event.detail?.newStream ?? event.target
    if (stream?.getAttribute?.("action") !== "append" || stream.getAttribute("target") !== list.id) return
    const ids = [...stream.templateContent.querySelectorAll("[data-sort-value][id]")].map((element) => element.id)
    if (ids.length === 0) return
    const render = event.detail.render
    event.detail.render = async (element) => {
      await render(element)
      for (const id of ids) place(list, document.getElementById(id))
    }
  }

  return listen([document, "turbo:before-stream-render", beforeStreamRender])
}
