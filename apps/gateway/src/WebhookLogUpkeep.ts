/**
 * The webhook delivery log (`webhook_outbox`, with each event's attempts in `webhook_deliveries`)
 * gains a row per event and one per attempt: at a few hundred events a minute, close to a million
 * rows and half a gigabyte a table a day. Every process that hosts entities deletes, every hour
 * and in batches, the events delivered or failed (and the notices) more than
 * WEBHOOK_LOG_RETENTION_DAYS ago, with their attempts.
 *
 * What the delivery loop still works on is never touched: it reads only events neither delivered
 * nor failed (held ones included), in id order, and an event is marked delivered or failed only
 * by the write of its last attempt, after which nothing sends or changes it again. So deleting
 * finished events neither reorders an account's queue nor races an attempt. An event is kept
 * while a resend of it is kept: the resend delivers under its id (`webhook-id`) and can itself be
 * resent. The age is counted from when the event was delivered or failed, so an event held for
 * weeks behind a turned-off endpoint stays the whole retention after it is delivered.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as DomainClock from "@wagate/domain/DomainClock"
import { decoded } from "@wagate/store/Rows"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Upkeep from "./Upkeep.js"

const DAY_MS = 24 * 60 * 60 * 1000

const BATCH = 5_000

const Deleted = Schema.Struct({ events: Schema.Number })

/** Deletes the events finished more than `retentionDays` ago at `now`, with their attempts; returns how many. */
export const sweep = (retentionDays: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const before = new Date((yield* DomainClock.now) - retentionDays * DAY_MS)
    // Account by account through (account_id, created_at): only events created before the
    // cut-off are read, however long the log kept since.
    return yield* Upkeep.inBatches(
      BATCH,
      Effect.map(
        decoded(Deleted, sql`
          WITH old AS (
            SELECT o.id FROM accounts a CROSS JOIN LATERAL (
              SELECT o.id FROM webhook_outbox o
              WHERE o.account_id = a.id AND o.created_at < ${before}
                AND (o.delivered_at < ${before} OR o.failed_at < ${before})
                AND NOT EXISTS (SELECT 1 FROM webhook_outbox r WHERE r.resend_of = o.id)
              LIMIT ${BATCH}
            ) o
            LIMIT ${BATCH}
          ), attempts AS (
            DELETE FROM webhook_deliveries WHERE outbox_id IN (SELECT id FROM old)
          ), events AS (
            DELETE FROM webhook_outbox WHERE id IN (SELECT id FROM old) RETURNING id
          )
          SELECT count(*)::int AS events FROM events`),
        ([row]) => row.events
      )
    )
  })

/** The hourly sweep; nothing when the log is kept for ever (0 days). */
export const layer = (retentionDays: number) =>
  retentionDays === 0
    ? Layer.empty
    : Upkeep.every("1 hour", "deleting old webhook deliveries", sweep(retentionDays))
