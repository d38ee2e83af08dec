/**
 * The `simulator` WhatsApp driver: sessions on the in-process {@link SimNetwork}. Closing a
 * session's scope detaches it (no more events reach it) and waits while it handles the events it
 * had already received; messages and acks it could not handle in time are handed to the number's
 * next session. The number stays linked on the network, so the next `open` goes STARTING, WORKING.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { SimConfig } from "./SimConfig.js"
import * as SimNetwork from "./SimNetwork.js"
import { WhatsAppDriver } from "../WhatsAppDriver.js"

/** @since 1.0.0 */
export const make: Effect.Effect<WhatsAppDriver["Type"], never, SimNetwork.SimNetwork> = Effect.map(
  SimNetwork.SimNetwork,
  (network) =>
    WhatsAppDriver.of({
      name: "simulator",
      open: (number, onEvent) =>
        network.connect(number, onEvent).pipe(
          Effect.withSpan("SimulatorDriver.open", { attributes: { numberId: number.id, phone: number.phone } })
        )
    })
)

/**
 * The driver on the network the context provides.
 *
 * @since 1.0.0
 */
export const layer: Layer.Layer<WhatsAppDriver, never, SimNetwork.SimNetwork> = Layer.effect(WhatsAppDriver, make)

/**
 * The driver together with a network of its own (`config` over the defaults), both in the
 * output so a test can drive the network its sessions live on.
 *
 * @since 1.0.0
 */
export const layerTest = (config: Partial<SimConfig> = {}): Layer.Layer<WhatsAppDriver | SimNetwork.SimNetwork> =>
  layer.pipe(Layer.provideMerge(SimNetwork.layer(config)))
