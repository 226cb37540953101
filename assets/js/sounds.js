// `/play <name>`: the message is drawn as the sound's line of text or picture (the server's partial,
// class message--sound); this module plays the sound when such a message arrives live, and
// again when its button is clicked. Every sound is synthesized here with the Web Audio API from
// a short recipe of tones, tunes and noise bursts (RECIPES): no recording ships with Hearth.
// The names are those of src/sounds.rs' SOUNDS.
import { listen } from "./util.js"

let audio = null

function context() {
  audio ??= new AudioContext()
  if (audio.state === "suspended") audio.resume().catch(() => {})
  return audio
}

// A note's frequency: "A4" is 440 Hz, "C#5" and "Bb3" as written.
const SEMITONES = { C: -9, D: -7, E: -5, F: -4, G: -2, A: 0, B: 2 }
function hz(note) {
  const [, letter, accidental, octave] = /^([A-G])(#|b)?(\d)$/.exec(note)
  const semitone = SEMITONES[letter] + (accidental === "#" ? 1 : accidental === "b" ? -1 : 0) + (octave - 4) * 12
  return 440 * 2 ** (semitone / 12)
}

// One tone: an oscillator of wave `w` at `f` Hz (sliding to `to`), through a low-pass at `lp` Hz
// when given, with a vibrato of `v` Hz; its envelope rises over `a` seconds to `g`, holds for
// the fraction `h` of `d` seconds, then fades out by `d`.
function tone(ctx, at, { w = "sine", f, to, d = 0.3, g = 0.15, v = 0, lp, a = 0.01, h = 0 }) {
  const start = ctx.currentTime + at
  const osc = ctx.createOscillator()
  const amp = ctx.createGain()
  osc.type = w
  osc.frequency.setValueAtTime(f, start)
  if (to) osc.frequency.exponentialRampToValueAtTime(to, start + d)
  if (v) {
    const lfo = ctx.createOscillator()
    const depth = ctx.createGain()
    lfo.frequency.value = 6
    depth.gain.value = v
    lfo.connect(depth).connect(osc.frequency)
    lfo.start(start)
    lfo.stop(start + d)
  }
  amp.gain.setValueAtTime(0.0001, start)
  amp.gain.exponentialRampToValueAtTime(g, start + a)
  if (h) amp.gain.setValueAtTime(g, start + Math.max(a, d * h))
  amp.gain.exponentialRampToValueAtTime(0.0001, start + d)
  let out = osc
  if (lp) {
    const filter = ctx.createBiquadFilter()
    filter.type = "lowpass"
    filter.frequency.value = lp
    out = out.connect(filter)
  }
  out.connect(amp).connect(ctx.destination)
  osc.start(start)
  osc.stop(start + d + 0.05)
}

// A burst of white noise through a filter of type `x` at `f` Hz: drums, claps, a crowd, static.
function noise(ctx, at, { x = "highpass", f = 2000, d = 0.2, g = 0.2, q = 1 }) {
  const start = ctx.currentTime + at
  const buffer = ctx.createBuffer(1, Math.max(1, Math.floor(ctx.sampleRate * d)), ctx.sampleRate)
  const data = buffer.getChannelData(0)
  for (let i = 0; i < data.length; i++) data[i] = Math.random() * 2 - 1
  const source = ctx.createBufferSource()
  source.buffer = buffer
  const shape = ctx.createBiquadFilter()
  shape.type = x
  shape.frequency.value = f
  shape.Q.value = q
  const amp = ctx.createGain()
  amp.gain.setValueAtTime(g, start)
  amp.gain.exponentialRampToValueAtTime(0.0001, start + d)
  source.connect(shape).connect(amp).connect(ctx.destination)
  source.start(start)
}

// A tune: `n` is notes ("C5", a chord "C4+E4+G4", a rest "-"), each one beat of `b` seconds
// or `:beats` ("G5:2"); every other field is the tone's.
function melody(ctx, at, { n, b = 0.15, ...voice }) {
  let t = at
  for (const token of n.split(" ")) {
    const [notes, beats = "1"] = token.split(":")
    const d = Number(beats) * b
    if (notes !== "-") for (const note of notes.split("+")) tone(ctx, t, { ...voice, f: hz(note), d })
    t += d
  }
}

// Performs one step of a recipe at `at` seconds, `r` times `gap` seconds apart (each repeat's
// pitch times `k`, its start nudged by up to `jit` seconds): a `group` of steps, a melody
// (`n`), a noise burst (`x`) or a tone (`f`).
function perform(ctx, steps, offset = 0) {
  for (const { at = 0, r = 1, gap = 0, k = 1, jit = 0, ...step } of steps) {
    for (let i = 0; i < r; i++) {
      const when = offset + at + i * gap + (jit ? ((i * 0.618) % 1) * jit : 0)
      const pitch = k ** i
      if (step.group) perform(ctx, step.group, when)
      else if (step.n) melody(ctx, when, step)
      else if (step.x) noise(ctx, when, step)
      else tone(ctx, when, { ...step, f: step.f * pitch, to: step.to && step.to * pitch })
    }
  }
}

const KICK = { f: 120, to: 45, d: 0.18, g: 0.4 }
const SNARE = { x: "bandpass", f: 1800, d: 0.14, g: 0.25 }
const HAT = { x: "highpass", f: 7000, d: 0.05, g: 0.08 }
const CLAP = { x: "bandpass", f: 2400, d: 0.05, g: 0.2, q: 2 }

/** Every sound's recipe, by name (the names of src/sounds.rs' SOUNDS): a list of steps for `perform`. */
export const RECIPES = {
  "56k": [
    { f: 697, d: 0.08, g: 0.08, r: 6, gap: 0.11 }, { f: 1336, d: 0.08, g: 0.08, r: 6, gap: 0.11, k: 0.97 },
    { f: 2100, at: 0.8, d: 0.5, g: 0.08, h: 0.8 },
    { w: "square", f: 980, to: 1650, at: 1.35, d: 0.6, g: 0.04, v: 60 },
    { x: "bandpass", f: 2400, at: 1.9, d: 1.2, g: 0.15, q: 3 }, { w: "sawtooth", f: 1200, to: 2400, at: 2, d: 1, g: 0.03, v: 200 },
  ],
  ballmer: [
    { w: "sawtooth", n: "A3 A3 C4 A3:2", b: 0.16, g: 0.07, lp: 900, r: 3, gap: 0.9 },
    { ...CLAP, r: 6, gap: 0.45 }, { x: "bandpass", f: 900, d: 2.6, g: 0.04 },
  ],
  bell: [{ f: 880, d: 1.8, g: 0.25 }, { f: 2429, d: 1.2, g: 0.08 }, { f: 4752, d: 0.8, g: 0.04 }],
  bezos: [{ w: "sawtooth", f: 560, to: 420, d: 0.13, g: 0.09, lp: 1600, r: 7, gap: 0.17, k: 0.95 }],
  bueller: [
    { w: "triangle", n: "E4 D4:2", b: 0.22, g: 0.12, v: 3 },
    { w: "triangle", f: 294, to: 392, at: 1.1, d: 0.35, g: 0.12, r: 2, gap: 1.1 },
  ],
  butts: [{ x: "bandpass", f: 700, d: 0.09, g: 0.2, r: 6, gap: 0.16 }, { w: "sawtooth", f: 180, d: 0.08, g: 0.06, lp: 800, r: 6, gap: 0.16 }],
  clowntown: [
    { w: "square", n: "C5 B4 C5 E5 D5 C5 G4:2 A4 B4 C5:2", b: 0.12, g: 0.05 },
    { w: "triangle", n: "C3 G3 C3 G3 C3 G3 G2 G3 C3:2", b: 0.13, g: 0.15 },
    { w: "sawtooth", f: 330, to: 290, at: 1.5, d: 0.25, g: 0.1, lp: 1400 },
  ],
  cottoneyejoe: [
    { w: "sawtooth", n: "D5 D5 A4 D5 F#5 E5 D5 A4 D5:2", b: 0.11, g: 0.06, v: 6, lp: 3000 },
    { x: "lowpass", f: 200, d: 0.1, g: 0.4, r: 5, gap: 0.22 },
  ],
  crickets: [{ group: [{ f: 4400, d: 0.04, g: 0.05, r: 3, gap: 0.05 }], r: 6, gap: 0.45 }],
  curb: [
    { w: "triangle", n: "C3 - G2 - C3 - G2 D3 E3:2", b: 0.14, g: 0.22 },
    { w: "square", n: "E5 G5 C6 G5 E5:2", b: 0.14, at: 0.3, g: 0.04 },
  ],
  dadgummit: [{ w: "sawtooth", n: "G3 G3 E3:3", b: 0.16, g: 0.08, lp: 900 }, { x: "lowpass", f: 900, at: 0.9, d: 0.6, g: 0.25 }],
  dangerzone: [
    { w: "sawtooth", n: "E3 E3 G3 E3 A3 E3 B3 A3:2", b: 0.13, g: 0.07, lp: 1800 },
    { ...KICK, r: 5, gap: 0.26 },
  ],
  danielsan: [
    { w: "triangle", n: "C4+E4+G4 - C4+F4+A4 C4+E4+G4:4", b: 0.2, g: 0.08, v: 3 },
    { x: "highpass", f: 5000, at: 0.6, d: 1.2, g: 0.15 },
  ],
  deeper: [{ f: 220, to: 40, d: 1.6, g: 0.4 }, { w: "square", n: "C4 A3 F3 D3:2", b: 0.2, g: 0.05 }],
  donotwant: [{ w: "sawtooth", f: 330, to: 180, d: 0.7, g: 0.1, lp: 1200, v: 8, r: 2, gap: 0.8, k: 0.9 }],
  drama: [
    { w: "sawtooth", n: "D3 - D3 - Ab2+D3:5", b: 0.22, g: 0.09, lp: 1200 },
    { f: 90, to: 50, at: 0.88, d: 1.1, g: 0.4 },
  ],
  flawless: [{ w: "sine", n: "E5+B5:4 B5+E6:6", b: 0.2, g: 0.08, v: 4 }, { f: 600, to: 2400, d: 0.5, g: 0.04, w: "triangle" }],
  glados: [{ w: "square", n: "A4 E5 C5 G4 A4 A5:2", b: 0.09, g: 0.05 }, { w: "sawtooth", f: 60, d: 1, g: 0.05, lp: 400, h: 0.8 }],
  gogogo: [{ w: "square", f: 440, to: 660, d: 0.15, g: 0.07, r: 3, gap: 0.22, k: 1.12 }, { ...KICK, r: 3, gap: 0.22 }],
  greatjob: [{ ...CLAP, r: 24, gap: 0.05, jit: 0.04 }, { w: "triangle", n: "G5 C6:3", b: 0.12, g: 0.12 }],
  greyjoy: [
    { w: "sawtooth", f: 466, to: 440, d: 0.4, g: 0.07, v: 12, lp: 2000 },
    { w: "sawtooth", f: 415, to: 370, at: 0.45, d: 0.9, g: 0.07, v: 18, lp: 2000 },
  ],
  guarantee: [{ w: "sawtooth", n: "G2 C3:3", b: 0.2, g: 0.1, lp: 600 }, { f: 1568, at: 0.85, d: 0.8, g: 0.1 }],
  heygirl: [{ w: "sine", n: "F4+A4+C5+E5:6", b: 0.25, g: 0.05, v: 4, a: 0.1 }, { f: 2093, at: 0.3, d: 0.2, g: 0.04, r: 4, gap: 0.15, k: 1.06 }],
  honk: [{ w: "sawtooth", f: 500, to: 420, d: 0.18, g: 0.12, lp: 1400, r: 2, gap: 0.25 }, { w: "square", f: 250, to: 210, d: 0.18, g: 0.05, r: 2, gap: 0.25 }],
  horn: [
    { group: [{ w: "sawtooth", f: 440, d: 0.7, g: 0.06, h: 0.9, lp: 3000 }, { w: "sawtooth", f: 443, d: 0.7, g: 0.06, h: 0.9 }, { w: "sawtooth", f: 554, d: 0.7, g: 0.04, h: 0.9 }], r: 2, gap: 0.85 },
  ],
  horror: [{ w: "sawtooth", f: 1318, to: 1244, d: 0.15, g: 0.05, lp: 5000, r: 7, gap: 0.2 }, { f: 55, d: 1.5, g: 0.2, h: 0.7 }],
  inconceivable: [{ w: "sawtooth", n: "E3 G3 C4:2 A3 F3", b: 0.16, g: 0.08, lp: 1100, v: 5 }],
  letitgo: [
    { w: "triangle", n: "A4 B4 C5:2 G4:2 - E5 D5 C5:3", b: 0.18, g: 0.1 },
    { f: 2637, at: 1.3, d: 0.3, g: 0.03, r: 5, gap: 0.1, k: 1.05 },
  ],
  live: [{ w: "square", n: "C5 C5 C5 G5:3", b: 0.1, g: 0.06 }, { f: 1000, at: 0.7, d: 0.5, g: 0.08, h: 0.9 }],
  loggins: [{ w: "sawtooth", n: "A2+E3+A3:6", b: 0.25, g: 0.05, lp: 1400, v: 3 }, { w: "square", n: "A4 C5 E5 A5:2", b: 0.14, at: 0.3, g: 0.04 }],
  makeitso: [{ x: "lowpass", f: 600, d: 1.2, g: 0.15 }, { f: 200, to: 800, d: 1, g: 0.1 }, { f: 1319, at: 1, d: 0.6, g: 0.08 }],
  noooo: [{ w: "sawtooth", f: 440, to: 180, d: 2, g: 0.08, lp: 1200, v: 6, a: 0.05, h: 0.5 }],
  nyan: [{ w: "square", n: "E5 G5 A5 G5 E5 D5 E5 - C5 D5 E5 G5 E5:2", b: 0.09, g: 0.05 }, { w: "triangle", n: "C3 C4 A2 A3 F2 F3 G2 G3", b: 0.18, g: 0.12 }],
  ohmy: [{ f: 300, to: 600, d: 0.8, g: 0.12, v: 6, a: 0.08 }],
  ohyeah: [{ w: "sawtooth", n: "E2 - E2 G2 - A2 E2:2", b: 0.12, g: 0.12, lp: 700 }, { w: "sawtooth", f: 200, to: 120, at: 0.9, d: 0.6, g: 0.08, lp: 900 }],
  pushit: [{ ...KICK, r: 4, gap: 0.3 }, { ...HAT, r: 8, gap: 0.15 }, { w: "square", n: "G3 G3 Bb3 G3", b: 0.3, g: 0.05, lp: 1500 }],
  rimshot: [{ f: 180, to: 60, d: 0.18, g: 0.45, r: 2, gap: 0.22 }, { x: "highpass", f: 6000, at: 0.5, d: 0.9, g: 0.2 }],
  rollout: [{ w: "sawtooth", f: 55, d: 1.5, g: 0.1, lp: 300, v: 3, h: 0.8 }, { w: "square", n: "F4+A4:2 - F4+A4:3", b: 0.2, g: 0.05 }],
  rumble: [{ f: 1100, d: 0.6, g: 0.15, r: 3, gap: 0.25 }, { x: "bandpass", f: 800, d: 1.5, g: 0.08 }],
  sax: [{ w: "sawtooth", n: "D4 F4 G4 A4:2 C5 A4:3", b: 0.18, g: 0.07, lp: 1600, v: 5, a: 0.04 }],
  secret: [{ w: "triangle", n: "C5 E5 G5 C6 E6 G6:3", b: 0.08, g: 0.08 }],
  sexyback: [{ ...KICK, r: 4, gap: 0.4 }, { ...SNARE, at: 0.4, r: 2, gap: 0.8 }, { w: "square", n: "E4 - E4 G4", b: 0.2, g: 0.04 }],
  story: [{ w: "sine", n: "C5 G4 E4 C4:3", b: 0.3, g: 0.1 }, { f: 3000, to: 1500, d: 0.4, g: 0.03, w: "triangle" }],
  tada: [
    { w: "triangle", n: "C5 E5 G5", b: 0.09, g: 0.18 },
    { w: "triangle", n: "C5+E5+G5+C6:4", at: 0.3, b: 0.27, g: 0.12, v: 3 },
  ],
  tmyk: [{ w: "triangle", f: 1200, to: 3000, d: 0.6, g: 0.05 }, { n: "D5+F#5+A5+D6:6", b: 0.25, at: 0.4, g: 0.06 }],
  totes: [{ w: "square", n: "E5 A5:2", b: 0.1, g: 0.06 }],
  trololo: [{ w: "triangle", n: "G4 G4 A4 G4 F4 E4 D4 E4:2", b: 0.14, g: 0.1, v: 5 }],
  trombone: [
    { w: "sawtooth", n: "G4:3 F#4:3 F4:3", b: 0.15, g: 0.07 },
    { w: "sawtooth", f: 329.63, to: 311.13, at: 1.35, d: 1.3, g: 0.07, v: 5 },
  ],
  unix: [{ w: "square", n: "C6 G5 E6 A5 D6 B5 F6 C6", b: 0.06, g: 0.04, r: 2, gap: 0.6 }],
  vuvuzela: [{ w: "sawtooth", f: 233, d: 2.2, g: 0.08, lp: 2500, v: 3, h: 0.9 }, { w: "sawtooth", f: 235, d: 2.2, g: 0.06, h: 0.9 }],
  what: [{ w: "sawtooth", f: 200, to: 500, d: 0.35, g: 0.1, lp: 1400, r: 2, gap: 0.6, k: 1.2 }],
  whoomp: [{ w: "sawtooth", f: 90, to: 50, d: 0.6, g: 0.15, lp: 500 }, { ...HAT, r: 6, gap: 0.12 }, { w: "square", n: "C5 C5 Eb5 C5:2", b: 0.12, at: 0.6, g: 0.05 }],
  wups: [{ f: 900, to: 200, d: 0.3, g: 0.15 }, { f: 80, to: 40, at: 0.35, d: 0.2, g: 0.4 }],
  yay: [
    { x: "bandpass", f: 1200, d: 1.4, g: 0.12 },
    { w: "triangle", f: 440, to: 880, d: 0.5, g: 0.15 }, { w: "triangle", f: 880, at: 0.5, d: 0.6, g: 0.12, v: 8 },
  ],
  yeah: [{ w: "sawtooth", n: "E3+B3+E4:6", b: 0.2, g: 0.06, lp: 2500, v: 4 }, { ...KICK }],
  yodel: [{ w: "triangle", n: "C4 G4 C4 G4 E4 C5 G4 E4 C4:2", b: 0.14, g: 0.1, v: 5 }],
}

/** Schedules `name`'s sound on `ctx` (a page's AudioContext, or an OfflineAudioContext to render it). */
export function schedule(ctx, name) {
  perform(ctx, RECIPES[name])
}

/** Plays `name`'s sound on the page (marking `data-sound-played` on <html>); false for a name it does not know. */
export function play(name) {
  const recipe = RECIPES[name]
  if (!recipe) return false
  document.documentElement.dataset.soundPlayed = name
  try {
    perform(context(), recipe)
  } catch {
    return false // no audio output: the message still shows what played
  }
  return true
}

export function startSounds({ list }) {
  function beforeStreamRender(event) {
    const stream = event.detail?.newStream ?? event.target
    if (stream?.getAttribute?.("action") !== "append" || stream.getAttribute("target") !== list.id) return
    const names = [...stream.templateContent.querySelectorAll(".message__sound[data-sound]")]
      .filter((button) => !document.getElementById(button.closest(".message")?.id ?? "") ||
        document.getElementById(button.closest(".message").id).classList.contains("message--pending"))
      .map((button) => button.dataset.sound)
    // Only a message new to this page plays (a catch-up can repeat one already shown).
    if (names.length > 0 && !document.hidden) play(names.at(-1))
  }

  function clicked(event) {
    const button = event.target.closest(".message__sound[data-sound]")
    if (button && list.contains(button)) play(button.dataset.sound)
  }

  return listen([document, "turbo:before-stream-render", beforeStreamRender], [list, "click", clicked])
}
