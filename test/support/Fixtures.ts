/**
 * Provisioning through the operator API, as an operator would, and seeding history the way the
 * number entities write it.
 */
import type * as OpsClient from "@wagate/client/OpsClient"
import * as Almaty from "@wagate/domain/Almaty"
import { Conversations } from "@wagate/store/Conversations"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { DatabaseContext } from "./TestGateway.js"

/** Polls (real time) until `check` holds. */
export const eventually = <A, E, R>(effect: Effect.Effect<A, E, R>, check: (a: A) => boolean, timeoutMs = 10_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = yield* effect
      if (check(value)) return value
      if (Date.now() > deadline) return yield* Effect.dieMessage(`condition never held; last value: ${JSON.stringify(value)}`)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
  })

/** The value of the unlabelled metric `name` in Prometheus' text (0 while it has none). */
export const metricValue = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? 0)

let phoneCounter = 0
/** A phone number no other fixture of this process uses. */
export const uniquePhone = () => `7701${String(process.pid % 1000).padStart(3, "0")}${String(++phoneCounter).padStart(4, "0")}`

export interface Provisioned {
  readonly accountId: number
  readonly numbers: ReadonlyArray<{ readonly id: number; readonly phone: string }>
  readonly accountKey: string
  /** One number key per number, in the same order. */
  readonly numberKeys: ReadonlyArray<string>
}

/** Waits until the number's link reaches `status` (the simulator links on its own). */
export const linked = (ops: OpsClient.Client, numberId: number, status = "WORKING") =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      const link = yield* ops.ops.linkStatus({ path: { id: numberId } })
      if (link.status === status) return link
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
    return yield* Effect.dieMessage(`number ${numberId} did not reach ${status}`)
  })

/**
 * An account with money, `numbers` linked numbers (WORKING), an account key and a key per
 * number.
 */
export const provision = (
  ops: OpsClient.Client,
  options: { readonly numbers?: number; readonly credit?: number; readonly link?: boolean } = {}
) =>
  Effect.gen(function*() {
    const account = yield* ops.ops.createAccount({
      payload: { email: `acct-${uniquePhone()}@example.kz`, company: "Test LLP" }
    })
    if (options.credit !== 0) {
      yield* ops.ops.credit({ path: { id: account.id }, payload: { amount: options.credit ?? 9900 } })
    }
    const numbers = []
    for (let i = 0; i < (options.numbers ?? 1); i++) {
      const { number } = yield* ops.ops.addNumber({ path: { id: account.id }, payload: { phone: uniquePhone() } })
      if (options.link !== false) yield* linked(ops, number.id)
      numbers.push({ id: number.id, phone: number.phone })
    }
    const accountKey = (yield* ops.ops.issueKey({ payload: { account_id: account.id } })).key
    const numberKeys = []
    for (const n of numbers) {
      numberKeys.push((yield* ops.ops.issueKey({ payload: { account_id: account.id, number_id: n.id } })).key)
    }
    return { accountId: account.id, numbers, accountKey, numberKeys } satisfies Provisioned
  }).pipe(Effect.orDie)

export interface SeedMessage {
  readonly numberId: number
  readonly peer: string
  readonly direction: "in" | "out"
  readonly text?: string
  readonly createdAt: Date
  readonly status?: string
  readonly group?: boolean
}

/**
 * Stores messages through the store code the number entity uses (`Conversations`: messages,
 * chats with their counters and last message, contacts, daily usage), so the read endpoints are
 * checked against what production writes. Outgoing messages get their acks up to `status`
 * (`sent` by default). Returns the message ids in insertion order.
 */
export const seedMessages = (database: DatabaseContext, accountId: number, messages: ReadonlyArray<SeedMessage>) =>
  Effect.gen(function*() {
    const conversations = yield* Conversations
    const ids: Array<number> = []
    for (const m of messages) {
      const waMessageId = "WA" + Math.random().toString(16).slice(2, 14).toUpperCase()
      const text = m.text ?? "hello"
      if (m.direction === "in") {
        const stored = yield* conversations.recordIncoming({
          accountId,
          numberId: m.numberId,
          waMessageId,
          fromMe: false,
          chatId: m.group ? `${m.peer}-1600000000@g.us` : `${m.peer}@c.us`,
          peer: m.peer,
          peerLid: null,
          name: null,
          isGroup: m.group ?? false,
          groupSubject: null,
          author: m.group ? m.peer : null,
          type: "text",
          text,
          at: m.createdAt,
          media: null,
          mediaPending: false,
          mediaSkipped: false,
          mediaSkipReason: null
        })
        ids.push(Option.getOrThrow(stored))
        continue
      }
      const id = yield* conversations.recordOutgoing({
        accountId,
        numberId: m.numberId,
        to: m.peer,
        type: "text",
        text,
        media: null,
        waMessageId,
        source: "api",
        firstContact: false,
        textHash: "seed",
        day: Almaty.dateOf(m.createdAt.getTime()),
        at: m.createdAt,
        phone: ""
      })
      ids.push(id)
      const status = m.status ?? "sent"
      const acks = status === "failed" ? (["failed"] as const) : ACKS.slice(0, ACKS.indexOf(status as typeof ACKS[number]) + 1)
      for (const ack of acks) yield* conversations.applyAck({ numberId: m.numberId, waMessageId, ack, at: m.createdAt })
    }
    return ids
  }).pipe(Effect.provide(Conversations.Default), Effect.provide(database), Effect.orDie)

const ACKS = ["sent", "delivered", "read"] as const
