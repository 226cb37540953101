// The people picker of the direct-message and closed-room forms: type a name, pick from the
// suggestions of GET /autocompletable/users (the account's people), and the person's checkbox
// is checked. While the picker runs, the form shows only the chosen people (the full list of
// checkboxes stays in the form, and is what it submits).

function decode(html) {
  const t = document.createElement("textarea")
  t.innerHTML = html
  return t.value
}

function setUpPicker(fieldset) {
  if (fieldset.dataset.pickerReady) return
  fieldset.dataset.pickerReady = "true"
  const input = fieldset.querySelector("[data-people-query]")
  const list = fieldset.querySelector("[data-people-suggestions]")
  if (!input || !list) return
  const boxes = new Map()
  for (const box of fieldset.querySelectorAll('input[type="checkbox"][name="user_ids[]"]')) {
    boxes.set(box.value, box)
  }
  fieldset.classList.add("room-form__people--picking")
  input.hidden = false
  let asked = 0
  async function suggest() {
    const query = input.value.trim()
    const ask = ++asked
    if (!query) {
      list.replaceChildren()
      return
    }
    let people = []
    try {
      const response = await fetch(`/autocompletable/users?query=${encodeURIComponent(query)}`, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      })
      if (response.ok) people = await response.json()
    } catch {
      return
    }
    if (ask !== asked) return
    const items = []
    for (const person of people) {
      const box = boxes.get(String(person.value))
      if (!box || box.disabled || box.checked) continue
      const item = document.createElement("li")
      const button = document.createElement("button")
      button.type = "button"
      button.className = "people-picker__suggestion"
      const avatar = document.createElement("img")
      avatar.src = person.avatar_url
      avatar.alt = ""
      avatar.width = avatar.height = 20
      button.append(avatar, document.createTextNode(decode(person.name)))
      button.addEventListener("click", () => {
        box.checked = true
        input.value = ""
        list.replaceChildren()
        input.focus()
      })
      item.append(button)
      items.push(item)
    }
    list.replaceChildren(...items)
  }
  let timer = null
  input.addEventListener("input", () => {
    clearTimeout(timer)
    timer = setTimeout(suggest, 150)
  })
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      const first = list.querySelector("button")
      if (first) {
        event.preventDefault()
        first.click()
      }
    }
  })
}

function setUpPickers() {
  for (const fieldset of document.querySelectorAll("[data-people-picker]")) setUpPicker(fieldset)
}

addEventListener("turbo:load", setUpPickers)
if (document.readyState !== "loading") setUpPickers()
else addEventListener("DOMContentLoaded", setUpPickers)
