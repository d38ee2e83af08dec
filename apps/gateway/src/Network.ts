/**
 * The WhatsApp network this process talks to, from WA_DRIVER.
 */
import type * as Database from "@wagate/store/Database"
import * as BaileysDriver from "@wagate/whatsapp/BaileysDriver"
import * as SimRemote from "@wagate/whatsapp/sim/SimRemote"
import * as SimNetwork from "@wagate/whatsapp/sim/SimNetwork"
import * as SimulatorDriver from "@wagate/whatsapp/sim/SimulatorDriver"
import type { WhatsAppDriver } from "@wagate/whatsapp/WhatsAppDriver"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { GatewaySettings } from "./Config.js"

/** The in-process simulated network: development, demos and tests. */
export const simulator = SimulatorDriver.layer.pipe(Layer.provideMerge(SimNetwork.layer()))

/** The standalone simulator at `url`, shared by every process of a cluster. */
export const remoteSimulator = (url: string) => SimulatorDriver.layer.pipe(Layer.provideMerge(SimRemote.layer(url)))

/**
 * Real WhatsApp through Baileys; each number's auth state in the gateway's PostgreSQL, its
 * connection settings from the environment (`WA_CONNECT_CONCURRENCY`, `WA_LINK_RETRIES`...).
 */
export const baileys: Layer.Layer<WhatsAppDriver, unknown, Database.Database> = BaileysDriver.layerConfig

export const layer = (settings: GatewaySettings): Layer.Layer<WhatsAppDriver, unknown, Database.Database> =>
  settings.waDriver === "baileys"
    ? baileys
    : Option.match(settings.waSimUrl, { onNone: () => simulator, onSome: remoteSimulator })
