/**
 * What a number's entity loads when it starts and persists as it changes, so that an entity
 * restarted or moved to another runner enforces exactly the same limits.
 *
 * @since 1.0.0
 */
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Almaty from "@wagate/domain/Almaty"
import { ConnectionStatus } from "@wagate/domain/Connection"
import * as Drawdown from "@wagate/domain/Drawdown"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Batched from "./Batched.js"
import { NullOrInstant } from "./Columns.js"
import * as Outbox from "./Outbox.js"
import { decoded } from "./Rows.js"

const DAY_MS = 86_400_000
const ms = (d: Date | null) => (d === null ? null : d.getTime())

/** A bigint or count as the driver gives it (a string), or a number. */
const Count = Schema.Union(Schema.Number, Schema.NumberFromString)
const Instant = Schema.NullOr(Schema.DateFromSelf)

const SnapshotRow = Schema.Struct({
  id: Count,
  account_id: Count,
  phone: Schema.String,
  status: ConnectionStatus,
  status_reason: Schema.NullOr(Schema.String),
  paused: Schema.Boolean,
  pause_reason: Schema.NullOr(Schema.String),
  linked: Schema.Boolean,
  link_method: Schema.NullOr(Schema.Literal("qr", "code")),
  connected_at: Instant,
  cold_blocked_until: Instant,
  restricted_until: Instant,
  deleted_at: Instant,
  paid_through: Schema.NullOr(Schema.String)
})

const ContactCounts = Schema.Struct({
  dialogs: Count,
  started_by_customers: Count,
  cold_all: Count,
  cold: Count,
  answered: Count
})

const UsageRow = Schema.Struct({
  messages: Schema.Number,
  new_contacts: Schema.Number,
  checks: Schema.Number,
  last_check_at: NullOrInstant
})

const MessageCounts = Schema.Struct({ incoming: Count, outgoing: Count, failed: Count })
const TrustCounts = Schema.Struct({ ...ContactCounts.fields, ...MessageCounts.fields })

/** @since 1.0.0 */
export interface NumberSnapshot {
  readonly id: number
  readonly accountId: number
  readonly phone: string
  readonly status: ConnectionStatus
  /** Why the status is what it is, as last persisted (null for none). */
  readonly statusReason: string | null
  readonly paused: boolean
  /** Why it is paused, when it is and the reason is known. */
  readonly pausedBy: Drawdown.PauseReason | null
  readonly linked: boolean
  /** How the number's last link was started, if known. */
  readonly linkMethod: "qr" | "code" | null
  readonly connectedAt: number | null
  readonly coldBlockedUntil: number | null
  readonly restrictedUntil: number | null
  readonly deleted: boolean
  /** The last Almaty day (YYYY-MM-DD) the number was charged for; null when never. */
  readonly paidThrough: string | null
}

/** @since 1.0.0 */
export interface Usage {
  readonly day: string
  readonly messages: number
  readonly newContacts: number
  readonly checks: number
  /** When the day's last contact check was made (the one-a-second rule outlives a restart). */
  readonly lastCheckAt: number | null
}

/** @since 1.0.0 */
export interface SendHistory {
  readonly lastSendAt: number | null
  readonly lastFirstContactAt: number | null
  /** First messages of the last hour: when, and the hash of their text. */
  readonly recentFirstContacts: ReadonlyArray<{ readonly at: number; readonly textHash: string }>
}

/** session.status data: the connection status, and `disconnected` when a working connection is lost. */
const sessionStatus = (previous: ConnectionStatus, next: ConnectionStatus) =>
  previous === "WORKING" && next === "STARTING" ? "disconnected" : next === "WORKING" ? "connected" : next.toLowerCase()

/** @since 1.0.0 */
export class NumberStates extends Effect.Service<NumberStates>()("@wagate/store/NumberStates", {
  scoped: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    const findSnapshot = SqlSchema.findOne({
      Request: Schema.Number,
      Result: SnapshotRow,
      execute: (numberId) =>
        sql`
          SELECT id, account_id, phone, status, status_reason, paused, pause_reason, linked, link_method, connected_at, cold_blocked_until, restricted_until, deleted_at,
            -- By the index of the daily charges (account, kind, number, day).
            (SELECT max(day)::text FROM ledger
             WHERE account_id = numbers.account_id AND kind = 'number_day' AND coalesce(number_id, 0) = numbers.id) AS paid_through
          FROM numbers WHERE id = ${numberId}`
    })

    const snapshot = Effect.fn("NumberStates.snapshot")(function*(numberId: number) {
      const row = yield* findSnapshot(numberId)
      return Option.map(row, (r): NumberSnapshot => ({
        id: r.id,
        accountId: r.account_id,
        phone: r.phone,
        status: r.status,
        statusReason: r.status_reason,
        paused: r.paused,
        pausedBy: Drawdown.pauseReason(r.paused, r.pause_reason),
        linked: r.linked,
        linkMethod: r.link_method,
        connectedAt: ms(r.connected_at),
        coldBlockedUntil: ms(r.cold_blocked_until),
        restrictedUntil: ms(r.restricted_until),
        deleted: r.deleted_at !== null,
        paidThrough: r.paid_through
      }))
    }, Effect.orDie)

    const findUsage = SqlSchema.findOne({
      Request: Schema.Struct({ numberId: Schema.Number, day: Schema.String, next: Schema.String }),
      Result: Schema.Struct({ day: Schema.String, ...UsageRow.fields }),
      execute: ({ day, next, numberId }) =>
        sql`
          SELECT day::text AS day, messages, new_contacts, checks, last_check_at FROM daily_usage
          WHERE number_id = ${numberId} AND day BETWEEN ${day} AND ${next}
          ORDER BY day DESC LIMIT 1`
    })

    /**
     * Counters of the Almaty day containing `now`, or of the next day if the number already
     * counted on it: a clock stepped back across midnight keeps counting on the later day, also
     * after a restart in the minutes before that midnight comes again (docs/limits.md).
     */
    const usage = Effect.fn("NumberStates.usage")(function*(numberId: number, now: number) {
      const today = Almaty.dateOf(now)
      const row = Option.getOrUndefined(yield* findUsage({ numberId, day: today, next: Almaty.dateOf(now + DAY_MS) }))
      return {
        day: row?.day ?? today,
        messages: row?.messages ?? 0,
        newContacts: row?.new_contacts ?? 0,
        checks: row?.checks ?? 0,
        lastCheckAt: row?.last_check_at?.getTime() ?? null
      } satisfies Usage
    }, Effect.orDie)

    const findLastSend = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ created_at: Schema.DateFromSelf }),
      execute: (numberId) =>
        sql`
          SELECT created_at FROM messages
          WHERE number_id = ${numberId} AND direction = 'out' AND source IN ('api', 'mcp')
          ORDER BY id DESC LIMIT 1`
    })

    const findFirsts = SqlSchema.findAll({
      Request: Schema.Struct({ numberId: Schema.Number, since: Schema.DateFromSelf }),
      Result: Schema.Struct({ created_at: Schema.DateFromSelf, text_hash: Schema.NullOr(Schema.String) }),
      execute: ({ numberId, since }) =>
        sql`
          SELECT created_at, text_hash FROM messages
          WHERE number_id = ${numberId} AND first_contact AND created_at > ${since}
            AND status <> 'failed'
          ORDER BY created_at`
    })

    /** When the number last sent through the API, and its first messages of the last hour. */
    const sendHistory = Effect.fn("NumberStates.sendHistory")(function*(numberId: number, now: number) {
      const last = Option.getOrUndefined(yield* findLastSend(numberId))
      const firsts = yield* findFirsts({ numberId, since: new Date(now - 60 * 60 * 1000) })
      return {
        lastSendAt: last ? last.created_at.getTime() : null,
        lastFirstContactAt: firsts.length > 0 ? firsts[firsts.length - 1].created_at.getTime() : null,
        recentFirstContacts: firsts.map((f) => ({ at: f.created_at.getTime(), textHash: f.text_hash ?? "" }))
      } satisfies SendHistory
    }, Effect.orDie)

    /**
     * The counts behind the trust index of each number asked, over the 14 days before its `since`
     * (and its first messages older than a day). The numbers that ask at once (all of them as
     * they start after a restart) share one statement. Messages count only in the number's own
     * 1:1 chats: a group's chatter says nothing of how people take its messages.
     */
    const trustCounts = yield* Batched.withResults(
      (asked: ReadonlyArray<{ readonly numberId: number; readonly since: Date; readonly dayAgo: Date }>) =>
        decoded(
          TrustCounts,
          sql`
            SELECT c.*, m.*
            FROM unnest(${asked.map((a) => a.numberId)}::bigint[], ${asked.map((a) => a.since)}::timestamptz[],
                        ${asked.map((a) => a.dayAgo)}::timestamptz[])
              WITH ORDINALITY AS d(number_id, since, day_ago, i)
            CROSS JOIN LATERAL (
              SELECT count(*) AS dialogs,
                     count(*) FILTER (WHERE wrote_first) AS started_by_customers,
                     count(*) FILTER (WHERE NOT wrote_first) AS cold_all,
                     count(*) FILTER (WHERE NOT wrote_first AND first_out_at < d.day_ago) AS cold,
                     count(*) FILTER (WHERE NOT wrote_first AND first_out_at < d.day_ago AND first_in_at IS NOT NULL) AS answered
              FROM contacts WHERE number_id = d.number_id AND first_contact_at >= d.since
            ) c
            CROSS JOIN LATERAL (
              SELECT count(*) FILTER (WHERE direction = 'in') AS incoming,
                     count(*) FILTER (WHERE direction = 'out') AS outgoing,
                     count(*) FILTER (WHERE direction = 'out' AND status = 'failed') AS failed
              FROM messages WHERE number_id = d.number_id AND created_at >= d.since AND NOT is_group
            ) m
            ORDER BY d.i`
        )
    )

    /** The six inputs of the trust index over the 14 days before `now`. */
    const trustInputs = Effect.fn("NumberStates.trustInputs")(
      function*(numberId: number, now: number, connectedAt: number | null) {
        const since = new Date(now - 14 * DAY_MS)
        const dayAgo = new Date(now - DAY_MS)
        const counts = yield* trustCounts({ numberId, since, dayAgo })
        const daysConnected = connectedAt === null ? 0 : Math.max(0, (now - connectedAt) / DAY_MS)
        return {
          dialogs: counts.dialogs,
          dialogsStartedByCustomers: counts.started_by_customers,
          coldFirstMessages: counts.cold,
          coldAnswered: counts.answered,
          coldPerDay: counts.cold_all / Math.max(1, Math.min(14, daysConnected)),
          incoming: counts.incoming,
          outgoing: counts.outgoing,
          failed: counts.failed,
          daysConnected
        }
      }
    )

    /**
     * A new connection status, with its session.status event. The first WORKING starts the
     * warm-up clock (connected_at) and marks the device linked; STOPPED unlinks it.
     */
    const setStatus = Effect.fn("NumberStates.setStatus")(function*(n: {
      readonly numberId: number
      readonly accountId: number
      readonly phone: string
      readonly previous: ConnectionStatus
      readonly status: ConnectionStatus
      readonly reason: string | null
      readonly at: Date
    }) {
      yield* Effect.gen(function*() {
        yield* sql`
          UPDATE numbers SET
            status = ${n.status},
            status_reason = ${n.reason},
            connected_at = CASE WHEN ${n.status} = 'WORKING' THEN coalesce(connected_at, ${n.at}) ELSE connected_at END,
            linked = CASE WHEN ${n.status} = 'WORKING' THEN true WHEN ${n.status} = 'STOPPED' THEN false ELSE linked END
          WHERE id = ${n.numberId}`
        yield* Outbox.enqueue(
          sql,
          n.accountId,
          Outbox.envelope("session.status", n.at.getTime(), {
            status: sessionStatus(n.previous, n.status),
            connection_status: n.status,
            number_id: n.numberId,
            phone: n.phone,
            ...(n.reason ? { reason: n.reason } : {})
          })
        )
      }).pipe(sql.withTransaction, Effect.orDie)
    })

    /** How a link is being started, kept for the runner that would take the number over meanwhile. */
    const setLinkMethod = Effect.fn("NumberStates.setLinkMethod")(function*(numberId: number, method: "qr" | "code") {
      yield* sql`UPDATE numbers SET link_method = ${method} WHERE id = ${numberId}`
    }, Effect.orDie)

    const setColdBlock = Effect.fn("NumberStates.setColdBlock")(function*(numberId: number, until: Date | null) {
      yield* sql`UPDATE numbers SET cold_blocked_until = ${until} WHERE id = ${numberId}`
    })

    const setRestricted = Effect.fn("NumberStates.setRestricted")(function*(numberId: number, until: Date | null, reason: string) {
      yield* sql`
        UPDATE numbers SET restricted_until = ${until}, restriction_reason = ${reason}, status_reason = ${reason}
        WHERE id = ${numberId}`
    }, Effect.orDie)

    /**
     * The trust ratings of numbers, those set at once in one statement. Its rows are locked in id
     * order first, as every statement that locks several numbers does (billing locks an
     * account's numbers so): in the order the ratings came, two of them could wait for each other.
     */
    const writeRating = yield* Batched.make((ratings: ReadonlyArray<{ readonly numberId: number; readonly rating: number }>) =>
      sql`
        WITH r AS (
          SELECT * FROM unnest(${ratings.map((r) => r.numberId)}::bigint[], ${ratings.map((r) => r.rating)}::int[]) AS r(id, rating)
        ), locked AS (
          SELECT id FROM numbers WHERE id IN (SELECT id FROM r) ORDER BY id FOR NO KEY UPDATE
        )
        UPDATE numbers n SET trust_rating = r.rating
        FROM r JOIN locked l ON l.id = r.id
        WHERE n.id = r.id`.pipe(Effect.asVoid)
    )
    const setRating = (numberId: number, rating: number) => writeRating({ numberId, rating })

    /** The number's entity dropped a request after failing on it twice: operators see why. */
    const setFault = Effect.fn("NumberStates.setFault")(function*(numberId: number, fault: string, at: Date) {
      yield* sql`UPDATE numbers SET fault = ${fault}, fault_at = ${at} WHERE id = ${numberId}`
    }, Effect.orDie)

    /** Counts one contact check, made `at`, on the Almaty day `day`. */
    const countCheck = Effect.fn("NumberStates.countCheck")(function*(numberId: number, day: string, at: Date) {
      yield* sql`
        INSERT INTO daily_usage (number_id, day, checks, last_check_at) VALUES (${numberId}, ${day}, 1, ${at})
        ON CONFLICT (number_id, day) DO UPDATE SET checks = daily_usage.checks + 1,
          last_check_at = greatest(daily_usage.last_check_at, EXCLUDED.last_check_at)`
    })

    const findLive = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ id: Count }),
      execute: () =>
        sql`
          SELECT id FROM numbers WHERE deleted_at IS NULL AND (linked OR status IN ('STARTING', 'SCAN_QR_CODE'))
          ORDER BY id`
    })

    /** Numbers whose entities should be running: linked devices, or numbers being linked. */
    const live = Effect.fn("NumberStates.live")(function*() {
      const rows = yield* findLive()
      return rows.map((r) => r.id)
    }, Effect.orDie)

    return {
      snapshot,
      usage,
      sendHistory,
      trustInputs,
      setStatus,
      setLinkMethod,
      setColdBlock,
      setRestricted,
      setRating,
      countCheck,
      setFault,
      live
    } as const
  })
}) {}
