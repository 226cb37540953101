// The room page's behaviour. Turbo Drive and Turbo Streams come from turbo-rails (which also
// defines <turbo-cable-stream-source>); this module adds the composer, typing notices,
// presence, unread marks, rich message bodies, the list's look per reader (times, days,
// threads), its paging, the message menu, pending posts, sounds, the catch-up after a
// reconnect and the order of appended messages. Everything runs on one Action Cable
// consumer, the one turbo-rails' stream sources use.
//
// Each room page is set up on `turbo:load` and torn down before Turbo renders the next page.
import { Turbo, cable } from "@hotwired/turbo-rails"
import { startComposer, startEditing } from "./composer.js"
import { startTyping } from "./typing.js"
import { startPresence } from "./presence.js"
import { startConnection } from "./connection.js"
import { startUnreads } from "./unreads.js"
import { startScrolling } from "./scrolling.js"
import { startOrdering } from "./ordering.js"
import "./share.js"
import "./boosts.js"
import "./people_picker.js"
import { startBodies } from "./bodies.js"
import { startFormatter } from "./formatter.js"
import { startMenu } from "./menu.js"
import { startPosting } from "./posting.js"
import { startSounds } from "./sounds.js"

let current = null

function meta(name) {
  return document.querySelector(`meta[name="${name}"]`)?.content
}

async function setUp() {
  if (current?.body === document.body) return
  tearDown()
  const roomId = Number(meta("current-room-id"))
  const list = document.querySelector("[data-refresh-room-url-value]")
  if (!roomId || !list) return
  const page = { body: document.body, stops: [] }
  current = page
  const consumer = await cable.getConsumer()
  if (current !== page) return
  const context = {
    consumer,
    Turbo,
    roomId,
    userId: Number(meta("current-user-id")),
    list,
    form: document.querySelector("form.composer"),
  }
  page.stops = [
    startFormatter(context),
    startScrolling(context),
    startMenu(context),
    startPosting(context),
    startSounds(context),
    startOrdering(context),
    startComposer(context),
    startBodies(context),
    startEditing(context),
    startTyping(context),
    startPresence(context),
    startUnreads(context),
    startConnection(context),
  ]
}

function tearDown() {
  if (!current) return
  for (const stop of current.stops) stop()
  current = null
}

addEventListener("turbo:load", setUp)
addEventListener("turbo:before-render", tearDown)
// Turbo may have fired the first `turbo:load` before this module ran.
if (document.readyState !== "loading") setUp()
