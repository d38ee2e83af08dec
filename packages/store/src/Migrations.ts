/**
 * Numbered migrations, run at start-up by every process, one process at a time (under the
 * database's start-up lock, see `Database.StartupLock`; the migrator's own table lock covers only
 * what follows the creation of its table). A database migrated further than this
 * version knows is refused: the migrator alone would run nothing and start on a schema this code
 * was not written for.
 *
 * @since 1.0.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import initial from "./migrations/0001_initial.js"
import numberState from "./migrations/0002_number_state.js"
import webhookDelivery from "./migrations/0003_webhook_delivery.js"
import incomingMedia from "./migrations/0004_incoming_media.js"
import mediaStorage from "./migrations/0005_media_storage.js"
import exportsLimits from "./migrations/0006_exports.js"
import reliability from "./migrations/0007_reliability.js"
import baileysDriver from "./migrations/0008_baileys_driver.js"
import runnerStats from "./migrations/0009_runner_stats.js"
import billing from "./migrations/0010_billing.js"
import webhookSecrets from "./migrations/0011_webhook_secrets.js"
import cabinet from "./migrations/0012_cabinet.js"
import lidContacts from "./migrations/0013_lid_contacts.js"
import unsentMessages from "./migrations/0014_unsent_messages.js"
import runnerWaiting from "./migrations/0015_runner_waiting.js"
import unkeptMediaSize from "./migrations/0016_unkept_media_size.js"
import runnerIdle from "./migrations/0017_runner_idle.js"
import linkMethod from "./migrations/0018_link_method.js"
import blobLeftovers from "./migrations/0019_blob_leftovers.js"
import mediaCeiling from "./migrations/0020_media_ceiling.js"
import mediaChatDay from "./migrations/0021_media_chat_day.js"
import phoneAliases from "./migrations/0022_phone_aliases.js"
import webhookLogRetention from "./migrations/0023_webhook_log_retention.js"
import idempotencyKeyMessage from "./migrations/0024_idempotency_key_message.js"
import lastCheck from "./migrations/0025_last_check.js"
import webhookLogByAccount from "./migrations/0026_webhook_log_by_account.js"
import contactsByFirstContact from "./migrations/0027_contacts_by_first_contact.js"
import accountBalance from "./migrations/0028_account_balance.js"
import webhookOlderSecret from "./migrations/0029_webhook_older_secret.js"
import { decoded } from "./Rows.js"

/** @since 1.0.0 */
export const loader = Migrator.fromRecord({
  "0001_initial": initial,
  "0002_number_state": numberState,
  "0003_webhook_delivery": webhookDelivery,
  "0004_incoming_media": incomingMedia,
  "0005_media_storage": mediaStorage,
  "0006_exports": exportsLimits,
  "0007_reliability": reliability,
  "0008_baileys_driver": baileysDriver,
  "0009_runner_stats": runnerStats,
  "0010_billing": billing,
  "0011_webhook_secrets": webhookSecrets,
  "0012_cabinet": cabinet,
  "0013_lid_contacts": lidContacts,
  "0014_unsent_messages": unsentMessages,
  "0015_runner_waiting": runnerWaiting,
  "0016_unkept_media_size": unkeptMediaSize,
  "0017_runner_idle": runnerIdle,
  "0018_link_method": linkMethod,
  "0019_blob_leftovers": blobLeftovers,
  "0020_media_ceiling": mediaCeiling,
  "0021_media_chat_day": mediaChatDay,
  "0022_phone_aliases": phoneAliases,
  "0023_webhook_log_retention": webhookLogRetention,
  "0024_idempotency_key_message": idempotencyKeyMessage,
  "0025_last_check": lastCheck,
  "0026_webhook_log_by_account": webhookLogByAccount,
  "0027_contacts_by_first_contact": contactsByFirstContact,
  "0028_account_balance": accountBalance,
  "0029_webhook_older_secret": webhookOlderSecret
})

const table = "wagate_migrations"
const Newest = Schema.Struct({ migration_id: Schema.Number, name: Schema.String })

type Named = readonly [id: number, name: string]

const label = ([id, name]: Named) => `${String(id).padStart(4, "0")}_${name}`

/** A few by name; a new database's whole list as its first and last. */
const ranNames = (ran: ReadonlyArray<Named>) =>
  ran.length <= 3 ? ran.map(label).join(", ") : `${ran.length} migrations, ${label(ran[0]!)} to ${label(ran.at(-1)!)}`

/**
 * The database holds a migration newer than any this version has: a newer release migrated it.
 *
 * @since 1.0.0
 */
export class DatabaseNewer extends Data.TaggedError("DatabaseNewer")<{
  readonly newest: Named
  readonly known: Named
}> {
  override get message() {
    return `The database was migrated by a newer release of wagate: its newest migration is ${label(this.newest)}, ` +
      `this version knows up to ${label(this.known)}. Run that release or a later one, or restore the backup taken ` +
      "before the upgrade (see Downgrading in docs/operations.md)."
  }
}

/**
 * Runs the migrations this database lacks, logs which ran (or that there were none), and fails
 * with {@link DatabaseNewer} when the database is ahead of this version.
 *
 * @since 1.0.0
 */
export const run = Effect.gen(function*() {
  const [took, ran] = yield* Effect.timed(Migrator.make({})({ loader, table }))
  const sql = yield* SqlClient.SqlClient
  // Read after the migrator's transaction, which waited for the table lock of any process
  // migrating at the same time: a newer release that migrates while this one starts is seen here.
  const [newest] = yield* decoded(
    Newest,
    sql`SELECT migration_id, name FROM ${sql(table)} ORDER BY migration_id DESC LIMIT 1`
  )
  const [knownId, knownName] = (yield* loader).at(-1)!
  const known: Named = [knownId, knownName]
  if (newest !== undefined && newest.migration_id > knownId) {
    return yield* new DatabaseNewer({ newest: [newest.migration_id, newest.name], known })
  }
  yield* ran.length > 0
    ? Effect.logInfo(`database migrated to ${label(known)}: ran ${ranNames(ran)} in ${Math.round(Duration.toMillis(took))} ms`)
    : Effect.logInfo(`database schema current at ${label(known)}: no migration to run`)
  return ran
})

/** @since 1.0.0 */
export const layer = Layer.effectDiscard(run)
