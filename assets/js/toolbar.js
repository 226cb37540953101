// The composer's formatting toolbar behind a button (Campfire's composer has one too). On a
// phone (under 768 px) Trix's toolbar stays hidden until the button (`.composer__format`, a
// real <button> with aria-expanded and aria-controls naming the toolbar) shows it; shown, it
// takes a row of the composer above the editor, in the flow, so the message area shrinks by
// its height instead of being covered (scrolling.js keeps a reader at the bottom there).
//
// Only the button changes the layout, never the editor's focus: a layout that moved when the
// editor lost focus moved the Send button and the messages between a click's mousedown and
// its mouseup, and the click landed elsewhere. On a desktop the button is hidden and the
// toolbar shows over the foot of the message area while the editor has focus
// (`30-composer.css`).
import { listen } from "./util.js"

export function startToolbar({ form }) {
  const button = form?.querySelector(".composer__format")
  const element = form?.querySelector("trix-editor")
  if (!button || !element) return () => {}
  let unlisten = () => {}
  let stopped = false

  function show(open) {
    form.classList.toggle("composer--toolbar-open", open)
    button.setAttribute("aria-expanded", String(open))
  }

  function click() {
    show(button.getAttribute("aria-expanded") !== "true")
  }

  // A pointer on the button leaves the focus where it is: the editor keeps its caret (and a
  // phone its keyboard). The keyboard reaches the button by Tab as any other.
  function mousedown(event) {
    if (element.contains(document.activeElement)) event.preventDefault()
  }

  // The toolbar is Trix's own (`trix-toolbar-<id>`, made when the editor connects).
  customElements.whenDefined("trix-editor").then(() => {
    const toolbar = element.toolbarElement
    if (stopped || !toolbar) return
    button.setAttribute("aria-controls", toolbar.id)
    form.classList.add("composer--toolbar-toggle")
    show(false)
    button.hidden = false
    unlisten = listen([button, "click", click], [button, "mousedown", mousedown])
  })

  return () => {
    stopped = true
    unlisten()
  }
}
