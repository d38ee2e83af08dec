/**
 * Handlers of the simulator's control API (`/sim/v1`), served only when the gateway runs on
 * the simulated network, behind the operator token.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import * as HttpApiTag from "@effect/platform/HttpApi"
import { InvalidParam, NotConnected, NotFound } from "@wagate/domain/ApiError"
import { SimAuth, SimGroup } from "@wagate/whatsapp/sim/SimApi"
import type { SimConfig } from "@wagate/whatsapp/sim/SimConfig"
import type { SimNumberState } from "@wagate/whatsapp/sim/SimDevice"
import type { SimUnknownNumber, SimWrongPairingCode, SimWrongState } from "@wagate/whatsapp/sim/SimErrors"
import * as SimInbound from "@wagate/whatsapp/sim/SimInbound"
import { SimNetwork } from "@wagate/whatsapp/sim/SimNetwork"
import type { SimSentMessage } from "@wagate/whatsapp/sim/SimSentMessage"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { makeOperatorCheck } from "../../auth/OperatorCheck.js"
import { GatewaySimApi } from "../GatewayApi.js"

/** The control API checks the bearer token against the operator token, like /ops/v1. */
export const SimAuthLive = Layer.effect(
  SimAuth,
  Effect.map(makeOperatorCheck, (check) => SimAuth.of({ operator: check }))
)

/** An API holding only the control group, to serve or test it on its own. */
export class SimHttpApi extends HttpApiTag.make("wagate-sim").add(SimGroup) {}

const configBody = (c: SimConfig) => ({
  exists_by_default: c.existsByDefault,
  auto_scan: c.autoScan,
  scan_delay_ms: c.scanDelayMs,
  qr_refresh_ms: c.qrRefreshMs,
  delivered_delay_ms: c.deliveredDelayMs,
  read_delay_ms: c.readDelayMs,
  reconnect_delay_ms: c.reconnectDelayMs
})

const numberBody = (n: SimNumberState) => ({
  phone: n.phone,
  linked: n.linked,
  status: n.status,
  qr: n.qr,
  pairing_code: n.pairingCode,
  reason: n.reason,
  session_open: n.sessionOpen,
  queued: n.queued,
  sessions: n.sessions
})

const sentBody = (m: SimSentMessage) => ({
  wa_message_id: m.waMessageId,
  from: m.from,
  to: m.to,
  kind: m.kind,
  text: m.text,
  caption: m.caption,
  filename: m.filename,
  media_size: m.mediaSize,
  mime_type: m.mimeType,
  sent_at: new Date(m.timestamp).toISOString(),
  ack: m.ack
})

const control = (error: SimUnknownNumber | SimWrongState | SimWrongPairingCode) => {
  switch (error._tag) {
    case "SimUnknownNumber":
      return new NotFound({ error: error.message })
    case "SimWrongState":
      return new NotConnected({ error: error.message })
    case "SimWrongPairingCode":
      return new InvalidParam({ error: error.message })
  }
}

const build = (handlers: HttpApiBuilder.Handlers.FromGroup<HttpApiDecodeError, never, typeof SimGroup>) =>
  Effect.gen(function*() {
    const network = yield* SimNetwork
    return handlers
      .handle("getConfig", () => Effect.map(network.config, configBody))
      .handle("setConfig", ({ payload }) =>
        Effect.map(
          network.updateConfig({
            existsByDefault: payload.exists_by_default,
            autoScan: payload.auto_scan,
            scanDelayMs: payload.scan_delay_ms,
            qrRefreshMs: payload.qr_refresh_ms,
            deliveredDelayMs: payload.delivered_delay_ms,
            readDelayMs: payload.read_delay_ms,
            reconnectDelayMs: payload.reconnect_delay_ms
          }),
          configBody
        ))
      .handle("setPhone", ({ payload }) => Effect.as(network.setPhone(payload.phone, payload.exists), payload))
      .handle("inbound", ({ payload }) =>
        Effect.map(
          network.inbound({
            to: payload.to,
            from: payload.from,
            name: payload.name,
            text: payload.text,
            type: payload.type,
            group: payload.group,
            fromMe: payload.from_me,
            media: payload.media === undefined ? undefined : {
              mimeType: payload.media.mime_type,
              filename: payload.media.filename,
              size: payload.media.size,
              download: SimInbound.downloadFrom(payload.media.url)
            }
          }),
          ({ delivered, message }) => ({ wa_message_id: message.waMessageId, delivered })
        ))
      .handle("autoReply", ({ path, payload }) =>
        network.autoReply(path.phone, { text: payload.text, delayMs: payload.delay_ms, name: payload.name }))
      .handle("failures", ({ payload }) => network.failures(payload.to, { mode: payload.mode, times: payload.times }))
      .handle("scan", ({ path }) => network.scan(path.phone).pipe(Effect.mapBoth({ onFailure: control, onSuccess: numberBody })))
      .handle("pair", ({ path, payload }) =>
        network.pair(path.phone, payload.code).pipe(Effect.mapBoth({ onFailure: control, onSuccess: numberBody })))
      .handle("disconnect", ({ path, payload }) =>
        network.disconnect(path.phone, payload.reason).pipe(Effect.mapBoth({ onFailure: control, onSuccess: numberBody })))
      .handle("numbers", () => Effect.map(network.numbers, (all) => all.map(numberBody)))
      .handle("number", ({ path }) =>
        network.number(path.phone).pipe(
          Effect.mapBoth({ onFailure: (e) => new NotFound({ error: e.message }), onSuccess: numberBody })
        ))
      .handle("sent", ({ urlParams }) => Effect.map(network.sent(urlParams), (log) => log.map(sentBody)))
      .handle("reset", () => network.reset)
  })

/** The control group's handlers in the gateway's own API, served when it runs on the simulator. */
export const GatewaySimHttp = HttpApiBuilder.group(GatewaySimApi, "sim", build)

/** The handlers for {@link SimHttpApi}. */
export const SimHttp = HttpApiBuilder.group(SimHttpApi, "sim", build)
