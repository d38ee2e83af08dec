/**
 * Provisioning through the operator API, as an operator would, and seeding history the way the
 * number entities write it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type * as OpsClient from "@wagate/client/OpsClient"
import * as Effect from "effect/Effect"
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
 * Stores messages and their chats as the number entity does (messages, chats with counters and
 * last message), returning the message ids in insertion order.
 */
export const seedMessages = (database: DatabaseContext, accountId: number, messages: ReadonlyArray<SeedMessage>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids: Array<number> = []
    for (const m of messages) {
      const chatId = m.group ? `${m.peer}-1600000000@g.us` : `${m.peer}@c.us`
      const [row] = yield* sql<{ id: string }>`
        INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, is_group, wa_message_id,
                              type, text, status, created_at, updated_at)
        VALUES (${accountId}, ${m.numberId}, ${m.direction}, ${m.direction === "out" ? "api" : "network"}, ${chatId},
                ${m.peer}, ${m.group ?? false}, ${"WA" + Math.random().toString(16).slice(2, 14).toUpperCase()},
                'text', ${m.text ?? "hello"}, ${m.status ?? (m.direction === "in" ? "received" : "sent")},
                ${m.createdAt}, ${m.createdAt})
        RETURNING id`
      const id = Number(row.id)
      ids.push(id)
      yield* sql`
        INSERT INTO chats (number_id, chat_id, account_id, peer, is_group, last_message_id, last_message_at,
                           message_count, incoming_count, outgoing_count, created_at)
        VALUES (${m.numberId}, ${chatId}, ${accountId}, ${m.peer}, ${m.group ?? false}, ${id}, ${m.createdAt}, 1,
                ${m.direction === "in" ? 1 : 0}, ${m.direction === "out" ? 1 : 0}, ${m.createdAt})
        ON CONFLICT (number_id, chat_id) DO UPDATE SET
          last_message_id = CASE WHEN chats.last_message_at <= EXCLUDED.last_message_at
                                 THEN EXCLUDED.last_message_id ELSE chats.last_message_id END,
          last_message_at = greatest(chats.last_message_at, EXCLUDED.last_message_at),
          message_count = chats.message_count + 1,
          incoming_count = chats.incoming_count + EXCLUDED.incoming_count,
          outgoing_count = chats.outgoing_count + EXCLUDED.outgoing_count`
    }
    return ids
  }).pipe(Effect.provide(database), Effect.orDie)
