/**
 * The `baileys` WhatsApp driver: real linked-device connections through
 * `@whiskeysockets/baileys`, with each number's credentials and signal keys in PostgreSQL.
 * Behaviour and decisions: `docs/baileys.md`; the parts are in `./baileys/`.
 *
 * @since 1.0.0
 */
import type * as PgClient from "@effect/sql-pg/PgClient"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { AuthStore } from "./baileys/AuthStore.js"
import * as BaileysSession from "./baileys/BaileysSession.js"
import * as BaileysSettings from "./baileys/BaileysSettings.js"
import { SocketFactory } from "./baileys/BaileysSocket.js"
import * as LiveSocketFactory from "./baileys/LiveSocketFactory.js"
import * as PgAuthStore from "./baileys/PgAuthStore.js"
import * as WaVersion from "./baileys/WaVersion.js"
import { WhatsAppDriver } from "./WhatsAppDriver.js"

/**
 * The driver on the socket factory and auth store in context, for the scope: it fetches the
 * current WhatsApp Web version at start and daily, and forgets sent messages older than
 * `sentRetentionMs` daily.
 *
 * @since 1.0.0
 */
export const make = (
  overrides: Partial<BaileysSettings.BaileysSettings> = {}
): Effect.Effect<WhatsAppDriver["Type"], never, SocketFactory | AuthStore | Scope.Scope> =>
  Effect.gen(function*() {
    const settings = BaileysSettings.make(overrides)
    const factory = yield* SocketFactory
    const store = yield* AuthStore
    const deps: BaileysSession.Deps = {
      settings,
      factory,
      store,
      connectSlots: yield* Effect.makeSemaphore(settings.connectConcurrency),
      versions: yield* WaVersion.make(settings, factory.latestVersion, store),
      checked: new Map()
    }
    const prune = Effect.gen(function*() {
      const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
      yield* store.pruneSent(new Date(now - settings.sentRetentionMs))
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("could not forget old sent messages", cause)))
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(Duration.hours(24)), prune)))
    return WhatsAppDriver.of({
      name: "baileys",
      open: (number, onEvent) =>
        BaileysSession.open(deps, number, onEvent).pipe(
          Effect.withSpan("BaileysDriver.open", { attributes: { numberId: number.id } })
        )
    })
  })

/**
 * Real WhatsApp, auth state in the PostgreSQL of the context.
 *
 * @since 1.0.0
 */
export const layer = (
  overrides: Partial<BaileysSettings.BaileysSettings> = {}
): Layer.Layer<WhatsAppDriver, never, PgClient.PgClient> =>
  Layer.scoped(WhatsAppDriver, make(overrides)).pipe(
    Layer.provide(LiveSocketFactory.layer),
    Layer.provide(PgAuthStore.layer)
  )

/**
 * `layer` with the settings read from the environment (see `BaileysSettings.config`).
 *
 * @since 1.0.0
 */
export const layerConfig: Layer.Layer<WhatsAppDriver, unknown, PgClient.PgClient> = Layer.unwrapEffect(
  Effect.map(BaileysSettings.config, layer)
)

/**
 * The driver on a socket factory of the test's choosing (a fake socket), auth state in memory
 * unless the test provides an `AuthStore`.
 *
 * @since 1.0.0
 */
export const layerTest = (
  overrides: Partial<BaileysSettings.BaileysSettings> = {}
): Layer.Layer<WhatsAppDriver, never, SocketFactory | AuthStore> => Layer.scoped(WhatsAppDriver, make(overrides))
