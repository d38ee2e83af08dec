/**
 * The WhatsApp network this process talks to, from WA_DRIVER.
 */
import * as SimNetwork from "@wagate/whatsapp/SimNetwork"
import * as SimulatorDriver from "@wagate/whatsapp/SimulatorDriver"
import type { WhatsAppDriver } from "@wagate/whatsapp/WhatsAppDriver"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { GatewaySettings } from "./Config.js"

/** The in-process simulated network: development, demos and tests. */
export const simulator = SimulatorDriver.layer.pipe(Layer.provideMerge(SimNetwork.layer()))

export const layer = (settings: GatewaySettings) =>
  settings.waDriver === "simulator"
    ? simulator
    : Layer.effectDiscard(Effect.dieMessage("WA_DRIVER=baileys is not available in this build; use WA_DRIVER=simulator")) as Layer.Layer<WhatsAppDriver>
