// @mentions in the composer: typing `@` and part of a name opens a list of the room's people
// (`GET /autocompletable/users?room_id=&query=`); picking one (click, Enter or Tab) replaces
// the `@…` with a Trix attachment of content type `application/vnd.campfire.mention` carrying
// the person's sgid, which the server stores as Action Text's `<action-text-attachment>`.
// Arrow keys move through the list, Esc closes it.
import Trix from "trix"
import { listen } from "./util.js"

const CONTENT_TYPE = "application/vnd.campfire.mention"
const PATTERN = /(?:^|\s)@([^\s@]{0,40})$/

export function startMentions({ form, element, roomId }) {
  const picker = document.createElement("ul")
  picker.className = "mention-picker"
  picker.setAttribute("role", "listbox")
  picker.hidden = true
  form.append(picker)
  let people = []
  let active = 0
  let range = null
  let asked = 0

  function close() {
    picker.hidden = true
    people = []
    range = null
  }

  async function search() {
    const editor = element.editor
    if (!editor) return
    const [position, end] = editor.getSelectedRange()
    if (position !== end) return close()
    const before = editor.getDocument().toString().slice(0, position)
    const match = before.match(PATTERN)
    if (!match) return close()
    const query = match[1]
    const ask = ++asked
    const params = new URLSearchParams({ room_id: roomId, query })
    const response = await fetch(`/autocompletable/users?${params}`, { headers: { Accept: "application/json" } })
    if (ask !== asked || !response.ok) return
    people = await response.json()
    if (people.length === 0) return close()
    range = [position - query.length - 1, position]
    active = 0
    draw(editor.getClientRectAtPosition(range[0]))
  }

  function draw(rect) {
    picker.replaceChildren(
      ...people.map((person, i) => {
        const item = document.createElement("li")
        item.className = "mention-picker__option"
        item.setAttribute("role", "option")
        item.setAttribute("aria-selected", String(i === active))
        item.dataset.index = i
        const avatar = document.createElement("img")
        avatar.src = person.avatar_url
        avatar.alt = ""
        avatar.className = "mention-picker__avatar"
        const name = document.createElement("span")
        name.textContent = unescape(person.name)
        item.append(avatar, name)
        return item
      }),
    )
    picker.hidden = false
    const box = form.getBoundingClientRect()
    const left = rect ? Math.max(0, rect.left - box.left) : 0
    picker.style.left = `${Math.min(left, Math.max(0, box.width - 260))}px`
  }

  function pick(index) {
    const person = people[index]
    const editor = element.editor
    if (!person || !range || !editor) return close()
    const name = unescape(person.name)
    const chip = document.createElement("span")
    chip.className = "mention"
    chip.textContent = `@${name}`
    const attachment = new Trix.Attachment({ content: chip.outerHTML, contentType: CONTENT_TYPE, sgid: person.sgid })
    editor.setSelectedRange(range)
    editor.insertAttachment(attachment)
    editor.insertString(" ")
    close()
  }

  function keydown(event) {
    if (picker.hidden || event.target !== element) return
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      active = (active + (event.key === "ArrowDown" ? 1 : people.length - 1)) % people.length
      for (const item of picker.children) item.setAttribute("aria-selected", String(Number(item.dataset.index) === active))
    } else if (event.key === "Enter" || event.key === "Tab") {
      pick(active)
    } else if (event.key === "Escape") {
      close()
    } else {
      return
    }
    event.preventDefault()
    event.stopImmediatePropagation()
  }

  function click(event) {
    const item = event.target.closest(".mention-picker__option")
    if (item) {
      event.preventDefault()
      pick(Number(item.dataset.index))
    }
  }

  const unlisten = listen(
    [element, "trix-change", search],
    [element, "trix-selection-change", search],
    [element, "trix-blur", () => setTimeout(close, 150)],
    [form, "keydown", keydown, true],
    [picker, "mousedown", click],
  )
  return {
    // Whether an Enter goes to the picker rather than sending the message.
    handlesEnter: () => !picker.hidden,
    stop() {
      unlisten()
      picker.remove()
    },
  }
}

// The server's names are HTML-escaped (Campfire's `h(user.name)`).
function unescape(html) {
  return new DOMParser().parseFromString(html, "text/html").documentElement.textContent
}
