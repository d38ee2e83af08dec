/**
 * The state of the simulated network: settings, phones, the gateway's numbers as devices,
 * failure rules, auto-replies, the log of what it received, and its agenda. Plain mutable
 * state, changed only inside synchronous steps, so no two steps ever interleave.
 *
 * @since 1.0.0
 */
import type { MessageType } from "@wagate/domain/Message"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Types from "effect/Types"
import * as SimAgenda from "./SimAgenda.js"
import * as SimConfig from "./SimConfig.js"
import * as SimDevice from "./SimDevice.js"
import type { SimSentMessage } from "./SimSentMessage.js"

/**
 * A peer that answers every message it receives, `delayMs` after receiving it.
 *
 * @since 1.0.0
 */
export interface AutoReply {
  readonly text: string
  readonly delayMs: number
  readonly name?: string | null | undefined
  readonly type?: MessageType | undefined
}

/**
 * Trouble on demand for messages to a phone: `reject` makes `send` fail with `SendRejected`;
 * `fail` accepts the message, acks `sent`, then `failed`. `times` messages are affected (every
 * message when absent), then the phone behaves normally again.
 *
 * @since 1.0.0
 */
export interface FailureRule {
  readonly mode: "reject" | "fail"
  readonly times?: number | undefined
}

/**
 * How many of the latest messages the network keeps in its log (and recognises when re-sent
 * under the same id): enough for any test or demo, while a simulator that runs for days stays
 * bounded. At a thousand sends a second, the last 100 seconds.
 *
 * @since 1.0.0
 */
export const LOG_LIMIT = 100_000

/** A log entry; its ack advances as the message progresses. @since 1.0.0 */
export type LogEntry = Types.Mutable<SimSentMessage>

/** @since 1.0.0 */
export interface SimModel {
  readonly initial: SimConfig.SimConfig
  settings: SimConfig.SimConfig
  readonly phones: Map<string, boolean>
  readonly devices: Map<string, SimDevice.SimDevice>
  readonly failureRules: Map<string, { readonly mode: FailureRule["mode"]; remaining: number | null }>
  readonly autoReplies: Map<string, AutoReply>
  /** The latest messages received, oldest first, at most about `LOG_LIMIT` of them. */
  readonly log: Array<LogEntry>
  /** The log's entries by sender and network id (`from/waMessageId`), to spot a re-send at once. */
  readonly logged: Map<string, LogEntry>
  readonly agenda: SimAgenda.SimAgenda
  /** A fresh id for a message the network originates. */
  readonly nextId: () => string
}

/** An empty network with `config` over the defaults. @since 1.0.0 */
export const make = (config: Partial<SimConfig.SimConfig>): Effect.Effect<SimModel, never, Scope.Scope> =>
  Effect.gen(function*() {
    const agenda = yield* SimAgenda.make
    // Ids unique across restarts of the process (an entity that moves must never see an id
    // twice) and predictable under TestClock, where the process "starts" at 0.
    const instance = (yield* Clock.currentTimeMillis).toString(36).toUpperCase()
    let counter = 0
    const initial = SimConfig.make(config)
    return {
      initial,
      settings: initial,
      phones: new Map(),
      devices: new Map(),
      failureRules: new Map(),
      autoReplies: new Map(),
      log: [],
      logged: new Map(),
      agenda,
      nextId: () => `SIM${instance}${String(++counter).padStart(6, "0")}`
    }
  })

/** The key of a message in `logged`. @since 1.0.0 */
export const logKey = (from: string, waMessageId: string) => `${from}/${waMessageId}`

/**
 * Adds a received message to the log, forgetting the oldest once the log holds a tenth more
 * than `limit` (so the cost of forgetting is spread over many messages).
 *
 * @since 1.0.0
 */
export const record = (model: SimModel, entry: LogEntry, limit: number = LOG_LIMIT): void => {
  model.log.push(entry)
  model.logged.set(logKey(entry.from, entry.waMessageId), entry)
  if (model.log.length <= limit + Math.ceil(limit / 10)) return
  for (const old of model.log.splice(0, model.log.length - limit)) {
    const key = logKey(old.from, old.waMessageId)
    if (model.logged.get(key) === old) model.logged.delete(key)
  }
}

/** The device of `phone`, made (never linked) on first mention. @since 1.0.0 */
export const deviceOf = (model: SimModel, phone: string): SimDevice.SimDevice => {
  let device = model.devices.get(phone)
  if (device === undefined) {
    device = SimDevice.make(phone)
    model.devices.set(phone, device)
  }
  return device
}

/**
 * Whether `phone` has an account: its registration, else true for a linked number of the
 * gateway, else `existsByDefault`.
 *
 * @since 1.0.0
 */
export const exists = (model: SimModel, phone: string): boolean =>
  model.phones.get(phone) ?? (model.devices.get(phone)?.linked || model.settings.existsByDefault)
