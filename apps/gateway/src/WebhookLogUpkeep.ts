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

const Chosen = Schema.Struct({ id: Schema.String })
const Deleted = Schema.Struct({ events: Schema.Number })

/** Deletes the events finished more than `retentionDays` ago at `now`, with their attempts; returns how many. */
export const sweep = (retentionDays: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const before = new Date((yield* DomainClock.now) - retentionDays * DAY_MS)
    // A resend of an event (WebhookStore.resend) locks it (KEY SHARE) and writes a copy that
    // refers to it. A batch first locks the events it chose, skipping those a resend has locked,
    // and only then deletes those still without a resend, in a statement of its own: its snapshot
    // sees every resend committed before the lock, and none can be written after it. (Chosen and
    // deleted in one statement, a resend committed in between made the deletion break the
    // reference, SQLSTATE 23503, and the whole batch failed.)
    const batch = Effect.gen(function*() {
      // Account by account through (account_id, created_at): only events created before the
      // cut-off are read, however long the log kept since, and none from the account's oldest
      // waiting event on. An account's events are delivered in order, so those after it wait too
      // (behind a turned-off endpoint, for as long as it stays off, never deleted): read, they
      // were read again in every batch of every run (0.6 s a batch with a million of them, in
      // docs/performance.md "The webhook log upkeep and held events"). LEAST ignores the NULL of
      // an account with nothing waiting.
      const old = yield* decoded(Chosen, sql`
        SELECT o.id::text FROM accounts a CROSS JOIN LATERAL (
          SELECT LEAST(${before}, (
            SELECT w.created_at FROM webhook_outbox w
            WHERE w.account_id = a.id AND w.delivered_at IS NULL AND w.failed_at IS NULL
            ORDER BY w.id LIMIT 1
          )) AS until
        ) waiting CROSS JOIN LATERAL (
          SELECT o.id FROM webhook_outbox o
          WHERE o.account_id = a.id AND o.created_at < waiting.until
            AND (o.delivered_at < ${before} OR o.failed_at < ${before})
            AND NOT EXISTS (SELECT 1 FROM webhook_outbox r WHERE r.resend_of = o.id)
          LIMIT ${BATCH}
          FOR UPDATE SKIP LOCKED
        ) o
        LIMIT ${BATCH}`)
      if (old.length === 0) return { chosen: 0, events: 0 }
      const ids = old.map((o) => o.id)
      const [deleted] = yield* decoded(Deleted, sql`
        WITH gone AS (
          SELECT o.id FROM webhook_outbox o
          WHERE o.id IN ${sql.in(ids)}
            AND NOT EXISTS (SELECT 1 FROM webhook_outbox r WHERE r.resend_of = o.id)
        ), attempts AS (
          DELETE FROM webhook_deliveries WHERE outbox_id IN (SELECT id FROM gone)
        ), events AS (
          DELETE FROM webhook_outbox WHERE id IN (SELECT id FROM gone) RETURNING id
        )
        SELECT count(*)::int AS events FROM events`)
      return { chosen: old.length, events: deleted.events }
    }).pipe(sql.withTransaction)
    // A batch goes on while one comes back full of chosen events, whatever a resend kept of them.
    let events = 0
    yield* Upkeep.inBatches(BATCH, Effect.map(batch, (b) => {
      events += b.events
      return b.chosen
    }))
    return events
  })

/** The hourly sweep; nothing when the log is kept for ever (0 days). */
export const layer = (retentionDays: number) =>
  retentionDays === 0
    ? Layer.empty
    : Upkeep.every("1 hour", "deleting old webhook deliveries", sweep(retentionDays))
