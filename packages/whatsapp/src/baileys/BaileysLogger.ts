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

const describe = (obj: unknown, msg: string | undefined): string => {
  if (typeof obj === "string") return msg === undefined ? obj : `${obj} ${msg}`
  const detail = obj instanceof Error
    ? obj.message
    : typeof obj === "object" && obj !== null && "err" in obj && obj.err instanceof Error
    ? obj.err.message
    : undefined
  return [msg, detail].filter((s) => s !== undefined && s !== "").join(": ") || "baileys"
}

/**
 * A logger for one number's sockets, annotated with the number; lines below `level` are dropped.
 *
 * @since 1.0.0
 */
export const make = (
  runtime: Runtime.Runtime<never>,
  level: Level,
  bindings: Record<string, unknown> = {}
): BaileysLogger => {
  const threshold = RANK[level]
  const run = Runtime.runFork(runtime)
  const emit = (at: Exclude<Level, "silent">) => (obj: unknown, msg?: string) => {
    if (RANK[at] < threshold) return
    run(Effect.logWithLevel(EFFECT_LEVEL[at], `baileys: ${describe(obj, msg)}`).pipe(Effect.annotateLogs(bindings)))
  }
  return {
    level,
    child: (obj) => make(runtime, level, { ...bindings, ...obj }),
    trace: emit("trace"),
    debug: emit("debug"),
    info: emit("info"),
    warn: emit("warn"),
    error: emit("error")
  }
}
