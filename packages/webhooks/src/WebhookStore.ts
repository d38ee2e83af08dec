/**
 * The webhook entity's reads and writes: its endpoint, its queue of events (the outbox, in id
 * order), and the result of each attempt, written with the event's new state in one statement.
 * Only the account's entity writes here, so no two writers race over an event or the endpoint.
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { DisabledReason } from "@wagate/domain/Webhook"
import * as Batched from "@wagate/store/Batched"
import { Int8, NullOrInstant, NullOrString } from "@wagate/store/Columns"
import { StoredEnvelope } from "@wagate/store/Outbox"
import * as SecretKeyring from "@wagate/store/SecretKeyring"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** @since 1.0.0 */
export interface Endpoint {
  readonly url: string
  readonly secret: string
  /**
   * The secrets rotated out, newest first (at most two), each with the epoch ms until which it
   * still signs.
   */
  readonly earlier: ReadonlyArray<{ readonly secret: string; readonly until: number }>
  readonly enabled: boolean
  /** What the account is told; on an enabled endpoint only that its secret could not be read. */
  readonly notice: string | null
}

/**
 * The endpoint's secret opens with no key of this process (its key was lost or changed, say a
 * database restored onto a host with a new `DATA_DIR`): nothing can be signed with it.
 *
 * @since 1.0.0
 */
export class UnreadableSecret extends Data.TaggedError("UnreadableSecret")<{
  readonly accountId: number
  /** The key that sealed it, as the stored value names it. */
  readonly keyId: string | undefined
  readonly reason: string
}> {}

/** An event waiting in the account's queue. @since 1.0.0 */
export interface Queued {
  /** The outbox row. */
  readonly id: number
  /** The event it delivers: itself, or the event a resend repeats. */
  readonly eventId: number
  readonly payload: StoredEnvelope
  readonly attempts: number
  /** Epoch ms; null: due now. */
  readonly nextAttemptAt: number | null
}

/**
 * An event of the account's queue whose stored body is not an envelope (`{event, timestamp,
 * data}`): a row changed in the database. It cannot be sent; it is failed with `reason` rather
 * than left to hold back the account's later events.
 *
 * @since 1.0.0
 */
export interface Unreadable {
  /** The outbox row. */
  readonly id: number
  readonly eventId: number
  /** What does not read, e.g. `data: is missing`. */
  readonly reason: string
}

/** What an attempt leads to for its event. @since 1.0.0 */
export type Outcome =
  | { readonly _tag: "Delivered" }
  | { readonly _tag: "Retry"; readonly at: number }
  /** Held: waits, due at once, until the endpoint is on again (410 Gone). */
  | { readonly _tag: "Held" }
  /** Given up after the whole retry window. */
  | { readonly _tag: "Failed" }

/** One attempt as the delivery log keeps it. @since 1.0.0 */
export interface AttemptRecord {
  readonly queued: Queued
  readonly accountId: number
  readonly attempt: number
  readonly at: number
  readonly url: string
  readonly status: number | null
  readonly error: string | null
  readonly latencyMs: number
  readonly outcome: Outcome
}

/**
 * The event of a delivery-log entry that tells the account its webhook was turned off (shaped
 * like `session.status`: `data.status` is `disabled`). It stays in the log; it is never sent.
 *
 * @since 1.0.0
 */
export const NOTICE_EVENT = "webhook.status"

/** Most events a range resend queues at once. @since 1.0.0 */
export const MAX_RESEND = 10_000

const EndpointRow = Schema.Struct({
  url: Schema.String,
  secret: Schema.String,
  previous_secret: NullOrString,
  previous_secret_until: NullOrInstant,
  older_secret: NullOrString,
  older_secret_until: NullOrInstant,
  enabled: Schema.Boolean,
  notice: NullOrString
})

const QueuedRow = Schema.Struct({
  id: Int8,
  event_id: Int8,
  // Read row by row (`readEnvelope`): one row that does not read must not hide the others.
  payload: Schema.Unknown,
  attempts: Schema.Number,
  next_attempt_at: NullOrInstant
})

const decodeEnvelope = Schema.decodeUnknownEither(StoredEnvelope)

/** The stored body as an envelope, or what about it does not read (in one line, at most 300 characters). */
const readEnvelope = (payload: unknown): Either.Either<StoredEnvelope, string> =>
  Either.mapLeft(decodeEnvelope(payload), (e) =>
    ParseResult.ArrayFormatter.formatErrorSync(e)
      .map((issue) => `${issue.path.length === 0 ? "body" : issue.path.join(".")}: ${issue.message}`)
      .join("; ")
      .replace(/\s+/g, " ")
      .slice(0, 300))

/** @since 1.0.0 */
export class WebhookStore extends Effect.Service<WebhookStore>()("@wagate/webhooks/WebhookStore", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ring = yield* SecretKeyring.SecretKeyring
    // Secrets are stored sealed (docs/webhooks.md, "Secrets at rest"): clear only in memory.
    const seal = (accountId: number, secret: string) =>
      SecretKeyring.seal(ring, secret, SecretKeyring.webhookContext(accountId))
    const open = (accountId: number, stored: string) =>
      Either.mapLeft(
        SecretKeyring.open(ring, stored, SecretKeyring.webhookContext(accountId)),
        (e) => new UnreadableSecret({ accountId, keyId: SecretKeyring.keyIdOf(stored), reason: e.message })
      )

    const findEndpoint = SqlSchema.findOne({
      Request: Schema.Number,
      Result: EndpointRow,
      execute: (accountId) =>
        sql`
          SELECT url, secret, previous_secret, previous_secret_until, older_secret, older_secret_until, enabled, notice
          FROM webhook_endpoints WHERE account_id = ${accountId}`
    })

    /** The endpoint with its secrets in clear; `UnreadableSecret` when one does not open here. */
    const endpoint = Effect.fn("WebhookStore.endpoint")(function*(accountId: number) {
      const found = yield* Effect.orDie(findEndpoint(accountId))
      if (Option.isNone(found)) return Option.none<Endpoint>()
      const r = found.value
      const earlier: Array<{ secret: string; until: number }> = []
      for (const [sealed, until] of [[r.previous_secret, r.previous_secret_until], [r.older_secret, r.older_secret_until]] as const) {
        if (sealed !== null && until !== null) earlier.push({ secret: yield* open(accountId, sealed), until: until.getTime() })
      }
      return Option.some<Endpoint>({
        url: r.url,
        secret: yield* open(accountId, r.secret),
        earlier,
        enabled: r.enabled,
        notice: r.notice
      })
    })

    const findQueue = SqlSchema.findAll({
      Request: Schema.Struct({ accountId: Schema.Number, limit: Schema.Number }),
      Result: QueuedRow,
      execute: ({ accountId, limit }) =>
        sql`
          SELECT id, coalesce(resend_of, id) AS event_id, payload, attempts, next_attempt_at
          FROM webhook_outbox
          WHERE account_id = ${accountId} AND delivered_at IS NULL AND failed_at IS NULL
          ORDER BY id LIMIT ${limit}`
    })

    /** The first `limit` events of the account's queue, oldest first; those whose body does not read on the left. */
    const queue = Effect.fn("WebhookStore.queue")(function*(accountId: number, limit: number) {
      const rows = yield* findQueue({ accountId, limit })
      return rows.map((r): Either.Either<Queued, Unreadable> =>
        Either.match(readEnvelope(r.payload), {
          onLeft: (reason) => Either.left({ id: r.id, eventId: r.event_id, reason }),
          onRight: (payload) =>
            Either.right({
              id: r.id,
              eventId: r.event_id,
              payload,
              attempts: r.attempts,
              nextAttemptAt: r.next_attempt_at === null ? null : r.next_attempt_at.getTime()
            })
        })
      )
    }, Effect.orDie)

    /**
     * Fails an event that cannot be sent, with no attempt: the delivery log shows it `failed`
     * with `error`. False when it had left the queue already (another process failed it first).
     */
    const failUnsent = Effect.fn("WebhookStore.failUnsent")(function*(id: number, error: string, at: number) {
      const rows = yield* sql`
        UPDATE webhook_outbox SET failed_at = ${new Date(at)}, next_attempt_at = NULL, last_status = NULL,
          last_error = ${error}
        WHERE id = ${id} AND delivered_at IS NULL AND failed_at IS NULL
        RETURNING id`
      return rows.length > 0
    }, Effect.orDie)

    /**
     * Attempts in the log and their events' new states, in one statement: the attempts of every
     * account go through one writer that writes whatever queued up while its previous statement
     * ran, so hundreds of accounts delivering at once cost a few statements rather than one each.
     */
    const writeAttempts = (batch: ReadonlyArray<AttemptRecord>) => {
      const when = (a: AttemptRecord, tag: Outcome["_tag"]) => (a.outcome._tag === tag ? new Date(a.at) : null)
      return sql`
        WITH input AS (
          SELECT * FROM unnest(
            ${batch.map((a) => a.queued.id)}::bigint[], ${batch.map((a) => a.accountId)}::bigint[],
            ${batch.map((a) => a.attempt)}::int[], ${batch.map((a) => a.url)}::text[],
            ${batch.map((a) => a.status)}::int[], ${batch.map((a) => a.error)}::text[],
            ${batch.map((a) => Math.round(a.latencyMs))}::int[], ${batch.map((a) => new Date(a.at))}::timestamptz[],
            ${batch.map((a) => when(a, "Delivered"))}::timestamptz[], ${batch.map((a) => when(a, "Failed"))}::timestamptz[],
            ${batch.map((a) => (a.outcome._tag === "Retry" ? new Date(a.outcome.at) : null))}::timestamptz[]
          ) AS i(id, account_id, attempt, url, status, error, latency_ms, at, delivered_at, failed_at, next_attempt_at)
        ), event AS (
          UPDATE webhook_outbox o SET
            attempts = i.attempt,
            last_status = i.status,
            last_error = i.error,
            delivered_at = i.delivered_at,
            failed_at = i.failed_at,
            next_attempt_at = i.next_attempt_at
          FROM input i
          WHERE o.id = i.id
          RETURNING o.id
        )
        INSERT INTO webhook_deliveries (outbox_id, account_id, attempt, url, status, error, latency_ms, created_at)
        SELECT i.id, i.account_id, i.attempt, i.url, i.status, i.error, i.latency_ms, i.at
        FROM input i JOIN event ON event.id = i.id
        ORDER BY i.id`
    }
    const batchedAttempt = yield* Batched.make(writeAttempts)

    /** The attempt in the log and its event's new state; returns once committed. */
    const record = (a: AttemptRecord) => Effect.orDie(batchedAttempt(a))

    /** `record` inside the caller's transaction, with the changes it must commit together with. */
    const recordInTransaction = (a: AttemptRecord) => Effect.orDie(writeAttempts([a]))

    /**
     * Turns the endpoint off and puts the notice into the account's delivery log: an entry of
     * event {@link NOTICE_EVENT}, never sent (the endpoint is off) nor resent.
     */
    const disable = Effect.fn("WebhookStore.disable")(function*(d: {
      readonly accountId: number
      readonly reason: DisabledReason
      readonly notice: string
      readonly url: string
      readonly eventId: number
      readonly status: number | null
      readonly at: number
    }) {
      const at = new Date(d.at)
      const payload = {
        event: NOTICE_EVENT,
        timestamp: Math.floor(d.at / 1000),
        data: { status: "disabled", reason: d.reason, url: d.url, event_id: d.eventId, notice: d.notice }
      }
      yield* sql`
        WITH endpoint AS (
          UPDATE webhook_endpoints SET enabled = false, disabled_reason = ${d.reason}, disabled_at = ${at},
            notice = ${d.notice}, updated_at = ${at}
          WHERE account_id = ${d.accountId}
          RETURNING account_id
        )
        INSERT INTO webhook_outbox (account_id, event, payload, failed_at, last_status, last_error)
        SELECT account_id, ${NOTICE_EVENT}, ${JSON.stringify(payload)}::jsonb, ${at}, ${d.status}, ${d.notice} FROM endpoint`
    }, Effect.orDie)

    const findForUpdate = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ url: Schema.String, enabled: Schema.Boolean }),
      execute: (accountId) => sql`SELECT url, enabled FROM webhook_endpoints WHERE account_id = ${accountId} FOR UPDATE`
    })

    /**
     * Creates the endpoint with `secret`, or changes its URL and state (keeping its secret).
     * Turning it on, or pointing it elsewhere, makes a held event due at once.
     */
    const configure = Effect.fn("WebhookStore.configure")(function*(c: {
      readonly accountId: number
      readonly url: string
      readonly enabled: boolean
      readonly secret: string
      readonly at: number
    }) {
      const at = new Date(c.at)
      return yield* Effect.gen(function*() {
        const before = Option.getOrUndefined(yield* findForUpdate(c.accountId))
        yield* sql`
          INSERT INTO webhook_endpoints (account_id, url, secret, enabled, disabled_reason, disabled_at, created_at, updated_at)
          VALUES (${c.accountId}, ${c.url}, ${seal(c.accountId, c.secret)}, ${c.enabled}, ${c.enabled ? null : "manual"},
                  ${c.enabled ? null : at}, ${at}, ${at})
          ON CONFLICT (account_id) DO UPDATE SET
            url = EXCLUDED.url,
            enabled = EXCLUDED.enabled,
            disabled_reason = CASE WHEN EXCLUDED.enabled THEN NULL
                                   WHEN webhook_endpoints.enabled THEN 'manual'
                                   ELSE webhook_endpoints.disabled_reason END,
            disabled_at = CASE WHEN EXCLUDED.enabled THEN NULL
                               ELSE coalesce(webhook_endpoints.disabled_at, EXCLUDED.disabled_at) END,
            notice = CASE WHEN EXCLUDED.enabled THEN NULL ELSE webhook_endpoints.notice END,
            updated_at = EXCLUDED.updated_at`
        if (c.enabled && before !== undefined && (!before.enabled || before.url !== c.url)) {
          yield* sql`
            UPDATE webhook_outbox SET next_attempt_at = NULL
            WHERE account_id = ${c.accountId} AND delivered_at IS NULL AND failed_at IS NULL
              AND next_attempt_at IS NOT NULL`
        }
        return { created: before === undefined }
      }).pipe(sql.withTransaction)
    }, Effect.orDie)

    const findSecret = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ secret: Schema.String, previous_secret: NullOrString, previous_secret_until: NullOrInstant }),
      execute: (accountId) =>
        sql`
          SELECT secret, previous_secret, previous_secret_until FROM webhook_endpoints
          WHERE account_id = ${accountId} FOR UPDATE`
    })

    /**
     * The secret replaced keeps signing until `graceUntil`, and the one it had replaced, if still
     * signing, until its own end; false when there is no endpoint. A secret no key of this
     * process opens signs nothing: it is dropped rather than kept, and the notice that said so
     * goes (an enabled endpoint has no other notice).
     */
    const rotate = Effect.fn("WebhookStore.rotate")(function*(accountId: number, secret: string, graceUntil: number, at: number) {
      return yield* Effect.gen(function*() {
        const current = yield* findSecret(accountId)
        if (Option.isNone(current)) return false
        const readable = (sealed: string | null) => sealed !== null && Either.isRight(open(accountId, sealed))
        const previous = readable(current.value.secret) ? current.value.secret : null
        // The previous secret, still signing, keeps signing to its own end beside the one replaced now.
        const { previous_secret: older, previous_secret_until: olderUntil } = current.value
        const keepOlder = readable(older) && olderUntil !== null && olderUntil.getTime() > at
        yield* sql`
          UPDATE webhook_endpoints SET previous_secret = ${previous},
            previous_secret_until = ${previous === null ? null : new Date(graceUntil)},
            older_secret = ${keepOlder ? older : null}, older_secret_until = ${keepOlder ? olderUntil : null},
            secret = ${seal(accountId, secret)}, notice = CASE WHEN enabled THEN NULL ELSE notice END,
            updated_at = ${new Date(at)}
          WHERE account_id = ${accountId}`
        return true
      }).pipe(sql.withTransaction)
    }, Effect.orDie)

    /**
     * Tells the account in its endpoint's `notice` that its secret cannot be read (only while
     * the endpoint is on: a turned-off one keeps the notice of why); false when it says so already.
     */
    const noteUnreadable = Effect.fn("WebhookStore.noteUnreadable")(function*(accountId: number, notice: string, at: number) {
      const rows = yield* sql`
        UPDATE webhook_endpoints SET notice = ${notice}, updated_at = ${new Date(at)}
        WHERE account_id = ${accountId} AND enabled AND notice IS DISTINCT FROM ${notice}
        RETURNING account_id`
      return rows.length > 0
    }, Effect.orDie)

    /** The secret reads again (its key is back): the notice that it could not goes. */
    const clearUnreadable = Effect.fn("WebhookStore.clearUnreadable")(function*(accountId: number, at: number) {
      yield* sql`
        UPDATE webhook_endpoints SET notice = NULL, updated_at = ${new Date(at)}
        WHERE account_id = ${accountId} AND enabled AND notice IS NOT NULL`
    }, Effect.orDie)

    const countRange = SqlSchema.single({
      Request: Schema.Struct({ accountId: Schema.Number, since: Schema.DateFromSelf, until: Schema.DateFromSelf }),
      Result: Schema.Struct({ n: Int8 }),
      execute: ({ accountId, since, until }) =>
        sql`
          SELECT count(*) AS n FROM webhook_outbox
          WHERE account_id = ${accountId} AND resend_of IS NULL AND event <> ${NOTICE_EVENT}
            AND created_at >= ${since} AND created_at < ${until}`
    })

    /**
     * Copies of the chosen events at the end of the queue, and how many. A range of more than
     * {@link MAX_RESEND} events queues nothing and says how many it holds.
     */
    const resend = Effect.fn("WebhookStore.resend")(function*(
      accountId: number,
      which: { readonly eventId: number } | { readonly since: Date | null; readonly until: Date | null }
    ) {
      // The events copied are locked (KEY SHARE) before the copies are written: the log's hourly
      // deletion (WebhookLogUpkeep) may delete one after this statement has seen it, and the copy
      // would then refer to an event that is gone (a foreign-key error, answered 500). Locked, an
      // event whose deletion commits meanwhile is skipped: not found, or left out of the range.
      if ("eventId" in which) {
        const rows = yield* sql`
          WITH source AS (
            SELECT account_id, event, payload, coalesce(resend_of, id) AS original FROM webhook_outbox
            WHERE account_id = ${accountId} AND id = ${which.eventId} AND event <> ${NOTICE_EVENT}
            FOR KEY SHARE
          )
          INSERT INTO webhook_outbox (account_id, event, payload, resend_of)
          SELECT account_id, event, payload, original FROM source
          RETURNING id`
        return { queued: rows.length, tooMany: null }
      }
      const since = which.since ?? new Date(0)
      const until = which.until ?? new Date(8.64e15)
      return yield* Effect.gen(function*() {
        const { n } = yield* countRange({ accountId, since, until })
        if (n > MAX_RESEND) return { queued: 0, tooMany: n }
        const rows = yield* sql`
          WITH source AS (
            SELECT id, account_id, event, payload FROM webhook_outbox
            WHERE account_id = ${accountId} AND resend_of IS NULL AND event <> ${NOTICE_EVENT}
              AND created_at >= ${since} AND created_at < ${until}
            FOR KEY SHARE
          )
          INSERT INTO webhook_outbox (account_id, event, payload, resend_of)
          SELECT account_id, event, payload, id FROM source
          ORDER BY id
          RETURNING id`
        return { queued: rows.length, tooMany: null }
      }).pipe(sql.withTransaction)
    }, Effect.orDie)

    const findDue = SqlSchema.findAll({
      Request: Schema.DateFromSelf,
      Result: Schema.Struct({ account_id: Int8 }),
      execute: (now) =>
        sql`
          SELECT e.account_id FROM webhook_endpoints e
          CROSS JOIN LATERAL (
            SELECT o.next_attempt_at FROM webhook_outbox o
            WHERE o.account_id = e.account_id AND o.delivered_at IS NULL AND o.failed_at IS NULL
            ORDER BY o.id LIMIT 1
          ) head
          WHERE e.enabled AND (head.next_attempt_at IS NULL OR head.next_attempt_at <= ${now})`
    })

    /**
     * Accounts with an enabled endpoint whose oldest waiting event is due at `now`: one index
     * probe per endpoint, however long a dead endpoint's queue has grown.
     */
    const dueAccounts = Effect.fn("WebhookStore.dueAccounts")(function*(now: number) {
      const rows = yield* findDue(new Date(now))
      return rows.map((r) => r.account_id)
    }, Effect.orDie)

    const findSecrets = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ account_id: Int8, secret: Schema.String, previous_secret: NullOrString, older_secret: NullOrString }),
      execute: () => sql`SELECT account_id, secret, previous_secret, older_secret FROM webhook_endpoints ORDER BY account_id`
    })

    /**
     * Seals again with the current key every secret sealed with another key of the ring (after a
     * key rotation, before the old key is dropped). A row changed meanwhile (a rotation of its
     * secret) is left as its writer left it; a row no key of the ring opens is counted, not
     * touched.
     */
    const reseal = Effect.fn("WebhookStore.reseal")(function*() {
      const rows = yield* findSecrets()
      let resealed = 0
      let unreadable = 0
      for (const r of rows) {
        const accountId = r.account_id
        const stale = (v: string | null) => v !== null && SecretKeyring.keyIdOf(v) !== ring.current.id
        if (!stale(r.secret) && !stale(r.previous_secret) && !stale(r.older_secret)) continue
        const again = (v: string | null) =>
          v === null || !stale(v)
            ? Either.right(v)
            : Either.map(SecretKeyring.open(ring, v, SecretKeyring.webhookContext(accountId)), (clear) => seal(accountId, clear))
        const [secret, previous, older] = [again(r.secret), again(r.previous_secret), again(r.older_secret)]
        if (Either.isLeft(secret) || Either.isLeft(previous) || Either.isLeft(older)) {
          unreadable++
          continue
        }
        const updated = yield* sql`
          UPDATE webhook_endpoints SET secret = ${secret.right}, previous_secret = ${previous.right},
            older_secret = ${older.right}
          WHERE account_id = ${accountId} AND secret = ${r.secret}
            AND previous_secret IS NOT DISTINCT FROM ${r.previous_secret}
            AND older_secret IS NOT DISTINCT FROM ${r.older_secret}
          RETURNING account_id`
        resealed += updated.length
      }
      return { resealed, unreadable, key: ring.current.id }
    }, Effect.orDie)

    /**
     * Keys that sealed stored secrets and that this process does not have, each with the
     * accounts whose secret (or an earlier one) it sealed.
     */
    const missingKeys = Effect.fn("WebhookStore.missingKeys")(function*() {
      const missing = new Map<string, Set<number>>()
      for (const r of yield* findSecrets()) {
        for (const value of [r.secret, r.previous_secret, r.older_secret]) {
          const key = value === null ? undefined : SecretKeyring.keyIdOf(value)
          if (key === undefined || ring.keys.some((k) => k.id === key)) continue
          missing.set(key, (missing.get(key) ?? new Set()).add(r.account_id))
        }
      }
      return [...missing].map(([key, accounts]) => ({ key, accounts: accounts.size }))
    }, Effect.orDie)

    return {
      endpoint,
      queue,
      failUnsent,
      reseal,
      missingKeys,
      record,
      recordInTransaction,
      disable,
      noteUnreadable,
      clearUnreadable,
      configure,
      rotate,
      resend,
      dueAccounts,
      transaction: sql.withTransaction
    } as const
  })
}) {}
