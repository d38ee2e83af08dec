/**
 * The connection steps of a device on the simulated network: linking by QR or pairing code
 * (with refreshes, expiry and the automatic scan), logging out, reconnecting after a lost
 * connection. Each function is one synchronous step; later steps go on the agenda and act only
 * if the device's generation is still the one they were planned in.
 *
 * @since 1.0.0
 */
import * as SimConfig from "./SimConfig.js"
import * as SimDevice from "./SimDevice.js"
import { pairingCode, qrPayload } from "./SimLinkCodes.js"
import type { SimModel } from "./SimModel.js"
import type { LinkMethod } from "../WhatsAppDriver.js"

/** The phone confirmed the link: linked and WORKING. @since 1.0.0 */
export const complete = (device: SimDevice.SimDevice): void => {
  device.linking = null
  device.linked = true
  device.loggedOut = false
  device.generation++
  SimDevice.setStatus(device, "WORKING")
}

/** Unlinked: STOPPED, and what waited for the number is dropped with the link. @since 1.0.0 */
export const logOut = (device: SimDevice.SimDevice, reason: string): void => {
  device.linked = false
  device.loggedOut = true
  device.linking = null
  device.generation++
  device.pending = []
  SimDevice.setStatus(device, "STOPPED", { reason })
}

/**
 * Starts linking at `now`: STARTING, then SCAN_QR_CODE with the first QR or the pairing code.
 * A linked number has nothing to link; its session is told the status it is in.
 *
 * @since 1.0.0
 */
export const start = (model: SimModel, device: SimDevice.SimDevice, method: LinkMethod, now: number): void => {
  if (device.linked) {
    device.mailbox?.offer({ _tag: "Connection", status: device.status })
    return
  }
  device.generation++
  device.attempts++
  device.linking = method.kind
  SimDevice.setStatus(device, "STARTING")
  SimDevice.setStatus(
    device,
    "SCAN_QR_CODE",
    method.kind === "qr" ? { qr: qrPayload(device.phone, 1) } : { pairingCode: pairingCode(device.phone, device.attempts) }
  )
  plan(model, device, method.kind, now)
}

/** The QR refreshes (a pairing code stays), then FAILED, and the automatic scan. */
const plan = (model: SimModel, device: SimDevice.SimDevice, kind: LinkMethod["kind"], now: number) => {
  const generation = device.generation
  const current = () => device.generation === generation
  const { autoScan, qrRefreshMs, scanDelayMs } = model.settings
  if (kind === "qr") {
    for (let ref = 2; ref <= SimConfig.QR_REFRESHES + 1; ref++) {
      model.agenda.schedule(now + (ref - 1) * qrRefreshMs, "connection", () => {
        if (current()) SimDevice.setStatus(device, "SCAN_QR_CODE", { qr: qrPayload(device.phone, ref) })
      })
    }
  }
  model.agenda.schedule(now + (SimConfig.QR_REFRESHES + 1) * qrRefreshMs, "connection", () => {
    if (!current()) return
    device.linking = null
    device.generation++
    SimDevice.setStatus(device, "FAILED", { reason: kind === "qr" ? "qr refs ran out" : "pairing code expired" })
  })
  if (autoScan) {
    model.agenda.schedule(now + scanDelayMs, "connection", () => {
      if (current()) complete(device)
    })
  }
}

/** The connection dropped at `now`: STARTING, then WORKING after `reconnectDelayMs`. @since 1.0.0 */
export const loseConnection = (model: SimModel, device: SimDevice.SimDevice, now: number): void => {
  const generation = ++device.generation
  SimDevice.setStatus(device, "STARTING", { reason: "connection lost" })
  model.agenda.schedule(now + model.settings.reconnectDelayMs, "connection", () => {
    if (device.generation === generation && device.mailbox !== null) SimDevice.setStatus(device, "WORKING")
  })
}
