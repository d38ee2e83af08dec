/**
 * Baileys' log lines (pino's interface) into the Effect logger, from a chosen level up. Baileys
 * logs at trace and debug constantly; those are dropped before any work is done.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as LogLevel from "effect/LogLevel"
import * as Runtime from "effect/Runtime"
import type { BaileysLogger } from "./BaileysSocket.js"

const RANK = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, silent: 100 } as const

/** @since 1.0.0 */
export type Level = keyof typeof RANK

const EFFECT_LEVEL: Record<Exclude<Level, "silent">, LogLevel.LogLevel> = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  error: LogLevel.Error
}

/** Longest JSON of a line's fields. */
const FIELDS_MAX = 600

/** JSON of a line's fields, bytes shown by their length, cut at FIELDS_MAX characters. */
const fieldsOf = (obj: Record<string, unknown>): string => {
  const rest: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(obj)) if (k !== "err" && k !== "msg" && v !== undefined) rest[k] = v
  if (Object.keys(rest).length === 0) return ""
  const seen = new WeakSet<object>()
  let json: string
  try {
    json = JSON.stringify(rest, (_k, v: unknown) => {
      if (typeof v === "bigint") return v.toString()
      if (v instanceof Uint8Array) return `<${v.byteLength} bytes>`
      if (typeof v === "object" && v !== null) {
        if ((v as { type?: unknown }).type === "Buffer" && Array.isArray((v as { data?: unknown }).data)) {
          return `<${((v as { data: Array<number> }).data).length} bytes>`
        }
        if (seen.has(v)) return "<cycle>"
        seen.add(v)
      }
      return v
    })
  } catch {
    return ""
  }
  return json.length > FIELDS_MAX ? `${json.slice(0, FIELDS_MAX)}...` : json
}

/** The line's text: the message, the error's message, and the structured fields as compact JSON. @since 1.0.0 */
export const describe = (obj: unknown, msg: string | undefined): string => {
  if (typeof obj === "string") return msg === undefined ? obj : `${obj} ${msg}`
  const error = obj instanceof Error
    ? obj
    : typeof obj === "object" && obj !== null && "err" in obj && obj.err instanceof Error
    ? obj.err
    : undefined
  const fields = typeof obj === "object" && obj !== null && !(obj instanceof Error)
    ? fieldsOf(obj as Record<string, unknown>)
    : ""
  return [msg, error?.message, fields].filter((s) => s !== undefined && s !== "").join(": ") || "baileys"
}

/** A line repeated more than this often within a window is counted instead of logged. @since 1.0.0 */
export const REPEATS_PER_WINDOW = 5
/** @since 1.0.0 */
export const WINDOW_MS = 60_000

/** Repeated lines of one number: the same level and message within a window. */
interface Repeats {
  windowStart: number
  readonly counts: Map<string, number>
}

/**
 * A logger for one number's sockets, annotated with the number; lines below `level` are dropped.
 * Each line keeps its structured fields (as compact JSON after the message). The same line (level
 * and message) is logged at most REPEATS_PER_WINDOW times a minute per number; how many more
 * there were is said once the minute is over.
 *
 * @since 1.0.0
 */
export const make = (
  runtime: Runtime.Runtime<never>,
  level: Level,
  bindings: Record<string, unknown> = {},
  now: () => number = Date.now,
  repeats: Repeats = { windowStart: now(), counts: new Map() }
): BaileysLogger => {
  const threshold = RANK[level]
  const run = Runtime.runFork(runtime)
  const log = (at: Exclude<Level, "silent">, text: string) =>
    run(Effect.logWithLevel(EFFECT_LEVEL[at], `baileys: ${text}`).pipe(Effect.annotateLogs(bindings)))
  const emit = (at: Exclude<Level, "silent">) => (obj: unknown, msg?: string) => {
    if (RANK[at] < threshold) return
    const t = now()
    if (t - repeats.windowStart >= WINDOW_MS) {
      for (const [key, n] of repeats.counts) {
        if (n > REPEATS_PER_WINDOW) {
          const sep = key.indexOf(" ")
          log(key.slice(0, sep) as Exclude<Level, "silent">, `(${n - REPEATS_PER_WINDOW} more times in the last minute) ${key.slice(sep + 1)}`)
        }
      }
      repeats.counts.clear()
      repeats.windowStart = t
    }
    const key = `${at} ${typeof obj === "string" ? obj : msg ?? describe(obj, msg)}`
    const n = (repeats.counts.get(key) ?? 0) + 1
    if (repeats.counts.size < 1000 || n > 1) repeats.counts.set(key, n)
    if (n > REPEATS_PER_WINDOW) return
    log(at, describe(obj, msg))
  }
  return {
    level,
    child: (obj) => make(runtime, level, { ...bindings, ...obj }, now, repeats),
    trace: emit("trace"),
    debug: emit("debug"),
    info: emit("info"),
    warn: emit("warn"),
    error: emit("error")
  }
}
