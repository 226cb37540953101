// Message bodies in the page: code blocks highlighted with highlight.js, and messages that
// mention the reader marked `message--mentioned` (the partial is one shared frame for every
// reader, so it carries the mentioned ids, `data-mentionee-ids`, and each page compares them
// with its own user id). Runs over the page's messages and every one added or replaced later.
import hljs from "highlight.js"
import bash from "highlight.js/languages/bash"
import css from "highlight.js/languages/css"
import diff from "highlight.js/languages/diff"
import go from "highlight.js/languages/go"
import java from "highlight.js/languages/java"
import javascript from "highlight.js/languages/javascript"
import json from "highlight.js/languages/json"
import python from "highlight.js/languages/python"
import ruby from "highlight.js/languages/ruby"
import rust from "highlight.js/languages/rust"
import sql from "highlight.js/languages/sql"
import xml from "highlight.js/languages/xml"

const languages = { bash, css, diff, go, java, javascript, json, python, ruby, rust, sql, xml }
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language)
hljs.configure({ ignoreUnescapedHTML: true })

export function startBodies({ list, userId }) {
  if (!list) return () => {}
  const me = String(userId)

  function format(root) {
    for (const pre of root.querySelectorAll(".message__body pre:not([data-highlighted])")) {
      hljs.highlightElement(pre)
    }
    const bodies = root.matches?.(".message") ? [root] : root.querySelectorAll(".message")
    for (const message of bodies) {
      const ids = [...message.querySelectorAll(".message__body [data-mentionee-ids]")].flatMap((el) =>
        el.dataset.mentioneeIds.split(" "),
      )
      message.classList.toggle("message--mentioned", ids.includes(me))
    }
  }

  format(list)
  const observer = new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) if (node.nodeType === Node.ELEMENT_NODE) format(node)
    }
  })
  observer.observe(list, { childList: true, subtree: true })
  return () => observer.disconnect()
}
