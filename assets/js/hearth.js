// The room page's behaviour. Turbo Drive and Turbo Streams come from turbo-rails (which also
// defines <turbo-cable-stream-source>); this module adds the composer and its toolbar's
// button, typing notices, presence, unread marks, rich message bodies, the list's look per
// reader (times, days, threads), its paging, the message menu, pending posts, sounds, the
// catch-up after a reconnect, the order of appended messages and the thread panel. Everything runs on one
// Action Cable consumer, the one turbo-rails' stream sources use.
//
// Each room page is set up on `turbo:load` and torn down before Turbo renders the next page;
// so is the search page, whose results get the room's reading (see `setUpSearch`).
import { Turbo, cable } from "@hotwired/turbo-rails"
import { startComposer, startEditing } from "./composer.js"
import { startToolbar } from "./toolbar.js"
import { startTyping } from "./typing.js"
import { startPresence } from "./presence.js"
import { startConnection } from "./connection.js"
import { startUnreads } from "./unreads.js"
import { startScrolling } from "./scrolling.js"
import { startOrdering } from "./ordering.js"
import "./share.js"
import "./boosts.js"
import "./flash.js"
import "./people_picker.js"
import { startSidebar } from "./sidebar.js"
import { startSoftKeyboard } from "./soft_keyboard.js"
import { startAttention } from "./attention.js"
import { startApp } from "./app.js"
import { startNotifications } from "./notifications.js"
import { startBodies } from "./bodies.js"
import { startFormatter, formatList } from "./formatter.js"
import { startMenu } from "./menu.js"
import { startPosting } from "./posting.js"
import { startUnfurl } from "./unfurl.js"
import { startSounds } from "./sounds.js"
import { startUploads } from "./uploads.js"
import { startLightbox } from "./lightbox.js"
import { startThreads } from "./threads.js"
import { startInboxBadge, startInboxPage } from "./inbox.js"

let current = null

function meta(name) {
  return document.querySelector(`meta[name="${name}"]`)?.content
}

async function setUp() {
  if (current?.body === document.body) return
  tearDown()
  const roomId = Number(meta("current-room-id"))
  const list = document.querySelector("[data-refresh-room-url-value]")
  if (!roomId || !list) {
    const stops = setUpSearch() ?? (await setUpInbox())
    if (stops) current = { body: document.body, stops }
    return
  }
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
    startUploads(context),
    startLightbox(context),
    startOrdering(context),
    startComposer(context),
    startUnfurl(context),
    startToolbar(context),
    startBodies(context),
    startEditing(context),
    startTyping(context),
    startPresence(context),
    startUnreads(context),
    startConnection(context),
    startSidebar(context),
    startSoftKeyboard(context),
    startAttention(context),
    startNotifications(context),
    startThreads(context),
    startInboxBadge(context),
  ]
}

// The inbox page: its badge and list kept live (inbox.js).
async function setUpInbox() {
  if (!document.getElementById("inbox")) return null
  const consumer = await cable.getConsumer()
  return [startInboxPage({ consumer })]
}

// The search page's results read as the room's messages do: times and days in the reader's
// zone, one's own marked, code highlighted, mentions of the reader marked, the message menu
// (Copy link; no composer to reply into), the lightbox. Each result is its own list.
function setUpSearch() {
  const results = document.getElementById("search_results")
  if (!results) return null
  const userId = Number(meta("current-user-id"))
  for (const result of results.querySelectorAll(".search-result")) formatList(result, userId)
  document.documentElement.dataset.timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone
  return [startBodies({ list: results, userId }), startMenu({ list: results, form: null }), startLightbox()]
}

function tearDown() {
  if (!current) return
  for (const stop of current.stops) stop()
  current = null
}

startApp()
addEventListener("turbo:load", setUp)
addEventListener("turbo:before-render", tearDown)
// Turbo may have fired the first `turbo:load` before this module ran.
if (document.readyState !== "loading") setUp()
